/**
 * Planning step 3, the nodes in flight: every member the operator has disrupted
 * (its Node carries the disruption record) is repaired if someone damaged the
 * record, cordoned, drained, asked to reboot, watched until it runs the target
 * and is Ready, then released (prior cordon restored, record removed). Each one
 * counts against the pool's budget until released.
 *
 * Pure: each node's phases (repair, health verdict, release, undo, cordon,
 * drain pass, reboot request, timeouts) return what they found and wrote; the
 * step reduces the per-node outcomes into one {@linkcode InFlightResult}, which
 * later steps read and never change.
 *
 * @module
 */
import {
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  conditionsEqual,
  type DisruptionRecord,
  drainedFor,
  failedChecksOn,
  findCondition,
  NodeConditionType,
  setCondition,
  StalledReason,
  verifiedOn,
  VerifiedReason,
  verifiedReleasePatch,
  verifiedSince,
  type VerifiedWindow,
  withVerified,
} from "../../lib/api/mod.ts";
import {
  drainedPatch,
  mirrorOf,
  releaseBootcNodePatch,
  releaseCordonNote,
  releasePatch,
  repairPatch,
  undrainPatch,
} from "../model/disruption.ts";
import {
  describeDrainBlockers,
  drainBlockedBy,
  type DrainPass,
  forcedDeletionMessage,
  forcedDeletions,
  pdbDemand,
  planDrainPass,
  podKey,
} from "../model/drain.ts";
import { type DrainContext, drainPolicyOf, evictionGrace } from "../model/drain_policy.ts";
import { reportDrain } from "./drain_report.ts";
import { notGrantedHere } from "./record_origin.ts";
import { shortReference } from "../../lib/api/display.ts";
import {
  daemonSaysRebooting,
  type DesiredImage,
  EffectiveState,
  rebootReport,
} from "../../lib/api/node_state.ts";
import type { HealthFailure } from "./failure_policy.ts";
import { evaluateHealth, type HealthVerdict } from "../model/health.ts";
import type { Member } from "./membership.ts";
import {
  type Action,
  mergeOutputs,
  type MergePatch,
  NO_OUTPUT,
  nodeObjectEvent,
  type PlanInput,
  type PlannedEvent,
  type StepOutput,
  stepOutput,
} from "./plan.ts";
import { formatTime, parseTime, slotUnhealthyReason } from "../model/slots.ts";
import type { NodeSummary, PdbSummary, PodSummary } from "../model/types.ts";

/** Why a node is stalled, found by a step (the Stalled condition's reason and message). */
export interface StallFinding {
  reason: typeof StalledReason[keyof typeof StalledReason];
  message: string;
  /** When the deadline passed (keys the event so it is recorded once). */
  since: Date;
}

/** What step 3 found, for the later steps (read-only) and the pool's status. */
export interface InFlightResult {
  /** Members counted against the pool's budget after this step (released ones are not). */
  inUse: number;
  /** Nodes draining (or with unknown pods) right now. */
  drainingNodes: number;
  /** Slot nodes that are unhealthy, with why (two or more halt the rollout). */
  unhealthy: readonly string[];
  /** Member nodes found stuck (counted as Degraded). */
  stuck: ReadonlySet<string>;
  /** Stalled findings by node (RebootTimeout). */
  stalled: ReadonlyMap<string, StallFinding>;
  /** Messages for the NodeDegraded issue. */
  degradedMessages: readonly string[];
  /** Disruptions each PDB must absorb from drains in flight. */
  drainingDemand: ReadonlyMap<string, number>;
  /** Drains in flight whose pods are unknown: their demand on any PDB may be anything. */
  drainingUnknown: number;
  /** Nodes that failed their health checks after rebooting (the failure policy acts on them). */
  failures: readonly HealthFailure[];
  /** Nodes still being checked after their reboot, with what they wait for. */
  verifying: readonly string[];
  /**
   * Members this plan releases (verified; undone in `undoUndrained` mode), in member
   * order. They no longer count in `inUse`: the shell applies a grant of the plan only
   * once the releases it takes the room of succeeded (controller/shell/apply_order.ts).
   */
  released: readonly string[];
  out: StepOutput;
}

/** What one member contributes to {@linkcode InFlightResult}; each phase returns a part. */
interface NodeOutcome {
  /** The node it is about (set on a disrupted member's outcome). */
  name?: string;
  out?: StepOutput;
  /** Disrupted: it counts against the budget (unless `released`). */
  counted?: boolean;
  /** Released (or undone) in this plan: it no longer counts. */
  released?: boolean;
  /** Draining, or its pods are unknown. */
  draining?: boolean;
  /** Draining with its pods unknown (not listed, or the list failed). */
  podsUnknown?: boolean;
  /** The pods its drain evicts (their PDBs must absorb them). */
  demand?: readonly PodSummary[];
  unhealthy?: readonly string[];
  stuck?: boolean;
  stalled?: StallFinding;
  degraded?: readonly string[];
  failures?: readonly HealthFailure[];
  verifying?: readonly string[];
}

/** The pool's timeouts and the plan's input, as every phase reads them. */
interface InFlightEnv {
  input: PlanInput;
  poolName: string;
  now: Date;
  drainTimeoutMs: number;
  rebootTimeoutMs: number;
  minReadyMs: number;
  /** The pool's drain policy, defaults filled in. */
  drain: DrainContext["policy"];
}

/** A node's facts after its record was repaired, as the phases read them. */
interface NodeFacts {
  name: string;
  /** The Node as it will be after the repair. */
  node: NodeSummary;
  bn: BootcNode;
  record: DisruptionRecord;
  slotAt: Date;
  /** When the reboot was asked for (its drain recorded for the desired image). */
  drainedAt?: Date;
  readyMs: number;
  desired: DesiredImage;
}

