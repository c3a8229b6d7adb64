/**
 * A pool whose plans' writes keep failing says so in its status: past the pool's
 * `progressTimeoutSeconds` of failures in a row, the status gets
 * `Degraded=True/WritesFailing` and that headline, naming the error and the nodes
 * left as they were. When a plan's writes failed, on the status as last written
 * (the plan's tells of writes that did not happen); when only evictions failed
 * (forbidden, refused by an admission policy: the rest of the plan is written) or a
 * node's pods could not be listed (that node waits with its pods unknown), on the
 * plan's. A pool already Degraded for another reason keeps that reason and
 * headline (what gates and other pools act on), its message saying the writes fail
 * too (once: a status that already says so, `status.writesFailingSince`, keeps its
 * message). The next plan whose writes succeed writes its own status, which drops it. The
 * streak is this leader's memory: after a restart or a change of leader it starts
 * again (the `WritesFailed` events say each failure meanwhile).
 *
 * @module
 */
import {
  type BootcNodePoolStatus,
  type Condition,
  findCondition,
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
  /** What failed were reads the plan needs (pod lists): those nodes wait, their pods unknown. */
  read?: boolean;
}

/** How the note on failing writes starts (a message carries it once). */
const NOTE = "the controller's writes for this pool have failed since ";

/**
 * `base` with a failing streak said, or undefined while it is shorter than `boundMs`
 * (a failure retried at once is no news). `stored` is the status as stored: its
 * Degraded condition's transition time stands while the condition does not change,
 * so an unchanged streak is no new write.
 */
export function writesFailingStatus(
  base: BootcNodePoolStatus | undefined,
  failure: WritesFailure,
  now: Date,
  boundMs: number,
  stored: BootcNodePoolStatus | undefined = base,
): BootcNodePoolStatus | undefined {
  if (now.getTime() - failure.since.getTime() < boundMs) return undefined;
  const names = [...failure.nodes].sort();
  const which = names.length === 0
    ? ""
    : ` (${failure.read ? "nodes waiting, their pods unknown" : "nodes left as they were"}: ${
      names.slice(0, 5).join(", ")
    }${names.length > 5 ? ` and ${names.length - 5} more` : ""})`;
  // No running duration in the message: an unchanged streak is no new write.
  const note = `${NOTE}${formatTime(failure.since)}${which}: ${failure.error}`;
  const degraded = findCondition(base?.conditions, PoolConditionType.Degraded);
  const other = degraded?.status === "True" && degraded.reason !== PoolDegradedReason.WritesFailing;
  // Another reason's message that already carries the note (a status this wrote) keeps it.
  const said = other && base?.writesFailingSince !== undefined;
  const condition = {
    type: PoolConditionType.Degraded,
    status: "True" as const,
    reason: other ? degraded.reason : PoolDegradedReason.WritesFailing,
    message: said
      ? degraded.message
      : (other ? `${degraded.message}; ${note}` : note).slice(0, 1024),
  };
  const timed = setCondition(stored?.conditions, condition, now)
    .find((c) => c.type === PoolConditionType.Degraded)!;
  return {
    ...base,
    ...(other ? {} : { state: PoolDegradedReason.WritesFailing }),
    writesFailingSince: said ? base!.writesFailingSince : formatTime(failure.since),
    conditions: replaceCondition(base?.conditions, timed),
  };
}

function replaceCondition(list: readonly Condition[] | undefined, next: Condition): Condition[] {
  const out = (list ?? []).filter((c) => c.type !== next.type);
  return [...out, next];
}
