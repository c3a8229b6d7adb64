/**
 * The Pool Reconciler's decisions as one pure function: given a pool, the
 * cluster as the caches see it, the target image and the time, it returns the
 * writes to make (in order), the events to record and the pool's new status.
 * The shell (`reconciler.ts`) only gathers the inputs and applies the plan.
 *
 * A pipeline of pure steps, each in a module of its own. Each step returns a
 * typed result (its facts, and a {@linkcode StepOutput}: writes, events, notes,
 * issues, wake-ups); later steps read earlier results and never change them
 * (no step mutates a member, the output of another, or shared counters).
 * `planPool` only composes them and folds the outputs in step order:
 * 0. spec check (`spec_check.ts`): what the CRD schema cannot reject;
 * 1. resolution (`resolution.ts`, `failure_policy.ts`): the digest-pinned target, after
 *    the failure record had its say;
 * 2. membership (`membership.ts`): members, BootcNodes in sync, nodes handed back;
 * 3. in flight (`in_flight.ts`): every disrupted node repaired, drained, rebooted,
 *    verified, released (`InFlightResult`: slots in use, unhealthy, stuck, failures);
 * 4. health response (`health_response.ts`): the `onFailure` policy on failures;
 * 5. slots (`gated_slots.ts`, `slot_grant.ts`, `gates/`): new reboot slots as the gates
 *    allow (the nodes granted one; the planner marks them disrupted in a new member list);
 * 6. stalled (`stalled.ts`): nodes whose status does not keep up with their spec;
 * 7. rollout record (`rollout_record.ts`): history, failure record, circuit, channel;
 * 8. status (`pool_status.ts`), from the folded issues and notes.
 *
 * The operator's in-flight facts live on each Node (the disruption record, see
 * `disruption.ts`), so a node counts against the budget until the operator has
 * finished or undone its work there, whatever happened to its BootcNode, and a
 * pool whose spec goes bad still finishes or undoes what it started.
 *
 * @module
 */
import { type BootcNodePoolStatus, PoolDegradedReason, PoolFact } from "../../lib/api/mod.ts";
import { countedState, EffectiveState, NodeState } from "../../lib/api/node_state.ts";
import { canaryStep } from "./canary.ts";
import { effectiveTarget, failureRecord } from "./failure_policy.ts";
import { invalidSlots, planGatedSlots } from "./gated_slots.ts";
import { respondToHealth } from "./health_response.ts";
import { lastGoodImage } from "./history.ts";
import { type DeletionEnd, deletionEnd, finishingOutcome, finishingPool } from "./deletion_end.ts";
import { type InFlightResult, progressInFlight } from "./in_flight.ts";
import {
  classifyMember,
  externalContext,
  type Member,
  planMembership,
  POOL_FINALIZER,
} from "./membership.ts";
import { releaseNode, releaseOrphans } from "./hand_back.ts";
import { stagingNote, stagingUse, stagingWait } from "./staging_queue.ts";
import {
  mergeOutputs,
  NO_OUTPUT,
  ownedBootcNodes,
  type Plan,
  type PlanInput,
  PLANNER_DEFAULTS,
  poolEvent,
  type StepOutput,
  stepOutput,
} from "./plan.ts";
import { type AnnotatedMember, nodeAnnotations } from "./node_annotations.ts";
import { type TargetLabel, targetLabel } from "./target_label.ts";
import { bootcNodeDisplay } from "./bootc_node_display.ts";
import { withFactConditions } from "./fact_conditions.ts";
import { conditionEvents, type PoolWait } from "./condition_events.ts";
import { imageSummary } from "../../lib/api/display.ts";
import { formatTime } from "../model/slots.ts";
import { buildPoolStatus, emptyCounts } from "./pool_status.ts";
import { priorTarget, type ResolutionNeed, resolutionNeed, resolveTarget } from "./resolution.ts";
import { rolloutRecord } from "./rollout_record.ts";
import { admitTarget, type Trusted, trustedTarget, type TrustGate, trustGate } from "./trust.ts";
import { specErrors } from "./spec_check.ts";
import { stampSpecChanges } from "./spec_since.ts";
import { QueueWait } from "./slot_grant.ts";
import { poolTimeZone, windowState } from "../gates/mod.ts";
import { reportStalled } from "./stalled.ts";
import type { Target } from "../model/types.ts";

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
  resolveTarget,
} from "./resolution.ts";
export { MAX_TRUST_CANDIDATES, type SignatureMemo, trustCandidates } from "./trust.ts";
// The channel and circuit decisions made before planning (the chosen version is the ref).
export { type ChannelPlan, channelWant, plannedChannel } from "./channel_step.ts";

