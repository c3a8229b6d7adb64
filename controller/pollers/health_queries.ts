/**
 * The Prometheus health check off the reconcile path. A pool may ask that a
 * node counts as verified after its reboot only once a PromQL query (with
 * `$node` replaced by the node's name) has returned no series for
 * `forSeconds`. Prometheus may be slow, down, or accept connections and never
 * answer, so, like tag resolution (`tag_resolution.ts`), the queries run here,
 * beside the work queue, and a reconcile only reads the latest verdicts:
 *
 * - Work is keyed by (pool, node). The shell declares on every reconcile which
 *   nodes of a pool want a query ({@linkcode HealthQueries.wantOnly}); a key no
 *   pool wants any more is dropped and its request aborted.
 * - Each key polls every `intervalMs` (default 5 s) with
 *   `GET <url>/api/v1/query?query=…`; each request is aborted after `timeoutMs`
 *   (default 5 s) and recorded as an error naming the URL.
 * - Each key keeps a {@linkcode QueryVerdict}: a vector or matrix with no series
 *   is "empty"; the empty streak starts at the first empty answer after a
 *   non-empty one (or the first answer). Series reset the streak. An error
 *   (HTTP, parse, timeout, a scalar or string result) keeps the streak but the
 *   check stays pending while it lasts: an unreachable Prometheus proves
 *   nothing either way.
 * - {@linkcode HealthQueriesOptions.onResult} is called with the pool when a
 *   verdict changes, and once when an empty streak reaches `forSeconds`, so the
 *   shell wakes the pool exactly when the check can pass.
 *
 * The pure parts ({@linkcode queryUrl}, {@linkcode interpretResponse},
 * {@linkcode nextVerdict}) are exported for unit tests.
 *
 * @module
 */
import type { HealthSpec } from "../../lib/api/mod.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { type Logger, silentLogger } from "../../lib/log.ts";
import { DEFAULT_QUERY_FOR_S, type QueryVerdict } from "../model/health.ts";
import { formatDuration } from "./keyed_poll.ts";

/** A pool's `spec.rollout.health.prometheus`. */
export type PrometheusCheck = NonNullable<HealthSpec["prometheus"]>;

/** Options of {@linkcode HealthQueries}. */
export interface HealthQueriesOptions {
  clock?: Clock;
  logger?: Logger;
  /** Delay between the end of one query of a key and the next (default 5 s). */
  intervalMs?: number;
  /** How long one query may take before it is aborted (default 5 s). */
  timeoutMs?: number;
  /** Called with the pool when one of its verdicts changed or a streak reached `forSeconds`. */
  onResult?: (pool: string, node: string) => void;
}

/** Default {@linkcode HealthQueriesOptions.intervalMs}. */
export const DEFAULT_QUERY_INTERVAL_MS = 5_000;
/** Default {@linkcode HealthQueriesOptions.timeoutMs}. */
export const DEFAULT_QUERY_TIMEOUT_MS = 5_000;
/** Series named in a non-empty verdict's message. */
const MAX_SERIES_NAMED = 3;
/** Longest piece of a non-JSON error body quoted in a message. */
const MAX_BODY_QUOTED = 200;

/** What one query answered. */
export type QueryOutcome =
  | { kind: "empty" }
  /** `signature` identifies the series (not their values): a change of it is news. */
  | { kind: "nonEmpty"; message: string; signature: string }
  | { kind: "error"; message: string };

/** The query URL of `check` for `node`: `$node` in the query is replaced by the node's name. */
export function queryUrl(check: Pick<PrometheusCheck, "url" | "query">, node: string): string {
  const base = check.url.replace(/\/+$/, "");
  const query = check.query.replaceAll("$node", node);
  return `${base}/api/v1/query?${new URLSearchParams({ query })}`;
}

interface Sample {
  metric?: Record<string, string>;
  value?: [number, string];
  values?: [number, string][];
}

/** `up{instance="a:1",job="x"}`, as Prometheus prints a series. */
export function formatSeries(metric: Record<string, string> | undefined): string {
  const { __name__: name = "", ...labels } = metric ?? {};
  const inner = Object.entries(labels).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",");
  return `${name}{${inner}}`;
}

/**
 * What a response of `/api/v1/query` means for the check: `status` is the HTTP
 * status, `body` the response text. Anything but a vector or matrix is an error
 * (the query must select series for "empty" to mean something).
 */
