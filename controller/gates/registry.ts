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
import { blackoutGate } from "./blackout.ts";
import { budgetGate } from "./budget.ts";
import { canaryGate } from "./canary.ts";
import { clusterBudgetGate } from "./cluster_budget.ts";
import type { Gate } from "./gate.ts";
import { maintenanceWindowGate } from "./maintenance_window.ts";
import { pausedGate } from "./paused.ts";
import { poolOrderGate } from "./pool_order.ts";

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
