/**
 * The Pool Reconciler's decisions as one pure function: given a pool, the
 * cluster as the caches see it, the target image and the time, it returns the
 * writes to make (in order), the events to record and the pool's new status.
 * The shell (`reconciler.ts`) only gathers the inputs and applies the plan.
 *
 * The steps, each in a module of its own:
 * 1. resolution (`resolution.ts`): the digest-pinned target;
 * 2. membership (`membership.ts`): members, BootcNodes in sync, nodes handed back;
 * 3. in flight (`in_flight.ts`): every disrupted node repaired, drained, rebooted, released;
 * 4. slots (`slot_grant.ts`): new reboot slots within the budget;
 * 5. stalled (`stalled.ts`): nodes whose status does not keep up with their spec;
 * 6. status (`pool_status.ts`).
 *
 * The operator's in-flight facts live on each Node (the disruption record, see
 * `disruption.ts`), so a node counts against the budget until the operator has
 * finished or undone its work there, whatever happened to its BootcNode, and a
 * pool whose spec goes bad still finishes or undoes what it started.
 *
 * @module
 */
import {
  ANNOTATION_FAILED_IMAGE,
  ANNOTATION_RESET_CIRCUIT,
  type BootcNodePoolStatus,
  findCondition,
  NodeConditionType,
  PoolConditionType,
  PoolDegradedReason,
  poolNameError,
} from "../lib/api/mod.ts";
import { nodeDisrupted } from "./disruption.ts";
import { EffectiveState, effectiveState } from "./effective_state.ts";
import { canaryStep, gatePhase } from "./canary.ts";
import { channelError, channelFailed } from "./channel.ts";
import {
  circuitOpen,
  effectiveTarget,
  failureRecord,
  maxRollbacks,
  recordFailure,
  respondToFailure,
  rollbackNote,
} from "./failure_policy.ts";
import { soakFailure } from "./health.ts";
import { lastGoodImage, nextHistory } from "./history.ts";
import { progressInFlight, RolloutContext } from "./in_flight.ts";
import {
  type Member,
  ownedBootcNodes,
  owningPool,
  planMembership,
  POOL_FINALIZER,
  releaseNode,
  releaseOrphans,
} from "./membership.ts";
import { type Plan, PlanBuilder, type PlanInput, PLANNER_DEFAULTS } from "./plan.ts";
import { buildPoolStatus, emptyCounts, type RolloutRecord } from "./pool_status.ts";
import { priorTarget, resolutionNeed, resolveTarget } from "./resolution.ts";
import { selectorError } from "./selector.ts";
import {
  type Candidate,
  type ClusterView,
  composeGates,
  GATES,
  orderingErrors,
  policyErrors,
  poolSlots,
  poolTimeZone,
  waitingCandidates,
  windowState,
} from "./gates/mod.ts";
import { grantSlots, slotCandidates } from "./slot_grant.ts";
import { resolveMaxUnavailable } from "./slots.ts";
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

