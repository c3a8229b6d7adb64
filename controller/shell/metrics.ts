/**
 * A tiny Prometheus registry (counters, gauges, histograms with labels) that
 * renders the text exposition format, and the controller's metrics on it.
 *
 * @module
 */
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  type BootcNode,
  type BootcNodePool,
  type Condition,
  findCondition,
  NodeConditionType,
  owningPool,
  PoolConditionType,
  PoolDegradedReason,
  StalledReason,
} from "../../lib/api/mod.ts";
import type { EvictionOutcome } from "../model/drain.ts";
import { EffectiveState } from "../model/effective_state.ts";
import { type Action, isSlotGrant, type Plan } from "../planner/plan.ts";
import { type RolloutObservation, rolloutObservation } from "./rollout_metrics.ts";
import { type BuildInfo, buildInfo } from "../../lib/version.ts";

type Labels = Record<string, string>;

function labelKey(names: readonly string[], labels: Labels): string {
  return JSON.stringify(names.map((n) => labels[n] ?? ""));
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function renderLabels(names: readonly string[], values: readonly string[], extra = ""): string {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i])}"`);
  if (extra) parts.push(extra);
  return parts.length > 0 ? `{${parts.join(",")}}` : "";
}

/** Deletes the keys of `map` whose labels include every pair of `match`. */
function deleteMatchingKeys(
  map: Map<string, unknown>,
  labelNames: readonly string[],
  match: Labels,
): void {
  for (const key of [...map.keys()]) {
    const values: string[] = JSON.parse(key);
    const hit = Object.entries(match).every(([k, v]) => values[labelNames.indexOf(k)] === v);
    if (hit) map.delete(key);
  }
}

function formatNumber(v: number): string {
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  return String(v);
}

/** A metric that can render itself. */
interface Metric {
  readonly name: string;
  render(): string;
}

abstract class Labelled implements Metric {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  protected abstract readonly type: string;

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
  }

  protected header(): string {
    return `# HELP ${this.name} ${
      this.help.replace(/\n/g, " ")
    }\n# TYPE ${this.name} ${this.type}\n`;
  }

  abstract render(): string;
}

/** A monotonically increasing counter. */
export class Counter extends Labelled {
  protected readonly type = "counter";
  #values = new Map<string, number>();

  /** Adds `by` (default 1). */
  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new Error("counters only go up");
    const key = labelKey(this.labelNames, labels);
    this.#values.set(key, (this.#values.get(key) ?? 0) + by);
  }

  /** The current value for `labels`. */
  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(this.labelNames, labels)) ?? 0;
  }

  /** Drops every series whose labels include `match` (e.g. a deleted pool's). */
  deleteMatching(match: Labels): void {
    deleteMatchingKeys(this.#values, this.labelNames, match);
  }

  /** Text exposition. */
  render(): string {
    let out = this.header();
    for (const [key, v] of this.#values) {
      out += `${this.name}${renderLabels(this.labelNames, JSON.parse(key))} ${formatNumber(v)}\n`;
    }
    return out;
  }
}

/** A value that goes up and down. */
export class Gauge extends Labelled {
  protected readonly type = "gauge";
  #values = new Map<string, number>();

  /** Sets the value for `labels`. */
  set(labels: Labels, value: number): void {
    this.#values.set(labelKey(this.labelNames, labels), value);
  }

  /** The current value for `labels`, if set. */
  get(labels: Labels = {}): number | undefined {
    return this.#values.get(labelKey(this.labelNames, labels));
  }

  /** Drops every series whose labels include `match`. */
  deleteMatching(match: Labels): void {
    deleteMatchingKeys(this.#values, this.labelNames, match);
  }

  /** Text exposition. */
  render(): string {
    let out = this.header();
    for (const [key, v] of this.#values) {
      out += `${this.name}${renderLabels(this.labelNames, JSON.parse(key))} ${formatNumber(v)}\n`;
    }
    return out;
  }
}

/** A histogram with cumulative buckets. */
export class Histogram extends Labelled {
  protected readonly type = "histogram";
  readonly buckets: readonly number[];
  #series = new Map<string, { counts: number[]; sum: number; count: number }>();

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ) {
    super(name, help, labelNames);
    this.buckets = [...buckets].sort((a, b) => a - b);
  }

