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
  type BootcNodePoolStatus,
  findCondition,
  NodeConditionType,
  PoolConditionType,
  PoolDegradedReason,
  poolNameError,
} from "../lib/api/mod.ts";
import { nodeDisrupted } from "./disruption.ts";
import { effectiveState } from "./effective_state.ts";
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
import { buildPoolStatus, emptyCounts } from "./pool_status.ts";
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
  if (input.pullSecretIssue?.reason === PoolDegradedReason.InvalidSpec) {
    specErrors.push(input.pullSecretIssue.message);
  }
  if (specErrors.length > 0 || need.kind === "invalid") {
    return planInvalid(input, plan, specErrors);
  }
  if (input.pullSecretIssue) plan.issues.push(input.pullSecretIssue);

  const { target, lastResolvedTime } = resolveTarget(pool, need, input.resolution, plan);
  const { members, releasing, staging } = planMembership(input, plan, target, {
    stagingOpen: stagingOpen(input),
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
  const halted = ctx.unhealthy.length >= 2;
  if (halted) {
    plan.issues.push({
      reason: PoolDegradedReason.RolloutHalted,
      message: `rollout halted: ${ctx.unhealthy.length} nodes in reboot slots are unhealthy (${
        ctx.unhealthy.join("; ")
      })`,
    });
  }
  const paused = pool.spec.rollout?.paused ?? false;
  let waitReason: string | undefined;
  if (!halted && target) {
    const candidates = slotCandidates(members);
    const disrupted = [...members.filter((m) => m.disrupted).map((m) => m.node.name), ...releasing];
    const gateInput = {
      pool,
      candidates: candidates.map(toCandidate),
      disrupted,
      memberCount: members.length,
      cluster: clusterView(input),
      now,
    };
    // The whole-set answer says why nodes wait; grants then ask one candidate at a time.
    const { admit, waits } = composeGates(GATES, gateInput);
    if (admit.length > 0) {
      grantSlots(candidates, ctx, (m, granted) =>
        composeGates(GATES, {
          ...gateInput,
          candidates: [toCandidate(m)],
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

  const counts = countStates(members, ctx);
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
function toCandidate(m: Member): Candidate {
  const staged = findCondition(m.bn?.status?.conditions, NodeConditionType.Idle);
  const since = staged?.lastTransitionTime ? new Date(staged.lastTransitionTime) : undefined;
  return {
    name: m.node.name,
    labels: m.node.labels,
    waitingSince: since && !Number.isNaN(since.getTime()) ? since : undefined,
  };
}

function countStates(members: readonly Member[], ctx: RolloutContext) {
  const counts = emptyCounts();
  for (const m of members) {
    counts[ctx.stuck.has(m.node.name) ? "Degraded" : m.state]++;
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
  const upBefore = findCondition(prior?.conditions, PoolConditionType.UpToDate);
  const upAfter = findCondition(next.conditions, PoolConditionType.UpToDate);
  if (upAfter?.status === "True" && upBefore?.status !== "True") {
    plan.poolEvent("Normal", "RolloutComplete", upAfter.message);
  }
}