/** How {@linkcode progressInFlight} treats nodes not yet asked to reboot. */
export type InFlightMode =
  /** Normal: drain them and ask them to reboot. */
  | "finish"
  /** The spec went bad: undo those not yet asked to reboot, finish the others. */
  | "undoUndrained";

/** The pods of a node, undefined when they were not listed (then they are asked for). */
export function podsOf(input: PlanInput, name: string): readonly PodSummary[] | undefined {
  const { podsListed, podsByNode } = input;
  return podsListed && !podsListed.has(name) ? undefined : podsByNode.get(name) ?? [];
}

/** Disruptions a PDB allows now. */
export function allowedDisruptions(pdbs: readonly PdbSummary[], key: string): number {
  return pdbs.find((p) => podKey(p) === key)?.disruptionsAllowed ?? 0;
}

/** `demand` plus what draining `pods` asks of each PDB under the drain `ctx` (a new map). */
export function addDemand(
  demand: ReadonlyMap<string, number>,
  pods: readonly PodSummary[],
  pdbs: readonly PdbSummary[],
  ctx: DrainContext,
): Map<string, number> {
  const out = new Map(demand);
  for (const [k, n] of pdbDemand(pods, pdbs, ctx)) out.set(k, (out.get(k) ?? 0) + n);
  return out;
}

/** How the pool's drain policy applies to `node` now. */
export function drainContext(input: PlanInput, node: NodeSummary): DrainContext {
  return {
    policy: drainPolicyOf(input.pool.spec.rollout?.drain),
    now: input.now,
    nodeReady: node.ready,
  };
}

/** One drain pass's evictions (no action when nothing must leave), each with its grace period. */
export function evictPass(
  name: string,
  pods: readonly PodSummary[],
  ctx: DrainContext,
): { action?: Action; pass: DrainPass; toEvict: number; terminating: number } {
  const pass = planDrainPass(pods, ctx);
  const action: Action | undefined = pass.toEvict.length > 0
    ? {
      kind: "evict",
      node: name,
      pods: pass.toEvict.map((p) => ({
        namespace: p.namespace,
        name: p.name,
        uid: p.uid,
        gracePeriodSeconds: evictionGrace(p, ctx.policy),
      })),
    }
    : undefined;
  return { action, pass, toEvict: pass.toEvict.length, terminating: pass.terminating.length };
}

function readyForMs(node: NodeSummary, now: Date): number {
  if (!node.ready) return -1;
  const since = parseTime(node.readySince);
  return since ? now.getTime() - since.getTime() : Number.POSITIVE_INFINITY;
}

function inFlightEnv(input: PlanInput): InFlightEnv {
  const rollout = input.pool.spec.rollout ?? {};
  return {
    input,
    poolName: input.pool.metadata.name ?? "",
    now: input.now,
    drainTimeoutMs: (rollout.drainTimeoutSeconds ?? 600) * 1000,
    rebootTimeoutMs: (rollout.rebootTimeoutSeconds ?? 1800) * 1000,
    minReadyMs: (rollout.minReadySeconds ?? 0) * 1000,
    drain: drainPolicyOf(rollout.drain),
  };
}

/** Step 3: moves every disrupted member forward (or back, in `undoUndrained` mode). */
export function progressInFlight(
  members: readonly Member[],
  input: PlanInput,
  mode: InFlightMode = "finish",
): InFlightResult {
  const env = inFlightEnv(input);
  const outcomes: NodeOutcome[] = [];
  for (const m of members) {
    if (m.bn && m.state === EffectiveState.Degraded) {
      const cond = findCondition(m.bn.status?.conditions, NodeConditionType.Degraded);
      outcomes.push({
        degraded: [`node ${m.node.name}: ${cond?.message || cond?.reason || "Degraded"}`],
      });
    }
    if (!m.disrupted) continue;
    // Without a BootcNode (being recreated) it keeps its place until its daemon reports.
    outcomes.push(m.bn ? { counted: true, ...progressOne(m, m.bn, env, mode) } : { counted: true });
  }
  // Demand only counts pods to evict, which never depends on the node's readiness.
  const ctx = { policy: env.drain, now: env.now, nodeReady: true };
  return reduceOutcomes(outcomes, input.pdbs, ctx);
}

/** The per-node outcomes, in member order, as the step's result. */
function reduceOutcomes(
  outcomes: readonly NodeOutcome[],
  pdbs: readonly PdbSummary[],
  ctx: DrainContext,
): InFlightResult {
  let inUse = 0;
  let drainingNodes = 0;
  let drainingUnknown = 0;
  let drainingDemand = new Map<string, number>();
  const stuck = new Set<string>();
  const stalled = new Map<string, StallFinding>();
  const outs: StepOutput[] = [];
  for (const o of outcomes) {
    if (o.counted && !o.released) inUse++;
    if (o.draining) drainingNodes++;
    if (o.podsUnknown) drainingUnknown++;
    if (o.demand) drainingDemand = addDemand(drainingDemand, o.demand, pdbs, ctx);
    if (o.out) outs.push(o.out);
  }
  for (const o of outcomes) {
    if (o.name !== undefined && o.stuck) stuck.add(o.name);
    if (o.name !== undefined && o.stalled) stalled.set(o.name, o.stalled);
  }
  return {
    inUse,
    drainingNodes,
    unhealthy: outcomes.flatMap((o) => o.unhealthy ?? []),
    stuck,
    stalled,
    degradedMessages: outcomes.flatMap((o) => o.degraded ?? []),
    drainingDemand,
    drainingUnknown,
    failures: outcomes.flatMap((o) => o.failures ?? []),
    verifying: outcomes.flatMap((o) => o.verifying ?? []),
    released: outcomes.flatMap((o) => o.released && o.name !== undefined ? [o.name] : []),
    out: mergeOutputs(outs),
  };
}

