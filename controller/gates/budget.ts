/**
 * The pool's own disruption budget: at most `maxUnavailable` of its nodes
 * disrupted at once (an integer, or a percentage of the pool rounded up, at
 * least 1), and at most what every active `rollout.budgets` entry allows
 * (Karpenter-style: a budget with a schedule is active from each cron start,
 * read in `spec.timeZone`, for its duration; one without is always active; the
 * most restrictive wins; 0 means no new reboot). Reason `BudgetExhausted` when
 * candidates wait for a slot, or whenever the limit is 0. The arithmetic
 * (int-or-percent, rounding, minimums, which budget wins) is `lib/api/budget.ts`;
 * this module evaluates the schedules.
 *
 * @module
 */
import {
  intOrPercentError,
  POOL_MAX_UNAVAILABLE,
  poolSlotLimit,
  type ScheduledBudgetState,
  type SlotLimit,
} from "../../lib/api/budget.ts";
import type { Gate, GateDecision, GateInput, SpecCheckInput } from "./gate.ts";
import { poolPolicy, poolTimeZone, type RolloutBudget } from "./policy.ts";
import { durationError, formatInZone, scheduleError, windowState } from "./schedule.ts";

/** The wait reason of this gate. */
export const BUDGET_EXHAUSTED = "BudgetExhausted";

/** Why `budget` is not valid at `field` (e.g. `spec.rollout.budgets[0]`), or undefined. */
export function budgetError(budget: RolloutBudget, field: string): string | undefined {
  const errors: string[] = [];
  const valueErr = intOrPercentError(budget.maxUnavailable, {
    field: `${field}.maxUnavailable`,
    minimum: 0,
  });
  if (valueErr) errors.push(valueErr);
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

/**
 * The pool's effective disruption limit at `now` (`lib/api/budget.ts` does the
 * arithmetic; this adds the schedules): the minimum of `maxUnavailable` and
 * every active budget (on a tie the earlier one is named, `maxUnavailable`
 * first). Throws on an invalid spec (callers fail closed).
 */
export function budgetLimit(
  input: Pick<GateInput, "pool" | "memberCount" | "now">,
): SlotLimit {
  const policy = poolPolicy(input.pool);
  return poolSlotLimit({
    maxUnavailable: policy.rollout?.maxUnavailable,
    budgets: budgetStates(input.pool, input.now),
    memberCount: input.memberCount,
  });
}

/**
 * Each `rollout.budgets` entry with whether it is active at `now` (a budget
 * without a schedule always is). Throws when one is invalid.
 */
export function budgetStates(pool: GateInput["pool"], now: Date): ScheduledBudgetState[] {
  const budgets = poolPolicy(pool).rollout?.budgets ?? [];
  if (budgets.length === 0) return [];
  const tz = poolTimeZone(pool);
  return budgets.map((b, i) => {
    const err = budgetError(b, `rollout.budgets[${i}]`);
    if (err) throw new Error(err);
    if (b.schedule === undefined || b.duration === undefined) {
      return { maxUnavailable: b.maxUnavailable, active: true };
    }
    const state = windowState([{ schedule: b.schedule, duration: b.duration }], tz, now);
    return {
      maxUnavailable: b.maxUnavailable,
      active: state.active,
      until: state.activeUntil,
      schedule: b.schedule,
      duration: b.duration,
    };
  });
}

/** Admits candidates while the pool's effective budget has room. */
export const budgetGate: Gate = {
  name: "budget",
  // Only the headline when the limit is 0 (a scheduled budget): with room and nodes in
  // flight the wait is routine and another gate's reason, or none, headlines.
  reasons: [{ reason: BUDGET_EXHAUSTED, blocksPool: true }],
  validate({ pool }: SpecCheckInput): string[] {
    const rollout = poolPolicy(pool).rollout;
    const max = rollout?.maxUnavailable;
    const maxErr = max === undefined ? undefined : intOrPercentError(max, POOL_MAX_UNAVAILABLE);
    return [
      ...(maxErr ? [`spec.${maxErr}`] : []),
      ...(rollout?.budgets ?? []).map((b, i) => budgetError(b, `spec.rollout.budgets[${i}]`)),
    ].filter((e) => e !== undefined);
  },
  decide(input: GateInput): GateDecision {
    let limit: SlotLimit;
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
          message: `no new reboots: ${limit.text} allows 0 disrupted nodes${until}`,
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
        message: `${inUse}/${limit.limit} reboot slots in use (${limit.text}${until})`,
        until: limit.until,
        // Slots are handed out at the budget's pace: a wait, not a block (only a limit of 0
        // blocks). Other pools' fairness must keep counting this pool's nodes as competing.
        routine: true,
      },
    };
  },
};
