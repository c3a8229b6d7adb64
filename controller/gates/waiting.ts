/**
 * Which nodes of every pool compete for the cluster budgets' slots (fairness
 * between pools, `cluster_budget.ts`): the planner computes the list with
 * {@linkcode waitingCandidates} and hands it to the gates as `cluster.waiting`.
 * A pool that cannot take a slot anyway (paused, outside a window, …) does not
 * compete; which pool condition reasons say so derives from each gate's
 * {@linkcode GateReason.blocksPool} in `GATES`, so a new gate's reasons count
 * without a list to update here.
 *
 * @module
 */
import { findCondition, isConditionTrue } from "../../lib/api/conditions.ts";
import {
  NodeConditionType,
  PoolConditionType,
  PoolDegradedReason,
  UpToDateReason,
} from "../../lib/api/constants.ts";
import { classifyNode } from "../../lib/api/node_state.ts";
import { owningPool } from "../../lib/api/ownership.ts";
import type { BootcNode, BootcNodePool } from "../../lib/api/schema.ts";
import type { NodeSummary } from "../model/types.ts";
import { budgetLimit } from "./budget.ts";
import { olderFirst } from "./cluster_budget.ts";
import type { Gate, GateReason, WaitingNode } from "./gate.ts";
import { GATES } from "./registry.ts";

/** The pool condition reasons under which a pool can take no slot whatever the cluster budgets say. */
export interface BlockedReasons {
  /** UpToDate reasons (status False): every gate reason that blocks the pool. */
  upToDate: readonly string[];
  /** Degraded reasons (status True). */
  degraded: readonly string[];
}

/**
 * The Degraded reasons (status True) of a pool that hands out no slot. These
 * are the planner's own blocks, not a gate's: a spec it cannot read
 * (`spec_check.ts`) and `maxUnhealthy` unhealthy nodes in slots (`gated_slots.ts`).
 */
export const BLOCKED_DEGRADED_REASONS: readonly string[] = [
  PoolDegradedReason.RolloutHalted,
  PoolDegradedReason.InvalidSpec,
];

/** The reasons of `gates` that block a pool, in gate order ({@linkcode GateReason.blocksPool}). */
export function blockedReasons(gates: readonly Gate[] = GATES): BlockedReasons {
  return {
    upToDate: gates.flatMap((g) =>
      g.reasons.filter((r: GateReason) => r.blocksPool).map((r) => r.reason)
    ),
    degraded: BLOCKED_DEGRADED_REASONS,
  };
}

/** The blocked reasons of `GATES`. */
const BLOCKED: BlockedReasons = blockedReasons();

/** The UpToDate reasons of a pool that cannot take a slot whatever the cluster budgets say. */
export const BLOCKED_UP_TO_DATE_REASONS: readonly string[] = BLOCKED.upToDate;

/**
 * Why a pool cannot take a reboot slot now whatever the cluster budgets say
 * (its last status, or its spec), or undefined when it competes for slots.
 * Such a pool's waiting nodes do not hold other pools back. `blocked` defaults
 * to the reasons of `GATES`.
 */
export function poolBlockedReason(
  pool: BootcNodePool,
  blocked: BlockedReasons = BLOCKED,
): string | undefined {
  if (pool.metadata.deletionTimestamp) return "being deleted";
  if (pool.spec.rollout?.paused) return UpToDateReason.Paused;
  const conditions = pool.status?.conditions;
  const upToDate = findCondition(conditions, PoolConditionType.UpToDate);
  if (upToDate?.status === "False" && blocked.upToDate.includes(upToDate.reason)) {
    return upToDate.reason;
  }
  const degraded = findCondition(conditions, PoolConditionType.Degraded);
  if (
    isConditionTrue(conditions, PoolConditionType.Degraded) && degraded &&
    blocked.degraded.includes(degraded.reason)
  ) {
    return degraded.reason;
  }
  return undefined;
}

/**
 * Queue reasons (`status.queue[].waitingFor`) of a node that waits only for room: the
 * pool's own slots or a cluster budget, or its pods being read. Any other reason is its
 * pool's own hold on it.
 */
const COMPETING: ReadonlySet<string> = new Set([
  "BudgetExhausted",
  "ClusterBudgetExhausted",
  "PodList",
]);