/** The phases' parts of one node's outcome, in order, as one. */
function combine(name: string, ...parts: NodeOutcome[]): NodeOutcome {
  return {
    name,
    out: mergeOutputs(parts.map((p) => p.out ?? NO_OUTPUT)),
    released: parts.some((p) => p.released),
    draining: parts.some((p) => p.draining),
    podsUnknown: parts.some((p) => p.podsUnknown),
    demand: parts.find((p) => p.demand)?.demand,
    unhealthy: parts.flatMap((p) => p.unhealthy ?? []),
    stuck: parts.some((p) => p.stuck),
    stalled: parts.find((p) => p.stalled)?.stalled,
    degraded: parts.flatMap((p) => p.degraded ?? []),
    failures: parts.flatMap((p) => p.failures ?? []),
    verifying: parts.flatMap((p) => p.verifying ?? []),
  };
}

/**
 * One disrupted member through its phases: the record repaired; its health once
 * it was asked to reboot (failed, or verified and released); on the target, its
 * slot held while it is not Ready; undone when the spec went bad before its
 * reboot; else cordoned, drained and asked to reboot, each within its timeout.
 */
function progressOne(
  m: Member,
  bn: BootcNode,
  env: InFlightEnv,
  mode: InFlightMode,
): NodeOutcome {
  // A record this pool did not grant is not driven (record_origin.ts); it counts till gone.
  const foreign = notGrantedHere(m.node, bn, env.poolName, env);
  if (foreign) return { name: m.node.name, out: foreign };
  const repaired = repairPhase(m.node, bn, env);
  const outcome = progressRepaired(m, bn, env, mode, repaired);
  // A node handed back by this plan gets no mirror again: the release's BootcNode patch was
  // planned from the BootcNode without one (a release cut short after its first write), so a
  // re-added mirror would outlive the Node's record and read as a record to restore.
  if (!repaired.mirror || outcome.released) return outcome;
  return {
    ...outcome,
    out: mergeOutputs([stepOutput({ actions: [repaired.mirror] }), outcome.out ?? NO_OUTPUT]),
  };
}

/** {@linkcode progressOne} after the record's repair (the mirror aside). */
function progressRepaired(
  m: Member,
  bn: BootcNode,
  env: InFlightEnv,
  mode: InFlightMode,
  repaired: ReturnType<typeof repairPhase>,
): NodeOutcome {
  const name = m.node.name;
  const facts: NodeFacts = {
    name,
    node: repaired.node,
    bn,
    record: repaired.record,
    slotAt: parseTime(repaired.record.slotAt) ?? env.now,
    drainedAt: drainedFor(repaired.record, bn.spec.desiredImage)
      ? parseTime(repaired.record.drainedAt)
      : undefined,
    readyMs: readyForMs(repaired.node, env.now),
    desired: m.desired ?? { image: bn.spec.desiredImage },
  };
  const health = healthPhase(m, facts, env);
  if (health.done) return combine(name, repaired, health);
  if (m.state === EffectiveState.UpToDate) {
    return combine(name, repaired, health, onTargetPhase(facts, env));
  }
  if (
    mode === "undoUndrained" && !facts.drainedAt && m.state !== EffectiveState.Rebooting &&
    !daemonSaysRebooting(bn)
  ) {
    return combine(name, repaired, health, undoPhase(facts, env));
  }
  const cordon = cordonPhase(m, facts);
  const cordoned = { ...facts, drainedAt: cordon.drainedAt };
  const next = cordoned.drainedAt
    ? rebootPhase(m, { ...cordoned, drainedAt: cordoned.drainedAt }, env)
    : m.state === EffectiveState.Rebooting
    ? retargetedRebootPhase(facts, env)
    : drainPhase(m, cordoned, env, mode);
  // Unknown pods: it waits for them, and is judged once they are known.
  if (next.podsUnknown) return combine(name, repaired, health, cordon, next);
  const why = slotUnhealthyReason({
    degraded: m.state === EffectiveState.Degraded,
    ready: facts.node.ready,
    drainTimedOut: next.drainTimedOut,
    rebootRequested: next.drainedAt !== undefined,
    rebootTimedOut: next.rebootTimedOut,
  });
  const judged: NodeOutcome = {
    unhealthy: why ? [`${name} ${why}`] : [],
    stuck: next.drainTimedOut,
  };
  return combine(name, repaired, health, cordon, next, judged);
}

/**
 * Repairs what someone removed from the record, before anything else is decided
 * on it: the Node as it will be after the repair, the record, and the BootcNode's
 * mirror of the prior cordon state kept equal to it.
 */
function repairPhase(
  node: NodeSummary,
  bn: BootcNode,
  env: InFlightEnv,
): NodeOutcome & { node: NodeSummary; record: DisruptionRecord; mirror?: Action } {
  const name = node.name;
  const repair = repairPatch(node, bn, env.poolName, env.now);
  const actions: Action[] = [];
  const events: PlannedEvent[] = [];
  const degraded: string[] = [];
  if (repair.patch) {
    actions.push({
      kind: "patchNode",
      node: name,
      patch: repair.patch,
      why: "repair record",
      intent: "repairRecord",
    });
  }
  if (repair.fixed.length > 0) {
    events.push(nodeObjectEvent(
      name,
      "Warning",
      "DisruptionRecordRepaired",
      `node ${name}'s disruption record was damaged (edited or deleted by hand?): ` +
        repair.fixed.join("; "),
    ));
  }
  if (repair.priorCordonLost) {
    const msg = `node ${name}: the record of whether it was cordoned before the update was ` +
      `lost on both the Node and the BootcNode; it will stay cordoned after the update ` +
      `(uncordon it by hand if it should run pods)`;
    degraded.push(msg);
    events.push(nodeObjectEvent(name, "Warning", "PriorCordonStateLost", msg));
  }
  const repairedNode: NodeSummary = {
    ...node,
    annotations: {
      ...node.annotations,
      ...(repair.patch
        ? (repair.patch.metadata as { annotations: Record<string, string> }).annotations
        : {}),
    },
  };
  const mirror: Action | undefined = mirrorOf(bn) !== repair.record.wasCordoned
    ? {
      kind: "patchBootcNode",
      node: name,
      patch: {
        metadata: { annotations: { [ANNOTATION_WAS_CORDONED]: repair.record.wasCordoned } },
      },
      why: "mirror prior cordon state",
    }
    : undefined;
  return {
    out: stepOutput({ actions, events }),
    degraded,
    node: repairedNode,
    record: repair.record,
    mirror,
  };
}