export function interpretResponse(status: number, body: string): QueryOutcome {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    const text = body.trim().slice(0, MAX_BODY_QUOTED);
    return { kind: "error", message: `HTTP ${status}${text ? `: ${text}` : ""}` };
  }
  const r = (json ?? {}) as {
    status?: string;
    errorType?: string;
    error?: string;
    data?: { resultType?: string; result?: unknown };
  };
  if (r.status !== "success" || status < 200 || status >= 300) {
    const cause = r.error
      ? `${r.errorType ? `${r.errorType}: ` : ""}${r.error}`
      : `unexpected response ${body.trim().slice(0, MAX_BODY_QUOTED)}`;
    return { kind: "error", message: `HTTP ${status}: ${cause}` };
  }
  const type = r.data?.resultType;
  if (type !== "vector" && type !== "matrix") {
    return {
      kind: "error",
      message: `the query returns a ${type ?? "missing"} result, not a vector: ` +
        "write it so that it selects series (e.g. a comparison or an alert expression)",
    };
  }
  const result = r.data?.result;
  if (!Array.isArray(result)) {
    return { kind: "error", message: `the ${type} result is not a list` };
  }
  if (result.length === 0) return { kind: "empty" };
  const samples = result as Sample[];
  const named = samples.slice(0, MAX_SERIES_NAMED).map((s) => {
    const value = s.value?.[1] ?? s.values?.at(-1)?.[1];
    return `${formatSeries(s.metric)}${value === undefined ? "" : ` = ${value}`}`;
  });
  const more = samples.length > MAX_SERIES_NAMED ? ", …" : "";
  return {
    kind: "nonEmpty",
    message: `query returned ${samples.length} series: ${named.join(", ")}${more}`,
    signature: samples.map((s) => formatSeries(s.metric)).sort().join("\n"),
  };
}

/**
 * The verdict after `outcome` at `now`: an empty answer starts a streak unless
 * one runs; series end it; an error keeps it (the check is pending meanwhile).
 */
export function nextVerdict(
  previous: QueryVerdict | undefined,
  outcome: QueryOutcome,
  now: Date,
): QueryVerdict {
  switch (outcome.kind) {
    case "empty":
      return { last: "empty", emptySince: previous?.emptySince ?? now };
    case "nonEmpty":
      return { last: "nonEmpty", message: outcome.message };
    case "error":
      return {
        last: "error",
        ...(previous?.emptySince ? { emptySince: previous.emptySince } : {}),
        message: outcome.message,
      };
  }
}

interface KeyState {
  pool: string;
  node: string;
  check: PrometheusCheck;
  url: string;
  verdict?: QueryVerdict;
  /** The series of the last non-empty answer (values aside). */
  signature?: string;
  /** The streak that was reported as long enough (its start, ms). */
  passedStreak?: number;
  /** Aborted when the key is dropped: ends its loop and its request. */
  stop: AbortController;
}

function sameQuery(a: PrometheusCheck, b: PrometheusCheck): boolean {
  return a.url === b.url && a.query === b.query;
}

/** Runs pools' Prometheus health checks in the background; see the module documentation. */
export class HealthQueries {
  #clock: Clock;
  #log: Logger;
  #intervalMs: number;
  #timeoutMs: number;
  #onResult?: (pool: string, node: string) => void;
  /** Pool → node → key. */
  #pools = new Map<string, Map<string, KeyState>>();
  /** Every key loop still running, including those of dropped keys still settling. */
  #loops = new Set<Promise<void>>();
  #queries = 0;
  #recorded = 0;

