/**
 * A BootcDisruptionBudget's status, computed purely from the Nodes: how many
 * nodes it selects, how many may be disrupted at once (`allowed`, the one
 * budget arithmetic of `lib/api/budget.ts`), which are disrupted now (the
 * disruption record on the Node, whatever pool put it there: the very facts
 * the `clusterBudget` gate decides on, `budgetUsage`), the generation it was
 * computed from, and `Degraded` naming the field when the spec is invalid (its
 * nodes then get no reboot slot). The shell writes it only when it changed
 * (`shell/budget_status_sync.ts`).
 *
 * @module
 */
import {
  type BootcDisruptionBudget,
  type BootcDisruptionBudgetStatus,
  conditionsEqual,
  PoolDegradedReason,
  setCondition,
} from "../../lib/api/mod.ts";
import { budgetUsage, type ClusterBudget, type UnrecordedDisruption } from "../gates/mod.ts";
import type { NodeSummary } from "../model/types.ts";

/** How many disrupted nodes the status names. */
export const MAX_LISTED_DISRUPTED = 20;

/** Input of {@linkcode budgetStatus}. */
export interface BudgetStatusInput {
  budget: BootcDisruptionBudget;
  /** Every Node, by name. */
  nodes: ReadonlyMap<string, NodeSummary>;
  /** Nodes an External pool's orchestrator has down (`externalDisruptions`). */
  external?: ReadonlySet<string>;
  /** Nodes disrupted with no record on their Node (`unrecordedDisruptions`). */
  unrecorded?: readonly UnrecordedDisruption[];
  now: Date;
}

/** The budget's status now (its conditions keep their transition times while unchanged). */
export function budgetStatus(input: BudgetStatusInput): BootcDisruptionBudgetStatus {
  const { budget } = input;
  const cluster: ClusterBudget = {
    name: budget.metadata.name ?? "",
    spec: budget.spec as ClusterBudget["spec"],
  };
  const usage = budgetUsage(cluster, input.nodes, input.external, input.unrecorded);
  const degraded = usage.error !== undefined
    ? {
      type: "Degraded",
      status: "True" as const,
      reason: PoolDegradedReason.InvalidSpec,
      message: `${usage.error}; no node it selects gets a reboot slot until it is fixed`,
    }
    : {
      type: "Degraded",
      status: "False" as const,
      reason: PoolDegradedReason.Healthy,
      message: "",
    };
  return {
    ...(budget.metadata.generation !== undefined
      ? { observedGeneration: budget.metadata.generation }
      : {}),
    selectedNodes: usage.selected,
    disruptedNodes: usage.disrupted.length,
    allowed: usage.limit,
    disrupted: usage.disrupted.slice(0, MAX_LISTED_DISRUPTED),
    conditions: setCondition(budget.status?.conditions, degraded, input.now),
  };
}

/** True when `next` says something `stored` does not (then it is written). */
export function budgetStatusChanged(
  stored: BootcDisruptionBudgetStatus | undefined,
  next: BootcDisruptionBudgetStatus,
): boolean {
  const { conditions: a, ...restA } = stored ?? {};
  const { conditions: b, ...restB } = next;
  return JSON.stringify(canonical(restA)) !== JSON.stringify(canonical(restB)) ||
    !conditionsEqual(a, b);
}

function canonical(status: Record<string, unknown>): [string, unknown][] {
  return Object.entries(status).filter(([, v]) => v !== undefined).sort(([x], [y]) =>
    x < y ? -1 : 1
  );
}
