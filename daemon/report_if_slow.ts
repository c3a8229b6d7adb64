/**
 * Runs a long action (a pull) and reports it only if it is slow: the status
 * saying it runs is written once the action has run `afterMs`, never for a
 * quick one (whose outcome the next decision reports in one write). A report
 * that fails is tried again every `retryMs` while the action runs, so a slow
 * pull is never left unreported. Shared by the daemon's loop and the scale
 * tool's stand-in daemons.
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
  /** How long after a failed report it is tried again (default `afterMs`). */
  retryMs?: number;
  /** Writes that it runs; false (or a rejection) when that failed. */
  report: () => Promise<boolean>;
  clock: Pick<Clock, "sleep">;
}

/**
 * `work`'s result, once both it and a `report` started meanwhile are done (so
 * the caller's next write never races the report's).
 */
export async function runReportingIfSlow<T>(o: ReportIfSlowOptions<T>): Promise<T> {
  const stop = new AbortController();
  const reporting = (async () => {
    let wait = o.afterMs;
    while (true) {
      await o.clock.sleep(wait, stop.signal);
      if (await o.report().catch(() => false)) return;
      wait = o.retryMs ?? o.afterMs;
    }
  })().catch(() => undefined);
  try {
    return await o.work();
  } finally {
    stop.abort();
    await reporting;
  }
}