/**
 * After the reboot request (or once it runs the image): is it healthy? Failed or
 * fallen back: it keeps its slot and the failure policy decides (`done`). Still
 * being checked: it waits. Passed: released once `minReadySeconds` have passed
 * (`done`), else its Verified condition is written and it waits.
 */
function healthPhase(
  m: Member,
  f: NodeFacts,
  env: InFlightEnv,
): NodeOutcome & { done?: boolean } {
  if (!f.drainedAt && m.state !== EffectiveState.UpToDate) return {};
  // The daemon says it is rebooting: the node is down whatever else the caches show
  // (a stale report is bounded by the reboot timeout of the reboot phase).
  // (A host that fell back by itself says Rebooting too, but is up: the classification
  // tells the two apart, so its fall-back is judged here.)
  if (m.state === EffectiveState.Rebooting) return {};
  const verdict: HealthVerdict = evaluateHealth({
    node: f.node,
    bn: f.bn,
    desired: f.desired,
    health: env.input.pool.spec.rollout?.health,
    rebootRequestedAt: f.drainedAt,
    pods: podsOf(env.input, f.name),
    podsUnreadable: env.input.podsFailed?.get(f.name),
    query: env.input.healthQueries?.get(f.name),
    now: env.now,
  });
  if (verdict.state === "FellBack" || verdict.state === "Failed") {
    const reason = verdict.state === "FellBack"
      ? VerifiedReason.FellBack
      : VerifiedReason.CheckFailed;
    return {
      done: true,
      failures: [{ node: f.name, message: verdict.message }],
      unhealthy: [`${f.name} failed its health checks`],
      stuck: true,
      out: verifiedFalse(f.bn, f.name, {
        reason,
        message: verdict.message,
        checks: verdict.state === "Failed" ? verdict.failed : ["FellBack"],
      }, env.now),
    };
  }
  if (verdict.state === "Checking") {
    const needPods = verdict.needPods ? [f.name] : [];
    const pending = verdict.checks.filter((c) => c.state === "pending");
    if (!f.node.ready) return { out: stepOutput({ needPods }) };
    // Pods and queries are polled, not watched (the daemon's report comes by watch).
    const polled = pending.some((c) => c.name === "Pods" || c.name === "Prometheus");
    return {
      verifying: [`${f.name}: ${pending.map((c) => `${c.name} (${c.message})`).join(", ")}`],
      out: mergeOutputs([
        stepOutput({ needPods, wake: verdict.deadline.getTime() - env.now.getTime() }),
        polled ? stepOutput({ wake: 5_000 }) : NO_OUTPUT,
      ]),
    };
  }
  if (verdict.state === "Passed") return passedPhase(f, env);
  return {};
}

/** Verified: released once it has been verified and Ready for `minReadySeconds`. */
function passedPhase(f: NodeFacts, env: InFlightEnv): NodeOutcome & { done?: boolean } {
  const { bn, name, desired } = f;
  const window = verifiedWindow(f, env.now);
  const verifiedAt = verifiedSince(bn.status, desired.image, window) ?? env.now;
  const soakMs = env.minReadyMs - (env.now.getTime() - verifiedAt.getTime());
  // Without minReadySeconds, Ready is enough: a Ready transition stamped by a clock
  // ahead of the controller's must not hold the slot for the difference.
  const readyOk = f.node.ready && (env.minReadyMs <= 0 || f.readyMs >= env.minReadyMs);
  if (soakMs <= 0 && readyOk) {
    // The release revokes the reboot request, which the daemon acknowledges with a status
    // write anyway: the verdict rides in the release for it to record (lib/api/verified.ts).
    const daemonRecords = bn.spec.desiredImageState === "Booted";
    return {
      done: true,
      released: true,
      out: mergeOutputs([
        daemonRecords ? NO_OUTPUT : verifiedOutput(bn, name, desired.image, true, env.now, window),
        releaseOutput(f.node, bn, f.slotAt, env.now, daemonRecords ? desired.image : undefined),
        stepOutput({
          events: [nodeObjectEvent(
            name,
            "Normal",
            "NodeUpdated",
            `node ${name} runs ${shortReference(bn.spec.desiredImage)}, verified; slot released` +
              releaseCordonNote(f.node, bn),
          )],
        }),
      ]),
    };
  }
  return {
    out: mergeOutputs([
      verifiedSince(bn.status, desired.image, window)
        ? NO_OUTPUT
        : verifiedOutput(bn, name, desired.image, false, env.now, window),
      stepOutput({ wake: Math.max(soakMs, readyOk ? 0 : env.minReadyMs - f.readyMs, 1) }),
    ]),
  };
}

/**
 * Runs the target but is not Ready (long enough): it holds the slot, no drain
 * needed. A Ready node under its health checks (or soaking) has the health
 * timeout instead; one not Ready past the reboot timeout failed.
 */