/** Plans one reconcile of `input.pool`. Pure: same input, same plan. */
export function planPool(input: PlanInput): Plan {
  const { pool, now } = input;
  const options = { ...PLANNER_DEFAULTS, ...input.options };
  const plan = new PlanBuilder(pool.metadata.name ?? "", now);
  const hasFinalizer = (pool.metadata.finalizers ?? []).includes(POOL_FINALIZER);

  // A pool being deleted hands every node back, then lets go of its finalizer.
  if (pool.metadata.deletionTimestamp) {
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
  if (!hasFinalizer) plan.act({ kind: "addFinalizer" });

  // Invalid specs the CRD schema cannot catch: no membership change, no new slot, but
  // what is in flight is finished (reboot already asked for) or undone (not yet).
  const specErrors: string[] = [];
  const nameErr = poolNameError(pool.metadata.name ?? "");
  if (nameErr) specErrors.push(nameErr);
  const selErr = selectorError(pool.spec.nodeSelector);
  if (selErr) specErrors.push(selErr);
  const need = resolutionNeed(pool, now, input.resolution, options);
  if (need.kind === "invalid") specErrors.push(need.message);
  try {
    resolveMaxUnavailable(pool.spec.rollout?.maxUnavailable, 1);
  } catch (e) {
    specErrors.push((e as Error).message);
  }
  specErrors.push(...orderingErrors(pool, input.poolObjects ?? [pool]));
  specErrors.push(...policyErrors(pool.spec));
  const chErr = channelError(pool.spec.image.channel);
  if (chErr) specErrors.push(chErr);
  if (input.pullSecretIssue?.reason === PoolDegradedReason.InvalidSpec) {
    specErrors.push(input.pullSecretIssue.message);
  }
  if (specErrors.length > 0 || need.kind === "invalid") {
    return planInvalid(input, plan, specErrors);
  }
  if (input.pullSecretIssue) plan.issues.push(input.pullSecretIssue);

  const resolved = resolveTarget(pool, need, input.resolution, plan);
  const lastResolvedTime = resolved.lastResolvedTime;
  let record = failureRecord(pool);
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
  const slots = poolSlots({ pool, memberCount: members.length, now });

  // Health: failures in flight, and canary nodes failing during their soak.
  const onTarget = (m: Member) => target !== undefined && m.bn?.spec.desiredImage === target.image;
  const updated = members.filter((m) =>
    onTarget(m) && !m.disrupted && m.state === EffectiveState.UpToDate
  );
  const priorCanary = target && pool.status?.canary?.image === target.image
    ? pool.status.canary
    : undefined;
  if (target && priorCanary && priorCanary.phase !== "Passed") {
    // Any member that ran the target and was released, whatever it reports now (a host
    // that fell back runs the old image again).
    for (const m of members.filter((m) => onTarget(m) && !m.disrupted)) {
      const why = m.bn && soakFailure(m.node, m.bn, m.desired ?? { image: target.image }, now);
      if (why) ctx.failures.push({ node: m.node.name, message: why });
    }
  }
  let failed: { outcome: "RolledBack" | "Failed"; message: string } | undefined;
  /** True in the plan that first records the target's failure (a version fails once). */
  let newFailure = false;
  let haltFor: string | undefined;
  if (target && ctx.failures.length > 0 && !effective.rollback) {
    const response = respondToFailure({
      pool,
      target,
      failures: ctx.failures,
      lastGood: lastGood?.image,
      record,
    });
    const counted = record.failedDigests.includes(target.digest);
    newFailure = !counted;
    record = recordFailure(
      record,
      target,
      counted,
      response.kind === "rollbackPool"
        ? { ref: pool.spec.image.ref ?? "", image: response.to, now }
        : undefined,
    );
    if (response.kind === "rollbackPool") {
      failed = { outcome: "RolledBack", message: response.message };
      plan.issues.push({ reason: PoolDegradedReason.RolledBack, message: response.message });
      plan.poolEvent("Warning", "RollingBack", response.message, `rollback/${target.image}`);
      plan.wake(1); // the next reconcile rolls out the good image
    } else {
      failed = { outcome: "Failed", message: response.message };
      plan.issues.push({ reason: PoolDegradedReason.HealthCheckFailed, message: response.message });
      if (response.kind === "rollbackNodes") {
        for (const node of response.nodes) {
          const bn = input.bootcNodes.get(node);
          if (bn?.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] === target.image) continue;
          plan.act({
            kind: "patchBootcNode",
            node,
            patch: { metadata: { annotations: { [ANNOTATION_FAILED_IMAGE]: target.image } } },
            why: "mark failed (roll back)",
          });
          plan.nodeEvent(
            node,
            "Warning",
            "RollingBack",
            `node ${node} failed on ${target.image}; rolling it back to ${response.to}`,
          );
        }
        plan.wake(1);
      }
    }
    // Halt keeps the existing rule (two unhealthy nodes in slots stop new slots); the
    // rollback policies stop the failed image at once.
    if (response.kind !== "halt") haltFor = target.image;
  } else if (effective.rollback && effective.note) {
    plan.issues.push({ reason: PoolDegradedReason.RolledBack, message: effective.note });
  }
  if (effective.rollback && ctx.failures.length > 0) {
    // The good image fails too: no automatic response, but every failure is named.
    plan.issues.push({
      reason: PoolDegradedReason.HealthCheckFailed,
      message: ctx.failures.map((f) => f.message).join("; "),
    });
  }
  if (target && !haltFor) {
    const rolledBack = members.filter((m) =>
      m.bn?.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] === target.image
    ).map((m) => m.node.name);
    // The history remembers the failure even if a node's mark is edited away.
    const lastRevision = pool.status?.history?.at(-1);
    const failedHere = pool.spec.rollout?.onFailure === "RollbackNode" &&
      lastRevision?.image === target.image && lastRevision.outcome === "Failed";
    if (rolledBack.length === 0 && failedHere) {
      haltFor = target.image;
      plan.issues.push({
        reason: PoolDegradedReason.HealthCheckFailed,
        message: `${target.image} failed its health checks (revision ${lastRevision.revision}); ` +
          `the rollout is halted until spec.image.ref changes`,
      });
    }
    if (rolledBack.length > 0) {
      haltFor = target.image;
      plan.issues.push({
        reason: PoolDegradedReason.HealthCheckFailed,
        message: `node(s) ${rolledBack.join(", ")} failed their health checks on ${target.image} ` +
          `and were rolled back; the rollout is halted until spec.image.ref changes`,
      });
    }
  }
  const canary = target
    ? canaryStep({
      pool,
      image: target.image,
      memberCount: members.length,
      updated: updated.length,
      failed: haltFor !== undefined,
      rollback: effective.rollback,
      now,
    })
    : undefined;

  const halted = ctx.unhealthy.length >= 2;
  if (halted) {
    plan.issues.push({
      reason: PoolDegradedReason.RolloutHalted,
      message: `rollout halted: ${ctx.unhealthy.length} nodes in reboot slots are unhealthy (${
        ctx.unhealthy.join("; ")
      })`,
    });
  }
  if (ctx.verifying.length > 0) plan.notes.push(`verifying ${ctx.verifying.join("; ")}`);
  const paused = pool.spec.rollout?.paused ?? false;
  let waitReason: string | undefined;
  if (!halted && target) {
    // A halted target gives no new slot to nodes bound for it; rollbacks still proceed.
    const candidates = slotCandidates(members).filter((m) =>
      haltFor === undefined || m.bn?.spec.desiredImage !== haltFor
    );
    const disrupted = [...members.filter((m) => m.disrupted).map((m) => m.node.name), ...releasing];
    const gateInput = {
      pool,
      candidates: candidates.map((m) => toCandidate(m, target.image)),
      disrupted,
      memberCount: members.length,
      updated: updated.length,
      canary: gatePhase(canary),
      cluster: clusterView(input),
      now,
    };
    // The whole-set answer says why nodes wait; grants then ask one candidate at a time.
    const { admit, waits } = composeGates(GATES, gateInput);
    if (admit.length > 0) {
      grantSlots(candidates, ctx, (m, granted) =>
        composeGates(GATES, {
          ...gateInput,
          candidates: [toCandidate(m, target.image)],
          disrupted: [...disrupted, ...granted],
        }).admit.length === 1, admit.length + 5);
    }
    for (const w of waits) {
      if (w.until) plan.wakeAt(w.until);
      // Routine waits (the budget's pace) are news only when a schedule sets the pace.
      if (!w.routine || w.until) plan.notes.push(w.message);
    }
    waitReason = waits.find((w) => !w.routine)?.reason;
  }
  if (!waitReason && staging && staging.held.length > 0) waitReason = "StagingLimit";
  reportStalled(members, ctx);
  if (ctx.degradedMessages.length > 0) {
    plan.issues.push({
      reason: PoolDegradedReason.NodeDegraded,
      message: ctx.degradedMessages.join("; "),
    });
  }

  // History and the failure record.
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
  // Only a new image that succeeds ends a run of failures; going back to one that had
  // succeeded before (a rollback, by hold or by a channel) does not.
  const returned = (pool.status?.history ?? []).some((r) =>
    r.image === target?.image && r.outcome === "Succeeded"
  );
  if (justSucceeded && !effective.rollback && !returned) {
    record = { ...record, consecutiveFailures: 0 };
  }
  let channel = input.channel?.status;
  if (channel && input.channel?.ref && input.channel.ref === pool.spec.image.ref) {
    if (failed && newFailure) channel = channelFailed(channel);
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
  if (canary && canary.phase !== "Passed" && !paused) {
    plan.notes.push(
      canary.phase === "Soaking"
        ? `canary soaking until ${canary.soakUntil}`
        : `canary ${canary.phase.toLowerCase()}: ${updated.length}/${canary.nodes}`,
    );
  }

  const counts = countStates(members, ctx, target?.image);
  const status = buildPoolStatus({
    prior: pool.status,
    generation: pool.metadata.generation,
    target,
    lastResolvedTime,
    counts,
    slotsInUse: ctx.inUse,
    paused,
    waitReason,
    issues: plan.issues,
    note: plan.notes.join("; ") || undefined,
    rollout,
    now,
  });
  conditionEvents(plan, pool.status, status);
  return finish(plan, status, slots, counts);
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
    members.push({
      node,
      bn,
      state: effectiveState(bn, { image: bn.spec.desiredImage }),
      disrupted: nodeDisrupted(node, bn),
    });
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

/** The read-only view of the cluster the gates decide on (built once per plan). */
function clusterView(input: PlanInput): ClusterView {
  const pools = input.poolObjects ?? [input.pool];
  const members = new Map<string, string[]>();
  for (const bn of input.bootcNodes.values()) {
    const owner = owningPool(bn);
    if (owner === undefined) continue;
    const list = members.get(owner) ?? [];
    list.push(bn.metadata.name ?? "");
    members.set(owner, list);
  }
  const budgets = input.budgets ?? [];
  return {
    pools: pools.map((p) => ({
      name: p.metadata.name ?? "",
      pool: p,
      members: members.get(p.metadata.name ?? "") ?? [],
    })),
    nodes: input.nodes,
    budgets,
    // Fairness between pools only matters when a budget spans them.
    waiting: budgets.length > 0
      ? waitingCandidates(pools, input.bootcNodes.values(), input.nodes)
      : [],
  };
}

/** A member as gates see it; the Staged condition's transition time says how long it waited. */
function toCandidate(m: Member, targetImage?: string): Candidate {
  const staged = findCondition(m.bn?.status?.conditions, NodeConditionType.Idle);
  const since = staged?.lastTransitionTime ? new Date(staged.lastTransitionTime) : undefined;
  return {
    name: m.node.name,
    labels: m.node.labels,
    waitingSince: since && !Number.isNaN(since.getTime()) ? since : undefined,
    ...(targetImage !== undefined && m.bn && m.bn.spec.desiredImage !== targetImage
      ? { rollback: true }
      : {}),
  };
}

function countStates(members: readonly Member[], ctx: RolloutContext, targetImage?: string) {
  const counts = emptyCounts();
  for (const m of members) {
    // A node rolled back from the target is not updated, whatever it runs.
    const away = targetImage !== undefined && m.bn !== undefined &&
      m.bn.spec.desiredImage !== targetImage;
    // Running the target but still in its slot (being verified, soaking): not done yet.
    const state = m.disrupted && m.state === EffectiveState.UpToDate
      ? EffectiveState.Rebooting
      : m.state;
    counts[ctx.stuck.has(m.node.name) || away ? "Degraded" : state]++;
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
