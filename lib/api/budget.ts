/**
 * One budget arithmetic for every reader: the controller's gates, the
 * cluster-budget fairness, the pool status and the plugin resolve every
 * integer-or-percent field and compose a pool's slot limit here, and nowhere
 * else.
 *
 * ## Integer or percent
 *
 * An integer (a JSON number, or a string of digits such as `"2"`) is taken as
 * is. A percentage `"N%"` is N percent of a node count, **rounded up** (as
 * Kubernetes rounds a DaemonSet's maxUnavailable), and any percentage above 0%
 * gives **at least 1**: `"10%"` of 3 nodes is 1, `"1%"` of an empty pool is 1,
 * `"50%"` of 5 is 3. `0` and `"0%"` are 0 where the field allows 0. Anything
 * else (a negative or fractional number, `"101%"`, `"20 %"`, `""`) is invalid:
 * {@linkcode resolveIntOrPercent} throws a message naming the field, and
 * callers fail closed (no new reboot on a value they cannot read).
 *
 * | field                                       | minimum | unset          | 0 means                        |
 * | ------------------------------------------- | ------- | -------------- | ------------------------------ |
 * | `spec.rollout.maxUnavailable`               | 1       | 1              | (invalid: pause, or a budget 0) |
 * | `spec.rollout.budgets[].maxUnavailable`     | 0       | (required)     | no new reboot slot while active |
 * | `spec.rollout.maxStaging`                   | 1       | no limit       | (invalid)                      |
 * | `spec.rollout.canary.nodes`                 | 1       | no canary      | (invalid)                      |
 * | BootcDisruptionBudget `spec.maxUnavailable` | 0       | (required)     | the selected nodes are frozen  |
 *
 * The CRD asks a BootcDisruptionBudget for at least 1; an object stored before
 * that rule is still honoured here (0 freezes its nodes, never "no limit").
 *
 * ## A pool's slot limit
 *
 * {@linkcode poolSlotLimit}: the most restrictive of `maxUnavailable`, every
 * scheduled budget active now (the caller evaluates the schedules: they are
 * croner expressions read in the pool's time zone, `controller/gates/`), and
 * every cluster budget that selects *all* of the pool's members (one that
 * selects only some of them holds those nodes back one by one, but does not
 * cap the pool). On a tie the first named wins: `maxUnavailable`, then the
 * budgets in spec order, then the cluster budgets in the given order.
 *
 * @module
 */

/** An integer, or a percentage of a node count. */
export type IntOrPercent = number | string;

/** How one integer-or-percent field reads. */
export interface IntOrPercentRule {
  /** The field, for messages (e.g. `rollout.maxUnavailable`). */
  field: string;
  /** The smallest value accepted: 0 (0 and "0%" mean 0) or 1. */
  minimum: 0 | 1;
}

/** `spec.rollout.maxUnavailable`: at least 1 (default 1). */
export const POOL_MAX_UNAVAILABLE: IntOrPercentRule = {
  field: "rollout.maxUnavailable",
  minimum: 1,
};
/** `spec.rollout.budgets[].maxUnavailable`: 0 allowed (no new reboot while active). */
export const BUDGET_MAX_UNAVAILABLE: IntOrPercentRule = { field: "maxUnavailable", minimum: 0 };
/** `spec.rollout.maxStaging`: at least 1. */
export const MAX_STAGING: IntOrPercentRule = { field: "rollout.maxStaging", minimum: 1 };
/** `spec.rollout.maxUnhealthy`: at least 1. */
export const MAX_UNHEALTHY: IntOrPercentRule = { field: "rollout.maxUnhealthy", minimum: 1 };
/** Unhealthy slot nodes that halt a rollout when `spec.rollout.maxUnhealthy` is unset. */
export const DEFAULT_MAX_UNHEALTHY = 2;
/** `spec.rollout.canary.nodes`: at least 1. */
export const CANARY_NODES: IntOrPercentRule = { field: "rollout.canary.nodes", minimum: 1 };
/** A BootcDisruptionBudget's `spec.maxUnavailable`: 0 allowed (freezes the selected nodes). */
export const CLUSTER_MAX_UNAVAILABLE: IntOrPercentRule = { field: "maxUnavailable", minimum: 0 };

const DIGITS_RE = /^\d+$/;
const PERCENT_RE = /^(\d+)%$/;

