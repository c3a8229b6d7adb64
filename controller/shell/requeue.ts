/**
 * When a pool is reconciled again after a plan: when the plan asks (a deadline, a
 * poll, a drain pass), and while a disruption budget refuses evictions, after an
 * exponential back-off between drain passes. Pure.
 *
 * @module
 */

/** What {@linkcode nextRequeue} decides from. */
export interface RequeueInput {
  /** The plan's own request (`Plan.requeueAfterMs`). */
  planned?: number;
  /** True while a drain waits on pods (`Plan.draining`). */
  draining: boolean;
  /** Evictions refused (and forced deletions failed) in this reconcile. */
  refused: number;
  /** Drain passes in a row with refused evictions before this one. */
  streak: number;
  /** Delay of the first back-off (the planner's drain poll, default 5 s). */
  baseMs: number;
  /** Longest back-off. */
  maxMs: number;
}

/**
 * The delay before the next reconcile (undefined: none is needed) and the new
 * streak of refused passes (0: forget it). A pass with refusals backs off, never
 * sooner than the plan asks; the streak lasts while the drain does.
 */
export function nextRequeue(input: RequeueInput): { delayMs?: number; streak: number } {
  const { planned, refused, streak } = input;
  if (refused > 0) {
    const n = streak + 1;
    const backoff = Math.min(input.baseMs * 2 ** (n - 1), input.maxMs);
    return { delayMs: planned === undefined ? backoff : Math.max(planned, backoff), streak: n };
  }
  return { delayMs: planned, streak: input.draining ? streak : 0 };
}
