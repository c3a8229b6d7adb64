/**
 * Exponential backoff with jitter, as a pure function.
 *
 * @module
 */

/** Backoff parameters. */
export interface BackoffOptions {
  /** Delay of the first retry (attempt 1). */
  initialMs: number;
  /** Upper bound before jitter. */
  maxMs: number;
  /** Growth per attempt (default 2). */
  factor?: number;
  /** Extra random fraction added on top: delay * (1 + jitter * random()) (default 0). */
  jitter?: number;
}

/**
 * Delay before retry number `attempt` (1-based): `initialMs * factor^(attempt-1)`,
 * capped at `maxMs`, then stretched by up to `jitter` using `random` in [0, 1).
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const factor = options.factor ?? 2;
  const exp = Math.max(0, attempt - 1);
  const base = Math.min(options.maxMs, options.initialMs * Math.pow(factor, exp));
  const jitter = options.jitter ?? 0;
  return Math.round(base * (1 + jitter * random()));
}