/** Why `value` is not valid for `rule` (the message names the field), or undefined. */
export function intOrPercentError(value: unknown, rule: IntOrPercentRule): string | undefined {
  try {
    resolveIntOrPercent(value as IntOrPercent, 0, rule);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * Resolves `value` against `total` nodes (see the module doc): an integer as is,
 * a percentage rounded up and at least 1 unless it is 0%. Throws when the value
 * is not one the rule accepts.
 */
export function resolveIntOrPercent(
  value: IntOrPercent,
  total: number,
  rule: IntOrPercentRule,
): number {
  const { field, minimum } = rule;
  const invalid = () =>
    new Error(
      `${field}: ${JSON.stringify(value)} must be an integer >= ${minimum} or a percentage ` +
        `from ${minimum}% to 100% (for example ${minimum === 0 ? "0, 2" : "1, 3"} or "25%")`,
    );
  if (typeof value === "number") {
    if (Number.isInteger(value) && value >= minimum) return value;
    throw invalid();
  }
  if (typeof value !== "string") throw invalid();
  if (DIGITS_RE.test(value)) {
    const n = Number(value);
    if (n >= minimum) return n;
    throw invalid();
  }
  const m = PERCENT_RE.exec(value);
  if (!m) throw invalid();
  const pct = Number(m[1]);
  if (pct < minimum || pct > 100) throw invalid();
  if (pct === 0) return 0;
  // Integers throughout: pct * total is exact, and so is its ceiling over 100.
  return Math.max(1, Math.ceil((pct * Math.max(0, total)) / 100));
}

/** `spec.rollout.maxUnavailable` against the pool's member count (unset: 1). */
export function resolvePoolMaxUnavailable(
  value: IntOrPercent | undefined,
  memberCount: number,
): number {
  return value === undefined ? 1 : resolveIntOrPercent(value, memberCount, POOL_MAX_UNAVAILABLE);
}

/**
 * `spec.rollout.maxUnhealthy` against the pool's member count (unset: 2): this many
 * unhealthy nodes in reboot slots at once halt the rollout.
 */
export function resolveMaxUnhealthy(value: IntOrPercent | undefined, memberCount: number): number {
  return value === undefined
    ? DEFAULT_MAX_UNHEALTHY
    : resolveIntOrPercent(value, memberCount, MAX_UNHEALTHY);
}

/** What set a pool's slot limit. */
export const SlotLimitSource = {
  /** `spec.rollout.maxUnavailable`. */
  MaxUnavailable: "MaxUnavailable",
  /** An entry of `spec.rollout.budgets` (named `rollout.budgets[i]`). */
  Budget: "Budget",
  /** A BootcDisruptionBudget that selects every member of the pool (named by its name). */
  ClusterBudget: "ClusterBudget",
  /** The spec cannot be read: no new reboot slot (limit 0). */
  InvalidSpec: "InvalidSpec",
} as const;
/** One {@linkcode SlotLimitSource}. */
export type SlotLimitSource = typeof SlotLimitSource[keyof typeof SlotLimitSource];

/** One entry of `spec.rollout.budgets` with whether its schedule is active now. */
export interface ScheduledBudgetState {
  maxUnavailable: IntOrPercent;
  /** Active now: always without a schedule, else from each cron start for its duration. */
  active: boolean;
  /** When active and scheduled: the end of the active period. */
  until?: Date;
  /** For people: the schedule and duration, when scheduled. */
  schedule?: string;
  duration?: string;
}

/** A cluster budget that selects every member of the pool. */
export interface ClusterBudgetCap {
  /** The BootcDisruptionBudget's name. */
  name: string;
  /** Its `spec.maxUnavailable`. */
  maxUnavailable: IntOrPercent;
  /** Nodes it selects (the base of a percentage). */
  selected: number;
  /** Nodes it selects that are disrupted and not this pool's (they use its room). */
  disruptedElsewhere: number;
  /** Set when its spec is invalid: it holds back every node it selects (cap 0). */
  invalid?: string;
}

/** A pool's slot limit now, and what set it. */
export interface SlotLimit {
  /** Nodes of the pool that may be disrupted at once now. */
  limit: number;
  source: SlotLimitSource;
  /** `maxUnavailable`, `rollout.budgets[i]`, or the BootcDisruptionBudget's name. */
  name: string;
  /** Index into `rollout.budgets` when a budget sets the limit. */
  budget?: number;
  /** When a scheduled budget sets the limit: when its active period ends. */
  until?: Date;
  /** For people, the source alone: e.g. `maxUnavailable` or `rollout.budgets[1] ("0 9 * * 1-5" for 8h)`. */
  text: string;
  /**
   * For people, with the value: `maxUnavailable 1`, `maxUnavailable 25% of 10 nodes = 3`,
   * `rollout.budgets[1] 0 ("0 9 * * 1-5" for 8h)`, `BootcDisruptionBudget zone-a 2 (1 used
   * by other pools)` (the pool's `status.slots.message`).
   */
  message: string;
}

/** `2`, or `25% of 10 nodes = 3` for a percentage. */
function valueText(value: IntOrPercent, base: number, resolved: number): string {
  return typeof value === "string" && value.endsWith("%")
    ? `${value} of ${base} node${base === 1 ? "" : "s"} = ${resolved}`
    : String(value);
}

/** Inputs of {@linkcode poolSlotLimit}. */
export interface PoolSlotLimitInput {
  /** `spec.rollout.maxUnavailable` (unset: 1). */
  maxUnavailable?: IntOrPercent;
  /** `spec.rollout.budgets`, each with its activity now, in spec order. */
  budgets?: readonly ScheduledBudgetState[];
  /** The cluster budgets that select every member of the pool. */
  clusterCaps?: readonly ClusterBudgetCap[];
  /** The pool's members (the base of its percentages). */
  memberCount: number;
}

/**
 * The pool's slot limit now: the minimum of `maxUnavailable`, every active
 * budget and every whole-pool cluster budget's remaining room; on a tie the
 * earlier is named. Throws (naming the field) on an unreadable pool value;
 * callers fail closed. An invalid cluster budget caps the pool at 0.
 */
export function poolSlotLimit(input: PoolSlotLimitInput): SlotLimit {
  const { memberCount } = input;
  const own = resolvePoolMaxUnavailable(input.maxUnavailable, memberCount);
  let best: SlotLimit = {
    limit: own,
    source: SlotLimitSource.MaxUnavailable,
    name: "maxUnavailable",
    text: "maxUnavailable",
    message: `maxUnavailable ${valueText(input.maxUnavailable ?? 1, memberCount, own)}`,
  };
  (input.budgets ?? []).forEach((b, i) => {
    const name = `rollout.budgets[${i}]`;
    const limit = resolveIntOrPercent(b.maxUnavailable, memberCount, {
      field: `${name}.maxUnavailable`,
      minimum: BUDGET_MAX_UNAVAILABLE.minimum,
    });
    if (!b.active || limit >= best.limit) return;
    const scheduled = b.schedule !== undefined && b.duration !== undefined;
    const when = scheduled ? ` (${JSON.stringify(b.schedule)} for ${b.duration})` : "";
    best = {
      limit,
      source: SlotLimitSource.Budget,
      name,
      budget: i,
      ...(scheduled && b.until ? { until: b.until } : {}),
      text: `${name}${when}`,
      message: `${name} ${valueText(b.maxUnavailable, memberCount, limit)}${when}`,
    };
  });
  for (const c of input.clusterCaps ?? []) {
    const limit = clusterCapOf(c);
    if (limit >= best.limit) continue;
    const text = `BootcDisruptionBudget ${c.name}`;
    const others = c.disruptedElsewhere > 0 ? ` (${c.disruptedElsewhere} used by other pools)` : "";
    best = {
      limit,
      source: SlotLimitSource.ClusterBudget,
      name: c.name,
      text,
      message: c.invalid !== undefined
        ? `${text} is invalid: ${c.invalid}`
        : `${text} ${
          valueText(c.maxUnavailable, c.selected, limit + c.disruptedElsewhere)
        }${others}`,
    };
  }
  return best;
}

/** How many of a pool's nodes a whole-pool cluster budget leaves room for (0 when invalid). */
export function clusterCapOf(c: ClusterBudgetCap): number {
  if (c.invalid !== undefined) return 0;
  const limit = resolveIntOrPercent(c.maxUnavailable, c.selected, CLUSTER_MAX_UNAVAILABLE);
  return Math.max(0, limit - c.disruptedElsewhere);
}
