/**
 * Planning step 4, new reboot slots: staged, Ready, undisrupted members get a
 * slot while the pool's budget has room, the rollout is neither paused nor
 * halted, and their drain cannot deadlock with one in flight on a shared
 * PodDisruptionBudget. A grant is one Node write (the disruption record and the
 * cordon together), then the BootcNode's mirror of the prior cordon state, then
 * the first evictions.
 *
 * @module
 */
import { ANNOTATION_WAS_CORDONED } from "../lib/api/mod.ts";
import { grantPatch } from "./disruption.ts";
import { pdbDemand } from "./drain.ts";
import type { RolloutContext } from "./in_flight.ts";
import type { Member } from "./membership.ts";
import { listNames } from "./plan.ts";
import type { PodSummary } from "./types.ts";

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
  /** Its pods are not known yet: the shell lists them for the next plan. */
  PodList: "PodList",
  /** Two slot nodes are unhealthy, or its image's rollout is halted. */
  RolloutHalted: "RolloutHalted",
} as const;

/** What {@linkcode grantSlots} did: the grants in order, and why each other candidate it saw waits. */
export interface GrantOutcome {
  granted: string[];
  /** Candidates it saw and did not grant, by name: a gate's reason or a {@linkcode QueueWait}. */
  held: Map<string, string>;
}

/**
 * Step 4: walks the candidates in order and hands a slot to each one the gates
 * admit given the grants before it (see `gates/`), unless its drain would
 * deadlock with one in flight on a shared PodDisruptionBudget. Pods are asked
 * for at most `podBudget` candidates whose pods are unknown (the walk stops
 * there: the candidates after it are not in `held`).
 */
export function grantSlots(
  candidates: readonly Member[],
  ctx: RolloutContext,
  admitOne: AdmitOne,
  podBudget: number,
): GrantOutcome {
  const { plan } = ctx;
  const waitingOnPdb: string[] = [];
  const granted: string[] = [];
  const held = new Map<string, string>();
  let unknown = podBudget;
  for (const c of candidates) {
    const name = c.node.name;
    const refused = admitOne(c, granted);
    if (refused !== undefined) {
      held.set(name, refused);
      continue;
    }
    const pods = ctx.podsOf(name);
    if (!pods) {
      if (unknown-- <= 0) break;
      plan.needPods.push(name);
      held.set(name, QueueWait.PodList);
      continue;
    }
    const blockedBy = deadlockingPdbs(ctx, pods);
    if (blockedBy.length > 0) {
      waitingOnPdb.push(`${name} (PodDisruptionBudget ${listNames(blockedBy, 3)})`);
      held.set(name, QueueWait.PodDisruptionBudget);
      continue;
    }
    granted.push(name);
    grantSlot(ctx, c, pods);
  }
  if (waitingOnPdb.length > 0) {
    plan.notes.push(`waiting on disruption budgets: ${listNames(waitingOnPdb, 3)}`);
  }
  return { granted, held };
}

/**
 * The PodDisruptionBudgets (namespace/name keys) that draining `pods` would wait
 * on together with the drains in flight, so that the drains could deadlock.
 * Empty while no drain runs: one blocked node may go then, as it cannot
 * deadlock with anyone and its drain timeout reports the budget that blocks it.
 */
function deadlockingPdbs(ctx: RolloutContext, pods: readonly PodSummary[]): string[] {
  if (ctx.drainingNodes === 0) return [];
  const demand = pdbDemand(pods, ctx.input.pdbs);
  return [...demand].filter(([key, n]) =>
    n + (ctx.drainingDemand.get(key) ?? 0) > ctx.allowedDisruptions(key)
  ).map(([key]) => key);
}

/**
 * One grant: the Node write (disruption record and cordon together), the
 * BootcNode's mirror of the prior cordon state, the first evictions, and the
 * events saying so; `c` counts as disrupted from here on.
 */
function grantSlot(ctx: RolloutContext, c: Member, pods: readonly PodSummary[]): void {
  const { plan, input } = ctx;
  const name = c.node.name;
  ctx.inUse++;
  ctx.drainingNodes++;
  plan.draining = true;
  ctx.addDemand(pods);
  plan.act({
    kind: "patchNode",
    node: name,
    patch: grantPatch(c.node, plan.poolName, input.now),
    why: "assign slot",
    grant: true,
  });
  plan.act({
    kind: "patchBootcNode",
    node: name,
    patch: {
      metadata: { annotations: { [ANNOTATION_WAS_CORDONED]: String(c.node.unschedulable) } },
    },
    why: "mirror prior cordon state",
  });
  const pass = ctx.evict(name, pods);
  plan.nodeEvent(
    name,
    "Normal",
    "SlotAssigned",
    `node ${name} got a reboot slot (${ctx.inUse} of the pool's nodes disrupted)`,
  );
  plan.nodeEvent(
    name,
    "Normal",
    "DrainStarted",
    `draining node ${name}: ${pass.toEvict} pod(s) to evict, ${pass.terminating} terminating`,
  );
  c.disrupted = true;
  plan.wake(input.options?.drainPollMs ?? 5_000);
}
