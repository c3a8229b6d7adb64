/**
 * The pool's own disruption budget: at most `maxUnavailable` of its nodes
 * disrupted at once (an integer, or a percentage of the pool rounded up, at
 * least 1), and at most what every active `rollout.budgets` entry allows
 * (Karpenter-style: a budget with a schedule is active from each cron start,
 * read in `spec.timeZone`, for its duration; one without is always active; the
 * most restrictive wins; 0 means no new reboot). Reason `BudgetExhausted` when
 * candidates wait for a slot, or whenever the limit is 0.
 *
 * @module
 */
import { resolveMaxUnavailable } from "../slots.ts";
import type { Gate, GateDecision, GateInput } from "./gate.ts";
import { poolPolicy, poolTimeZone, type RolloutBudget } from "./policy.ts";
import { durationError, formatInZone, scheduleError, windowState } from "./schedule.ts";

/** The wait reason of this gate. */
export const BUDGET_EXHAUSTED = "BudgetExhausted";

const BUDGET_VALUE_RE = /^(\d+)(%?)$/;

/**
 * Resolves a `rollout.budgets[].maxUnavailable` against the pool size: an
 * integer >= 0 as is; a percentage of `memberCount` rounded up and at least 1,
 * except "0%" which is 0. Throws when the value is neither.
 */
export function resolveBudget(value: number | string, memberCount: number): number {
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 0) {
      throw new Error(`${value} must be an integer >= 0 or a percentage`);
    }
    return value;
  }
  const m = BUDGET_VALUE_RE.exec(value);
  if (!m) throw new Error(`${JSON.stringify(value)} must be an integer >= 0 or a percentage`);
  const n = Number(m[1]);
  if (!m[2]) return n;
  if (n > 100) throw new Error(`${value} must be a percentage from 0% to 100%`);
  return n === 0 ? 0 : Math.max(1, Math.ceil((n * memberCount) / 100));
}

/** Why `budget` is not valid at `field` (e.g. `spec.rollout.budgets[0]`), or undefined. */
export function budgetError(budget: RolloutBudget, field: string): string | undefined {
  const errors: string[] = [];
  try {
    resolveBudget(budget.maxUnavailable, 1);
  } catch (e) {
    errors.push(`${field}.maxUnavailable: ${(e as Error).message} (for example 0, 2 or "20%")`);
  }
  const hasSchedule = budget.schedule !== undefined;
  const hasDuration = budget.duration !== undefined;
  if (hasSchedule !== hasDuration) {
    errors.push(
      `${field}: schedule and duration go together (a budget without either is always active)`,
    );
  }
  if (hasSchedule) {
    const err = scheduleError(budget.schedule, `${field}.schedule`);
    if (err) errors.push(err);
  }
  if (hasDuration) {
    const err = durationError(budget.duration, `${field}.duration`);
    if (err) errors.push(err);
  }
  return errors.length > 0 ? errors.join("; ") : undefined;
}

/** What limits the pool's disruptions now. */
export interface BudgetLimit {
  /** Nodes of the pool that may be disrupted at once now. */
  limit: number;
  /** Index into `rollout.budgets` of the budget that sets the limit; absent: `maxUnavailable`. */
  budget?: number;
  /** When that budget is scheduled: when its active period ends (the limit may rise then). */
  until?: Date;
  /** For people: what sets the limit, e.g. `maxUnavailable` or `rollout.budgets[1] ("0 9 * * 1-5" for 8h)`. */
  source: string;
}

/**
 * The pool's effective disruption limit at `now`: the minimum of
 * `maxUnavailable` and every active budget (on a tie the earlier one is named,
 * `maxUnavailable` first). Throws on an invalid spec (callers fail closed).
 */
export function budgetLimit(
  input: Pick<GateInput, "pool" | "memberCount" | "now">,
): BudgetLimit {
  const policy = poolPolicy(input.pool);
  let best: BudgetLimit = {
    limit: resolveMaxUnavailable(policy.rollout?.maxUnavailable, input.memberCount),
    source: "maxUnavailable",
  };
  const budgets = policy.rollout?.budgets ?? [];
  if (budgets.length === 0) return best;
  const tz = poolTimeZone(input.pool);
  budgets.forEach((b, i) => {
    const field = `rollout.budgets[${i}]`;
    const err = budgetError(b, field);
    if (err) throw new Error(err);
    const limit = resolveBudget(b.maxUnavailable, input.memberCount);
    if (limit >= best.limit) return;
    if (b.schedule === undefined || b.duration === undefined) {
      best = { limit, budget: i, source: field };
      return;
    }
    const state = windowState([{ schedule: b.schedule, duration: b.duration }], tz, input.now);
    if (!state.active) return;
    best = {
      limit,
      budget: i,
      until: state.activeUntil,
      source: `${field} (${JSON.stringify(b.schedule)} for ${b.duration})`,
    };
  });
  return best;
}

/**
 * The number of reboot slots of a pool now (its effective limit, for metrics
 * and status). 0 when the spec cannot be read (no new reboots then either).
 * Pass the planner's clock as `now`; without it the wall clock is used.
 */
export function poolSlots(
  input: Pick<GateInput, "pool" | "memberCount"> & { now?: Date },
): number {
  try {
    return budgetLimit({ ...input, now: input.now ?? new Date() }).limit;
  } catch {
    return 0;
  }
}

/** Admits candidates while the pool's effective budget has room. */
export const budgetGate: Gate = {
  name: "budget",
  decide(input: GateInput): GateDecision {
    let limit: BudgetLimit;
    try {
      limit = budgetLimit(input);
    } catch (e) {
      // The planner refuses such a spec first (InvalidSpec); never reboot on a spec we cannot read.
      return {
        admit: [],
        wait: {
          reason: BUDGET_EXHAUSTED,
          message: `no new reboots: cannot read spec.rollout: ${(e as Error).message}`,
        },
      };
    }
    const tz = poolTimeZone(input.pool);
    const until = limit.until ? ` until ${formatInZone(limit.until, tz)}` : "";
    if (limit.limit === 0) {
      return {
        admit: [],
        wait: {
          reason: BUDGET_EXHAUSTED,
          message: `no new reboots: ${limit.source} allows 0 disrupted nodes${until}`,
          until: limit.until,
        },
      };
    }
    const inUse = input.disrupted.length;
    const room = Math.max(0, limit.limit - inUse);
    if (input.candidates.length <= room) return { admit: input.candidates };
    return {
      admit: input.candidates.slice(0, room),
      wait: {
        reason: BUDGET_EXHAUSTED,
        message: `${inUse}/${limit.limit} reboot slots in use (${limit.source}${until})`,
        until: limit.until,
        // Slots are handed out at the budget's pace: a wait, not a block (only a limit of 0
        // blocks). Other pools' fairness must keep counting this pool's nodes as competing.
        routine: true,
      },
    };
  },
};
