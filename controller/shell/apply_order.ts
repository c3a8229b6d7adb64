/**
 * In what order the shell may apply a plan's actions, and which may run at the
 * same time. A plan for a large pool holds hundreds of writes (a wave of 100
 * grants is 300); applied one at a time they made a reconcile take longer than
 * the slots it hands out. Writes to different nodes do not depend on each
 * other, with three exceptions kept here:
 *
 * - a new slot is handed out only when the pool has room for it: the planner
 *   counts the slots its releases (`isSlotRelease`) free for its grants, so of G
 *   grants beside R releases the room starts at G − R (below zero for a pool over
 *   its limit) and each release that succeeded adds one. A failed release frees
 *   nothing: the pool is never left with one node more disrupted than its budget. The
 *   releases' lanes go first, then the others in planned order (the nodes in
 *   flight moving on, then the grants): no barrier between them, a grant waits
 *   only for its room and a free lane;
 * - a restored disruption record (`isRecordRepair`) is written before any slot
 *   is handed out: its lane runs in a stage of its own before the grants, and a
 *   failed repair stops them;
 * - a pool-level action (the finalizer) runs alone, after everything before it
 *   and before everything after it.
 *
 * Within a lane, a node's actions keep their planned order (cordon, then the
 * mirror, then the evictions). A grant refused before it was written (a plan gone
 * stale) gives its room back to the grants after it.
 *
 * @module
 */
import { type Action, isRecordRepair, isSlotGrant, isSlotRelease } from "../planner/plan.ts";

/** The actions of one node, in planned order. */
export type Lane = Action[];

/** Lanes that may run concurrently; a stage starts only when the one before succeeded. */
export type Stage = Lane[];

function nodeOf(action: Action): string | undefined {
  return "node" in action ? action.node : undefined;
}

/** True for a lane that hands its node a slot. */
function takesRoom(lane: Lane): boolean {
  return lane.some(isSlotGrant);
}

/** True for a lane that hands its node's slot back (and takes none). */
function freesRoom(lane: Lane): boolean {
  return !takesRoom(lane) && lane.some(isSlotRelease);
}

/** Splits a plan's actions into stages of per-node lanes (see the module comment). */
export function applyStages(actions: readonly Action[]): Stage[] {
  const stages: Stage[] = [];
  let run: Action[] = [];
  const flush = () => {
    const lanes = nodeLanes(run);
    // Restored records first, when the run hands out slots.
    const repairs = lanes.some(takesRoom) ? lanes.filter((l) => l.some(isRecordRepair)) : [];
    const rest = lanes.filter((l) => !repairs.includes(l));
    for (const stage of [repairs, rest]) if (stage.length > 0) stages.push(stage);
    run = [];
  };
  for (const action of actions) {
    if (nodeOf(action) !== undefined) {
      run.push(action);
      continue;
    }
    flush();
    stages.push([[action]]);
  }
  flush();
  return stages;
}

/** A run of node actions as lanes: the releasing nodes' first, then the others in planned order. */
function nodeLanes(run: readonly Action[]): Lane[] {
  const lanes = new Map<string, Lane>();
  for (const action of run) {
    const node = nodeOf(action)!;
    const lane = lanes.get(node);
    if (lane) lane.push(action);
    else lanes.set(node, [action]);
  }
  const all = [...lanes.values()];
  return [...all.filter(freesRoom), ...all.filter((l) => !freesRoom(l))];
}

/**
 * The room a stage's grants may take: `take()` resolves true when a grant may go
 * (false when every release ended and none is left for it), `freed()` and
 * `ended()` report a release that succeeded or ended. The planner's grants fit
 * G − R ≤ limit − D (D the disrupted nodes, the R released among them), so the
 * room starts at G − R, below zero for a pool over its limit (a budget lowered
 * with nodes in flight): then each grant waits for as many releases as it takes
 * to be within the limit again.
 */
class Room {
  #free: number;
  #pending: number;
  #waiting: (() => void)[] = [];
  /** Grants that took room and whose grant write has not ended yet. */
  #granting = 0;

  constructor(stage: Stage) {
    const grants = stage.filter(takesRoom).length;
    this.#pending = stage.filter(freesRoom).length;
    this.#free = grants - this.#pending;
  }

  async take(): Promise<boolean> {
    // A grant in flight may give its room back (below): wait for it as for a release.
    while (this.#free <= 0 && (this.#pending > 0 || this.#granting > 0)) {
      await new Promise<void>((wake) => this.#waiting.push(wake));
    }
    if (this.#free <= 0) return false;
    this.#free--;
    this.#granting++;
    return true;
  }

  freed(): void {
    this.#free++;
  }

  /** A taken grant's write ended; refused unwritten, its room goes back. */
  granted(unwritten: boolean): void {
    this.#granting--;
    if (unwritten) this.#free++;
    this.#wakeAll();
  }

  ended(): void {
    this.#pending--;
    this.#wakeAll();
  }

  #wakeAll(): void {
    for (const wake of this.#waiting.splice(0)) wake();
  }
}

/** Options of {@linkcode runStages}. */
export interface RunOptions {
  /** Lanes of a stage at most running at once. */
  concurrency: number;
  /** True for an error thrown only when no other failed (a plan gone stale). */
  minor?: (error: unknown) => boolean;
  /** Told of each grant's lane left without room (never started). */
  skipped?: (lane: Lane) => void;
}

/**
 * Runs `stages` in order, each stage's lanes at most `concurrency` at a time and
 * each lane's actions in order; a grant's lane starts only with room for it (see
 * the module comment). A failing action ends its lane; the other lanes of its
 * stage finish (a grant left without room is skipped), no later stage starts,
 * and the first error is thrown, one `minor` says is (a plan gone stale) only
 * when no other failed.
 */
export async function runStages<T>(
  stages: readonly Stage[],
  apply: (action: Action) => Promise<T>,
  options: RunOptions,
): Promise<T[]> {
  const { concurrency, minor = () => false, skipped } = options;
  const results: T[] = [];
  for (const stage of stages) {
    let next = 0;
    let failure: { error: unknown } | undefined;
    const room = new Room(stage);
    const runLane = async (lane: Lane) => {
      const takes = takesRoom(lane);
      if (takes && !await room.take()) return skipped?.(lane);
      const frees = freesRoom(lane);
      let granting = takes;
      try {
        for (const action of lane) {
          results.push(await apply(action));
          if (granting && isSlotGrant(action)) {
            granting = false;
            room.granted(false);
          }
        }
        if (frees) room.freed();
      } catch (error) {
        // Only a grant known unwritten (a plan gone stale: refused before it was sent) gives
        // its room back; any other failure may have landed, so it keeps it.
        if (granting) room.granted(minor(error));
        throw error;
      } finally {
        if (frees) room.ended();
      }
    };
    const worker = async () => {
      while (next < stage.length) {
        try {
          await runLane(stage[next++]);
        } catch (error) {
          if (!failure || (minor(failure.error) && !minor(error))) failure = { error };
        }
      }
    };
    const workers = Math.max(1, Math.min(concurrency, stage.length));
    await Promise.all(Array.from({ length: workers }, worker));
    if (failure) throw failure.error;
  }
  return results;
}