  /** Records one observation. */
  observe(labels: Labels, value: number): void {
    const key = labelKey(this.labelNames, labels);
    let s = this.#series.get(key);
    if (!s) {
      s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]) s.counts[i]++;
    }
    s.sum += value;
    s.count++;
  }

  /** Observation count for `labels`. */
  count(labels: Labels = {}): number {
    return this.#series.get(labelKey(this.labelNames, labels))?.count ?? 0;
  }

  /** Sum of the observations for `labels`. */
  sum(labels: Labels = {}): number {
    return this.#series.get(labelKey(this.labelNames, labels))?.sum ?? 0;
  }

  /** Drops every series whose labels include `match` (e.g. a deleted pool's). */
  deleteMatching(match: Labels): void {
    deleteMatchingKeys(this.#series, this.labelNames, match);
  }

  /** Text exposition. */
  render(): string {
    let out = this.header();
    for (const [key, s] of this.#series) {
      const values: string[] = JSON.parse(key);
      this.buckets.forEach((b, i) => {
        out += `${this.name}_bucket${
          renderLabels(this.labelNames, values, `le="${formatNumber(b)}"`)
        } ${s.counts[i]}\n`;
      });
      out += `${this.name}_bucket${
        renderLabels(this.labelNames, values, 'le="+Inf"')
      } ${s.count}\n`;
      out += `${this.name}_sum${renderLabels(this.labelNames, values)} ${formatNumber(s.sum)}\n`;
      out += `${this.name}_count${renderLabels(this.labelNames, values)} ${s.count}\n`;
    }
    return out;
  }
}

/** A set of metrics rendered together. */
export class Registry {
  #metrics: Metric[] = [];

  /** Registers a counter. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }

  /** Registers a gauge. */
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.#add(new Gauge(name, help, labelNames));
  }

  /** Registers a histogram. */
  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ): Histogram {
    return this.#add(new Histogram(name, help, labelNames, buckets));
  }

  #add<M extends Metric>(metric: M): M {
    if (this.#metrics.some((m) => m.name === metric.name)) {
      throw new Error(`metric ${metric.name} registered twice`);
    }
    this.#metrics.push(metric);
    return metric;
  }

  /** The text exposition format (version 0.0.4). */
  render(): string {
    return this.#metrics.map((m) => m.render()).join("");
  }
}

/** Content type of {@linkcode Registry.render}. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** A Node as the metrics read it (its name and the disruption record's annotations). */
export interface NodeLike {
  metadata?: { name?: string; annotations?: Record<string, string> };
}

/** Value of the `reason` label for a reason outside the known set (keeps the set bounded). */
export const OTHER_REASON = "Other";

/** The `reason` values of `bootc_pool_degraded`: every pool Degraded reason but Healthy, and Other. */
export const DEGRADED_REASONS: readonly string[] = [
  ...Object.values(PoolDegradedReason).filter((r) => r !== PoolDegradedReason.Healthy),
  OTHER_REASON,
];

/** The `reason` values of `bootc_pool_stalled_nodes`: every Stalled reason but Progressing, and Other. */
export const STALLED_REASONS: readonly string[] = [
  ...Object.values(StalledReason).filter((r) => r !== StalledReason.Progressing),
  OTHER_REASON,
];

/** The `result` values of `bootc_evictions_total` (see `drain.ts`'s EvictionOutcome). */
export const EVICTION_RESULTS: readonly EvictionOutcome["result"][] = [
  "evicted",
  "gone",
  "refused",
  "failed",
];

