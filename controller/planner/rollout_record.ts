/**
 * Planner step 7: the health-gated rollout's bookkeeping for the pool's
 * status: the revision history (`history.ts`), the failure record and its
 * circuit breaker (`failure_policy.ts`), the channel's report (`channel.ts`)
 * and the canary's note. Only a new image that succeeds ends a run of
 * failures; going back to one that succeeded before does not.
 *
 * @module
 */
import { ANNOTATION_RESET_CIRCUIT, type BootcNodePoolStatus } from "../../lib/api/mod.ts";
import type { CanaryStatus } from "./canary.ts";
import { channelFailed, channelUnverified } from "./channel.ts";
import { EffectiveState } from "../model/effective_state.ts";
import {
  circuitOpen,
  type EffectiveTarget,
  type FailureRecord,
  maxRollbacks,
  retryNote,
  rollbackNote,
} from "./failure_policy.ts";
import type { HealthResponse } from "./health_response.ts";
import { nextHistory } from "./history.ts";
import type { Member } from "./membership.ts";
import { type PlanInput, poolEvent, type StepOutput, stepOutput } from "./plan.ts";
import type { RolloutRecord } from "./pool_status.ts";
import type { Target } from "../model/types.ts";

/** What step 7 works on. */
export interface RolloutRecordInput {
  input: PlanInput;
  /** The members after the slot step (a node granted a slot in this plan is disrupted). */
  members: readonly Member[];
  target: Target | undefined;
  /** Whether a member's BootcNode is bound for the target. */
  onTarget: (m: Member) => boolean;
  effective: EffectiveTarget;
  health: HealthResponse;
  canary: CanaryStatus | undefined;
  /** Members done on the target. */
  updated: number;
  /** `status.approval` after this plan (step 5), if the pool asks for approvals. */
  approval?: BootcNodePoolStatus["approval"];
  /** The signature verdict of the candidate image (step 1b). */
  verification?: BootcNodePoolStatus["verification"];
  /** The candidate did not verify under Enforce (a channel passes its version over). */
  candidateRefused?: boolean;
}

/** What step 7 decided: the rollout record for the pool's status, and its notes and events. */
export interface RolloutRecordStep {
  rollout: RolloutRecord;
  out: StepOutput;
}

/** The rollout record for the pool's status after this plan. */
export function rolloutRecord(step: RolloutRecordInput): RolloutRecordStep {
  const { input, members, target, onTarget, effective, health, canary } = step;
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
      : record.retried && target?.digest === record.retried.digest
      ? retryNote(record.retried)
      : undefined,
    signature: signatureNote(step.verification, target),
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
  const channel = channelReport(input, health, step.candidateRefused ?? false);
  const canaryNotes = canary && canary.phase !== "Passed" && !(pool.spec.rollout?.paused ?? false)
    ? [
      canary.phase === "Soaking"
        ? `canary soaking until ${canary.soakUntil}`
        : `canary ${canary.phase.toLowerCase()}: ${step.updated}/${canary.nodes}`,
    ]
    : [];
  const rollout: RolloutRecord = {
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
    channel: channel.status,
    circuit: circuitStatus(input, record),
    approval: step.approval,
  };
  return {
    rollout,
    out: stepOutput({
      notes: [...channel.notes, ...canaryNotes],
      events: channel.events,
      wake: channel.wake,
    }),
  };
}

/**
 * The channel's report: its status (the current version failed: it joins the
 * failed versions; it did not verify: it is passed over for a while), its note, a wake-up for the next check, and the event for a
 * version the open circuit holds back.
 */
function channelReport(input: PlanInput, health: HealthResponse, refused: boolean) {
  const { pool, now } = input;
  let status = input.channel?.status;
  const notes: string[] = [];
  if (status && input.channel?.ref && input.channel.ref === pool.spec.image.ref) {
    if (health.failed && health.newFailure) status = channelFailed(status);
    else if (refused) status = channelUnverified(status, now);
    if (status.message) notes.push(`channel: ${status.message}`);
  }
  // The next channel check is a time, not an event: come back then (a check already due is
  // being listed; its result wakes the pool).
  const wake = input.channel && input.channel.dueAt.getTime() > now.getTime()
    ? input.channel.dueAt.getTime() - now.getTime()
    : undefined;
  const blocked = input.channel?.blockedByCircuit;
  const events = blocked
    ? [poolEvent(
      pool.metadata.name ?? "",
      "Warning",
      "UpdateAvailable",
      `version ${blocked} of ${status?.repository} is available, but the ` +
        `circuit is open: not rolled out until it is reset`,
      `circuit-available/${blocked}`,
    )]
    : [];
  return { status, notes, wake, events };
}

/** The CircuitOpen condition's facts after this plan's failure record. */
function circuitStatus(input: PlanInput, record: FailureRecord): RolloutRecord["circuit"] {
  const { pool } = input;
  const open = circuitOpen(pool, record);
  return {
    open,
    message: open
      ? `${record.consecutiveFailures} consecutive failed rollouts (maxRollbacks ` +
        `${maxRollbacks(pool)}): no automatic change until the circuit is reset ` +
        `(kubectl annotate bnp ${pool.metadata.name} ${ANNOTATION_RESET_CIRCUIT}=$(date +%s) --overwrite)`
      : `${record.consecutiveFailures} consecutive failed rollout(s) of ${
        maxRollbacks(pool)
      } allowed`,
  };
}

/** How a revision records its image's signature verdict, when there is one for it. */
function signatureNote(
  v: BootcNodePoolStatus["verification"],
  target: Target | undefined,
): string | undefined {
  if (!v || v.image !== target?.image) return undefined;
  return v.verified ? `verified by ${v.by ?? "a trusted key"}` : `not verified: ${v.message ?? ""}`;
}
