/**
 * Rollout policies as gates (see `gate.ts`), and the order the planner runs
 * them in: the cheapest, widest "not now" first, the pool's own budget last but
 * one, cluster-wide budgets last (they look across pools).
 *
 * @module
 */
import { blackoutGate } from "./blackout.ts";
import { budgetGate } from "./budget.ts";
import { canaryGate } from "./canary.ts";
import { clusterBudgetGate } from "./cluster_budget.ts";
import type { Gate } from "./gate.ts";
import { maintenanceWindowGate } from "./maintenance_window.ts";
import { pausedGate } from "./paused.ts";
import { poolOrderGate } from "./pool_order.ts";

export * from "./gate.ts";
export { BUDGET_EXHAUSTED, budgetError, budgetGate, budgetLimit, budgetStates } from "./budget.ts";
export { BLACKOUT, blackoutError, blackoutGate } from "./blackout.ts";
export { maintenanceWindowGate, OUTSIDE_MAINTENANCE_WINDOW } from "./maintenance_window.ts";
export * from "./policy.ts";
export {
  DEFAULT_TIME_ZONE,
  durationError,
  formatInZone,
  instantError,
  scheduleError,
  timeZoneError,
  windowState,
} from "./schedule.ts";
export { policyErrors } from "./validate.ts";
export { pausedGate } from "./paused.ts";
export { CANARY_FAILED, CANARY_SOAK, CANARY_UPDATING, canaryGate } from "./canary.ts";
export {
  BLOCKED_DEGRADED_REASONS,
  BLOCKED_UP_TO_DATE_REASONS,
  CLUSTER_BUDGET_EXHAUSTED,
  clusterBudgetError,
  clusterBudgetGate,
  clusterSlotCaps,
  idleSince,
  poolBlockedReason,
  waitingCandidates,
} from "./cluster_budget.ts";
export {
  orderingErrors,
  poolOrderGate,
  rolloutAfter,
  unfinishedReason,
  WAITING_FOR_POOL,
} from "./pool_order.ts";

/** The gates every pool goes through, in order. */
export const GATES: readonly Gate[] = [
  blackoutGate,
  maintenanceWindowGate,
  pausedGate,
  canaryGate,
  budgetGate,
  poolOrderGate,
  clusterBudgetGate,
];
