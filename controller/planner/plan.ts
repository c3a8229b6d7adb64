/**
 * The shapes every planning step shares: the planner's input, the actions and
 * events it produces, and {@linkcode StepOutput}, what each step returns (the
 * planner folds them with {@linkcode mergeOutputs}).
 *
 * @module
 */
import type { SignatureMemo } from "./trust.ts";
import {
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  owningPool,
} from "../../lib/api/mod.ts";
import type { ClusterBudget, UnseenSlotWrites } from "../gates/gate.ts";
import type { ApprovalAnswer, ApprovalAsks } from "../model/approval.ts";
import type { QueryVerdict } from "../model/health.ts";
import type { ObjectVerdict } from "../model/object_check.ts";
import type { ChannelDecision } from "./channel.ts";
import type { PoolIssue, StateCounts } from "./pool_status.ts";
import type {
  NodeSummary,
  PdbSummary,
  PodSummary,
  PoolSummary,
  ResolutionMemo,
  VolumeAttachmentSummary,
} from "../model/types.ts";

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
  /** Slot writes of this controller the caches do not show yet (the budgets count them). */
  unseen?: UnseenSlotWrites;
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
  /**
   * Nodes whose pods could not be listed, with the error: they stay unknown, and a
   * health check on them waits rather than fails (`evaluateHealth`'s `podsUnreadable`).
   */
  podsFailed?: ReadonlyMap<string, string>;
  /**
   * The VolumeAttachments of the nodes whose pods were listed, when the pool waits for
   * volumes to detach (`drain.waitForVolumeDetach`); a node missing here is unknown.
   */
  attachmentsByNode?: ReadonlyMap<string, readonly VolumeAttachmentSummary[]>;
  pdbs: readonly PdbSummary[];
  /** The latest resolution of the pool's tag, if the shell has one. */
  resolution?: ResolutionMemo;
  /** The latest signature checks, by digest-pinned image (`trust.ts`'s candidates). */
  signatures?: ReadonlyMap<string, SignatureMemo>;
  /** sha256 of the pull Secret's data, when the pool names a Secret that exists. */
  pullSecretHash?: string;
  /**
   * A problem with the pool's pull Secret found by the shell: reason `InvalidSpec`
   * stops the rollout like any invalid spec; any other reason is reported as Degraded.
   */
  pullSecretIssue?: PoolIssue;
  /** Keys of `spec.image.verification` that cannot be used, naming each field (InvalidSpec). */
  keyErrors?: readonly string[];
  /**
   * The trusted keys (PEM) of a pool that enforces signatures, when all are known: copied to
   * each BootcNode, whose daemon makes the host's policy require them. Undefined: not known now.
   */
  hostKeys?: readonly string[];
  /** The node the acting controller runs on, if known: it gets its slot last (node_order.ts). */
  controllerNode?: string;
  /**
   * The channel step's decision (`channel.ts`), for a pool that follows a channel;
   * the shell has already put its `ref` into the pool's `spec.image.ref`.
   */
  channel?: ChannelDecision;
  /** The latest Prometheus health-check answer per node (nodes being verified only). */
  healthQueries?: ReadonlyMap<string, QueryVerdict>;
  /** The latest answer to the pool's alert query (`gates/alerts.ts`), if it has one. */
  alerts?: QueryVerdict;
  /** The latest verdict of each object precondition (`gates/objects.ts`), index by index. */
  objectChecks?: readonly (ObjectVerdict | undefined)[];
  /** What the approval webhook answered so far (`pollers/approval_requests.ts`). */
  approvalAnswers?: readonly ApprovalAnswer[];
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

/**
 * What a Node or BootcNode write is for, when the shell must treat it apart; a write
 * without one is an ordinary step of the node's update.
 *
 * - `grant`: hands the node a reboot slot (`slot_grant.ts`): the last budget check, the
 *   apply order and the hand-off metric key on it. A repair that rewrites the record is
 *   no grant, so the patch alone cannot tell.
 * - `release`: hands a node's slot back (`in_flight.ts`): the room it frees goes to
 *   grants of the same plan, which the shell applies only after it (`shell/apply_order.ts`).
 * - `repairRecord`: restores a damaged or removed disruption record: applied before any
 *   grant of the plan.
 * - `annotate`: only the annotations that tell people the node's update
 *   (`node_annotations.ts`, `bootc_node_display.ts`): read-only facts, counted apart.
 */
export type WriteIntent = "grant" | "release" | "repairRecord" | "annotate";

