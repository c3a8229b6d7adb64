/**
 * Runs a long action (a pull) and reports it only if it is slow: the status
 * saying it runs is written once the action has run `afterMs`, never for a
 * quick one (whose outcome the next decision reports in one write). Shared by
 * the daemon's loop and the scale tool's stand-in daemons.
 *
 * @module
 */
import type { Clock } from "../lib/clock.ts";

/** Options of {@linkcode runReportingIfSlow}. */
export interface ReportIfSlowOptions<T> {
  /** The action. */
  work: () => Promise<T>;
  /** How long it runs before `report` is called. */
  afterMs: number;
  /** Writes that it runs (called at most once; its errors are its own to handle). */
  report: () => Promise<unknown>;
  clock: Pick<Clock, "sleep">;
}

/**
 * `work`'s result, once both it and a `report` started meanwhile are done (so
 * the caller's next write never races the report's).
 */
export async function runReportingIfSlow<T>(o: ReportIfSlowOptions<T>): Promise<T> {
  const stop = new AbortController();
  let reported: Promise<unknown> | undefined;
  const timer = o.clock.sleep(o.afterMs, stop.signal).then(
    () => {
      reported = o.report().catch(() => undefined);
    },
    () => undefined,
  );
  try {
    return await o.work();
  } finally {
    stop.abort();
    await timer;
    await reported;
  }
}
