/**
 * Planning step 5, the grants: staged, Ready, undisrupted members get a
 * slot while the pool's budget has room, the rollout is neither paused nor
 * halted, their drain cannot deadlock with one in flight on a shared
 * PodDisruptionBudget, and the pool's drain policy refuses none of their pods. A grant is one Node write (the disruption record and the
 * cordon together), then the BootcNode's mirror of the prior cordon state, then
 * the first evictions. Pure: the grants are returned (marked `grant` on their
 * Node write), the members and step 3's drains are only read.
 *
 * @module
 */
import { ANNOTATION_WAS_CORDONED } from "../../lib/api/mod.ts";
import { grantPatch } from "../model/disruption.ts";
import { type DrainPass, pdbDemand, planDrainPass } from "../model/drain.ts";
import { describeRefused, type DrainContext } from "../model/drain_policy.ts";
import { addDemand, allowedDisruptions, drainContext, evictPass, podsOf } from "./in_flight.ts";
import { matchesSelector } from "../model/selector.ts";
import type { Member } from "./membership.ts";
import {
  type Action,
  listNames,
  mergeOutputs,
  nodeObjectEvent,
  type PlanInput,
  type StepOutput,
  stepOutput,
} from "./plan.ts";
import type { PdbSummary, PodSummary } from "../model/types.ts";

/** Members that could take a slot now (before any budget is applied). */
export function slotCandidates(members: readonly Member[]): Member[] {
  return members.filter((m) => m.bn && !m.disrupted && m.cls.readyForSlot && m.node.ready);
}

/**
 * Asks the gates whether one more candidate may take a slot, given those granted
 * so far: undefined when it may, else the reason of the gate that holds it.
 */
export type AdmitOne = (candidate: Member, granted: readonly string[]) => string | undefined;

/** Why a candidate that passed the gates still got no slot (a `status.queue` waitingFor). */
export const QueueWait = {
  /** Its drain would wait on a PodDisruptionBudget a drain in flight needs. */
  PodDisruptionBudget: "PodDisruptionBudget",
  /** Its drain could never finish: the drain policy refuses a pod on it (emptyDir data). */
  DrainPolicy: "DrainPolicy",
  /** Its pods are not known yet: the shell lists them for the next plan. */
  PodList: "PodList",
  /** A pod `spec.rollout.blockingPodSelector` selects runs on it. */
  BlockingPod: "BlockingPod",
  /** `maxUnhealthy` slot nodes are unhealthy, or its image's rollout is halted. */
  RolloutHalted: "RolloutHalted",
  /** Its Node's `bootc.dev/update-priority` is 0. */
  Skipped: "Skipped",
} as const;

/** What step 3 left that grants read (never change): the slots in use and the drains. */
export interface GrantBase {
  /** Nodes counted against the pool's budget before any grant (in flight and leaving). */
  inUse: number;
  /** Nodes draining (or with unknown pods). */
  drainingNodes: number;
  /** Disruptions each PDB must absorb from the drains in flight. */
  drainingDemand: ReadonlyMap<string, number>;
  /** Drains in flight whose pods are unknown (their demand could be on any PDB). */
  drainingUnknown: number;
}

/** What {@linkcode grantSlots} did: the grants in order, and why each other candidate it saw waits. */
export interface GrantOutcome {
  granted: string[];
  /** Candidates it saw and did not grant, by name: a gate's reason or a {@linkcode QueueWait}. */
  held: Map<string, string>;
  /** What holds a candidate, by name, where its reason has a subject (the blocking pods). */
  blockedBy: Map<string, string>;
  /** Nodes counted against the pool's budget after the grants. */
  inUse: number;
  /** The grants' writes, events and first evictions, the pods asked for, a note on PDB waits. */
  out: StepOutput;
}

/**
 * Step 5's grants: walks the candidates in order and hands a slot to each one the
 * gates admit given the grants before it (see `gates/`), unless its drain would
 * deadlock with one in flight (or granted before it) on a shared
 * PodDisruptionBudget. Pods are asked for at most `podBudget` candidates whose
 * pods are unknown (the walk stops there: the candidates after it are not in
 * `held`).
 */