/** Plans one reconcile of `input.pool`. Pure: same input, same plan. */
export function planPool(input: PlanInput): Plan {
  const { pool, now } = input;
  const options = { ...PLANNER_DEFAULTS, ...input.options };
  const hasFinalizer = (pool.metadata.finalizers ?? []).includes(POOL_FINALIZER);
  if (pool.metadata.deletionTimestamp) {
    const end = deletionEnd(pool, ownedBootcNodes(input), now);
    return end ? planFinishing(input, end, hasFinalizer) : planDeletion(input, hasFinalizer);
  }
  const finalizer = stepOutput({ actions: hasFinalizer ? [] : [{ kind: "addFinalizer" }] });

  // 0. Invalid specs the CRD schema cannot catch: no membership change, no new slot,
  // but what is in flight is finished (reboot already asked for) or undone (not yet).
  const need = resolutionNeed(pool, now, input.resolution, options);
  const errors = specErrors(input, need);
  if (errors.length > 0 || need.kind === "invalid") return planInvalid(input, finalizer, errors);
  const start = mergeOutputs([
    finalizer,
    stepOutput({ issues: input.pullSecretIssue ? [input.pullSecretIssue] : [] }),
  ]);
  return planRollout(input, start, need);
}

/** Steps 1 to 8 for a valid spec, their outputs folded in step order after `start`. */
function planRollout(
  input: PlanInput,
  start: StepOutput,
  need: Exclude<ResolutionNeed, { kind: "invalid" }>,
): Plan {
  // 1. The target; 2. membership; 3. the nodes in flight; 4. health failures and the
  // onFailure policy; 5. new slots through the gates.
  const target = targetStep(input, need);
  // Only an image the trust gate admits is written to a node (as a desired image or a
  // reboot request); the target shown may still be waiting for its verdict.
  const membership = planMembership(input, target.admitted, {
    stagingOpen: stagingOpen(input),
    rollbackImage: target.rollbackImage,
    rollbackNotAdmitted: target.rollbackNotAdmitted,
  });
  const inFlight = progressInFlight(membership.members, input, "finish", target.gate);
  const rollout = rolloutSteps(input, target, membership.members, inFlight, membership.releasing);
  const { gated, members } = rollout;

  // 6. Nodes that do not keep up; 7. history, failure record, channel, canary.
  const stalled = reportStalled(
    members,
    input,
    inFlight.stalled,
    specRewrites([
      membership.out,
      inFlight.out,
    ]),
  );
  // (the members after the grants; onTarget, health, canary and updated from steps 4-5)
  const record = rolloutRecord({
    ...rollout,
    input,
    target: target.target,
    effective: target.effective,
    verification: target.verification,
    candidateRefused: target.candidateRefused,
  });
  const out = mergeOutputs([
    start,
    target.out,
    membership.out,
    stagingNote(membership.staging),
    inFlight.out,
    rollout.out,
    stalled.out,
    degradedIssue(inFlight),
    record.out,
  ]);

  // 8. Status.
  const counts = countStates(members, gated.granted, [inFlight.stuck, stalled.stuck]);
  // A node held after leaving still shows among the pool's BootcNodes, rebooting.
  counts.Rebooting += membership.held.length;
  const wait = gated.wait ?? stagingWait(membership.staging);
  // Halted: the target gets no new slot, or a failure on it stopped it (onFailure Halt).
  const halted = rollout.health.haltFor !== undefined ||
    rollout.health.failed?.outcome === "Failed";
  const status = rolloutStatus(input, { need, target, gated, counts, wait, out, record, halted });
  const staging = stagingUse(membership.staging);
  if (staging) status.staging = staging;
  const all = mergeOutputs([out, conditionEvents(input, status, wait)]);
  const plan = finish(all, status, gated.slots.limit, counts, input);
  if (gated.approvalAsks) plan.approvalAsks = gated.approvalAsks;
  // No grant is coming while a gate holds the slots or the rollout is halted: Staged is
  // then shown at once.
  const held = gated.wait !== undefined ||
    gated.queue.some((q) => q.waitingFor === QueueWait.RolloutHalted);
  const shown = withNodeAnnotations(
    withDisplay(plan, input, members, { ...target, held }),
    input,
    members,
    held,
  );
  return withFacts(shown, input, members);
}

