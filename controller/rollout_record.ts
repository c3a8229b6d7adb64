/**
 * Planner step 7: the health-gated rollout's bookkeeping for the pool's
 * status: the revision history (`history.ts`), the failure record and its
 * circuit breaker (`failure_policy.ts`), the channel's report (`channel.ts`)
 * and the canary's note. Only a new image that succeeds ends a run of
 * failures; going back to one that succeeded before does not.
 *
 * @module
 */
import { ANNOTATION_RESET_CIRCUIT } from "../lib/api/mod.ts";
import type { CanaryStatus } from "./canary.ts";
import { channelFailed } from "./channel.ts";
import { EffectiveState } from "./effective_state.ts";
import {
  circuitOpen,
  type EffectiveTarget,
  type FailureRecord,
  maxRollbacks,
  rollbackNote,
} from "./failure_policy.ts";
import type { HealthResponse } from "./health_response.ts";
import { nextHistory } from "./history.ts";
import type { Member } from "./membership.ts";
import type { PlanBuilder, PlanInput } from "./plan.ts";
import type { RolloutRecord } from "./pool_status.ts";
import type { Target } from "./types.ts";

/** What step 7 works on. */
export interface RolloutRecordInput {
  input: PlanInput;
  plan: PlanBuilder;
  members: readonly Member[];
  target: Target | undefined;
  /** Whether a member's BootcNode is bound for the target. */
  onTarget: (m: Member) => boolean;
  effective: EffectiveTarget;
  health: HealthResponse;
  canary: CanaryStatus | undefined;
  /** Members done on the target. */
  updated: number;
}

/** The rollout record for the pool's status after this plan (notes, wake-ups and events on `plan`). */
export function rolloutRecord(step: RolloutRecordInput): RolloutRecord {
  const { input, plan, members, target, onTarget, effective, health, canary } = step;
  const { pool, now } = input;
  const { failed } = health;
  let record: FailureRecord = health.record;
  const complete = target !== undefined && members.length > 0 &&
    members.every((m) => onTarget(m) && !m.disrupted && m.state === EffectiveState.UpToDate);
  const history = nextHistory({
    prior: pool.status?.history,
    target,
    complete,
    failed,
    note: effective.rollback && effective.hold
      ? rollbackNote(effective.hold.failedImage)
      : undefined,
    now,
  });
  const justSucceeded = complete && history.at(-1)?.outcome === "Succeeded" &&
    pool.status?.history?.at(-1)?.outcome !== "Succeeded";
  // Going back to an image that had succeeded before (a rollback, by hold or by a
  // channel) does not end a run of failures.
  const returned = (pool.status?.history ?? []).some((r) =>
    r.image === target?.image && r.outcome === "Succeeded"
  );
  if (justSucceeded && !effective.rollback && !returned) {
    record = { ...record, consecutiveFailures: 0 };
  }
  let channel = input.channel?.status;
  if (channel && input.channel?.ref && input.channel.ref === pool.spec.image.ref) {
    if (failed && health.newFailure) channel = channelFailed(channel);
    if (channel.message) plan.notes.push(`channel: ${channel.message}`);
  }
  // The next channel check is a time, not an event: come back then (a check already due is
  // being listed; its result wakes the pool).
  if (input.channel && input.channel.dueAt.getTime() > now.getTime()) {
    plan.wakeAt(input.channel.dueAt);
  }
  if (input.channel?.blockedByCircuit) {
    plan.poolEvent(
      "Warning",
      "UpdateAvailable",
      `version ${input.channel.blockedByCircuit} of ${channel?.repository} is available, but the ` +
        `circuit is open: not rolled out until it is reset`,
      `circuit-available/${input.channel.blockedByCircuit}`,
    );
  }
  const open = circuitOpen(pool, record);
  if (canary && canary.phase !== "Passed" && !(pool.spec.rollout?.paused ?? false)) {
    plan.notes.push(
      canary.phase === "Soaking"
        ? `canary soaking until ${canary.soakUntil}`
        : `canary ${canary.phase.toLowerCase()}: ${step.updated}/${canary.nodes}`,
    );
  }
  return {
    history,
    failedDigests: record.failedDigests,
    consecutiveFailures: record.consecutiveFailures,
    circuitReset: record.circuitReset,
    rollbackHold: effective.rollback
      ? effective.hold
      : failed?.outcome === "RolledBack"
      ? record.rollbackHold
      : undefined,
    canary,
    channel,
    circuit: {
      open,
      message: open
        ? `${record.consecutiveFailures} consecutive failed rollouts (maxRollbacks ` +
          `${maxRollbacks(pool)}): no automatic change until the circuit is reset ` +
          `(kubectl annotate bnp ${pool.metadata.name} ${ANNOTATION_RESET_CIRCUIT}=$(date +%s) --overwrite)`
        : `${record.consecutiveFailures} consecutive failed rollout(s) of ${
          maxRollbacks(pool)
        } allowed`,
    },
  };
}