export function grantSlots(
  candidates: readonly Member[],
  input: PlanInput,
  base: GrantBase,
  admitOne: AdmitOne,
  podBudget: number,
): GrantOutcome {
  const waitingOnPdb: string[] = [];
  const refusedByPolicy: string[] = [];
  const granted: string[] = [];
  const held = new Map<string, string>();
  const blockingOn = new Map<string, string>();
  const needPods: string[] = [];
  const grants: StepOutput[] = [];
  let drains = {
    nodes: base.drainingNodes,
    demand: base.drainingDemand,
    unknown: base.drainingUnknown,
  };
  let unknown = podBudget;
  for (const c of candidates) {
    const name = c.node.name;
    const refused = admitOne(c, granted);
    if (refused !== undefined) {
      held.set(name, refused);
      continue;
    }
    const pods = podsOf(input, name);
    if (!pods && input.podsFailed?.has(name)) {
      // Its list failed: asked for again, without holding back the candidates after it.
      needPods.push(name);
      held.set(name, QueueWait.PodList);
      continue;
    }
    if (!pods) {
      if (unknown-- <= 0) break;
      needPods.push(name);
      held.set(name, QueueWait.PodList);
      continue;
    }
    const blocking = blockingPods(input, pods);
    if (blocking) {
      held.set(name, QueueWait.BlockingPod);
      blockingOn.set(name, blocking);
      continue;
    }
    const drain = drainContext(input, c.node);
    // Cordoning a node whose drain the policy refuses would only hold a slot till the timeout.
    const refusedPods = describeRefused(planDrainPass(pods, drain).refused);
    if (refusedPods) {
      refusedByPolicy.push(`${name} (${refusedPods})`);
      held.set(name, QueueWait.DrainPolicy);
      continue;
    }
    const blockedBy = deadlockingPdbs(drains, pods, input.pdbs, drain);
    if (blockedBy.length > 0) {
      waitingOnPdb.push(`${name} (PodDisruptionBudget ${listNames(blockedBy, 3)})`);
      held.set(name, QueueWait.PodDisruptionBudget);
      continue;
    }
    granted.push(name);
    drains = {
      nodes: drains.nodes + 1,
      demand: addDemand(drains.demand, pods, input.pdbs, drain),
      unknown: drains.unknown,
    };
    grants.push(grantOutput(input, c, pods, base.inUse + granted.length));
  }
  const notes = [
    blockingOn.size > 0
      ? `held by blocking pods: ${
        listNames([...blockingOn].map(([n, pods]) => `${n} (${pods})`), 3)
      }`
      : "",
    waitingOnPdb.length > 0 ? `waiting on disruption budgets: ${listNames(waitingOnPdb, 3)}` : "",
    refusedByPolicy.length > 0
      ? `not draining, the drain policy refuses: ${listNames(refusedByPolicy, 3)}`
      : "",
  ].filter((n) => n !== "");
  return {
    granted,
    held,
    blockedBy: blockingOn,
    inUse: base.inUse + granted.length,
    // No watch tells a blocking pod's end: its node is looked at again every drain poll.
    out: mergeOutputs([
      ...grants,
      stepOutput({
        needPods,
        notes,
        ...(blockingOn.size > 0 ? { poll: input.options?.drainPollMs ?? 5_000 } : {}),
      }),
    ]),
  };
}

/**
 * The pods on a node that `spec.rollout.blockingPodSelector` selects and that have not
 * completed, as `namespace/name` (the first three, and how many more); undefined: none.
 */
function blockingPods(input: PlanInput, pods: readonly PodSummary[]): string | undefined {
  const selector = input.pool.spec.rollout?.blockingPodSelector;
  if (!selector) return undefined;
  const names = pods.filter((p) => !p.completed && matchesSelector(selector, p.labels))
    .map((p) => `${p.namespace}/${p.name}`);
  return names.length > 0 ? listNames(names, 3) : undefined;
}

/**
 * The PodDisruptionBudgets (namespace/name keys) that draining `pods` would wait
 * on together with the drains in flight, so that the drains could deadlock.
 * Empty while no drain runs: one blocked node may go then, as it cannot
 * deadlock with anyone and its drain timeout reports the budget that blocks it.
 * While a drain's pods are unknown, every PDB `pods` would wait on counts.
 */
function deadlockingPdbs(
  drains: { nodes: number; demand: ReadonlyMap<string, number>; unknown: number },
  pods: readonly PodSummary[],
  pdbs: readonly PdbSummary[],
  drain: DrainContext,
): string[] {
  if (drains.nodes === 0) return [];
  const demand = pdbDemand(pods, pdbs, drain);
  return [...demand].filter(([key, n]) =>
    drains.unknown > 0 || n + (drains.demand.get(key) ?? 0) > allowedDisruptions(pdbs, key)
  ).map(([key]) => key);
}

/**
 * One grant: the Node write (disruption record and cordon together, marked as
 * the grant), the BootcNode's mirror of the prior cordon state, the first
 * evictions, and the events saying so (`inUse`: the pool's disrupted nodes with
 * this one).
 */
function grantOutput(
  input: PlanInput,
  c: Member,
  pods: readonly PodSummary[],
  inUse: number,
): StepOutput {
  const name = c.node.name;
  const evict = evictPass(name, pods, drainContext(input, c.node));
  const actions: Action[] = [
    {
      kind: "patchNode",
      node: name,
      patch: grantPatch(c.node, input.pool.metadata.name ?? "", input.now),
      why: "assign slot",
      intent: "grant",
      cordonSeen: { unschedulable: c.node.unschedulable, resourceVersion: c.node.resourceVersion },
    },
    {
      kind: "patchBootcNode",
      node: name,
      patch: {
        metadata: { annotations: { [ANNOTATION_WAS_CORDONED]: String(c.node.unschedulable) } },
      },
      why: "mirror prior cordon state",
    },
  ];
  if (evict.action) actions.push(evict.action);
  // One event for the grant, the cordon and the drain's start: they happen in one plan.
  const events = [
    nodeObjectEvent(
      name,
      "Normal",
      "SlotAssigned",
      `node ${name} got a reboot slot (${inUse} of the pool's nodes disrupted), was ` +
        (c.node.unschedulable
          ? "already cordoned (it stays cordoned after its update)"
          : "cordoned for its update") +
        `; draining: ${evict.toEvict} pod(s) to evict, ${evict.terminating} ` +
        `terminating${drainPolicyNote(evict.pass)}`,
    ),
  ];
  return stepOutput({
    actions,
    events,
    draining: true,
    poll: input.options?.drainPollMs ?? 5_000,
  });
}

/** What the drain policy leaves alone or refuses, for the SlotAssigned event ("" when nothing). */
function drainPolicyNote(pass: DrainPass): string {
  const parts = [
    pass.kept.length > 0 ? `${pass.kept.length} left alone (podSelector)` : "",
    pass.own.length > 0
      ? "the controller's own pod left alone (it goes down with the reboot and resumes)"
      : "",
    pass.refused.length > 0
      ? `${pass.refused.length} refused (emptyDir data, deleteEmptyDirData is false)`
      : "",
  ].filter((p) => p !== "");
  return parts.length > 0 ? `, ${parts.join(", ")}` : "";
}
