/**
 * Polling helper for tests: wait until a probe reports a value, failing with a
 * message that says what was last seen.
 *
 * @module
 */

import { systemClock } from "../../lib/clock.ts";

/** Options of {@linkcode waitFor}. */
export interface WaitForOptions {
  /** Give up after this long. */
  timeoutMs: number;
  /** Pause between probes (default 100 ms). */
  intervalMs?: number;
  /** What was awaited; a function is evaluated only when the wait fails. */
  message: string | (() => string);
  /** Stops waiting early, rejecting with the signal's reason. */
  signal?: AbortSignal;
  /**
   * When what is awaited last moved (a `performance.now()` time): the wait then fails only
   * `timeoutMs` after that, so a slow but moving process is not cut off, and at the latest
   * `maxMs` after it started (default `timeoutMs`: no extension).
   */
  progressAt?: () => number;
  /** See {@linkcode WaitForOptions.progressAt}. */
  maxMs?: number;
}

/** Thrown by {@linkcode waitFor} when the probe never succeeded in time. */
export class WaitTimeoutError extends Error {
  /** The last value the probe returned (undefined if it only threw). */
  readonly lastValue: unknown;
  /** The last error the probe threw, if any. */
  readonly lastError: unknown;

  /** Creates the error; `message` already names the last observation. */
  constructor(message: string, lastValue: unknown, lastError: unknown) {
    super(message, lastError instanceof Error ? { cause: lastError } : undefined);
    this.name = "WaitTimeoutError";
    this.lastValue = lastValue;
    this.lastError = lastError;
  }
}

/** Renders a probe observation for a failure message, bounded in size. */
export function describeObservation(value: unknown): string {
  let text: string;
  if (value instanceof Error) text = `${value.name}: ${value.message}`;
  else if (typeof value === "string") text = JSON.stringify(value);
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}

const sleep = systemClock.sleep;

/**
 * Calls `probe` until it returns something other than `undefined`, `null` or
 * `false`, and resolves with that. A probe that throws counts as "not yet"; the
 * last error is reported if the wait times out.
 *
 * @throws {WaitTimeoutError} after `timeoutMs`, naming `message`, the elapsed
 * time, and the last value and error observed.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: WaitForOptions,
): Promise<T> {
  const interval = options.intervalMs ?? 100;
  const start = performance.now();
  const latest = start + Math.max(options.timeoutMs, options.maxMs ?? 0);
  const deadlineNow = () =>
    Math.min(latest, Math.max(start, options.progressAt?.() ?? start) + options.timeoutMs);
  let lastValue: unknown = undefined;
  let lastError: unknown = undefined;
  let attempts = 0;
  while (true) {
    attempts++;
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value;
      lastValue = value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    const now = performance.now();
    const deadline = deadlineNow();
    if (now >= deadline) {
      const what = typeof options.message === "function" ? options.message() : options.message;
      const parts = [
        `timed out after ${Math.round(now - start)} ms (${attempts} attempts) waiting for: ${what}`,
        `last value: ${describeObservation(lastValue)}`,
      ];
      if (lastError !== undefined) parts.push(`last error: ${describeObservation(lastError)}`);
      throw new WaitTimeoutError(parts.join("; "), lastValue, lastError);
    }
    await sleep(Math.min(interval, Math.max(0, deadline - now)), options.signal);
  }
}
