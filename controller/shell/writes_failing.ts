/**
 * A pool whose plans' writes keep failing says so in its status: past the pool's
 * `progressTimeoutSeconds` of failures in a row, the status gets
 * `Degraded=True/WritesFailing` and that headline, naming the error and the nodes
 * left as they were. When a plan's writes failed, on the status as last written
 * (the plan's tells of writes that did not happen); when only evictions failed
 * (forbidden, refused by an admission policy: the rest of the plan is written), on
 * the plan's. The next plan whose writes succeed writes its own status, which drops
 * it. The streak is this leader's memory: after a restart or a change of leader it
 * starts again (the `WritesFailed` events say each failure meanwhile).
 *
 * @module
 */
import {
  type BootcNodePoolStatus,
  PoolConditionType,
  PoolDegradedReason,
  setCondition,
} from "../../lib/api/mod.ts";
import { formatTime } from "../model/slots.ts";

/** A run of reconciles of one pool whose writes failed. */
export interface WritesFailure {
  /** When the first of them failed. */
  since: Date;
  /** The last error's message. */
  error: string;
  /** The nodes whose planned writes did not all happen in the last one. */
  nodes: readonly string[];
}

/**
 * The status to write for a failing streak, or undefined while it is shorter than
 * `boundMs` (a failure retried at once is no news).
 */
export function writesFailingStatus(
  stored: BootcNodePoolStatus | undefined,
  failure: WritesFailure,
  now: Date,
  boundMs: number,
): BootcNodePoolStatus | undefined {
  if (now.getTime() - failure.since.getTime() < boundMs) return undefined;
  const names = [...failure.nodes].sort();
  const which = names.length === 0
    ? ""
    : ` (nodes left as they were: ${names.slice(0, 5).join(", ")}${
      names.length > 5 ? ` and ${names.length - 5} more` : ""
    })`;
  // No running duration in the message: an unchanged streak is no new write.
  const message = `the controller's writes for this pool have failed since ${
    formatTime(failure.since)
  }${which}: ${failure.error}`.slice(0, 1024);
  return {
    ...stored,
    state: PoolDegradedReason.WritesFailing,
    conditions: setCondition(stored?.conditions, {
      type: PoolConditionType.Degraded,
      status: "True",
      reason: PoolDegradedReason.WritesFailing,
      message,
    }, now),
  };
}
