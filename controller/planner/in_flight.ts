/**
 * Planning step 3, the nodes in flight: every member the operator has disrupted
 * (its Node carries the disruption record) is repaired if someone damaged the
 * record, cordoned, drained, asked to reboot, watched until it runs the target
 * and is Ready, then released (prior cordon restored, record removed). Each one
 * counts against the pool's budget until released.
 *
 * Pure: each node's phases (`phases/`: repair, verify, release, drain, reboot)
 * return what they found and wrote; this module picks a node's phases and
 * reduces the per-node outcomes into one {@linkcode InFlightResult}, which later
 * steps read and never change.
 *
 * @module
 */
import {
  type BootcNode,
  findCondition,
  NodeConditionType,
  readNodeFacts,
} from "../../lib/api/mod.ts";
import { type DrainContext, drainPolicyOf } from "../model/drain_policy.ts";
import { notGrantedHere } from "./record_origin.ts";
import { EffectiveState } from "../../lib/api/node_state.ts";
import type { HealthFailure } from "./failure_policy.ts";
import type { Member } from "./membership.ts";
import type { TrustGate, TrustState } from "./trust.ts";
import { shortReference } from "../../lib/api/display.ts";
import { mergeOutputs, NO_OUTPUT, type PlanInput, type StepOutput, stepOutput } from "./plan.ts";
import { parseTime, slotUnhealthyReason } from "../model/slots.ts";
import type { NodeSummary, PdbSummary } from "../model/types.ts";
import {
  addDemand,
  type InFlightEnv,
  type InFlightMode,
  type NodeOutcome,
  type SlotNode,
  type StallFinding,
} from "./phases/context.ts";
import { repairPhase } from "./phases/repair.ts";
import { healthPhase, onTargetPhase } from "./phases/verify.ts";
import { undoPhase } from "./phases/release.ts";
import { cordonPhase, drainPhase } from "./phases/drain.ts";
import { rebootPhase, retargetedRebootPhase } from "./phases/reboot.ts";
export {
  addDemand,
  allowedDisruptions,
  drainContext,
  evictPass,
  podsOf,
} from "./phases/context.ts";
export type { InFlightMode, StallFinding } from "./phases/context.ts";

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

/**
 * Step 3: moves every disrupted member forward (or back, in `undoUndrained` mode).
 * Each member's mode is also what the trust gate says of the image it is bound for
 * ({@linkcode memberMode}).
 */
export function progressInFlight(
  members: readonly Member[],
  input: PlanInput,
  mode: InFlightMode = "finish",
  gate: TrustGate = () => "verified",
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
    outcomes.push(
      m.bn
        ? {
          counted: true,
          ...progressOne(m, m.bn, env, memberMode(mode, gate(m.bn.spec.desiredImage))),
        }
        : { counted: true },
    );
  }
  // Demand only counts pods to evict, which never depends on the node's readiness.
  const ctx = { policy: env.drain, now: env.now, nodeReady: true };
  return reduceOutcomes(outcomes, input.pdbs, ctx);
}

/**
 * A member's mode: the plan's, unless the trust gate does not admit the image it is
 * bound for. Unknown (its first check runs, for at most the check's timeout): it drains
 * but is asked for no reboot until a verdict is in. Refused or uncheckable (which may
 * last): everything not yet rebooting is undone, its reboot request revoked, so no node
 * waits cordoned on a registry. An invalid spec undoes it too.
 */
export function memberMode(mode: InFlightMode, trust: TrustState): InFlightMode {
  if (trust === "verified") return mode;
  return trust === "unknown" && mode === "finish" ? "holdReboot" : "undoUnrebooted";
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
  const read = readNodeFacts({ node: repaired.node, bootcNode: bn, target: m.desired });
  const facts: SlotNode = {
    name,
    node: repaired.node,
    bn,
    facts: read,
    slotAt: read.slotAt ?? env.now,
    drainedAt: read.drainedAt,
    readyMs: readyForMs(repaired.node, env.now),
    desired: m.desired ?? { image: bn.spec.desiredImage },
  };
  const health = healthPhase(m, facts, env);
  if (health.done) return combine(name, repaired, health);
  if (m.state === EffectiveState.UpToDate) {
    return combine(name, repaired, health, onTargetPhase(facts, env));
  }
  const rebooting = m.facts.rebooting;
  if (
    !rebooting &&
    ((mode === "undoUndrained" && !facts.drainedAt) || mode === "undoUnrebooted")
  ) {
    const why = mode === "undoUnrebooted"
      ? `its image ${shortReference(bn.spec.desiredImage)} is not trusted by the pool's ` +
        `signature policy`
      : "the pool's spec became invalid";
    return combine(name, repaired, health, undoPhase(facts, env, why));
  }
  const cordon = cordonPhase(m, facts);
  const cordoned = { ...facts, drainedAt: cordon.drainedAt };
  const next = cordoned.drainedAt
    ? rebootPhase(m, { ...cordoned, drainedAt: cordoned.drainedAt }, env, mode)
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