/** When a BootcNode's Idle condition last changed (its waiting time), if readable. */
export function idleSince(bn: BootcNode | undefined): Date | undefined {
  const idle = findCondition(bn?.status?.conditions, NodeConditionType.Idle);
  if (!idle?.lastTransitionTime) return undefined;
  const t = new Date(idle.lastTransitionTime);
  return Number.isNaN(t.getTime()) ? undefined : t;
}

/** What {@linkcode waitingCandidates} reads. */
export interface WaitingInput {
  pools: Iterable<BootcNodePool>;
  /** Every BootcNode (of every pool). */
  bootcNodes: Iterable<BootcNode>;
  /** Every Node, by name. */
  nodes: ReadonlyMap<string, NodeSummary>;
  now: Date;
  /** Which pool reasons leave a pool out; default those of `GATES`. */
  blocked?: BlockedReasons;
  /**
   * Nodes disrupted with no record on their Node (`ClusterView.unrecorded`): they use
   * their pool's room like any disrupted member.
   */
  unrecorded?: ReadonlySet<string>;
}

/**
 * The nodes of every pool that wait for a reboot slot and could take one,
 * oldest first: owned by a pool that is not blocked ({@linkcode poolBlockedReason}),
 * staged for their desired image (Idle False / Staged), Ready and not disrupted,
 * waiting since their Idle condition's last transition. Of each pool only as
 * many as its own slot limit at `now` has room for (the oldest) count: the
 * limit the pool's budget gate applies (`maxUnavailable` and its active
 * scheduled budgets, {@linkcode budgetLimit}). The others could not take a
 * slot anyway, so they must not hold other pools back.
 */
export function waitingCandidates(input: WaitingInput): WaitingNode[] {
  const byPool = new Map<string, BootcNode[]>();
  for (const bn of input.bootcNodes) {
    const owner = owningPool(bn);
    if (owner === undefined) continue;
    const list = byPool.get(owner) ?? [];
    list.push(bn);
    byPool.set(owner, list);
  }
  const out: WaitingNode[] = [];
  for (const pool of input.pools) {
    if (poolBlockedReason(pool, input.blocked) !== undefined) continue;
    const members = byPool.get(pool.metadata.name ?? "") ?? [];
    out.push(...poolWaiting(pool, members, input));
  }
  return out.sort(olderFirst);
}

/** The oldest of one pool's nodes ready for a slot, as many as its own slot limit has room for. */
function poolWaiting(
  pool: BootcNodePool,
  members: readonly BootcNode[],
  input: WaitingInput,
): WaitingNode[] {
  const { nodes, now } = input;
  const unrecorded = input.unrecorded ?? new Set<string>();
  const name = pool.metadata.name ?? "";
  let slots: number;
  try {
    slots = budgetLimit({ pool, memberCount: members.length, now }).limit;
  } catch {
    return []; // an invalid pool hands out no slot
  }
  let disrupted = 0;
  const waiting: WaitingNode[] = [];
  // What its own pool last published holds each queued node: a node its pool holds back
  // for a reason of its own (a node-level gate, its drain policy) competes for no room.
  const heldBy = new Map((pool.status?.queue ?? []).map((q) => [q.node, q.waitingFor]));
  for (const bn of members) {
    const nodeName = bn.metadata.name ?? "";
    const held = heldBy.get(nodeName);
    if (held !== undefined && !COMPETING.has(held)) continue;
    if (unrecorded.has(nodeName)) {
      disrupted++;
      continue;
    }
    const node = nodes.get(nodeName);
    if (!node) continue;
    const platforms = bn.spec.desiredImage === pool.status?.targetImage
      ? pool.status?.targetPlatforms
      : undefined;
    // The one classification: disrupted (record, or its daemon rebooting), ready for a slot.
    const cls = classifyNode({
      bootcNode: bn,
      node,
      target: { image: bn.spec.desiredImage, platforms },
      member: true,
    });
    if (cls.disrupted) {
      disrupted++;
      continue;
    }
    if (bn.metadata.deletionTimestamp || !node.ready || !cls.readyForSlot) continue;
    const since = idleSince(bn);
    if (!since) continue;
    waiting.push({ pool: name, node: node.name, since, labels: node.labels });
  }
  waiting.sort(olderFirst);
  return waiting.slice(0, Math.max(0, slots - disrupted));
}