function onTargetPhase(f: NodeFacts, env: InFlightEnv): NodeOutcome {
  const { drainedAt, node, name, bn } = f;
  const rebootTimedOut = drainedAt !== undefined && !node.ready &&
    env.now.getTime() >= drainedAt.getTime() + env.rebootTimeoutMs;
  let timedOut: NodeOutcome = {};
  if (rebootTimedOut) {
    const msg = `node ${name} runs ${shortReference(bn.spec.desiredImage)} but is not Ready ` +
      `${env.rebootTimeoutMs / 1000}s after its reboot request`;
    const t = rebootTimeout(name, msg, drainedAt!, env);
    timedOut = {
      ...t,
      out: mergeOutputs([
        t.out ?? NO_OUTPUT,
        verifiedFalse(bn, name, {
          reason: VerifiedReason.CheckFailed,
          message: `NodeReady: ${msg}`,
          checks: ["NodeReady"],
        }, env.now),
      ]),
    };
  } else if (drainedAt && !node.ready) {
    timedOut = {
      out: stepOutput({ wake: drainedAt.getTime() + env.rebootTimeoutMs - env.now.getTime() }),
    };
  }
  const why = slotUnhealthyReason({
    degraded: false,
    ready: node.ready,
    drainTimedOut: false,
    rebootRequested: drainedAt !== undefined,
    rebootTimedOut,
  });
  return { ...timedOut, unhealthy: why ? [`${name} ${why}`] : [] };
}

/** The spec went bad before its reboot was asked for: hand it back as it was. */
function undoPhase(f: NodeFacts, env: InFlightEnv): NodeOutcome {
  return {
    released: true,
    out: mergeOutputs([
      releaseOutput(f.node, f.bn, undefined, env.now),
      stepOutput({
        events: [nodeObjectEvent(
          f.name,
          "Warning",
          "UpdateUndone",
          `node ${f.name} was not yet asked to reboot when the pool's spec became invalid; ` +
            `restored its cordon state`,
        )],
      }),
    ]),
  };
}

/**
 * Cordons a node that is not. One uncordoned after its drain may have pods back,
 * so its drain no longer counts: the drain and the reboot request are withdrawn
 * and it is drained again (`drainedAt` undefined).
 */
function cordonPhase(m: Member, f: NodeFacts): NodeOutcome & { drainedAt?: Date } {
  const { node, name, bn } = f;
  if (node.unschedulable) return { drainedAt: f.drainedAt };
  const actions: Action[] = [{
    kind: "patchNode",
    node: name,
    patch: { spec: { unschedulable: true } },
    why: "cordon",
  }];
  if (!f.drainedAt) return { out: stepOutput({ actions }), drainedAt: undefined };
  // The cordon and the drain's withdrawal in one write: a cordon that landed without the
  // withdrawal would make a drain that pods have landed on since read as finished again.
  const undrain = undrainPatch(node);
  if (undrain) {
    actions[0] = {
      kind: "patchNode",
      node: name,
      patch: { ...undrain, spec: { unschedulable: true } },
      why: "cordon and withdraw drain",
    };
  }
  if (m.state === EffectiveState.Rebooting) {
    // Pods may have landed since the drain. A reboot already under way is not stopped, and
    // needs no record to finish; one not yet started is refused by the daemon's last read of
    // the Node until a new drain pass records it again (the reboot request stays).
    const events = [nodeObjectEvent(
      name,
      "Warning",
      "DrainInvalidated",
      `node ${name} was uncordoned while it was to reboot; cordoning it again and ` +
        `withdrawing its drain, so a reboot not yet started waits for a new drain`,
    )];
    return { out: stepOutput({ actions, events }), drainedAt: undefined };
  }
  if (bn.spec.desiredImageState === "Booted") {
    actions.push({
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Staged" } },
      why: "withdraw reboot request",
    });
  }
  const events = [nodeObjectEvent(
    name,
    "Warning",
    "DrainInvalidated",
    `node ${name} was uncordoned after its drain; cordoning and draining it again`,
  )];
  return { out: stepOutput({ actions, events }), drainedAt: undefined };
}

/** What the drain and reboot phases add to a node's outcome. */
type PassOutcome = NodeOutcome & {
  drainedAt?: Date;
  drainTimedOut: boolean;
  rebootTimedOut: boolean;
};

/** A node whose pods are unknown: asked for, and counted as draining so no other slot races it for a budget. */
function podsUnknown(name: string): PassOutcome {
  return {
    podsUnknown: true,
    draining: true,
    drainTimedOut: false,
    rebootTimedOut: false,
    out: stepOutput({ needPods: [name], draining: true }),
  };
}

/**
 * One drain pass: unknown pods are asked for (it counts as draining meanwhile);
 * a finished drain (its cordon visible, so no pod slipped in) is recorded and the
 * reboot asked for; else what must leave is evicted, within the drain timeout.
 */
function drainPhase(m: Member, f: NodeFacts, env: InFlightEnv, mode: InFlightMode): PassOutcome {
  const { name, node, bn } = f;
  const pods = podsOf(env.input, name);
  if (!pods) return podsUnknown(name);
  const pass = planDrainPass(pods, drainContext(env.input, node));
  if (!pass.done || !node.unschedulable) return evictPhase(f, pods, env);
  if (m.state !== EffectiveState.Staged || mode !== "finish") {
    return { drainTimedOut: false, rebootTimedOut: false };
  }
  const seconds = (env.now.getTime() - f.slotAt.getTime()) / 1000;
  const actions: Action[] = [
    {
      kind: "patchNode",
      node: name,
      patch: drainedPatch(bn.spec.desiredImage, env.now),
      why: "record drain",
      observe: { metric: "drain_seconds", seconds },
    },
    {
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Booted" } },
      why: "request reboot",
    },
  ];
  // One event for the finished drain and the reboot request: the same plan writes both.
  const events = [
    nodeObjectEvent(
      name,
      "Normal",
      "DrainCompleted",
      `node ${name} drained; asked to boot ${shortReference(bn.spec.desiredImage)}`,
    ),
  ];
  return {
    drainedAt: env.now,
    drainTimedOut: false,
    rebootTimedOut: false,
    out: stepOutput({ actions, events, wake: env.rebootTimeoutMs }),
  };
}

