/**
 * The per-node deadlines of a pool (`spec.rollout.stagingTimeoutSeconds`,
 * `daemonReportTimeoutSeconds`, `progressTimeoutSeconds`), read with their defaults.
 *
 * @module
 */
import { MIN_DAEMON_REPORT_MS } from "../../lib/api/constants.ts";

/** Default of `spec.rollout.stagingTimeoutSeconds`. */
export const DEFAULT_STAGING_TIMEOUT_SECONDS = 1800;
/** Default of `spec.rollout.daemonReportTimeoutSeconds`. */
export const DEFAULT_DAEMON_REPORT_TIMEOUT_SECONDS = 300;
/** Default of `spec.rollout.progressTimeoutSeconds` (the liveness rule). */
export const DEFAULT_PROGRESS_TIMEOUT_SECONDS = 600;

/** The deadlines of a pool, in milliseconds. */
export interface StallDeadlines {
  stagingMs: number;
  daemonReportMs: number;
  /** How long a node may wait on unchanged facts where no other deadline applies. */
  progressMs: number;
}

/** Reads the deadlines from a pool's rollout spec. */
export function stallDeadlines(rollout: Record<string, unknown> | undefined): StallDeadlines {
  const n = (v: unknown, d: number) => (typeof v === "number" && v > 0 ? v : d) * 1000;
  return {
    stagingMs: n(rollout?.stagingTimeoutSeconds, DEFAULT_STAGING_TIMEOUT_SECONDS),
    // A daemon reports a pull of a new spec once it has run a few seconds: never sooner.
    daemonReportMs: Math.max(
      MIN_DAEMON_REPORT_MS,
      n(rollout?.daemonReportTimeoutSeconds, DEFAULT_DAEMON_REPORT_TIMEOUT_SECONDS),
    ),
    progressMs: n(rollout?.progressTimeoutSeconds, DEFAULT_PROGRESS_TIMEOUT_SECONDS),
  };
}
