/**
 * What every phase of a node in flight reads (the pool's timeouts, the node's facts)
 * and returns (its part of the step's outcome), and the drain-demand helpers the slot
 * grant shares.
 *
 * @module
 */
import { type BootcNode, type NodeFacts, StalledReason } from "../../../lib/api/mod.ts";
import { type DrainPass, pdbDemand, planDrainPass, podKey } from "../../model/drain.ts";
import { type DrainContext, drainPolicyOf, evictionGrace } from "../../model/drain_policy.ts";
import { type DesiredImage } from "../../../lib/api/node_state.ts";
import type { HealthFailure } from "../failure_policy.ts";
import { type Action, type PlanInput, type StepOutput } from "../plan.ts";
import type { NodeSummary, PdbSummary, PodSummary } from "../../model/types.ts";

/** Why a node is stalled, found by a step (the Stalled condition's reason and message). */
export interface StallFinding {
  reason: typeof StalledReason[keyof typeof StalledReason];
  message: string;
  /** When the deadline passed (keys the event so it is recorded once). */
  since: Date;
}

/** What one member contributes to {@linkcode InFlightResult}; each phase returns a part. */
export interface NodeOutcome {
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
export interface InFlightEnv {
  input: PlanInput;
  poolName: string;
  now: Date;
  drainTimeoutMs: number;
  rebootTimeoutMs: number;
  minReadyMs: number;
  /** The pool's drain policy, defaults filled in. */
  drain: DrainContext["policy"];
}

/** A node in flight after its record was repaired, as the phases read it. */
export interface SlotNode {
  name: string;
  /** The Node as it will be after the repair. */
  node: NodeSummary;
  bn: BootcNode;
  /** Its facts (`lib/api/node_facts.ts`), read from the repaired Node. */
  facts: NodeFacts;
  /** When its slot was granted (now when its record had none readable). */
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
  | "undoUndrained"
  /** The image's signature verdict is awaited: drain, but ask for no reboot yet. */
  | "holdReboot"
  /** The image is refused by the trust policy: undo all not yet rebooting. */
  | "undoUnrebooted";

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
  const attachments = input.attachmentsByNode?.get(node.name);
  return {
    policy: drainPolicyOf(input.pool.spec.rollout?.drain),
    now: input.now,
    nodeReady: node.ready,
    ...(attachments ? { attachments } : {}),
  };
}

/** True when the pool waits for volumes to detach and the node's attachments were not read. */
export function attachmentsUnknown(input: PlanInput, name: string): boolean {
  return input.pool.spec.rollout?.drain?.waitForVolumeDetach === true &&
    !(input.attachmentsByNode?.has(name) ?? false);
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

/** What the drain and reboot phases add to a node's outcome. */
export type PassOutcome = NodeOutcome & {
  drainedAt?: Date;
  drainTimedOut: boolean;
  rebootTimedOut: boolean;
};