/**
 * A drain still running: its evictions, its report (once the cordon is visible,
 * and the drain blocked or running a poll interval),
 * its PDB demand, and past the drain timeout what `onTimeout` says: Degrade (a
 * DrainBlocked event naming what blocks it, the node degraded) or Force (still
 * evicting, and deleting the pods a PodDisruptionBudget allowing no disruption
 * keeps, each with a Warning event; degraded while pods the policy refuses remain,
 * or pods are not removed within the termination slack after the timeout).
 */
function evictPhase(f: NodeFacts, pods: readonly PodSummary[], env: InFlightEnv): PassOutcome {
  const { name, node, bn, record, slotAt } = f;
  const { input, now } = env;
  const evict = evictPass(name, pods, drainContext(input, node));
  const { pass } = evict;
  const pollMs = input.options?.drainPollMs ?? 5_000;
  const blockedBy = drainBlockedBy(pass, input.pdbs);
  // A drain that ends within its first poll needs no report (the reboot's status tells it).
  const due = blockedBy !== undefined || now.getTime() - slotAt.getTime() >= pollMs;
  const reported = node.unschedulable && due
    ? reportDrain(bn, { image: bn.spec.desiredImage, slotAt: record.slotAt, blockedBy }, now)
    : NO_OUTPUT;
  const poll = { draining: true, poll: pollMs };
  const deadline = slotAt.getTime() + env.drainTimeoutMs;
  const common = { draining: true, demand: pods, drainTimedOut: false, rebootTimedOut: false };
  if (now.getTime() < deadline) {
    const polled = stepOutput({ ...poll, actions: evict.action ? [evict.action] : [] });
    return {
      ...common,
      out: mergeOutputs([polled, reported, stepOutput({ wake: deadline - now.getTime() })]),
    };
  }
  if (env.drain.onTimeout === "Force" && node.unschedulable) {
    const force = forceOutput(f, pass, evict.action, env);
    const stuck = forceStuck(pass, deadline, now);
    const note = stuck && pass.toEvict.length > 0 ? FORCE_FAILING : undefined;
    return {
      ...(stuck ? timedOut(f, pass, env, common, note) : common),
      out: mergeOutputs([
        stepOutput(poll),
        reported,
        force,
        // The slack after which pods still there are reported is a deadline: no back-off.
        stuck
          ? timeoutEvent(f, pass, env, note)
          : pass.toEvict.length > 0
          ? stepOutput({ wake: deadline + TERMINATION_SLACK_MS - now.getTime() + 1 })
          : NO_OUTPUT,
      ]),
    };
  }
  const polled = stepOutput({ ...poll, actions: evict.action ? [evict.action] : [] });
  return {
    ...timedOut(f, pass, env, common),
    out: mergeOutputs([polled, reported, timeoutEvent(f, pass, env)]),
  };
}

/** How long past its deletion time (deletionTimestamp: the end of its grace) a pod may linger. */
const TERMINATION_SLACK_MS = 60_000;

/** True when a terminating pod is still there well after its grace period ended. */
function overdue(pod: PodSummary, now: Date): boolean {
  const at = parseTime(pod.deletionTimestamp);
  return at !== undefined && now.getTime() > at.getTime() + TERMINATION_SLACK_MS;
}

/**
 * Past the timeout under `onTimeout: Force`, what Force cannot remove keeps the
 * node stuck: pods the policy refuses, pods still there well past their deletion
 * (a finalizer, a kubelet that is gone), and pods still to remove once the
 * termination slack after the timeout has passed (their eviction or forced
 * deletion keeps failing: RBAC, an admission webhook, a server error).
 */
function forceStuck(pass: DrainPass, deadline: number, now: Date): boolean {
  return pass.refused.length > 0 || pass.terminating.some((p) => overdue(p, now)) ||
    (pass.toEvict.length > 0 && now.getTime() > deadline + TERMINATION_SLACK_MS);
}

/** Why pods are still to remove past the timeout under Force (the API's answer is in the log). */
const FORCE_FAILING = "onTimeout is Force but evicting or deleting the pods named keeps " +
  "failing (the controller's log has the API's answer: RBAC, an admission webhook, a server " +
  "error)";

/** The drain timeout's message: what blocks the drain (and `note`, why it still does). */
function timeoutMessage(name: string, pass: DrainPass, env: InFlightEnv, note?: string): string {
  return `drain of node ${name} did not finish within ${env.drainTimeoutMs / 1000}s: ${
    describeDrainBlockers(pass, env.input.pdbs) || "waiting for the cordon"
  }${note ? `; ${note}` : ""}`;
}

/** A timed-out drain's outcome: stuck and degraded, naming what blocks it. */
function timedOut(
  f: NodeFacts,
  pass: DrainPass,
  env: InFlightEnv,
  common: Omit<PassOutcome, "out">,
  note?: string,
): PassOutcome {
  return { ...common, drainTimedOut: true, degraded: [timeoutMessage(f.name, pass, env, note)] };
}

/** The DrainBlocked event of a timed-out drain (recorded once per slot). */
function timeoutEvent(f: NodeFacts, pass: DrainPass, env: InFlightEnv, note?: string): StepOutput {
  const event = nodeObjectEvent(
    f.name,
    "Warning",
    "DrainBlocked",
    timeoutMessage(f.name, pass, env, note),
    `drain-timeout/${f.name}/${formatTime(f.slotAt)}`,
  );
  return stepOutput({ events: [event] });
}

/**
 * `onTimeout: Force`: evicts what eviction can remove (as before the timeout)
 * and deletes the pods a PodDisruptionBudget allowing no disruption keeps, each
 * with a Warning event naming it and that budget (recorded once per slot and
 * pod). Only on a cordoned node, so nothing slips back in.
 */
