/**
 * The clock seam: code that waits or stamps times takes a {@linkcode Clock} so
 * tests can drive time.
 *
 * @module
 */

/** A source of time and delays. */
export interface Clock {
  /** The current time. */
  now(): Date;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** RFC 3339 with second precision, as Kubernetes writes times (one format everywhere). */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Parses an RFC 3339 time as the API writes it; undefined when absent or not RFC 3339
 * (`Date.parse` alone would read "7" or "March 7" as some date).
 */
export function parseTime(value: string | undefined): Date | undefined {
  if (!value || !RFC3339.test(value)) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : new Date(t);
}

/** How far ahead of now a recorded time may lie (another machine's clock). */
export const MAX_CLOCK_SKEW_MS = 60_000;

/**
 * {@linkcode parseTime}, and undefined too for a time ahead of `now` by more than
 * {@linkcode MAX_CLOCK_SKEW_MS}: a deadline measured from a future time would never
 * pass, so such a time counts as unreadable.
 */
export function pastTime(value: string | undefined, now: Date): Date | undefined {
  const t = parseTime(value);
  return t && t.getTime() <= now.getTime() + MAX_CLOCK_SKEW_MS ? t : undefined;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * A clock that starts at `start` and runs at real speed (sleeps are real): lets an
 * end-to-end test put a whole process at a chosen time, e.g. just before a window.
 */
export function shiftedClock(start: Date, base: Clock = systemClock): Clock {
  const offset = start.getTime() - base.now().getTime();
  return {
    now: () => new Date(base.now().getTime() + offset),
    sleep: (ms, signal) => base.sleep(ms, signal),
  };
}

/** A manual clock for tests: time moves only when {@linkcode FakeClock.advance} is called. */
export class FakeClock implements Clock {
  #now: number;
  #sleepers: { at: number; resolve: () => void }[] = [];

  /** Starts at `start` (default 2026-01-01T00:00:00Z). */
  constructor(start: Date | string = "2026-01-01T00:00:00Z") {
    this.#now = new Date(start).getTime();
  }

  /** The current fake time. */
  now(): Date {
    return new Date(this.#now);
  }

  /** Resolves once the fake time has advanced by `ms`. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const sleeper = { at: this.#now + ms, resolve };
      this.#sleepers.push(sleeper);
      signal?.addEventListener("abort", () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(signal.reason);
      }, { once: true });
    });
  }

  /** Moves time forward and wakes every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.#now += ms;
    const due = this.#sleepers.filter((s) => s.at <= this.#now);
    this.#sleepers = this.#sleepers.filter((s) => s.at > this.#now);
    for (const s of due) s.resolve();
  }
}

/** Resolves after `ms`, or as soon as `signal` aborts (never rejects). */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
