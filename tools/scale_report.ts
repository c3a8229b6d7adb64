/**
 * Pure helpers for the rollout reports of `deno task demo` and
 * `tools/scale_rollout.ts`: API writes by resource (events apart), percentiles,
 * a quantile from a Prometheus histogram, and a process's memory and CPU from
 * `/proc`.
 *
 * @module
 */

/** Writes by resource as `tests/harness/stack.ts`'s `apiWrites` returns them. */
export interface WriteCounts {
  total: number;
  byResource: Record<string, number>;
}

/** The writes of an interval, events apart (the ≤ 12 per node target excludes them). */
export interface WriteBreakdown {
  /** Everything but events. */
  writes: number;
  events: number;
  /** Per resource, events excluded, largest first. */
  byResource: [string, number][];
}

/**
 * The writes between two readings of the API server's counters, minus the Node
 * writes the harness itself made (machines going down and up for reboots).
 */
export function writeBreakdown(
  before: WriteCounts,
  after: WriteCounts,
  harnessNodeWrites = 0,
): WriteBreakdown {
  const byResource: [string, number][] = [];
  let writes = 0;
  let events = 0;
  for (const [resource, value] of Object.entries(after.byResource)) {
    let n = value - (before.byResource[resource] ?? 0);
    if (resource === "nodes") n -= harnessNodeWrites;
    if (n <= 0) continue;
    if (resource === "events") {
      events += n;
      continue;
    }
    writes += n;
    byResource.push([resource, n]);
  }
  byResource.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return { writes, events, byResource };
}

/** One line: "W writes, X per node (nodes a, …); events E, Y per node". */
export function formatBreakdown(b: WriteBreakdown, nodes: number): string {
  const per = (n: number) => (n / Math.max(1, nodes)).toFixed(1);
  const parts = b.byResource.map(([r, n]) => `${r} ${n} (${per(n)})`).join(", ");
  return `${b.writes} writes, ${per(b.writes)} per node excluding events` +
    (parts ? ` (${parts})` : "") + `; events ${b.events}, ${per(b.events)} per node`;
}

/** The fields of a core/v1 Event {@linkcode eventsByReason} reads. */
export interface EventLike {
  reason?: string;
  count?: number;
  lastTimestamp?: string;
  involvedObject?: { kind?: string };
  source?: { component?: string };
}

/**
 * The operator's events (source component `bootc-operator-…`) last seen at or after
 * `sinceMs`, as occurrences (an aggregated Event counts its `count`) by object kind and
 * reason, largest first: "Node SlotAssigned 6, …; per node 4.0 about nodes, 2 about pools".
 */