/** Step 8: the pool's status from what steps 1 to 7 found (`out`: their folded output). */
function rolloutStatus(
  input: PlanInput,
  s: {
    need: ResolutionNeed;
    target: TargetStep;
    gated: ReturnType<typeof planGatedSlots>;
    counts: Plan["counts"];
    wait: PoolWait | undefined;
    out: StepOutput;
    record: ReturnType<typeof rolloutRecord>;
    /** The target's rollout is halted (step 4). */
    halted: boolean;
  },
): BootcNodePoolStatus {
  const { target, gated, out } = s;
  // A halted image ranks as Halted, unless the pool rolled back from it (RolledBack says so).
  const halted = s.halted &&
    !out.issues.some((i) => i.reason === PoolDegradedReason.RolledBack);
  return buildPoolStatus({
    prior: input.pool.status,
    generation: input.pool.metadata.generation,
    target: target.target,
    lastResolvedTime: target.lastResolvedTime,
    verification: target.verification,
    nextTagResolutionTime: nextResolution(s.need, input.now),
    targetLabel: target.label,
    counts: s.counts,
    slotsInUse: gated.inUse,
    slots: gated.slots,
    queue: gated.queue,
    paused: input.pool.spec.rollout?.paused ?? false,
    waitReason: s.wait?.reason,
    issues: out.issues,
    facts: [
      ...(halted ? [PoolFact.Halted] : []),
      ...(target.effective.heldBack ? [target.effective.heldBack] : []),
    ],
    note: out.notes.join("; ") || undefined,
    rollout: s.record.rollout,
    now: input.now,
  });
}

/** When the pool's tag is next resolved: when its poll is due, now while one is. */
function nextResolution(need: ResolutionNeed, now: Date): string | undefined {
  if (need.kind === "fresh") return formatTime(need.nextAt);
  return need.kind === "resolve" ? formatTime(now) : undefined;
}

/** The NodeDegraded issue naming what step 3 found degraded, if anything. */
function degradedIssue(inFlight: InFlightResult): StepOutput {
  if (inFlight.degradedMessages.length === 0) return NO_OUTPUT;
  return stepOutput({
    issues: [{
      reason: PoolDegradedReason.NodeDegraded,
      message: inFlight.degradedMessages.join("; "),
    }],
  });
}

/** What step 1 settled, with what the failure record and the history say of it. */
interface TargetStep extends Trusted {
  /** The target as nodes may be given it: undefined while the trust gate does not admit it. */
  admitted?: Target;
  /** The pool's trust gate, which every image written to a node passes. */
  gate: TrustGate;
  /** The pool's failure record before this plan. */
  record: ReturnType<typeof failureRecord>;
  effective: ReturnType<typeof effectiveTarget>;
  /** The last image that succeeded (other than the target), if any. */
  lastGood?: string;
  /** Where members that failed on the target go back to (onFailure RollbackNode). */
  rollbackImage?: Target;
  /** The last good image is not admitted by the trust gate (yet): failed members stay put. */
  rollbackNotAdmitted?: boolean;
  /** How people name the target (its tag and version). */
  label: TargetLabel;
}

/** Step 1: the target, after the failure record had its say. */
function targetStep(input: PlanInput, need: Exclude<ResolutionNeed, { kind: "invalid" }>) {
  const { pool, now } = input;
  const resolved = trustedTarget(
    pool,
    resolveTarget(pool, need, input.resolution, now),
    input.signatures,
  );
  const record = failureRecord(pool);
  const effective = effectiveTarget({
    pool,
    specTarget: resolved.target,
    priorTarget: resolved.priorUntrusted ? undefined : priorTarget(pool),
    record,
  });
  const gate = trustGate(pool, input.signatures);
  const admission = admitTarget(effective.target, gate, input.signatures);
  const target = admission.target;
  const changed = target && target.digest !== pool.status?.targetDigest;
  const good = lastGoodImage(pool.status?.history, target?.image);
  // A rollback goes only to an image the gate admits; without one the failure policy halts.
  const lastGood = good && gate(good.image) === "verified" ? good : undefined;
  const label = targetLabel({
    pool,
    target,
    specTarget: resolved.fromSpec ? resolved.target : undefined,
    bootcNodes: ownedBootcNodes(input),
  });
  const step: TargetStep = {
    target,
    admitted: admission.admitted,
    gate,
    label,
    lastResolvedTime: resolved.lastResolvedTime,
    verification: resolved.verification,
    candidateRefused: resolved.candidateRefused,
    record,
    effective,
    lastGood: lastGood?.image,
    rollbackImage: lastGood ? { image: lastGood.image, digest: lastGood.digest } : undefined,
    rollbackNotAdmitted: good !== undefined && lastGood === undefined,
    out: mergeOutputs([
      resolved.out,
      admission.out,
      stepOutput({
        notes: effective.note ? [effective.note] : [],
        events: changed
          ? [
            {
              ...poolEvent(
                pool.metadata.name ?? "",
                "Normal",
                "TargetChanged",
                `rolling out ${imageSummary({ ...label, digest: target.digest })}`,
              ),
              ofStatus: "Target" as const,
            },
          ]
          : [],
      }),
    ]),
  };
  return step;
}

