/**
 * In what order the shell may apply a plan's actions, and which may run at the
 * same time. A plan for a large pool holds hundreds of writes (a wave of 100
 * grants is 300); applied one at a time they made a reconcile take longer than
 * the slots it hands out. Writes to different nodes do not depend on each
 * other, with two exceptions kept here:
 *
 * - a new slot is handed out only after the releases planned before it (the
 *   room it takes: `isSlotRelease`) succeeded: a failed release must not leave
 *   the pool with one node more disrupted than its budget. Releases go first,
 *   alone; then the grants, ahead of the other nodes' writes (a drain's next
 *   step, a display), which free no room and so need not hold them;
 * - a pool-level action (the finalizer) runs alone, after everything before it
 *   and before everything after it.
 *
 * Within a stage, each node's actions keep their planned order (cordon, then
 * the mirror, then the evictions).
 *
 * @module
 */
import { type Action, isSlotGrant, isSlotRelease } from "../planner/plan.ts";

/** The actions of one node, in planned order. */
export type Lane = Action[];

/** Lanes that may run concurrently; a stage starts only when the one before succeeded. */
export type Stage = Lane[];

function nodeOf(action: Action): string | undefined {
  return "node" in action ? action.node : undefined;
}

/** Splits a plan's actions into stages of per-node lanes (see the module comment). */
export function applyStages(actions: readonly Action[]): Stage[] {
  const stages: Stage[] = [];
  let run: Action[] = [];
  for (const action of actions) {
    if (nodeOf(action) !== undefined) {
      run.push(action);
      continue;
    }
    stages.push(...nodeStages(run), [[action]]);
    run = [];
  }
  stages.push(...nodeStages(run));
  return stages;
}

/**
 * The stages of a run of node actions: with grants, the lanes of the nodes released
 * before the first grant, then every other lane, the granted nodes' first.
 */
function nodeStages(run: readonly Action[]): Stage[] {
  const lanes = new Map<string, Lane>();
  const releasing = new Set<string>();
  const granted = new Set<string>();
  for (const action of run) {
    const node = nodeOf(action)!;
    const lane = lanes.get(node);
    if (lane) lane.push(action);
    else lanes.set(node, [action]);
    if (isSlotGrant(action)) granted.add(node);
    else if (granted.size === 0 && isSlotRelease(action)) releasing.add(node);
  }
  if (lanes.size === 0) return [];
  const all = [...lanes.entries()];
  if (granted.size === 0) return [all.map(([, lane]) => lane)];
  const first = all.filter(([n]) => releasing.has(n)).map(([, lane]) => lane);
  const grants = all.filter(([n]) => granted.has(n)).map(([, lane]) => lane);
  const rest = all.filter(([n]) => !releasing.has(n) && !granted.has(n)).map(([, lane]) => lane);
  const after = [...grants, ...rest];
  return first.length > 0 ? [first, after] : [after];
}

/**
 * Runs `stages` in order, each stage's lanes at most `concurrency` at a time and
 * each lane's actions in order. A failing action ends its lane; the other lanes
 * of its stage finish, no later stage starts, and the first error is thrown.
 */
export async function runStages<T>(
  stages: readonly Stage[],
  apply: (action: Action) => Promise<T>,
  concurrency: number,
): Promise<T[]> {
  const results: T[] = [];
  for (const stage of stages) {
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      while (next < stage.length) {
        const lane = stage[next++];
        try {
          for (const action of lane) results.push(await apply(action));
        } catch (error) {
          failure ??= { error };
        }
      }
    };
    const workers = Math.max(1, Math.min(concurrency, stage.length));
    await Promise.all(Array.from({ length: workers }, worker));
    if (failure) throw failure.error;
  }
  return results;
}