export function eventsByReason(
  events: readonly EventLike[],
  sinceMs: number,
  nodes: number,
): string {
  // Event times have whole seconds.
  const since = Math.floor(sinceMs / 1000) * 1000;
  const by = new Map<string, number>();
  let aboutNodes = 0;
  let aboutPools = 0;
  for (const e of events) {
    if (!e.source?.component?.startsWith("bootc-operator")) continue;
    if (!e.lastTimestamp || Date.parse(e.lastTimestamp) < since) continue;
    const kind = e.involvedObject?.kind ?? "?";
    const n = e.count ?? 1;
    by.set(`${kind} ${e.reason}`, (by.get(`${kind} ${e.reason}`) ?? 0) + n);
    if (kind === "BootcNodePool") aboutPools += n;
    else aboutNodes += n;
  }
  const parts = [...by].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${k} ${n}`).join(", ");
  return `${parts || "none"}; ${(aboutNodes / Math.max(1, nodes)).toFixed(1)} per node about ` +
    `nodes, ${aboutPools} about pools`;
}

/** The nearest-rank percentile `p` (0–100) of `values`; undefined when empty. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1];
}

/** Cumulative bucket counts of one Prometheus histogram (all series summed), by upper bound. */
export function histogramBuckets(metricsText: string, name: string): Map<number, number> {
  const buckets = new Map<number, number>();
  const prefix = `${name}_bucket{`;
  for (const line of metricsText.split("\n")) {
    if (!line.startsWith(prefix)) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    if (le === undefined) continue;
    const bound = le === "+Inf" ? Infinity : Number(le);
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    buckets.set(bound, (buckets.get(bound) ?? 0) + value);
  }
  return buckets;
}

/**
 * The `q` quantile (0–1) of the observations made between two readings of a
 * histogram, as the upper bound of the bucket it falls in (what Prometheus'
 * histogram_quantile interpolates within); undefined without observations.
 */
export function histogramQuantile(
  before: Map<number, number>,
  after: Map<number, number>,
  q: number,
): { bound: number; count: number } | undefined {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const delta = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0));
  const count = delta.at(-1) ?? 0;
  if (count <= 0) return undefined;
  const want = q * count;
  const i = delta.findIndex((c) => c >= want);
  return { bound: bounds[i], count };
}

/** Memory and CPU of a process from `/proc/PID/status` and `/proc/PID/stat`. */
export interface ProcessUsage {
  /** Current resident set (VmRSS), MiB. */
  rssMiB: number;
  /** Peak resident set (VmHWM), MiB. */
  peakRssMiB: number;
  /** User plus system CPU time, seconds. */
  cpuSeconds: number;
}

/** Parses `/proc/PID/status` and `/proc/PID/stat` (clock ticks of `ticksPerSecond`). */
export function parseProcessUsage(
  status: string,
  stat: string,
  ticksPerSecond = 100,
): ProcessUsage {
  const kib = (field: string) =>
    Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  // The command name (field 2) may contain spaces: count fields after its closing parenthesis.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // rest[0] is field 3 (state): utime is field 14, stime field 15.
  const ticks = Number(rest[11]) + Number(rest[12]);
  return {
    rssMiB: kib("VmRSS") / 1024,
    peakRssMiB: kib("VmHWM") / 1024,
    cpuSeconds: ticks / ticksPerSecond,
  };
}

/** Reads {@linkcode ProcessUsage} of `pid`; undefined when the process is gone. */
export function processUsage(pid: number): ProcessUsage | undefined {
  try {
    return parseProcessUsage(
      Deno.readTextFileSync(`/proc/${pid}/status`),
      Deno.readTextFileSync(`/proc/${pid}/stat`),
    );
  } catch {
    return undefined;
  }
}

/** Requests the API server served, by verb, summed from `apiserver_request_total`. */
export function requestsByVerb(metricsText: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of metricsText.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const verb = /verb="([^"]+)"/.exec(line)?.[1] ?? "?";
    out[verb] = (out[verb] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return out;
}

/** Requests of one user in an audit log. */
export interface AuditUser {
  total: number;
  byVerb: Record<string, number>;
}

/**
 * Counts the requests of a kube-apiserver audit log (JSON lines) whose
 * `stageTimestamp` lies in [from, to] (epoch ms), by user (service accounts by
 * name) and verb. Only the ResponseComplete (or Panic) stage of each request counts.
 */
export function summarizeAudit(
  text: string,
  from: number,
  to: number,
): { total: number; byUser: Record<string, AuditUser> } {
  const byUser: Record<string, AuditUser> = {};
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let e: { stage?: string; stageTimestamp?: string; verb?: string; user?: { username?: string } };
    try {
      e = JSON.parse(line);
    } catch {
      continue;
    }
    if (e.stage !== "ResponseComplete" && e.stage !== "Panic") continue;
    const at = Date.parse(e.stageTimestamp ?? "");
    if (!(at >= from && at <= to)) continue;
    const user = (e.user?.username ?? "?").replace(/^system:serviceaccount:[^:]+:/, "");
    const u = byUser[user] ??= { total: 0, byVerb: {} };
    const verb = e.verb ?? "?";
    u.total++;
    u.byVerb[verb] = (u.byVerb[verb] ?? 0) + 1;
    total++;
  }
  return { total, byUser };
}
