/**
 * Planner step 5: new reboot slots through the gates. The rollout halts when
 * two nodes in slots are unhealthy; otherwise every gate (`gates/`) has its say
 * on the pool's candidates: the whole-set answer says why nodes wait (status,
 * events and the kubectl plugin repeat it), and grants then ask the gates one
 * candidate at a time (`slot_grant.ts`), counting the slots granted before it.
 *
 * @module
 */
import { findCondition, NodeConditionType, PoolDegradedReason } from "../lib/api/mod.ts";
import type { CanaryStatus } from "./canary.ts";
import { gatePhase } from "./canary.ts";
import {
  type Candidate,
  type ClusterView,
  composeGates,
  GATES,
  waitingCandidates,
} from "./gates/mod.ts";
import type { RolloutContext } from "./in_flight.ts";
import { type Member, owningPool } from "./membership.ts";
import type { PlanInput } from "./plan.ts";
import { grantSlots, slotCandidates } from "./slot_grant.ts";
import type { Target } from "./types.ts";

/** What step 5 works on. */
export interface GatedSlotsInput {
  ctx: RolloutContext;
  members: readonly Member[];
  /** Nodes leaving the pool that still count as disrupted. */
  releasing: readonly string[];
  target: Target | undefined;
  /** An image whose rollout is halted: nodes bound for it get no new slot. */
  haltFor?: string;
  /** Members done on the target. */
  updated: number;
  canary: CanaryStatus | undefined;
}

/**
 * Halts on two unhealthy slots, else grants the slots the gates allow. Returns
 * the reason of the first gate that holds nodes back for more than routine
 * pacing, if any.
 */
export function planGatedSlots(input: GatedSlotsInput): string | undefined {
  const { ctx, members, target, haltFor } = input;
  const { plan, pool } = ctx;
  if (ctx.unhealthy.length >= 2) {
    plan.issues.push({
      reason: PoolDegradedReason.RolloutHalted,
      message: `rollout halted: ${ctx.unhealthy.length} nodes in reboot slots are unhealthy (${
        ctx.unhealthy.join("; ")
      })`,
    });
    return undefined;
  }
  if (!target) return undefined;
  // A halted target gives no new slot to nodes bound for it; rollbacks still proceed.
  const candidates = slotCandidates(members).filter((m) =>
    haltFor === undefined || m.bn?.spec.desiredImage !== haltFor
  );
  const disrupted = [
    ...members.filter((m) => m.disrupted).map((m) => m.node.name),
    ...input.releasing,
  ];
  const gateInput = {
    pool,
    candidates: candidates.map((m) => toCandidate(m, target.image)),
    disrupted,
    memberCount: members.length,
    updated: input.updated,
    canary: gatePhase(input.canary),
    cluster: clusterView(ctx.input),
    now: ctx.input.now,
  };
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
  return waits.find((w) => !w.routine)?.reason;
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
