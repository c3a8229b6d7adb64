/**
 * The Pool Reconciler's decisions as one pure function: given a pool, the
 * cluster as the caches see it, the target image and the time, it returns the
 * writes to make (in order), the events to record and the pool's new status.
 * The shell (`reconciler.ts`) only gathers the inputs and applies the plan.
 *
 * The steps, each in a module of its own (`planPool` only composes them):
 * 0. spec check (`spec_check.ts`): what the CRD schema cannot reject;
 * 1. resolution (`resolution.ts`, `failure_policy.ts`): the digest-pinned target, after
 *    the failure record had its say;
 * 2. membership (`membership.ts`): members, BootcNodes in sync, nodes handed back;
 * 3. in flight (`in_flight.ts`): every disrupted node repaired, drained, rebooted,
 *    verified, released;
 * 4. health response (`health_response.ts`): the `onFailure` policy on failures;
 * 5. slots (`gated_slots.ts`, `slot_grant.ts`, `gates/`): new reboot slots as the gates allow;
 * 6. stalled (`stalled.ts`): nodes whose status does not keep up with their spec;
 * 7. rollout record (`rollout_record.ts`): history, failure record, circuit, channel;
 * 8. status (`pool_status.ts`).
 *
 * The operator's in-flight facts live on each Node (the disruption record, see
 * `disruption.ts`), so a node counts against the budget until the operator has
 * finished or undone its work there, whatever happened to its BootcNode, and a
 * pool whose spec goes bad still finishes or undoes what it started.
 *
 * @module
 */
import {
  type BootcNodePoolStatus,
  findCondition,
  PoolConditionType,
  PoolDegradedReason,
} from "../lib/api/mod.ts";
import { countedState, EffectiveState, NodeState } from "../lib/api/node_state.ts";
import { canaryStep } from "./canary.ts";
import { effectiveTarget, failureRecord } from "./failure_policy.ts";
import { invalidSlots, planGatedSlots } from "./gated_slots.ts";
import { respondToHealth } from "./health_response.ts";
import { lastGoodImage } from "./history.ts";
import { progressInFlight, RolloutContext } from "./in_flight.ts";
import {
  classifyMember,
  type Member,
  ownedBootcNodes,
  planMembership,
  POOL_FINALIZER,
  releaseNode,
  releaseOrphans,
} from "./membership.ts";
import { type Plan, PlanBuilder, type PlanInput, PLANNER_DEFAULTS } from "./plan.ts";
import { buildPoolStatus, emptyCounts } from "./pool_status.ts";
import { priorTarget, resolutionNeed, resolveTarget } from "./resolution.ts";
import { rolloutRecord } from "./rollout_record.ts";
import { specErrors } from "./spec_check.ts";
import { poolTimeZone, windowState } from "./gates/mod.ts";
import { reportStalled } from "./stalled.ts";

export { owningPool, POOL_FINALIZER } from "./membership.ts";
export type {
  Action,
  MergePatch,
  Observation,
  Plan,
  PlanInput,
  PlannedEvent,
  PlannerOptions,
} from "./plan.ts";
export {
  pollIntervalMs,
  type ResolutionMemo,
  type ResolutionNeed,
  resolutionNeed,
  type ResolveResult,
} from "./resolution.ts";
// The channel and circuit decisions made before planning (the chosen version is the ref).
export { type ChannelPlan, channelWant, plannedChannel } from "./channel_step.ts";

