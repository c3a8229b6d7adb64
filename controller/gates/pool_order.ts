/**
 * Ordering between pools: `spec.rollout.after` names pools that must finish
 * their current rollout before this pool starts reboots (staging goes on).
 * A pool has finished when its last status was written for its current
 * generation, says UpToDate=True and not Degraded=True. Reason `WaitingForPool`.
 *
 * The gate reads the other pools from `cluster.pools` (the planner must list
 * every pool there). Unknown names and cycles are spec errors:
 * {@linkcode orderingErrors} names them for the pool's InvalidSpec condition;
 * should the gate see one anyway it holds everything back (a missing pool has
 * not finished anything).
 *
 * The gate is monotone: it admits all candidates or none.
 *
 * @module
 */
import { findCondition, isConditionTrue } from "../../lib/api/conditions.ts";
import { PoolConditionType } from "../../lib/api/constants.ts";
import type { BootcNodePool } from "../../lib/api/schema.ts";
import type { Gate, GateDecision, GateInput, SpecCheckInput } from "./gate.ts";

/** The wait reason of this gate (it becomes the pool's UpToDate reason). */
export const WAITING_FOR_POOL = "WaitingForPool";

/** The shape the schema gives `spec.rollout.after`. */
interface RolloutAfter {
  after?: readonly string[];
}

/** The pools named in `spec.rollout.after`, without duplicates, in order. */
export function rolloutAfter(pool: BootcNodePool): string[] {
  const after = (pool.spec.rollout as RolloutAfter | undefined)?.after ?? [];
  return [...new Set(after)];
}

/**
 * Why a pool's rollout has not finished, or undefined when it has: its status
 * must be for its current generation, UpToDate=True and Degraded not True.
 */
export function unfinishedReason(pool: BootcNodePool): string | undefined {
  const status = pool.status;
  const conditions = status?.conditions;
  if (!status || !findCondition(conditions, PoolConditionType.UpToDate)) {
    return "not reconciled yet";
  }
  const progress = `${status.updatedCount ?? 0}/${status.nodeCount ?? 0} updated`;
  if (
    pool.metadata.generation !== undefined &&
    status.observedGeneration !== pool.metadata.generation
  ) {
    return `${progress}, status not yet for generation ${pool.metadata.generation}`;
  }
  if (isConditionTrue(conditions, PoolConditionType.Degraded)) {
    const reason = findCondition(conditions, PoolConditionType.Degraded)?.reason;
    return `${progress}, Degraded: ${reason}`;
  }
  if (!isConditionTrue(conditions, PoolConditionType.UpToDate)) return progress;
  return undefined;
}

/** Holds every candidate back until the pools named in `rollout.after` have finished. */
export const poolOrderGate: Gate = {
  name: "poolOrder",
  reasons: [{ reason: WAITING_FOR_POOL, blocksPool: true }],
  validate({ pool, pools }: SpecCheckInput): string[] {
    return orderingErrors(pool, pools);
  },
  decide(input: GateInput): GateDecision {
    const after = rolloutAfter(input.pool);
    if (after.length === 0) return { admit: input.candidates };
    const byName = new Map(input.cluster.pools.map((v) => [v.name, v.pool]));
    const waiting: string[] = [];
    for (const name of after) {
      const other = byName.get(name);
      const why = other ? unfinishedReason(other) : "not found";
      if (why !== undefined) waiting.push(`${name} (${why})`);
    }
    if (waiting.length === 0) return { admit: input.candidates };
    return {
      admit: [],
      wait: {
        reason: WAITING_FOR_POOL,
        message: `waiting for pool${waiting.length > 1 ? "s" : ""} ${waiting.join(", ")}`,
      },
    };
  },
};

/**
 * What is wrong with `pool`'s `rollout.after` given every pool (this one
 * included): names of pools that do not exist, and the shortest ordering
 * cycle through this pool, each as a message naming them
 * (`rollout.after: cycle workers → infra → workers`). Empty when fine. Cycles
 * that do not pass through this pool are the other pools' errors.
 */
export function orderingErrors(
  pool: BootcNodePool,
  allPools: Iterable<BootcNodePool>,
): string[] {
  const self = pool.metadata.name ?? "";
  const byName = new Map<string, BootcNodePool>();
  for (const p of allPools) byName.set(p.metadata.name ?? "", p);
  byName.set(self, pool);
  const errors: string[] = [];
  const after = rolloutAfter(pool);
  const unknown = after.filter((n) => !byName.has(n));
  if (unknown.length > 0) {
    errors.push(
      `rollout.after: unknown pool${unknown.length > 1 ? "s" : ""} ` +
        unknown.map((n) => JSON.stringify(n)).join(", "),
    );
  }
  const cycle = shortestCycle(self, byName);
  if (cycle) errors.push(`rollout.after: cycle ${cycle.join(" → ")}`);
  return errors;
}

/** The shortest path self → … → self along `after` edges (breadth-first), if any. */
function shortestCycle(
  self: string,
  byName: ReadonlyMap<string, BootcNodePool>,
): string[] | undefined {
  const parent = new Map<string, string>();
  const queue: string[] = [self];
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i];
    const p = byName.get(at);
    if (!p) continue;
    for (const next of rolloutAfter(p)) {
      if (next === self) {
        // Walk back from `at` to the first hop, then read it forwards.
        const back: string[] = [];
        for (let n: string | undefined = at; n !== undefined && n !== self; n = parent.get(n)) {
          back.push(n);
        }
        return [self, ...back.reverse(), self];
      }
      if (parent.has(next) || !byName.has(next)) continue;
      parent.set(next, at);
      queue.push(next);
    }
  }
  return undefined;
}