/** What the gauges of one pool show, taken from a plan and the caches. */
export interface PoolObservation {
  /** Member nodes per effective state. */
  counts: Readonly<Record<string, number>>;
  /** Reboot slots (resolved maxUnavailable). */
  slots: number;
  /** Reboot slots in use. */
  slotsInUse: number;
  /** Reasons of every current issue of the pool (not only the one its Degraded condition names). */
  degradedReasons: ReadonlySet<string>;
  /** Member BootcNodes with `Stalled=True`, by reason. */
  stalled: Readonly<Record<string, number>>;
  /** Nodes that hold one of the pool's reboot slots. */
  slotHolders: ReadonlySet<string>;
  /** True while some member has yet to take a slot (Pending, Staging or Staged). */
  waiting: boolean;
  /** Pause, circuit, rollout times and images (absent: those gauges are left alone). */
  rollout?: RolloutObservation;
}

/** What {@linkcode poolObservation} reads beside the plan: the caches' objects. */
export interface ClusterView {
  bootcNodes: Iterable<BootcNode>;
  nodes: Iterable<NodeLike>;
  /** The pool's spec (for `spec.rollout.paused`). */
  spec?: BootcNodePool["spec"];
}

/**
 * What pool `pool`'s gauges should show after `plan`: counts and slots from the plan,
 * the Degraded reasons from its issues and status, Stalled nodes from the BootcNodes
 * (with the plan's own status patches applied on top, as the caches may not show them
 * yet) and slot holders from the Nodes' disruption records. Pure.
 */
export function poolObservation(
  pool: string,
  plan: Pick<Plan, "actions" | "status" | "counts" | "slots" | "issues">,
  cluster: ClusterView,
): PoolObservation {
  const degradedReasons = new Set<string>((plan.issues ?? []).map((i) => i.reason));
  const degraded = findCondition(plan.status?.conditions, PoolConditionType.Degraded);
  if (degraded?.status === "True") degradedReasons.add(degraded.reason);

  const bootcNodes = [...cluster.bootcNodes];
  const stalledBy = new Map<string, string>();
  for (const bn of bootcNodes) {
    if (owningPool(bn) !== pool || bn.metadata.deletionTimestamp) continue;
    const c = findCondition(bn.status?.conditions, NodeConditionType.Stalled);
    if (c?.status === "True") stalledBy.set(bn.metadata.name ?? "", c.reason);
  }
  for (const a of plan.actions) {
    if (a.kind === "deleteBootcNode") stalledBy.delete(a.node);
    if (a.kind !== "patchBootcNodeStatus") continue;
    const conditions = (a.patch.status as { conditions?: Condition[] } | undefined)?.conditions;
    const c = findCondition(conditions, NodeConditionType.Stalled);
    if (c?.status === "True") stalledBy.set(a.node, c.reason);
    else if (c) stalledBy.delete(a.node);
  }
  const stalled: Record<string, number> = {};
  for (const reason of stalledBy.values()) stalled[reason] = (stalled[reason] ?? 0) + 1;

  const slotHolders = new Set<string>();
  for (const n of cluster.nodes) {
    const a = n.metadata?.annotations;
    if (a?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined && a[ANNOTATION_SLOT_POOL] === pool) {
      slotHolders.add(n.metadata?.name ?? "");
    }
  }
  const c = plan.counts;
  return {
    counts: c,
    slots: plan.slots,
    slotsInUse: plan.status?.slotsInUse ?? 0,
    degradedReasons,
    stalled,
    slotHolders,
    waiting: c.Pending + c.Staging + c.Staged > 0,
    rollout: rolloutObservation(pool, plan.status, cluster.spec, bootcNodes),
  };
}

/**
 * The controller's metrics (documented in controller/README.md, "Metrics"). Names
 * follow the Prometheus conventions: `bootc_` prefix, base units in the name
 * (`_seconds`, `_timestamp_seconds`), `_total` on counters only, and label values
 * from bounded sets (pool names, effective states, condition reasons, action kinds).
 * Per-pool gauges are set by the leader only: a replica that stops leading drops them.
 */
