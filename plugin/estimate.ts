/**
 * How long until a rollout is done, from what has been observed of it.
 *
 * The method: the rollout began when the pool's `UpToDate` condition last
 * turned False (`start`); each node updated since then finished at its
 * completion time (see `progress.ts`). With `n` such completions, the last at
 * `last`, the observed cycle is `(last − start) / n` per node at the pool's
 * current parallelism (it includes the staging at the start and every wait on
 * a gate). For the `r` nodes still to go:
 *
 *   countdown = r × cycle − (now − last)        the next ones keep the pace
 *   floor     = (r − 1) × (now − start) / (n + 1) as if the next one finished now
 *   left      = max(countdown, floor)
 *
 * so the figure counts down between completions and grows, instead of reaching
 * zero, while a node takes longer than the cycle. Before the first completion
 * there is nothing to measure, and no estimate is given.
 *
 * @module
 */

/** Inputs of {@linkcode estimateTimeLeft}. */
export interface EstimateInput {
  /** Nodes in the pool. */
  total: number;
  /** Nodes updated (and released). */
  updated: number;
  /** When the rollout began; undefined when the pool is up to date or unknown. */
  start: Date | undefined;
  /** Completion times of the nodes updated since `start`, in any order. */
  completions: readonly Date[];
  /** The rollout is paused. */
  paused: boolean;
  /** The problem that stops the rollout (the pool's headline), if one does. */
  blocked?: string;
  now: Date;
}

/** The answer of {@linkcode estimateTimeLeft}. */
export type Estimate =
  | { kind: "done" }
  | { kind: "paused" }
  | { kind: "unknown"; why: string }
  | {
    kind: "estimate";
    /** Milliseconds left. */
    leftMs: number;
    /** Observed milliseconds per node. */
    cycleMs: number;
    /** Completions measured. */
    measured: number;
    /** Nodes to go. */
    remaining: number;
  };

/** Estimates the time left (see the module doc). */
export function estimateTimeLeft(input: EstimateInput): Estimate {
  const remaining = Math.max(0, input.total - input.updated);
  if (input.total > 0 && remaining === 0) return { kind: "done" };
  if (input.paused) return { kind: "paused" };
  if (input.blocked) {
    return { kind: "unknown", why: `${input.blocked}: none until the problem is resolved` };
  }
  if (!input.start) return { kind: "unknown", why: "the rollout has not started" };
  const start = input.start.getTime();
  const done = input.completions.map((d) => d.getTime()).filter((t) => t >= start);
  if (done.length === 0) {
    return { kind: "unknown", why: "estimated once the first node is updated" };
  }
  const now = input.now.getTime();
  const last = Math.max(...done);
  const n = done.length;
  // A completion at the very start (a node already being finished) measures nothing.
  const cycleMs = Math.max(1_000, (last - start) / n);
  const countdown = remaining * cycleMs - Math.max(0, now - last);
  const floor = (remaining - 1) * Math.max(0, now - start) / (n + 1);
  return {
    kind: "estimate",
    leftMs: Math.max(0, countdown, floor),
    cycleMs,
    measured: n,
    remaining,
  };
}