/**
 * Steps 4 and 5: the health response, the canary, and new slots through the
 * gates. `members` are the members after the grants (each granted one a new
 * member marked disrupted); `out` is steps 4 and 5's in order.
 */
function rolloutSteps(
  input: PlanInput,
  t: TargetStep,
  members: readonly Member[],
  inFlight: InFlightResult,
  releasing: readonly string[],
) {
  const target = t.target;
  const onTarget = (m: Member) => target !== undefined && m.bn?.spec.desiredImage === target.image;
  const updatedNodes = members
    .filter((m) => onTarget(m) && !m.disrupted && m.state === EffectiveState.UpToDate)
    .map((m) => m.node.name);
  const updated = updatedNodes.length;
  const health = respondToHealth({
    input,
    members,
    target,
    effective: t.effective,
    record: t.record,
    lastGood: t.lastGood,
    onTarget,
    failures: inFlight.failures,
  });
  const canary = target
    ? canaryStep({
      pool: input.pool,
      image: target.image,
      memberCount: members.length,
      updated,
      // A canary that failed its watch fails whatever the policy (Halt included).
      failed: health.haltFor !== undefined || (health.canaryFailed ?? false),
      rollback: t.effective.rollback,
      notReadyUntil: health.notReadyUntil,
      now: input.now,
    })
    : undefined;
  const verifying = inFlight.verifying.length > 0
    ? stepOutput({ notes: [`verifying ${inFlight.verifying.join("; ")}`] })
    : stepOutput();
  const gated = planGatedSlots({
    input,
    members,
    inFlight,
    releasing,
    // No slot for an image the trust gate does not admit (yet).
    target: t.admitted,
    haltFor: health.haltFor,
    updated,
    updatedNodes,
    canary,
    rollbackTarget: t.effective.rollback,
  });
  const granted = new Set(gated.granted);
  return {
    onTarget,
    updated,
    health,
    canary,
    gated,
    approval: gated.approval,
    members: members.map((m) => granted.has(m.node.name) ? { ...m, disrupted: true } : m),
    out: mergeOutputs([health.out, verifying, gated.out]),
  };
}

/** A pool being deleted hands every node back, then lets go of its finalizer. */
function planDeletion(input: PlanInput, hasFinalizer: boolean): Plan {
  const owned = ownedBootcNodes(input);
  const released = owned.map((bn) =>
    releaseNode(input, bn.metadata.name ?? "", bn, "pool is being deleted").out
  );
  const orphans = releaseOrphans(input, new Set());
  const done = owned.length === 0 && orphans.released.length === 0 && hasFinalizer;
  const out = mergeOutputs([
    ...released,
    orphans.out,
    stepOutput({ actions: done ? [{ kind: "removeFinalizer" }] : [] }),
  ]);
  return withNodeAnnotations(finish(out, undefined, 0, emptyCounts(), input), input, []);
}

/**
 * A deleted pool that finishes on `end` first (`spec.deletionPolicy`): planned as the live
 * pool pinned to that image until every node runs it (or the rollout cannot go on), then
 * handed back like any deleted pool.
 */
function planFinishing(input: PlanInput, end: DeletionEnd, hasFinalizer: boolean): Plan {
  const name = input.pool.metadata.name ?? "";
  const once = `deletion/${input.pool.metadata.uid ?? name}`;
  const plan = planPool({ ...input, pool: finishingPool(input.pool, end) });
  const outcome = finishingOutcome(plan.status, end);
  if (outcome.done) {
    const released = planDeletion(input, hasFinalizer);
    const type = outcome.abandoned ? "Warning" : "Normal";
    const event = poolEvent(name, type, outcome.reason, outcome.message, `${once}/done`);
    return { ...released, events: [...released.events, event] };
  }
  const decided = input.pool.status?.deletion === undefined
    ? [poolEvent(name, "Normal", outcome.reason, outcome.message, `${once}/finishing`)]
    : [];
  return {
    ...plan,
    status: plan.status && { ...plan.status, deletion: end },
    events: [...plan.events, ...decided],
  };
}

/**
 * The pool's spec is invalid: report it, change no membership, hand out no slot,
 * and finish or undo the disruption of the nodes in flight with what they have.
 */