export class ControllerMetrics {
  readonly registry: Registry;
  /** 1, labelled with the running build's version and commit (set once, by every replica). */
  readonly buildInfo: Gauge;
  /** 1 while this replica leads (runs the reconcilers), else 0. */
  readonly leader: Gauge;
  /** Nodes of a pool per effective state. */
  readonly poolNodes: Gauge;
  /** Reboot slots of a pool (resolved maxUnavailable). */
  readonly slots: Gauge;
  /** Reboot slots in use per pool. */
  readonly slotsInUse: Gauge;
  /** 1 while the pool has an issue with this reason (Degraded), else 0. */
  readonly degraded: Gauge;
  /** Member nodes whose BootcNode says `Stalled=True`, by reason. */
  readonly stalledNodes: Gauge;
  /** Nodes whose drain is blocked: the last eviction pass was refused by a disruption budget. */
  readonly drainsBlocked: Gauge;
  /** Unix time since when the pool's longest-blocked drain has been refused (absent: none). */
  readonly drainBlockedSince: Gauge;
  /** Eviction requests by result. */
  readonly evictions: Counter;
  /** Seconds from slot assignment to the end of the drain. */
  readonly drainDuration: Histogram;
  /** Seconds from slot assignment to the slot release (node updated and Ready). */
  readonly nodeUpdateDuration: Histogram;
  /** Seconds from a slot's release to the next grant in the same pool. */
  readonly slotHandoffDuration: Histogram;
  /** Tag resolutions recorded for the pool's image reference. */
  readonly resolutions: Counter;
  /** Tag resolutions that failed. */
  readonly resolutionErrors: Counter;
  /** Failed reconciles. */
  readonly reconcileErrors: Counter;
  /** Reconcile latency. */
  readonly reconcileDuration: Histogram;
  /** API writes made by the reconciler, by kind. */
  readonly apiWrites: Counter;
  /** 1 while `spec.rollout.paused` is set, else 0. */
  readonly paused: Gauge;
  /** 1 while the pool's CircuitOpen condition is True, else 0. */
  readonly circuitOpen: Gauge;
  /** When the pool's latest rollout (the last `status.history` revision) began. */
  readonly rolloutStart: Gauge;
  /** When and how (`outcome`) the latest rollout ended; absent while it runs. */
  readonly rolloutEnd: Gauge;
  /** The median duration of the pool's succeeded rollouts in `status.history`. */
  readonly rolloutExpected: Gauge;
  /** When the newest rolled-back revision in `status.history` ended. */
  readonly lastRollback: Gauge;
  /** 1 for the image the pool targets: its short form, version and 12-hex digest. */
  readonly targetInfo: Gauge;
  /** Member nodes per booted image (version and 12-hex digest). */
  readonly bootedNodes: Gauge;

  /** Per pool: blocked drains, node → when its evictions were first refused in a row. */
  #blocked = new Map<string, Map<string, number>>();
  /** Per pool: release times of slots not handed on yet (oldest first). */
  #released = new Map<string, number[]>();