/** Plans one reconcile of `input.pool`. Pure: same input, same plan. */
export function planPool(input: PlanInput): Plan {
  const { pool, now } = input;
  const options = { ...PLANNER_DEFAULTS, ...input.options };
  const plan = new PlanBuilder(pool.metadata.name ?? "", now);
  const hasFinalizer = (pool.metadata.finalizers ?? []).includes(POOL_FINALIZER);
  if (pool.metadata.deletionTimestamp) return planDeletion(input, plan, hasFinalizer);
  if (!hasFinalizer) plan.act({ kind: "addFinalizer" });

  // 0. Invalid specs the CRD schema cannot catch: no membership change, no new slot,
  // but what is in flight is finished (reboot already asked for) or undone (not yet).
  const need = resolutionNeed(pool, now, input.resolution, options);
  const errors = specErrors(input, need);
  if (errors.length > 0 || need.kind === "invalid") return planInvalid(input, plan, errors);
  if (input.pullSecretIssue) plan.issues.push(input.pullSecretIssue);

  // 1. The target: what the spec resolves to, after the failure record had its say.
  const resolved = resolveTarget(pool, need, input.resolution, plan);
  const record = failureRecord(pool);
  const effective = effectiveTarget({
    pool,
    specTarget: resolved.target,
    priorTarget: priorTarget(pool),
    record,
  });
  const target = effective.target;
  if (effective.note) plan.notes.push(effective.note);
  if (target && target.digest !== pool.status?.targetDigest) {
    plan.poolEvent("Normal", "TargetChanged", `rolling out ${target.image}`);
  }
  const lastGood = lastGoodImage(pool.status?.history, target?.image);
  const rollbackImage = lastGood ? { image: lastGood.image, digest: lastGood.digest } : undefined;

  // 2. Membership; 3. the nodes in flight.
  const { members, releasing, staging } = planMembership(input, plan, target, {
    stagingOpen: stagingOpen(input),
    rollbackImage,
  });
  if (staging && staging.held.length > 0) {
    plan.notes.push(
      `staging limit: ${staging.limit - staging.room}/${staging.limit} downloading, ` +
        `${staging.held.length} queued`,
    );
  }
  const ctx = new RolloutContext(input, plan, pool);
  ctx.inUse += releasing.length;
  progressInFlight(members, ctx);

  // 4. Health failures and the onFailure policy.
  const onTarget = (m: Member) => target !== undefined && m.bn?.spec.desiredImage === target.image;
  const updated =
    members.filter((m) => onTarget(m) && !m.disrupted && m.state === EffectiveState.UpToDate)
      .length;
  const health = respondToHealth({
    ctx,
    members,
    target,
    effective,
    record,
    lastGood: lastGood?.image,
    onTarget,
  });
  const canary = target
    ? canaryStep({
      pool,
      image: target.image,
      memberCount: members.length,
      updated,
      // A canary that failed its watch fails whatever the policy (Halt included).
      failed: health.haltFor !== undefined || (health.canaryFailed ?? false),
      rollback: effective.rollback,
      notReadyUntil: health.notReadyUntil,
      now,
    })
    : undefined;

  // 5. New slots through the gates; 6. nodes that do not keep up.
  if (ctx.verifying.length > 0) plan.notes.push(`verifying ${ctx.verifying.join("; ")}`);
  const gated = planGatedSlots({
    ctx,
    members,
    releasing,
    target,
    haltFor: health.haltFor,
    updated,
    canary,
  });
  let waitReason = gated.waitReason;
  if (!waitReason && staging && staging.held.length > 0) waitReason = "StagingLimit";
  reportStalled(members, ctx);
  if (ctx.degradedMessages.length > 0) {
    plan.issues.push({
      reason: PoolDegradedReason.NodeDegraded,
      message: ctx.degradedMessages.join("; "),
    });
  }

  // 7. History, failure record, channel, canary; 8. status.
  const rollout = rolloutRecord({
    input,
    plan,
    members,
    target,
    onTarget,
    effective,
    health,
    canary,
    updated,
  });
  const counts = countStates(members, ctx);
  const status = buildPoolStatus({
    prior: pool.status,
    generation: pool.metadata.generation,
    target,
    lastResolvedTime: resolved.lastResolvedTime,
    counts,
    slotsInUse: ctx.inUse,
    slots: gated.slots,
    queue: gated.queue,
    paused: pool.spec.rollout?.paused ?? false,
    waitReason,
    issues: plan.issues,
    note: plan.notes.join("; ") || undefined,
    rollout,
    now,
  });
  conditionEvents(plan, pool.status, status);
  return finish(plan, status, gated.slots.limit, counts);
}

/** A pool being deleted hands every node back, then lets go of its finalizer. */
function planDeletion(input: PlanInput, plan: PlanBuilder, hasFinalizer: boolean): Plan {
  const owned = ownedBootcNodes(input);
  for (const bn of owned) {
    releaseNode(input, plan, bn.metadata.name ?? "", bn, "pool is being deleted");
  }
  const orphans = releaseOrphans(input, plan, new Set());
  if (owned.length === 0 && orphans.length === 0 && hasFinalizer) {
    plan.act({ kind: "removeFinalizer" });
  }
  return finish(plan, undefined, 0, emptyCounts());
}

/**
 * The pool's spec is invalid: report it, change no membership, hand out no slot,
 * and finish or undo the disruption of the nodes in flight with what they have.
 */