function planInvalid(input: PlanInput, start: StepOutput, specErrors: string[]): Plan {
  const { pool, now } = input;
  const members: Member[] = [];
  for (const bn of ownedBootcNodes(input)) {
    const node = input.nodes.get(bn.metadata.name ?? "");
    if (!node || bn.metadata.deletionTimestamp) continue;
    members.push({ node, bn, ...classifyMember(node, bn, externalContext(input)) });
  }
  const inFlight = progressInFlight(
    members,
    input,
    "undoUndrained",
    trustGate(pool, input.signatures),
  );
  const counts = countStates(members, [], [inFlight.stuck]);
  const target = priorTarget(pool);
  // The spec's tag may no longer name the target it keeps: the version only.
  const label = targetLabel({
    pool,
    target,
    specTarget: undefined,
    bootcNodes: members.map((m) => m.bn!),
  });
  const status = buildPoolStatus({
    prior: pool.status,
    generation: pool.metadata.generation,
    target,
    targetLabel: label,
    lastResolvedTime: pool.status?.lastResolvedTime,
    counts,
    slotsInUse: inFlight.inUse,
    slots: { ...invalidSlots(specErrors.join("; ")), waiting: 0 },
    paused: pool.spec.rollout?.paused ?? false,
    issues: [{ reason: PoolDegradedReason.InvalidSpec, message: specErrors.join("; ") }],
    now,
  });
  const out = mergeOutputs([start, inFlight.out, conditionEvents(input, status)]);
  const plan = withDisplay(finish(out, status, 0, counts, input), input, members, {
    target,
    label,
    held: true,
  });
  return withFacts(withNodeAnnotations(plan, input, members, true), input, members);
}

/** The plan with its members' ended Node facts set False in their conditions (`fact_conditions.ts`). */
function withFacts(plan: Plan, input: PlanInput, members: readonly Member[]): Plan {
  return { ...plan, actions: withFactConditions(plan.actions, members, input.now) };
}

/** The plan with its members' BootcNode annotations for people (`bootc_node_display.ts`). */
function withDisplay(
  plan: Plan,
  input: PlanInput,
  members: readonly AnnotatedMember[],
  t: { target?: Target; label?: TargetLabel; held: boolean },
): Plan {
  const changes = bootcNodeDisplay({
    members,
    actions: plan.actions,
    target: t.target,
    label: t.label,
    now: input.now,
    held: t.held,
  });
  return changes.size > 0 ? { ...plan, bootcNodeDisplay: changes } : plan;
}

/** The plan with the Node annotation changes of its members (`node_annotations.ts`). */
function withNodeAnnotations(
  plan: Plan,
  input: PlanInput,
  members: readonly AnnotatedMember[],
  held = false,
): Plan {
  const changes = nodeAnnotations({ members, actions: plan.actions, nodes: input.nodes, held });
  return changes.size > 0 ? { ...plan, nodeAnnotations: changes } : plan;
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
 * held back by a gate is Pending), a node granted a slot by this plan as in its
 * slot (as every view will see it once the grant is applied). Whether it is stuck
 * (drain or reboot timeout, failed checks, stalled) is this plan's judgement
 * (`stuck`, from steps 3 and 6), not the Stalled condition the cache still shows.
 */
function countStates(
  members: readonly Member[],
  granted: readonly string[],
  stuck: readonly ReadonlySet<string>[],
) {
  const counts = emptyCounts();
  const grants = new Set(granted);
  for (const m of members) {
    const state = m.cls.state === NodeState.Stalled ? m.cls.phase : m.cls.state;
    const counted = grants.has(m.node.name)
      ? EffectiveState.Rebooting
      : countedState(state, m.cls.effective);
    counts[stuck.some((s) => s.has(m.node.name)) ? "Degraded" : counted]++;
  }
  return counts;
}

/** The nodes whose BootcNode spec these outputs write. */
function specRewrites(outputs: readonly StepOutput[]): Set<string> {
  return new Set(
    outputs.flatMap((o) =>
      o.actions.flatMap((a) => a.kind === "patchBootcNode" && a.patch.spec ? [a.node] : [])
    ),
  );
}

function finish(
  out: StepOutput,
  status: BootcNodePoolStatus | undefined,
  slots: number,
  counts: Plan["counts"],
  input: PlanInput,
): Plan {
  return {
    actions: stampSpecChanges(out.actions, input.now, input.bootcNodes),
    events: [...out.events],
    status,
    requeueAfterMs: out.requeueAfterMs,
    pollAfterMs: out.pollAfterMs,
    draining: out.draining,
    slots,
    needPods: [...out.needPods],
    counts,
    issues: [...out.issues],
  };
}