  /** Registers the metrics on a new registry (or `registry`); `build` defaults to this build. */
  constructor(registry: Registry = new Registry(), build: BuildInfo = buildInfo()) {
    this.registry = registry;
    this.buildInfo = registry.gauge(
      "bootc_operator_build_info",
      "1, labelled with the controller's version and the commit it was built from.",
      ["version", "commit"],
    );
    this.buildInfo.set({ version: build.version, commit: build.commit }, 1);
    this.leader = registry.gauge(
      "bootc_controller_leader",
      "1 while this controller replica holds the leader Lease and reconciles pools, else 0.",
    );
    this.leader.set({}, 0);
    this.poolNodes = registry.gauge(
      "bootc_pool_nodes",
      "Nodes of a pool by effective state.",
      ["pool", "state"],
    );
    this.slots = registry.gauge(
      "bootc_pool_slots",
      "Reboot slots of a pool (its resolved maxUnavailable).",
      ["pool"],
    );
    this.slotsInUse = registry.gauge(
      "bootc_pool_slots_in_use",
      "Reboot slots in use (nodes of the pool being disrupted).",
      ["pool"],
    );
    this.degraded = registry.gauge(
      "bootc_pool_degraded",
      "1 while the pool has an issue with this Degraded reason, else 0.",
      ["pool", "reason"],
    );
    this.stalledNodes = registry.gauge(
      "bootc_pool_stalled_nodes",
      "Nodes of the pool whose BootcNode has Stalled=True, by reason.",
      ["pool", "reason"],
    );
    this.drainsBlocked = registry.gauge(
      "bootc_pool_drains_blocked",
      "Drains of the pool whose last eviction pass was refused by a disruption budget.",
      ["pool"],
    );
    this.drainBlockedSince = registry.gauge(
      "bootc_pool_drain_blocked_since_timestamp_seconds",
      "Unix time since when the pool's longest-blocked drain has had every eviction pass " +
        "refused by a disruption budget; absent while no drain is blocked.",
      ["pool"],
    );
    this.evictions = registry.counter(
      "bootc_evictions_total",
      "Pod evictions requested while draining, by result (evicted, gone, refused, failed).",
      ["pool", "result"],
    );
    const long = [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];
    this.drainDuration = registry.histogram(
      "bootc_drain_duration_seconds",
      "Seconds from reboot slot assignment to the end of the node's drain.",
      ["pool"],
      long,
    );
    this.nodeUpdateDuration = registry.histogram(
      "bootc_node_update_duration_seconds",
      "Seconds from reboot slot assignment until the node runs the target and is Ready.",
      ["pool"],
      long,
    );
    this.slotHandoffDuration = registry.histogram(
      "bootc_slot_handoff_duration_seconds",
      "Seconds from a reboot slot's release to the next grant in the same pool " +
        "(while nodes of the pool still wait for one).",
      ["pool"],
      [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    );
    this.resolutions = registry.counter(
      "bootc_image_resolutions_total",
      "Resolutions of the pool's image tag (an attempt shared by pools counts for each).",
      ["pool"],
    );
    this.resolutionErrors = registry.counter(
      "bootc_image_resolution_errors_total",
      "Resolutions of the pool's image tag that failed.",
      ["pool"],
    );
    this.reconcileErrors = registry.counter(
      "bootc_reconcile_errors_total",
      "Pool reconciles that failed.",
      ["pool"],
    );
    this.reconcileDuration = registry.histogram(
      "bootc_reconcile_duration_seconds",
      "Time taken by one pool reconcile.",
      ["pool"],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    );
    this.apiWrites = registry.counter(
      "bootc_api_writes_total",
      "Writes the reconciler made to the API server, by kind.",
      ["kind"],
    );
    this.paused = registry.gauge(
      "bootc_pool_paused",
      "1 while the pool's spec.rollout.paused is set (no new reboot slot), else 0.",
      ["pool"],
    );
    this.circuitOpen = registry.gauge(
      "bootc_pool_circuit_open",
      "1 while the pool's CircuitOpen condition is True (maxRollbacks failed rollouts in a " +
        "row: no automatic change until it is reset), else 0.",
      ["pool"],
    );
    this.rolloutStart = registry.gauge(
      "bootc_pool_rollout_start_timestamp_seconds",
      "Unix time the pool's latest rollout (the last status.history revision) began.",
      ["pool"],
    );
    this.rolloutEnd = registry.gauge(
      "bootc_pool_rollout_end_timestamp_seconds",
      "Unix time the pool's latest rollout ended, by outcome (Succeeded, RolledBack, Failed, " +
        "Superseded); absent while it runs.",
      ["pool", "outcome"],
    );
    this.rolloutExpected = registry.gauge(
      "bootc_pool_rollout_expected_duration_seconds",
      "How long a rollout of the pool usually takes: the median duration of the succeeded " +
        "revisions in its status.history; absent until one succeeded.",
      ["pool"],
    );
    this.lastRollback = registry.gauge(
      "bootc_pool_last_rollback_timestamp_seconds",
      "Unix time the newest revision of the pool that was rolled back automatically ended; " +
        "absent while status.history holds none.",
      ["pool"],
    );
    this.targetInfo = registry.gauge(
      "bootc_pool_target_info",
      "1 for the image the pool targets: its short form (status.targetShort), bootc version " +
        "(status.targetVersion) and 12-hex digest.",
      ["pool", "target", "version", "digest"],
    );
    this.bootedNodes = registry.gauge(
      "bootc_pool_booted_nodes",
      "Member nodes per booted image (bootc version and 12-hex digest; more than 8 images " +
        'of a pool: the rest as digest="other").',
      ["pool", "version", "digest"],
    );
  }

  /** The per-pool gauges set from a reconcile (dropped by a replica that stops leading). */
  #poolGauges(): Gauge[] {
    return [
      this.poolNodes,
      this.slots,
      this.slotsInUse,
      this.degraded,
      this.stalledNodes,
      this.drainsBlocked,
      this.drainBlockedSince,
      this.paused,
      this.circuitOpen,
      this.rolloutStart,
      this.rolloutEnd,
      this.rolloutExpected,
      this.lastRollback,
      this.targetInfo,
      this.bootedNodes,
    ];
  }