  /** Creates an idle service; keys start when a pool wants them. */
  constructor(options: HealthQueriesOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "health-queries" });
    this.#intervalMs = Math.max(1, options.intervalMs ?? DEFAULT_QUERY_INTERVAL_MS);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
    this.#onResult = options.onResult;
  }

  /** Keys currently kept, as `pool/node` (for tests and metrics). */
  get keys(): string[] {
    const out: string[] = [];
    for (const [pool, nodes] of this.#pools) {
      for (const node of nodes.keys()) out.push(`${pool}/${node}`);
    }
    return out.sort();
  }

  /** Queries started so far. */
  get queries(): number {
    return this.#queries;
  }

  /** Answers (or errors) recorded so far; a key's loop sleeps right after recording. */
  get recorded(): number {
    return this.#recorded;
  }

  /**
   * Declares that `pool` wants `node` checked with `check` and returns the
   * latest verdict, if any. Never waits. A changed URL or query starts over.
   */
  want(pool: string, node: string, check: PrometheusCheck): QueryVerdict | undefined {
    let nodes = this.#pools.get(pool);
    if (!nodes) this.#pools.set(pool, nodes = new Map());
    const state = nodes.get(node);
    if (state && sameQuery(state.check, check)) {
      state.check = check; // forSeconds may have changed
      return state.verdict;
    }
    if (state) state.stop.abort();
    const fresh: KeyState = {
      pool,
      node,
      check,
      url: check.url.replace(/\/+$/, ""),
      stop: new AbortController(),
    };
    nodes.set(node, fresh);
    const loop = this.#run(fresh);
    this.#loops.add(loop);
    loop.finally(() => this.#loops.delete(loop));
    return undefined;
  }

  /**
   * Declares the whole set of nodes `pool` wants checked (node → check), dropping
   * its other keys, and returns the latest verdict of each wanted node that has one.
   */
  wantOnly(pool: string, wanted: ReadonlyMap<string, PrometheusCheck>): Map<string, QueryVerdict> {
    for (const node of [...this.#pools.get(pool)?.keys() ?? []]) {
      if (!wanted.has(node)) this.forget(pool, node);
    }
    const out = new Map<string, QueryVerdict>();
    for (const [node, check] of wanted) {
      const verdict = this.want(pool, node, check);
      if (verdict) out.set(node, verdict);
    }
    return out;
  }

  /** The latest verdict of `pool`'s check of `node`, if any. */
  verdict(pool: string, node: string): QueryVerdict | undefined {
    return this.#pools.get(pool)?.get(node)?.verdict;
  }

  /** `pool` no longer wants `node` checked (or, without `node`, any node). Aborts their queries. */
  forget(pool: string, node?: string): void {
    const nodes = this.#pools.get(pool);
    if (!nodes) return;
    for (const [name, state] of nodes) {
      if (node !== undefined && name !== node) continue;
      state.stop.abort();
      nodes.delete(name);
    }
    if (nodes.size === 0) this.#pools.delete(pool);
  }

  /**
   * Drops every key, aborting queries in flight; resolves once every loop ended.
   * The service stays usable: a later {@linkcode want} starts afresh.
   */
  async close(): Promise<void> {
    for (const nodes of this.#pools.values()) {
      for (const state of nodes.values()) state.stop.abort();
    }
    this.#pools.clear();
    await Promise.all(this.#loops);
  }

  async #run(state: KeyState): Promise<void> {
    const stop = state.stop.signal;
    while (!stop.aborted) {
      const outcome = await this.#query(state);
      if (stop.aborted) break;
      this.#record(state, outcome);
      try {
        await this.#clock.sleep(this.#intervalMs, stop);
      } catch {
        // Stopped: the loop ends.
      }
    }
  }

  /** One query, bounded by the timeout and by the key's stop signal. */
  async #query(state: KeyState): Promise<QueryOutcome> {
    this.#queries++;
    const url = queryUrl(state.check, state.node);
    const abort = new AbortController();
    const timer = new AbortController();
    let timedOut = false;
    const timeout = this.#clock.sleep(this.#timeoutMs, timer.signal).then(() => {
      timedOut = true;
      abort.abort(new DOMException("timed out", "TimeoutError"));
    }, () => {});
    const signal = AbortSignal.any([state.stop.signal, abort.signal]);
    try {
      const response = await fetch(url, { signal, headers: { accept: "application/json" } });
      const body = await response.text();
      return this.#named(state, interpretResponse(response.status, body));
    } catch (e) {
      if (timedOut) {
        return {
          kind: "error",
          message: `Prometheus at ${state.url} did not answer within ${
            formatDuration(this.#timeoutMs)
          }`,
        };
      }
      // The full query URL can be long: name the base URL instead.
      const cause = (e instanceof Error ? e.message : String(e)).replaceAll(url, state.url);
      return this.#named(state, { kind: "error", message: cause });
    } finally {
      timer.abort();
      await timeout;
    }
  }

  /** Makes an error message name the Prometheus URL. */
  #named(state: KeyState, outcome: QueryOutcome): QueryOutcome {
    if (outcome.kind !== "error" || outcome.message.includes(state.url)) return outcome;
    return { kind: "error", message: `Prometheus at ${state.url}: ${outcome.message}` };
  }

  #record(state: KeyState, outcome: QueryOutcome) {
    const now = this.#clock.now();
    this.#recorded++;
    const before = state.verdict;
    const verdict = nextVerdict(before, outcome, now);
    state.verdict = verdict;
    const signature = outcome.kind === "nonEmpty" ? outcome.signature : undefined;
    // Sample values move on every scrape: only a change of series is news.
    let changed = before?.last !== verdict.last ||
      before?.emptySince?.getTime() !== verdict.emptySince?.getTime() ||
      (verdict.last === "error" && before?.message !== verdict.message) ||
      (verdict.last === "nonEmpty" && state.signature !== signature);
    state.signature = signature;
    if (changed && verdict.last !== before?.last) {
      const fields = { pool: state.pool, node: state.node, url: state.url };
      if (verdict.last === "error") {
        this.#log.warn("health query failed", { ...fields, error: verdict.message });
      } else {
        this.#log.info(`health query ${verdict.last}`, { ...fields, detail: verdict.message });
      }
    }
    // Once per streak, when it becomes long enough: the check can pass now.
    const start = verdict.emptySince?.getTime();
    const forMs = (state.check.forSeconds ?? DEFAULT_QUERY_FOR_S) * 1000;
    if (
      verdict.last === "empty" && start !== undefined && state.passedStreak !== start &&
      now.getTime() - start >= forMs
    ) {
      state.passedStreak = start;
      changed = true;
    }
    if (changed) this.#onResult?.(state.pool, state.node);
  }
}
