/**
 * When a pool is reconciled again after a plan: at the plan's deadlines, and at its
 * drain polls, which back off exponentially while a disruption budget refuses
 * evictions. A deadline never waits for the back-off: the drain timeout, the reboot
 * timeout and every other time the plan names act when due. Pure.
 *
 * @module
 */

/** What {@linkcode nextRequeue} decides from. */
export interface RequeueInput {
  /** The plan's deadlines and time-driven steps (`Plan.requeueAfterMs`). */
  planned?: number;
  /** The plan's next look at a drain's pods (`Plan.pollAfterMs`). */
  poll?: number;
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
 * streak of refused passes (0: forget it). A pass with refusals backs off its poll,
 * never sooner than the plan's poll; the streak lasts while the drain does.
 */
export function nextRequeue(input: RequeueInput): { delayMs?: number; streak: number } {
  const { planned, poll, refused, streak } = input;
  if (refused > 0) {
    const n = streak + 1;
    const backoff = Math.min(input.baseMs * 2 ** (n - 1), input.maxMs);
    const polled = poll === undefined ? backoff : Math.max(poll, backoff);
    return { delayMs: earlier(planned, polled), streak: n };
  }
  return { delayMs: earlier(planned, poll), streak: input.draining ? streak : 0 };
}

function earlier(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
