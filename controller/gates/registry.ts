/**
 * The gates every pool goes through, in order: the cheapest, widest "not now"
 * first, the pool's own budget last but one, cluster-wide budgets last (they
 * look across pools). This list is the one registry of rollout policies: the
 * spec check (`validate.ts`) and the fairness between pools (`waiting.ts`)
 * derive from it, so a new policy is its gate file, its line here and its
 * schema field.
 *
 * A module of its own so that modules deriving from the list can import it
 * without a cycle through `mod.ts`; no gate may import it.
 *
 * @module
 */
import { alertsGate } from "./alerts.ts";
import { approvalGate } from "./approval.ts";
import { blackoutGate } from "./blackout.ts";
import { budgetGate } from "./budget.ts";
import { canaryGate } from "./canary.ts";
import { clusterBudgetGate } from "./cluster_budget.ts";
import { externalGate } from "./external.ts";
import type { Gate } from "./gate.ts";
import { maintenanceWindowGate } from "./maintenance_window.ts";
import { nodeReadyAgeGate } from "./node_ready_age.ts";
import { objectsGate } from "./objects.ts";
import { pausedGate } from "./paused.ts";
import { poolOrderGate } from "./pool_order.ts";

/** The gates every pool goes through, in order. */
export const GATES: readonly Gate[] = [
  // First: under rollout.strategy External no slot is ever granted, and its reason headlines.
  externalGate,
  blackoutGate,
  maintenanceWindowGate,
  pausedGate,
  // A cluster that is unwell takes no reboot, whoever would be asked or counted next.
  alertsGate,
  objectsGate,
  // After the "not now" gates (a node held by them is not asked for), before the canary
  // and the budgets: a refused node (scope Node) must not hold the budget's next node back.
  approvalGate,
  canaryGate,
  // Before the budgets: a node held back for flapping takes no slot another node could use.
  nodeReadyAgeGate,
  budgetGate,
  poolOrderGate,
  clusterBudgetGate,
];