  /** The metrics with a `pool` label. */
  #perPool(): (Gauge | Counter | Histogram)[] {
    return [
      ...this.#poolGauges(),
      this.evictions,
      this.drainDuration,
      this.nodeUpdateDuration,
      this.slotHandoffDuration,
      this.resolutions,
      this.resolutionErrors,
      this.reconcileErrors,
      this.reconcileDuration,
    ];
  }

  /** Sets pool `pool`'s gauges from its plan and the caches (after every reconcile). */
  observePool(
    pool: string,
    plan: Parameters<typeof poolObservation>[1],
    cluster: Parameters<typeof poolObservation>[2],
  ): void {
    this.recordPool(pool, poolObservation(pool, plan, cluster));
  }

  /** Sets pool `pool`'s gauges from `o`. */
  recordPool(pool: string, o: PoolObservation): void {
    for (const state of Object.values(EffectiveState)) {
      this.poolNodes.set({ pool, state }, o.counts[state] ?? 0);
    }
    this.slots.set({ pool }, o.slots);
    this.slotsInUse.set({ pool }, o.slotsInUse);
    const other = [...o.degradedReasons].some((r) => !DEGRADED_REASONS.includes(r));
    for (const reason of DEGRADED_REASONS) {
      const on = reason === OTHER_REASON ? other : o.degradedReasons.has(reason);
      this.degraded.set({ pool, reason }, on ? 1 : 0);
    }
    const stalled: Record<string, number> = {};
    for (const [reason, n] of Object.entries(o.stalled)) {
      const key = STALLED_REASONS.includes(reason) ? reason : OTHER_REASON;
      stalled[key] = (stalled[key] ?? 0) + n;
    }
    for (const reason of STALLED_REASONS) {
      this.stalledNodes.set({ pool, reason }, stalled[reason] ?? 0);
    }
    // A blocked drain ends when its node no longer holds the pool's slot (done, undone, gone).
    const blocked = this.#blocked.get(pool);
    for (const node of [...blocked?.keys() ?? []]) {
      if (!o.slotHolders.has(node)) blocked!.delete(node);
    }
    this.#publishBlocked(pool);
    // Nothing left to take a slot: a later grant would measure idle time, not a hand-off.
    const released = this.#released.get(pool) ?? [];
    if (!o.waiting) released.length = 0;
    released.splice(0, Math.max(0, released.length - Math.max(o.slots, 1)));
    this.#released.set(pool, released);
    if (o.rollout) this.#recordRollout(pool, o.rollout);
    // Counters start at 0 so the first increase is seen.
    this.resolutions.inc({ pool }, 0);
    this.resolutionErrors.inc({ pool }, 0);
    this.reconcileErrors.inc({ pool }, 0);
  }

  /** Records what an applied action tells: drain and update durations, slot hand-offs. */
  observeAction(pool: string, action: Action, now: Date): void {
    if (action.kind !== "patchNode" && action.kind !== "patchBootcNode") return;
    const observe = action.observe;
    if (observe?.metric === "drain_seconds") {
      this.drainDuration.observe({ pool }, observe.seconds);
      this.#unblock(pool, action.node);
    } else if (observe?.metric === "update_seconds") {
      this.nodeUpdateDuration.observe({ pool }, observe.seconds);
      this.#unblock(pool, action.node);
      const released = this.#released.get(pool) ?? [];
      released.push(now.getTime());
      this.#released.set(pool, released);
    }
    if (isSlotGrant(action)) {
      const releasedAt = this.#released.get(pool)?.shift();
      if (releasedAt !== undefined) {
        this.slotHandoffDuration.observe({ pool }, Math.max(0, now.getTime() - releasedAt) / 1000);
      }
    }
  }

  /** Records one drain pass's evictions on `node`: counts, and whether a budget blocks the drain. */
  observeEvictions(
    pool: string,
    node: string,
    outcomes: readonly Pick<EvictionOutcome, "result">[],
    now: Date,
  ): void {
    for (const o of outcomes) this.evictions.inc({ pool, result: o.result });
    if (outcomes.some((o) => o.result === "refused")) {
      const blocked = this.#blocked.get(pool) ?? new Map<string, number>();
      if (!blocked.has(node)) blocked.set(node, now.getTime());
      this.#blocked.set(pool, blocked);
      this.#publishBlocked(pool);
    } else {
      this.#unblock(pool, node);
    }
  }

  /** Records a tag resolution result for pool `pool` (called for each pool using the tag). */
  observeResolution(pool: string, outcome: { result: { ok: boolean } } | undefined): void {
    if (!outcome) return;
    this.resolutions.inc({ pool });
    if (!outcome.result.ok) this.resolutionErrors.inc({ pool });
    else this.resolutionErrors.inc({ pool }, 0);
  }

  /**
   * Marks this replica as leading or not. One that stops leading drops its per-pool
   * gauges (the new leader reports them), so no stale value outlives the lease.
   */
  setLeading(leading: boolean): void {
    this.leader.set({}, leading ? 1 : 0);
    if (leading) return;
    for (const g of this.#poolGauges()) g.deleteMatching({});
    this.#blocked.clear();
    this.#released.clear();
  }

  /** Drops every series of a deleted pool. */
  forgetPool(pool: string): void {
    for (const m of this.#perPool()) m.deleteMatching({ pool });
    this.#blocked.delete(pool);
    this.#released.delete(pool);
  }

  /** Sets the pause, circuit, rollout-time and image gauges of `pool` from `r`. */
  #recordRollout(pool: string, r: RolloutObservation): void {
    this.paused.set({ pool }, r.paused ? 1 : 0);
    this.circuitOpen.set({ pool }, r.circuitOpen ? 1 : 0);
    const seconds = (ms: number) => ms / 1000;
    const optional = (g: Gauge, value: number | undefined) => {
      if (value === undefined) g.deleteMatching({ pool });
      else g.set({ pool }, value);
    };
    optional(this.rolloutStart, r.startedAt === undefined ? undefined : seconds(r.startedAt));
    optional(this.rolloutExpected, r.expectedSeconds);
    optional(
      this.lastRollback,
      r.lastRollbackAt === undefined ? undefined : seconds(r.lastRollbackAt),
    );
    // Series whose labels change (outcome, image) are replaced, not added to.
    this.rolloutEnd.deleteMatching({ pool });
    if (r.ended) this.rolloutEnd.set({ pool, outcome: r.ended.outcome }, seconds(r.ended.at));
    this.targetInfo.deleteMatching({ pool });
    if (r.target) this.targetInfo.set({ pool, ...r.target }, 1);
    this.bootedNodes.deleteMatching({ pool });
    for (const b of r.booted) this.bootedNodes.set({ pool, ...b.image }, b.nodes);
  }

  #unblock(pool: string, node: string): void {
    if (this.#blocked.get(pool)?.delete(node)) this.#publishBlocked(pool);
  }

  #publishBlocked(pool: string): void {
    const since = [...this.#blocked.get(pool)?.values() ?? []];
    this.drainsBlocked.set({ pool }, since.length);
    if (since.length === 0) this.drainBlockedSince.deleteMatching({ pool });
    else this.drainBlockedSince.set({ pool }, Math.min(...since) / 1000);
  }
}
