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
import { EffectiveState } from "./effective_state.ts";
import type { RolloutContext } from "./in_flight.ts";
import type { Member } from "./membership.ts";
import { listNames, SLOT_GRANT_WHY } from "./plan.ts";

/** Members that could take a slot now (before any budget is applied). */
export function slotCandidates(members: readonly Member[]): Member[] {
  return members.filter((m) =>
    m.bn && !m.disrupted && m.state === EffectiveState.Staged && m.node.ready
  );
}

/** Asks the gates whether one more candidate may take a slot, given those granted so far. */
export type AdmitOne = (candidate: Member, granted: readonly string[]) => boolean;

/**
 * Step 4: walks the candidates in order and hands a slot to each one the gates
 * admit given the grants before it (see `gates/`), unless its drain would
 * deadlock with one in flight on a shared PodDisruptionBudget. Pods are asked
 * for at most `podBudget` candidates whose pods are unknown.
 */
export function grantSlots(
  candidates: readonly Member[],
  ctx: RolloutContext,
  admitOne: AdmitOne,
  podBudget: number,
): void {
  const { plan, input } = ctx;
  const waitingOnPdb: string[] = [];
  const granted: string[] = [];
  let unknown = podBudget;
  for (const c of candidates) {
    const name = c.node.name;
    if (!admitOne(c, granted)) continue;
    const pods = ctx.podsOf(name);
    if (!pods) {
      if (unknown-- <= 0) break;
      plan.needPods.push(name);
      continue;
    }
    const demand = pdbDemand(pods, input.pdbs);
    const blockedBy = [...demand].filter(([key, n]) =>
      n + (ctx.drainingDemand.get(key) ?? 0) > ctx.allowedDisruptions(key)
    ).map(([key]) => key);
    // With no drain running, one blocked node may go: it cannot deadlock with anyone,
    // and its drain timeout reports the budget that blocks it.
    if (blockedBy.length > 0 && ctx.drainingNodes > 0) {
      waitingOnPdb.push(`${name} (PodDisruptionBudget ${listNames(blockedBy, 3)})`);
      continue;
    }
    granted.push(name);
    ctx.inUse++;
    ctx.drainingNodes++;
    plan.draining = true;
    ctx.addDemand(pods);
    plan.act({
      kind: "patchNode",
      node: name,
      patch: grantPatch(c.node, plan.poolName, input.now),
      why: SLOT_GRANT_WHY,
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
  if (waitingOnPdb.length > 0) {
    plan.notes.push(`waiting on disruption budgets: ${listNames(waitingOnPdb, 3)}`);
  }
}