function forceOutput(
  f: NodeFacts,
  pass: DrainPass,
  evict: Action | undefined,
  env: InFlightEnv,
): StepOutput {
  const deletions = forcedDeletions(pass, env.input.pdbs, env.drain);
  const deleted = new Set(deletions.map((d) => podKey(d.pod)));
  const evictions = evict?.kind === "evict"
    ? evict.pods.filter((p) => !deleted.has(podKey(p)))
    : [];
  const actions: Action[] = evictions.length > 0
    ? [{ kind: "evict", node: f.name, pods: evictions }]
    : [];
  if (deletions.length === 0) return stepOutput({ actions });
  actions.push({
    kind: "deletePods",
    node: f.name,
    pods: deletions.map((d) => ({
      namespace: d.pod.namespace,
      name: d.pod.name,
      uid: d.pod.uid,
      gracePeriodSeconds: d.gracePeriodSeconds,
    })),
  });
  const events = deletions.map((d) =>
    nodeObjectEvent(
      f.name,
      "Warning",
      "DrainForced",
      forcedDeletionMessage(f.name, d, env.drainTimeoutMs / 1000),
      `drain-force/${f.name}/${formatTime(f.slotAt)}/${d.pod.uid ?? podKey(d.pod)}`,
    )
  );
  return stepOutput({ actions, events });
}

/**
 * Drained for its image: the reboot is asked for (again, if someone took the
 * request back) and it must come back within the reboot timeout.
 */
function rebootPhase(m: Member, f: NodeFacts & { drainedAt: Date }, env: InFlightEnv): PassOutcome {
  const { name, bn, drainedAt } = f;
  const request: Action[] = m.state === EffectiveState.Staged &&
      bn.spec.desiredImageState !== "Booted"
    ? [{
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Booted" } },
      why: "request reboot",
    }]
    : [];
  // Until its daemon starts the reboot, the drain must still be finished now: a record (or a
  // reboot request) written by hand, or a pod that came back, is not a drain. Checked every
  // drain poll while it waits (a pod landing wakes nothing), and pods unknown never suspend
  // the reboot timeout.
  const waiting = m.state === EffectiveState.Staged;
  const deadline = drainedAt.getTime() + env.rebootTimeoutMs;
  const overdue = env.now.getTime() >= deadline;
  const unproven = waiting ? drainUnproven(f, env) : undefined;
  if (unproven && !(unproven.podsUnknown && overdue)) return unproven;
  if (!overdue) {
    const pollMs = env.input.options?.drainPollMs ?? 5_000;
    const wake = deadline - env.now.getTime();
    return {
      drainedAt,
      drainTimedOut: false,
      rebootTimedOut: false,
      out: stepOutput({ actions: request, wake, ...(waiting ? { poll: pollMs } : {}) }),
    };
  }
  const msg =
    `node ${name} did not come back running ${shortReference(bn.spec.desiredImage)} and Ready ` +
    `within ${env.rebootTimeoutMs / 1000}s of its reboot request`;
  const t = rebootTimeout(name, msg, drainedAt, env);
  return {
    ...t,
    drainedAt,
    drainTimedOut: false,
    rebootTimedOut: true,
    out: mergeOutputs([
      stepOutput({ actions: unproven ? [] : request }),
      unproven?.out ?? NO_OUTPUT,
      t.out ?? NO_OUTPUT,
    ]),
  };
}

/**
 * Defence in depth while a node waits for its reboot (asked for or not, its daemon not yet
 * rebooting): the Node's finished-drain record must be true now (cordoned, nothing left
 * to evict). Its pods unknown: asked for first. A record that is not true (written by
 * hand, or a pod came back) is withdrawn, with a Warning, so the daemon's own check
 * refuses the reboot, and the node is drained again. Undefined: proven.
 */
function drainUnproven(f: NodeFacts, env: InFlightEnv): PassOutcome | undefined {
  const { name, node } = f;
  const pods = podsOf(env.input, name);
  if (!pods) return podsUnknown(name);
  if (node.unschedulable && planDrainPass(pods, drainContext(env.input, node)).done) {
    return undefined;
  }
  const patch = undrainPatch(node);
  // The record first (the daemon's own check then refuses), then any reboot request.
  const actions: Action[] = patch
    ? [{ kind: "patchNode", node: name, patch, why: "withdraw unproven drain" }]
    : [];
  if (f.bn.spec.desiredImageState === "Booted") {
    actions.push({
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Staged" } },
      why: "revoke reboot request",
    });
  }
  return {
    draining: true,
    drainTimedOut: false,
    rebootTimedOut: false,
    out: stepOutput({
      actions,
      events: [nodeObjectEvent(
        name,
        "Warning",
        "DrainRecordWithdrawn",
        `node ${name}'s Node records a finished drain (bootc.dev/drained-for) but pods its ` +
          `drain must evict are on it; withdrawn, and the node drained again before any reboot`,
      )],
      draining: true,
    }),
  };
}

/**
 * Still rebooting with its drain record withdrawn (the pool retargeted mid-reboot, or the
 * node uncordoned while it was to reboot): it keeps its slot until it is back, and the
 * wait is bounded by the reboot timeout counted from the latest of when the daemon
 * said it was rebooting, the old drain and the slot. Past it the node is
 * stuck and Stalled (RebootTimeout) and counts as unhealthy; it is no failure of the
 * new target, so the failure policy is not asked.
 */
