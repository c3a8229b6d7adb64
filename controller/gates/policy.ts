/**
 * The rollout-policy fields of a BootcNodePool spec that the time-based gates
 * read (issue 13), typed here so the gates do not depend on when the schema
 * gains them: `spec.timeZone`, `spec.rollout.budgets`, `spec.maintenance`.
 * {@linkcode poolPolicy} reads them off a pool; a spec whose schema has the same
 * shape is assignable as is.
 *
 * @module
 */
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { DEFAULT_TIME_ZONE, type ScheduledWindow } from "./schedule.ts";

/** A Karpenter-style budget: active always (no schedule) or from each cron start for `duration`. */
export interface RolloutBudget {
  /** Nodes of the pool that may be disrupted at once while active: an integer >= 0 or a percentage ("0%" = 0). */
  maxUnavailable: number | string;
  /** Cron schedule in the pool's time zone; set together with `duration`. */
  schedule?: string;
  /** Go-style duration ("8h", "90m", "1h30m"); set together with `schedule`. */
  duration?: string;
}

/** An absolute range during which no new reboot starts. */
export interface BlackoutSpec {
  /** RFC 3339 instant, inclusive. */
  start: string;
  /** RFC 3339 instant, exclusive. */
  end: string;
  /** For people (shown in the wait message). */
  reason?: string;
}

/** `spec.maintenance`. */
export interface MaintenanceSpec {
  /** New reboots start only inside one of these (none = always). */
  windows?: ScheduledWindow[];
  blackouts?: BlackoutSpec[];
  stageOutsideWindows?: boolean;
}

/** The policy fields of a pool spec the time-based gates read. */
export interface PoolPolicy {
  /** IANA zone for every schedule of the pool; default "UTC". */
  timeZone?: string;
  rollout?: {
    maxUnavailable?: number | string;
    budgets?: RolloutBudget[];
  };
  maintenance?: MaintenanceSpec;
}

/** The policy fields of `pool`'s spec. */
export function poolPolicy(pool: BootcNodePool): PoolPolicy {
  return pool.spec as PoolPolicy;
}

/** The pool's time zone (`spec.timeZone`, default UTC). */
export function poolTimeZone(pool: BootcNodePool): string {
  return poolPolicy(pool).timeZone || DEFAULT_TIME_ZONE;
}
