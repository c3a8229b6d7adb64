/**
 * The shapes every planning step shares: the planner's input, the actions and
 * events it produces, and {@linkcode PlanBuilder}, which the steps append to.
 *
 * @module
 */
import type { BootcNode, BootcNodePool, BootcNodePoolStatus } from "../lib/api/mod.ts";
import type { ClusterBudget } from "./gates/gate.ts";
import type { QueryVerdict } from "./health.ts";
import type { ChannelDecision } from "./channel.ts";
import type { PoolIssue, StateCounts } from "./pool_status.ts";
import type { ResolutionMemo } from "./resolution.ts";
import type { NodeSummary, PdbSummary, PodSummary, PoolSummary } from "./types.ts";

/** Tunables of the planner (times in milliseconds). */
export interface PlannerOptions {
  /** Tag poll interval when the pool does not set `image.pollIntervalSeconds` (default 5 min). */
  defaultPollIntervalMs?: number;
  /** Retry delay after a failed resolution, capped by the poll interval (default 30 s). */
  resolveRetryMs?: number;
  /** How soon a drain pass is repeated while pods are still leaving (default 5 s). */
  drainPollMs?: number;
}

/** Defaults of {@linkcode PlannerOptions}. */
export const PLANNER_DEFAULTS: Required<PlannerOptions> = {
  defaultPollIntervalMs: 5 * 60_000,
  resolveRetryMs: 30_000,
  drainPollMs: 5_000,
};

/** Everything the planner looks at. */
export interface PlanInput {
  pool: BootcNodePool;
  /** Every pool (this one may be included), for conflict detection. */
  pools: readonly PoolSummary[];
  /** Every pool as a full object (other pools' status and spec feed the cross-pool gates). */
  poolObjects?: readonly BootcNodePool[];
  /** Every BootcDisruptionBudget (cluster-wide caps across pools). */
  budgets?: readonly ClusterBudget[];
  /** Every Node, by name. */
  nodes: ReadonlyMap<string, NodeSummary>;
  /** Every BootcNode, by name. */
  bootcNodes: ReadonlyMap<string, BootcNode>;
  /** Pods by node name (only nodes of this pool need to be present). */
  podsByNode: ReadonlyMap<string, readonly PodSummary[]>;
  /**
   * The nodes whose pods were listed. When set, a node outside it has unknown
   * pods: the planner neither drains it nor gives it a slot, and asks for its
   * pods in {@linkcode Plan.needPods}. When unset, every node's pods are known.
   */
  podsListed?: ReadonlySet<string>;
  pdbs: readonly PdbSummary[];
  /** The latest resolution of the pool's tag, if the shell has one. */
  resolution?: ResolutionMemo;
  /** sha256 of the pull Secret's data, when the pool names a Secret that exists. */
  pullSecretHash?: string;
  /**
   * A problem with the pool's pull Secret found by the shell: reason `InvalidSpec`
   * stops the rollout like any invalid spec; any other reason is reported as Degraded.
   */
  pullSecretIssue?: PoolIssue;
  /**
   * The channel step's decision (`channel.ts`), for a pool that follows a channel;
   * the shell has already put its `ref` into the pool's `spec.image.ref`.
   */
  channel?: ChannelDecision;
  /** The latest Prometheus health-check answer per node (nodes being verified only). */
  healthQueries?: ReadonlyMap<string, QueryVerdict>;
  now: Date;
  options?: PlannerOptions;
}

/** A JSON merge patch. */
export type MergePatch = Record<string, unknown>;

/** What a completed action lets the shell observe (metrics). */
export interface Observation {
  metric: "drain_seconds" | "update_seconds";
  seconds: number;
}

