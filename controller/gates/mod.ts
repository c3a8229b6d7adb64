/**
 * Rollout policies as gates (see `gate.ts`), the order the planner runs them in
 * (`GATES`, `registry.ts`) and what derives from that list: the spec check
 * (`validate.ts`) and which pools compete for cluster budgets (`waiting.ts`).
 *
 * @module
 */
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
export { policyErrors, type PolicyErrorsInput } from "./validate.ts";
export { pausedGate } from "./paused.ts";
export { CANARY_FAILED, CANARY_SOAK, CANARY_UPDATING, canaryGate } from "./canary.ts";
export {
  type BudgetUsage,
  budgetUsage,
  CLUSTER_BUDGET_EXHAUSTED,
  clusterBudgetError,
  clusterBudgetGate,
  clusterSlotCaps,
  externalDisruptions,
} from "./cluster_budget.ts";
export {
  BLOCKED_DEGRADED_REASONS,
  BLOCKED_UP_TO_DATE_REASONS,
  type BlockedReasons,
  blockedReasons,
  idleSince,
  poolBlockedReason,
  waitingCandidates,
  type WaitingInput,
} from "./waiting.ts";
export {
  orderingErrors,
  poolOrderGate,
  rolloutAfter,
  unfinishedReason,
  WAITING_FOR_POOL,
} from "./pool_order.ts";
export {
  APPROVAL_REFUSED,
  approvalGate,
  approvalSpecErrors,
  approveHint,
  AWAITING_APPROVAL,
  POOL_ASK,
} from "./approval.ts";
export { GATES } from "./registry.ts";