/** One write, applied by the shell in order. */
export type Action =
  | { kind: "createBootcNode"; node: string; object: BootcNode }
  | {
    kind: "patchBootcNode";
    node: string;
    patch: MergePatch;
    why: string;
    observe?: Observation;
    /** What the write is for, when the shell treats it apart ({@linkcode WriteIntent}). */
    intent?: "annotate" | "release";
  }
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
    /** What the write is for, when the shell treats it apart ({@linkcode WriteIntent}). */
    intent?: WriteIntent;
    /**
     * The Node's cordon (`spec.unschedulable`) the write was planned on, and the cached
     * `resourceVersion` it was read at. Set on the grant, which records that cordon as the
     * node's prior state: the shell makes the write conditional, and a Node whose cordon
     * changed meanwhile (a user's `kubectl cordon` the cache had not seen yet) ends the
     * plan instead of recording a wrong prior state (controller/shell/action_writer.ts).
     */
    cordonSeen?: { unschedulable: boolean; resourceVersion?: string };
  }
  | { kind: "evict"; node: string; pods: PodRef[] }
  /**
   * `onTimeout: Force`: deletes the pods evictions could not remove, past the drain
   * timeout (each pod's uid a precondition; its Warning event is planned with it).
   */
  | { kind: "deletePods"; node: string; pods: PodRef[] }
  | { kind: "addFinalizer" }
  | { kind: "removeFinalizer" };

/** A pod a drain evicts or deletes, with the grace period to send (undefined: the pod's own). */
export interface PodRef {
  namespace: string;
  name: string;
  uid?: string;
  gracePeriodSeconds?: number;
}

/** True for the action that grants a node a reboot slot: the one marked `grant`. */
export function isSlotGrant(action: Action): boolean {
  return action.kind === "patchNode" && action.intent === "grant";
}

/** True for a write that hands a node's slot back (the Node's record, or the BootcNode's mirror). */
export function isSlotRelease(action: Action): boolean {
  return (action.kind === "patchNode" || action.kind === "patchBootcNode") &&
    action.intent === "release";
}

/** True for the write that restores a node's disruption record. */
export function isRecordRepair(action: Action): boolean {
  return action.kind === "patchNode" && action.intent === "repairRecord";
}

/** A Kubernetes Event to record. */
export interface PlannedEvent {
  /**
   * The object the event is about: the pool, a node's BootcNode (its image: desired,
   * staging), or the Node itself (its disruption: cordon, drain, reboot, verification,
   * recorded as kubelet records its own, so `kubectl describe node` shows them).
   */
  regarding: { kind: "BootcNodePool" | "BootcNode" | "Node"; name: string };
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /**
   * Set for events derived from time rather than from a write (timeouts): the
   * shell records each key once, so a level-triggered loop does not repeat them.
   */
  onceKey?: string;
  /**
   * Set for events that tell of the plan's status turning (which part: a condition's type,
   * or `Target`): the shell records them only along with that status, never after a
   * failed write.
   */
  ofStatus?: StatusPart;
}

/** What part of a pool's status an event tells of (see {@linkcode PlannedEvent.ofStatus}). */
export type StatusPart = "Degraded" | "CircuitOpen" | "UpToDate" | "Target";

/** The planner's answer. */
export interface Plan {
  actions: Action[];
  events: PlannedEvent[];
  /** The new status; undefined while the pool is being deleted. */
  status: BootcNodePoolStatus | undefined;
  /** Reconcile again after this long, when a deadline or a time-driven step is due. */
  requeueAfterMs?: number;
  /**
   * Look at the drain's pods again after this long: the one wake the shell may back off
   * while evictions are refused (a deadline in `requeueAfterMs` never waits for it).
   */
  pollAfterMs?: number;
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
  /**
   * The Node annotation changes for people (`node_annotations.ts`), per node: the shell
   * folds them into the plan's Node writes (`foldNodeAnnotations`).
   */
  nodeAnnotations?: ReadonlyMap<string, Record<string, string | null>>;
  /**
   * The BootcNode annotation changes for `kubectl get bootcnodes`, per node
   * (`bootc_node_display.ts`): the shell folds them into the plan's BootcNode writes.
   */
  bootcNodeDisplay?: ReadonlyMap<string, Record<string, string>>;
  /** What the approval webhook must still be asked (the shell hands it to its poller). */
  approvalAsks?: ApprovalAsks;
}

/**
 * What one planning step adds to the plan: its writes, events, notes and issues,
 * the pods it needs and when it wants the pool reconciled again. Steps return one
 * (with their own typed facts beside it); `planPool` folds them in step order with
 * {@linkcode mergeOutputs}, so no step writes into another's.
 */
export interface StepOutput {
  readonly actions: readonly Action[];
  readonly events: readonly PlannedEvent[];
  /** Why the rollout waits, appended to the UpToDate message. */
  readonly notes: readonly string[];
  /** Problems that make the pool Degraded. */
  readonly issues: readonly PoolIssue[];
  /** Nodes whose pods are needed. */
  readonly needPods: readonly string[];
  /** Reconcile again after this long (the earliest wish, at least 1 ms). */
  readonly requeueAfterMs?: number;
  /** Poll the drain's pods again after this long (the earliest wish, at least 1 ms). */
  readonly pollAfterMs?: number;
  /** True while a drain waits on pods. */
  readonly draining: boolean;
}

/** A step that adds nothing. */
export const NO_OUTPUT: StepOutput = Object.freeze({
  actions: [],
  events: [],
  notes: [],
  issues: [],
  needPods: [],
  draining: false,
});