function planInvalid(input: PlanInput, plan: PlanBuilder, specErrors: string[]): Plan {
  const { pool, now } = input;
  const members: Member[] = [];
  for (const bn of ownedBootcNodes(input)) {
    const node = input.nodes.get(bn.metadata.name ?? "");
    if (!node || bn.metadata.deletionTimestamp) continue;
    members.push({ node, bn, ...classifyMember(node, bn) });
  }
  const ctx = new RolloutContext(input, plan, pool);
  progressInFlight(members, ctx, "undoUndrained");
  const counts = countStates(members, ctx);
  const status = buildPoolStatus({
    prior: pool.status,
    generation: pool.metadata.generation,
    target: priorTarget(pool),
    lastResolvedTime: pool.status?.lastResolvedTime,
    counts,
    slotsInUse: ctx.inUse,
    slots: { ...invalidSlots(specErrors.join("; ")), waiting: 0 },
    paused: pool.spec.rollout?.paused ?? false,
    issues: [{ reason: PoolDegradedReason.InvalidSpec, message: specErrors.join("; ") }],
    now,
  });
  conditionEvents(plan, pool.status, status);
  return finish(plan, status, 0, counts);
}

/**
 * False while the pool's windows are closed and it stages only inside them
 * (`maintenance.stageOutsideWindows: false`); a pool without windows always stages.
 */
function stagingOpen(input: PlanInput): boolean {
  const m = input.pool.spec.maintenance;
  if (m?.stageOutsideWindows !== false || !m.windows?.length) return true;
  try {
    return windowState(m.windows, poolTimeZone(input.pool), input.now).active;
  } catch {
    return false; // unreadable windows are InvalidSpec before this is reached
  }
}

/**
 * The pool's counts: each member as its classification counts it (`countedState`:
 * failed, rolled back and daemon errors are Degraded; being verified is Rebooting;
 * held back by a gate is Pending). Whether it is stuck (drain or reboot timeout,
 * failed checks, stalled) is this plan's judgement, not the Stalled condition the
 * cache still shows.
 */
function countStates(members: readonly Member[], ctx: RolloutContext) {
  const counts = emptyCounts();
  for (const m of members) {
    const state = m.cls.state === NodeState.Stalled ? m.cls.phase : m.cls.state;
    // Granted a slot by this plan: in a slot once it is applied, as every view will see it.
    const granted = m.disrupted && !m.cls.disrupted;
    const counted = granted ? EffectiveState.Rebooting : countedState(state, m.cls.effective);
    counts[ctx.stuck.has(m.node.name) ? "Degraded" : counted]++;
  }
  return counts;
}

function finish(
  plan: PlanBuilder,
  status: BootcNodePoolStatus | undefined,
  slots: number,
  counts: Plan["counts"],
): Plan {
  return {
    actions: plan.actions,
    events: plan.events,
    status,
    requeueAfterMs: plan.requeueAfterMs,
    draining: plan.draining,
    slots,
    needPods: plan.needPods,
    counts,
    issues: plan.issues,
  };
}

/** Events for changes of the pool's Degraded and UpToDate conditions. */
function conditionEvents(
  plan: PlanBuilder,
  prior: BootcNodePoolStatus | undefined,
  next: BootcNodePoolStatus,
): void {
  const before = findCondition(prior?.conditions, PoolConditionType.Degraded);
  const after = findCondition(next.conditions, PoolConditionType.Degraded);
  if (after?.status === "True" && (before?.status !== "True" || before.reason !== after.reason)) {
    plan.poolEvent("Warning", after.reason, after.message);
  } else if (after?.status === "False" && before?.status === "True") {
    plan.poolEvent("Normal", "Recovered", `pool is healthy again (was ${before.reason})`);
  }
  const circuitBefore = findCondition(prior?.conditions, PoolConditionType.CircuitOpen);
  const circuitAfter = findCondition(next.conditions, PoolConditionType.CircuitOpen);
  if (circuitAfter?.status === "True" && circuitBefore?.status !== "True") {
    plan.poolEvent("Warning", "CircuitOpen", circuitAfter.message);
  } else if (circuitAfter?.status === "False" && circuitBefore?.status === "True") {
    plan.poolEvent("Normal", "CircuitClosed", "the circuit breaker was reset");
  }
  const upBefore = findCondition(prior?.conditions, PoolConditionType.UpToDate);
  const upAfter = findCondition(next.conditions, PoolConditionType.UpToDate);
  if (upAfter?.status === "True" && upBefore?.status !== "True") {
    plan.poolEvent("Normal", "RolloutComplete", upAfter.message);
  }
}