function retargetedRebootPhase(f: NodeFacts, env: InFlightEnv): PassOutcome {
  const known = [
    parseTime(rebootReport(f.bn)?.since),
    parseTime(f.record.drainedAt),
    f.slotAt,
  ].filter((t): t is Date => t !== undefined);
  // The latest thing known to have happened: the wait is bounded, never cut short.
  const since = new Date(Math.max(...known.map((t) => t.getTime())));
  const deadline = since.getTime() + env.rebootTimeoutMs;
  if (env.now.getTime() < deadline) {
    return {
      drainTimedOut: false,
      rebootTimedOut: false,
      out: stepOutput({ wake: deadline - env.now.getTime() }),
    };
  }
  const msg = `node ${f.name} is still rebooting (its drain withdrawn: the pool retargeted or ` +
    `the node uncordoned meanwhile) ${env.rebootTimeoutMs / 1000}s after it started; it keeps ` +
    `its slot until it is back`;
  const t = rebootTimeout(f.name, msg, since, env);
  return { ...t, failures: [], drainTimedOut: false, rebootTimedOut: true };
}

/** A node not back within the reboot timeout: failed, stuck and Stalled (RebootTimeout). */
function rebootTimeout(name: string, msg: string, drainedAt: Date, env: InFlightEnv): NodeOutcome {
  return {
    failures: [{ node: name, message: msg }],
    degraded: [msg],
    stuck: true,
    stalled: {
      reason: StalledReason.RebootTimeout,
      message: msg,
      since: new Date(drainedAt.getTime() + env.rebootTimeoutMs),
    },
    out: stepOutput({
      events: [nodeObjectEvent(
        name,
        "Warning",
        "RebootTimedOut",
        msg,
        `reboot-timeout/${name}/${formatTime(drainedAt)}`,
      )],
    }),
  };
}

/**
 * Hands a finished (or undone) node back: the BootcNode's mirror and reboot request
 * go first, then the Node's record goes and its prior cordon state comes back.
 */
function releaseOutput(
  node: NodeSummary,
  bn: BootcNode,
  slotAt: Date | undefined,
  now: Date,
  verifiedImage?: string,
): StepOutput {
  const name = node.name;
  const actions: Action[] = [];
  let bnPatch = releaseBootcNodePatch(bn);
  if (bnPatch && verifiedImage !== undefined) {
    const metadata = (bnPatch.metadata ?? {}) as MergePatch;
    const annotations = {
      ...(metadata.annotations as MergePatch | undefined),
      ...verifiedReleasePatch(verifiedImage, now),
    };
    bnPatch = { ...bnPatch, metadata: { ...metadata, annotations } };
  }
  if (bnPatch) {
    actions.push({
      kind: "patchBootcNode",
      node: name,
      patch: bnPatch,
      why: "release slot",
      intent: "release",
    });
  }
  const patch = releasePatch(node, bn, { unlabel: false });
  if (patch) {
    actions.push({
      kind: "patchNode",
      node: name,
      patch,
      why: "release slot",
      intent: "release",
      observe: slotAt
        ? { metric: "update_seconds", seconds: (now.getTime() - slotAt.getTime()) / 1000 }
        : undefined,
    });
  }
  return stepOutput({ actions });
}

/**
 * Verified=False with the checks that failed in `status.verification` (written once
 * per verdict), and the HealthCheckFailed event.
 */
function verifiedFalse(
  bn: BootcNode,
  name: string,
  failure: { reason: string; message: string; checks: string[] },
  now: Date,
): StepOutput {
  const { reason, message, checks } = failure;
  const cond = findCondition(bn.status?.conditions, NodeConditionType.Verified);
  // No record of the checks (a daemon that does not keep status.verification drops it):
  // written again, it would be dropped again, one write after another.
  const listed = bn.status?.verification === undefined ||
    failedChecksOn(bn.status, bn.spec.desiredImage)?.join(",") === checks.join(",");
  if (cond?.status === "False" && cond.reason === reason && cond.message === message && listed) {
    return NO_OUTPUT;
  }
  return stepOutput({
    actions: [{
      kind: "patchBootcNodeStatus",
      node: name,
      patch: {
        metadata: { resourceVersion: bn.metadata.resourceVersion },
        status: {
          conditions: setCondition(bn.status?.conditions, {
            type: NodeConditionType.Verified,
            status: "False",
            reason,
            message,
          }, now),
          verification: { image: bn.spec.desiredImage, failedChecks: checks },
        },
      },
      why: "health check failed",
    }],
    events: [nodeObjectEvent(
      name,
      "Warning",
      "HealthCheckFailed",
      message,
      `health-failed/${name}/${bn.spec.desiredImage}`,
    )],
  });
}

function verifiedWindow(f: NodeFacts, now: Date): VerifiedWindow {
  const slotAt = parseTime(f.record.slotAt);
  return { from: slotAt && slotAt.getTime() <= now.getTime() ? slotAt : undefined, now };
}

/**
 * The node recorded verified on `image` (and, when `updated`, its update complete);
 * a Verified outside `window` is replaced (its time starts now).
 */
function verifiedOutput(
  bn: BootcNode,
  name: string,
  image: string,
  updated: boolean,
  now: Date,
  window: VerifiedWindow,
): StepOutput {
  const current = bn.status?.conditions;
  const stale = verifiedOn(bn.status, image) && !verifiedSince(bn.status, image, window);
  const base = stale ? current?.filter((c) => c.type !== NodeConditionType.Verified) : current;
  const { conditions, verification } = withVerified(
    { conditions: base, verification: bn.status?.verification },
    image,
    updated,
    now,
  );
  // As in verifiedFalse: a status without the record is not written again for it alone.
  const about = bn.status?.verification;
  const same = about === undefined || (about.image === image && about.failedChecks === undefined);
  if (same && conditionsEqual(conditions, bn.status?.conditions)) return NO_OUTPUT;
  return stepOutput({
    actions: [{
      kind: "patchBootcNodeStatus",
      node: name,
      patch: {
        metadata: { resourceVersion: bn.metadata.resourceVersion },
        // null: a merge patch removes the checks of an earlier Verified=False.
        status: { conditions, verification: { failedChecks: null, ...verification } },
      },
      why: updated ? "verified and updated" : "verified",
    }],
  });
}