/**
 * A {@linkcode StepOutput} from its parts (`wake`: ms from now, the earliest kept; `poll`:
 * the drain's next look at its pods, which the shell may back off).
 */
export function stepOutput(
  parts: Partial<Omit<StepOutput, "requeueAfterMs" | "pollAfterMs">> & {
    wake?: number;
    poll?: number;
  } = {},
): StepOutput {
  const { wake, poll, ...rest } = parts;
  return {
    ...NO_OUTPUT,
    ...rest,
    ...(wake !== undefined ? { requeueAfterMs: Math.max(wake, 1) } : {}),
    ...(poll !== undefined ? { pollAfterMs: Math.max(poll, 1) } : {}),
  };
}

/** The earlier of two optional delays. */
export function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** The outputs of steps in order, as one: lists concatenated, the earliest wake-up kept. */
export function mergeOutputs(outputs: readonly StepOutput[]): StepOutput {
  const actions: Action[] = [];
  const events: PlannedEvent[] = [];
  const notes: string[] = [];
  const issues: PoolIssue[] = [];
  const needPods: string[] = [];
  let requeueAfterMs: number | undefined;
  let pollAfterMs: number | undefined;
  let draining = false;
  for (const o of outputs) {
    actions.push(...o.actions);
    events.push(...o.events);
    notes.push(...o.notes);
    issues.push(...o.issues);
    needPods.push(...o.needPods);
    requeueAfterMs = earliest(requeueAfterMs, o.requeueAfterMs);
    pollAfterMs = earliest(pollAfterMs, o.pollAfterMs);
    draining ||= o.draining;
  }
  return { actions, events, notes, issues, needPods, requeueAfterMs, pollAfterMs, draining };
}

/** An event about the pool `poolName`. */
export function poolEvent(
  poolName: string,
  type: PlannedEvent["type"],
  reason: string,
  message: string,
  onceKey?: string,
): PlannedEvent {
  return { regarding: { kind: "BootcNodePool", name: poolName }, type, reason, message, onceKey };
}

/** An event about node `node`'s BootcNode. */
export function nodeEvent(
  node: string,
  type: PlannedEvent["type"],
  reason: string,
  message: string,
  onceKey?: string,
): PlannedEvent {
  return { regarding: { kind: "BootcNode", name: node }, type, reason, message, onceKey };
}

/**
 * An event about the Node `node` itself: its disruption (cordon, drain, reboot,
 * verification). `kubectl describe node` shows these beside kubelet's.
 */
export function nodeObjectEvent(
  node: string,
  type: PlannedEvent["type"],
  reason: string,
  message: string,
  onceKey?: string,
): PlannedEvent {
  return { regarding: { kind: "Node", name: node }, type, reason, message, onceKey };
}

/**
 * A step's own collector of what it decides, local to one step call (never
 * shared between steps): it ends as the step's {@linkcode StepOutput}.
 */
export class StepWriter {
  readonly actions: Action[] = [];
  readonly events: PlannedEvent[] = [];
  readonly issues: PoolIssue[] = [];
  readonly notes: string[] = [];
  readonly needPods: string[] = [];
  requeueAfterMs?: number;
  pollAfterMs?: number;
  draining = false;

  /** Starts an empty output for pool `poolName` at `now`. */
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
    this.events.push(poolEvent(this.poolName, type, reason, message, onceKey));
  }

  /** Records an event about a node's BootcNode. */
  nodeEvent(
    node: string,
    type: PlannedEvent["type"],
    reason: string,
    message: string,
    onceKey?: string,
  ): void {
    this.events.push(nodeEvent(node, type, reason, message, onceKey));
  }

  /** Appends a write. */
  act(action: Action): void {
    this.actions.push(action);
  }

  /** Appends what a helper of this step returned. */
  add(out: StepOutput): void {
    this.actions.push(...out.actions);
    this.events.push(...out.events);
    this.notes.push(...out.notes);
    this.issues.push(...out.issues);
    this.needPods.push(...out.needPods);
    if (out.requeueAfterMs !== undefined) this.wake(out.requeueAfterMs);
    this.pollAfterMs = earliest(this.pollAfterMs, out.pollAfterMs);
    this.draining ||= out.draining;
  }

  /** What was collected, as the step's output. */
  output(): StepOutput {
    return {
      actions: [...this.actions],
      events: [...this.events],
      notes: [...this.notes],
      issues: [...this.issues],
      needPods: [...this.needPods],
      requeueAfterMs: this.requeueAfterMs,
      pollAfterMs: this.pollAfterMs,
      draining: this.draining,
    };
  }
}

/** "a, b, c and 2 more". */
export function listNames(names: readonly string[], max = 5): string {
  const shown = names.slice(0, max).join(", ");
  return names.length > max ? `${shown} and ${names.length - max} more` : shown;
}

/** The BootcNodes a pool owns. */
export function ownedBootcNodes(input: PlanInput): BootcNode[] {
  const name = input.pool.metadata.name ?? "";
  return [...input.bootcNodes.values()].filter((bn) => owningPool(bn) === name);
}
