/**
 * The pool's events about changes of its conditions: Degraded (its reason) and
 * Recovered, CircuitOpen and CircuitClosed, RolloutComplete, and an event each
 * time the pool starts or stops waiting on a gate (the README's "an event on
 * each change"), derived only from the previous and the new `UpToDate`
 * condition: a gate's reason that appears is `Waiting` (naming the
 * gate and, in its message, until when), one that goes is `WaitingCleared`, a
 * change from one gate to another is one `Waiting`. The reason is written at
 * once whenever it changes (`status_coalesce.ts`: significant), so the next
 * plan's previous condition already has it: one event per change, however
 * often the pool is reconciled, and the event recorder folds repeats of a
 * flapping gate into one Event's count.
 *
 * @module
 */
import {
  type BootcNodePoolStatus,
  type Condition,
  findCondition,
  PoolConditionType,
} from "../../lib/api/mod.ts";
import { GATES, type GateWait } from "../gates/mod.ts";
import {
  type PlanInput,
  type PlannedEvent,
  poolEvent,
  type StatusPart,
  type StepOutput,
  StepWriter,
} from "./plan.ts";

/** The reason the planner gives nodes the staging limit holds back (no gate of its own). */
export const STAGING_LIMIT = "StagingLimit";

/** Every reason a pool can wait on: each gate's, and the staging limit. */
export const WAIT_REASONS: ReadonlySet<string> = new Set([
  ...GATES.flatMap((g) => g.reasons.map((r) => r.reason)),
  STAGING_LIMIT,
]);

/** The pool's wait: a gate's (or the staging limit's) reason, message and end. */
export type PoolWait = Pick<GateWait, "reason" | "message" | "until">;

/** What {@linkcode waitEvents} compares. */
export interface WaitEventsInput {
  pool: string;
  /** The UpToDate condition before this plan (the stored status). */
  before: Condition | undefined;
  /** The UpToDate condition this plan computed. */
  after: Condition | undefined;
  /** The wait behind `after`'s reason, when it is one (its message names until when). */
  wait?: PoolWait;
  /** The pool's new headline (`status.state`), named when a wait ends. */
  state?: string;
}

/** The reason of `c` when it is a wait on a gate. */
function waitingOn(c: Condition | undefined): string | undefined {
  return c?.status === "False" && WAIT_REASONS.has(c.reason) ? c.reason : undefined;
}

/** The Waiting / WaitingCleared event of a change of the UpToDate reason, if any. Pure. */
export function waitEvents(input: WaitEventsInput): PlannedEvent[] {
  const was = waitingOn(input.before);
  const now = waitingOn(input.after);
  if (was === now) return [];
  if (now !== undefined) {
    const message = input.wait?.reason === now ? input.wait.message : input.after?.message;
    const previously = was !== undefined ? ` (was ${was})` : "";
    return [
      poolEvent(input.pool, "Normal", "Waiting", `waiting on ${now}${previously}: ${message}`),
    ];
  }
  const then = input.state ? ` (now ${input.state})` : "";
  return [
    poolEvent(input.pool, "Normal", "WaitingCleared", `no longer waiting on ${was}${then}`),
  ];
}

/**
 * Events for changes of the pool's Degraded, CircuitOpen and UpToDate conditions,
 * `wait` being the wait behind the new UpToDate reason, if any.
 */
export function conditionEvents(
  input: PlanInput,
  next: BootcNodePoolStatus,
  wait?: PoolWait,
): StepOutput {
  const prior = input.pool.status;
  const pool = input.pool.metadata.name ?? "";
  const w = new StepWriter(pool, input.now);
  const before = findCondition(prior?.conditions, PoolConditionType.Degraded);
  const after = findCondition(next.conditions, PoolConditionType.Degraded);
  if (after?.status === "True" && (before?.status !== "True" || before.reason !== after.reason)) {
    w.poolEvent("Warning", after.reason, after.message);
  } else if (after?.status === "False" && before?.status === "True") {
    w.poolEvent("Normal", "Recovered", `pool is healthy again (was ${before.reason})`);
  }
  const degraded = w.events.length;
  const circuitBefore = findCondition(prior?.conditions, PoolConditionType.CircuitOpen);
  const circuitAfter = findCondition(next.conditions, PoolConditionType.CircuitOpen);
  if (circuitAfter?.status === "True" && circuitBefore?.status !== "True") {
    w.poolEvent("Warning", "CircuitOpen", circuitAfter.message);
  } else if (circuitAfter?.status === "False" && circuitBefore?.status === "True") {
    w.poolEvent("Normal", "CircuitClosed", "the circuit breaker was reset");
  }
  const circuit = w.events.length;
  const upBefore = findCondition(prior?.conditions, PoolConditionType.UpToDate);
  const upAfter = findCondition(next.conditions, PoolConditionType.UpToDate);
  w.events.push(...waitEvents({ pool, before: upBefore, after: upAfter, wait, state: next.state }));
  if (upAfter?.status === "True" && upBefore?.status !== "True") {
    w.poolEvent("Normal", "RolloutComplete", upAfter.message);
  }
  const out = w.output();
  const part = (i: number): StatusPart =>
    i < degraded ? "Degraded" : i < circuit ? "CircuitOpen" : "UpToDate";
  return { ...out, events: out.events.map((e, i) => ({ ...e, ofStatus: part(i) })) };
}