/** One write, applied by the shell in order. */
export type Action =
  | { kind: "createBootcNode"; node: string; object: BootcNode }
  | { kind: "patchBootcNode"; node: string; patch: MergePatch; why: string; observe?: Observation }
  /**
   * A merge patch of the BootcNode's status subresource; `patch.metadata.resourceVersion`
   * makes it conditional (a conflict is not an error: the next reconcile tries again).
   */
  | { kind: "patchBootcNodeStatus"; node: string; patch: MergePatch; why: string }
  | { kind: "deleteBootcNode"; node: string; uid?: string }
  | {
    kind: "patchNode";
    node: string;
    patch: MergePatch;
    why: string;
    observe?: Observation;
    /**
     * Set on the one write that hands the node a reboot slot (`slot_grant.ts`): the
     * apply order and the hand-off metric key on it. A repair that rewrites the slot
     * record is no grant, so the patch alone cannot tell.
     */
    grant?: true;
  }
  | { kind: "evict"; node: string; pods: { namespace: string; name: string; uid?: string }[] }
  | { kind: "addFinalizer" }
  | { kind: "removeFinalizer" };

/** True for the action that grants a node a reboot slot: the one marked `grant`. */
export function isSlotGrant(action: Action): boolean {
  return action.kind === "patchNode" && action.grant === true;
}

/** A Kubernetes Event to record. */
export interface PlannedEvent {
  /** The object the event is about. */
  regarding: { kind: "BootcNodePool" | "BootcNode"; name: string };
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /**
   * Set for events derived from time rather than from a write (timeouts): the
   * shell records each key once, so a level-triggered loop does not repeat them.
   */
  onceKey?: string;
}

/** The planner's answer. */
export interface Plan {
  actions: Action[];
  events: PlannedEvent[];
  /** The new status; undefined while the pool is being deleted. */
  status: BootcNodePoolStatus | undefined;
  /** Reconcile again after this long, when a deadline or a poll is due. */
  requeueAfterMs?: number;
  /** True while a drain is waiting on pods (the shell backs off when evictions are refused). */
  draining: boolean;
  /** Number of reboot slots (resolved maxUnavailable). */
  slots: number;
  /** Nodes whose pods the planner needs to decide (list them and plan again). */
  needPods: string[];
  /** Member nodes per effective state (a node found stuck counts as Degraded). */
  counts: StateCounts;
  /** Every problem found (the Degraded condition names only the most severe; metrics want all). */
  issues?: readonly PoolIssue[];
}

/** Collects what the planning steps decide; one per {@linkcode Plan}. */
export class PlanBuilder {
  readonly actions: Action[] = [];
  readonly events: PlannedEvent[] = [];
  /** Problems that make the pool Degraded. */
  readonly issues: PoolIssue[] = [];
  /** Why the rollout waits, appended to the UpToDate message. */
  readonly notes: string[] = [];
  /** Nodes whose pods are needed. */
  readonly needPods: string[] = [];
  requeueAfterMs?: number;
  draining = false;

  /** Starts an empty plan for pool `poolName` at `now`. */
  constructor(readonly poolName: string, readonly now: Date) {}

  /** Asks for another reconcile after `ms` (the earliest request wins). */
  wake(ms: number): void {
    const v = Math.max(ms, 1);
    this.requeueAfterMs = this.requeueAfterMs === undefined ? v : Math.min(this.requeueAfterMs, v);
  }

  /** Asks for another reconcile at `at`. */
  wakeAt(at: Date): void {
    this.wake(at.getTime() - this.now.getTime());
  }

  /** Records an event about the pool. */
  poolEvent(type: PlannedEvent["type"], reason: string, message: string, onceKey?: string): void {
    this.events.push({
      regarding: { kind: "BootcNodePool", name: this.poolName },
      type,
      reason,
      message,
      onceKey,
    });
  }

  /** Records an event about a node's BootcNode. */
  nodeEvent(
    node: string,
    type: PlannedEvent["type"],
    reason: string,
    message: string,
    onceKey?: string,
  ): void {
    this.events.push({
      regarding: { kind: "BootcNode", name: node },
      type,
      reason,
      message,
      onceKey,
    });
  }

  /** Appends a write. */
  act(action: Action): void {
    this.actions.push(action);
  }
}

/** "a, b, c and 2 more". */
export function listNames(names: readonly string[], max = 5): string {
  const shown = names.slice(0, max).join(", ");
  return names.length > max ? `${shown} and ${names.length - max} more` : shown;
}
