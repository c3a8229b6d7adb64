/**
 * Where each node of a pool stands in a rollout, and what holds the pool back.
 *
 * Each node is classified by the one rulebook the controller plans with
 * (`lib/api/node_state.ts`, against the pool's published target); the plugin
 * derives nothing of its own. Its state lands in exactly one bucket:
 * - `failed`: failed its verification, a daemon error, rolled back, stalled;
 * - `rebooting`: in a reboot slot (cordoning, draining), rebooting (its daemon
 *   says so, whatever the target), or back on the target and being verified;
 * - `updated`: it boots the target and is released;
 * - `staged`: ready for a reboot slot (the target staged, or the host's
 *   rollback deployment);
 * - `staging`: it is downloading;
 * - `pending`: none of these yet (queued for staging, daemon not reacted, …).
 *
 * @module
 */
import {
  NodeConditionType,
  PoolConditionType,
  PoolDegradedReason,
  UpToDateReason,
} from "../lib/api/constants.ts";
import { owningPool } from "../lib/api/ownership.ts";
import { findCondition } from "../lib/api/conditions.ts";
import { poolStateKind } from "../lib/api/pool_state.ts";
import { stagingLimitMessage } from "../lib/api/display.ts";
import {
  classifyNode,
  type DesiredImage,
  EffectiveState,
  externallyOrchestrated,
  type NodeClassification,
} from "../lib/api/node_state.ts";
import type { BootcNode, BootcNodePool, Condition, NodeLike } from "./model.ts";
import { nodeReady, parseTime } from "./model.ts";

/** The buckets of a progress bar, in bar order. */
export const BUCKETS = ["updated", "rebooting", "staged", "staging", "pending", "failed"] as const;
/** One bucket. */
export type Bucket = typeof BUCKETS[number];
/** Node counts per bucket. */
export type BucketCounts = Record<Bucket, number>;

/** Zero counts. */
export function emptyBucketCounts(): BucketCounts {
  return { updated: 0, rebooting: 0, staged: 0, staging: 0, pending: 0, failed: 0 };
}

/** The digest-pinned image the nodes should run. */
export interface TargetDigest {
  /** `sha256:…` */
  digest: string;
  /** Per-platform manifest digests when `digest` is an index. */
  platforms?: readonly { digest: string; architecture?: string }[];
}

/** The `sha256:…` a pullspec is pinned to. */
export function digestOf(ref: string | undefined): string | undefined {
  return ref ? /@(sha256:[a-f0-9]{64})$/.exec(ref)?.[1] : undefined;
}

/** The pool's target (status), else undefined. */
export function poolTarget(pool: BootcNodePool): TargetDigest | undefined {
  const digest = pool.status?.targetDigest;
  return digest ? { digest, platforms: pool.status?.targetPlatforms } : undefined;
}

export { owningPool };

/** The BootcNodes a pool owns, sorted by name. */
export function poolMembers(pool: string, bootcNodes: readonly BootcNode[]): BootcNode[] {
  return bootcNodes.filter((bn) => owningPool(bn) === pool).sort((a, b) =>
    (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1
  );
}

/** The bucket of each coarse state (the controller's pool counts use the same). */
const BUCKET_OF: Readonly<Record<EffectiveState, Bucket>> = {
  Pending: "pending",
  Staging: "staging",
  Staged: "staged",
  Rebooting: "rebooting",
  UpToDate: "updated",
  Degraded: "failed",
};

/** The bucket a classified node lands in: its counted state, as the pool counts it. */
export function bucketOf(cls: NodeClassification): Bucket {
  return BUCKET_OF[cls.counted];
}

/** The pool's target as the classification takes it (from the pool's status). */
export function targetImage(
  target: TargetDigest | undefined,
  image?: string,
): DesiredImage | undefined {
  if (!target) return undefined;
  return { image: image ?? `@${target.digest}`, platforms: target.platforms };
}

/**
 * Why the pool holds nodes back from its target, as it publishes it: the staging
 * limit, or staging only inside the maintenance windows.
 */
function heldByOf(
  pool: BootcNodePool | undefined,
): { reason: string; message: string } | undefined {
  const up = findCondition(pool?.status?.conditions, PoolConditionType.UpToDate);
  const staging = pool?.status?.staging;
  if (staging) return { reason: "StagingLimit", message: stagingLimitMessage(staging) };
  // A controller that publishes no status.staging: the limit holds, its use is unknown.
  if (up?.reason === "StagingLimit") {
    return { reason: up.reason, message: "a staging place (spec.rollout.maxStaging)" };
  }
  if (
    up?.reason === "OutsideMaintenanceWindow" &&
    pool?.spec?.maintenance?.stageOutsideWindows === false
  ) {
    return {
      reason: up.reason,
      message: "the next maintenance window (stageOutsideWindows: false)",
    };
  }
  return undefined;
}

/**
 * The one classification of a node (`lib/api/node_state.ts`) against its pool's
 * published target, from the BootcNode and the Node as read.
 */
export function classifyMember(
  bn: BootcNode,
  node: NodeLike | undefined,
  pool: BootcNodePool | undefined,
): NodeClassification {
  const target = pool ? targetImage(poolTarget(pool), pool.status?.targetImage) : undefined;
  return classifyNode({
    bootcNode: { ...bn, spec: bn.spec ?? { desiredImage: "" } },
    node: node
      ? {
        annotations: node.metadata?.annotations,
        unschedulable: node.spec?.unschedulable ?? false,
        ready: nodeReady(node),
      }
      : undefined,
    poolTarget: target,
    heldBy: heldByOf(pool),
    external: externallyOrchestrated(pool),
  });
}

/** The bucket of one node against its pool's target (see the module doc). */
export function nodeBucket(
  bn: BootcNode,
  node: NodeLike | undefined,
  pool: BootcNodePool | undefined,
): Bucket {
  return bucketOf(classifyMember(bn, node, pool));
}

/** The progress of one pool. */
export interface PoolProgress {
  total: number;
  counts: BucketCounts;
  /** Each member's bucket, by name. */
  buckets: Map<string, Bucket>;
  /** Each member's classification, by name. */
  classes: Map<string, NodeClassification>;
  /** When each node updated in this rollout finished (see {@linkcode completionTime}). */
  completions: Date[];
}

/** Classifies every member of `pool`. */
export function poolProgress(
  pool: BootcNodePool,
  bootcNodes: readonly BootcNode[],
  nodes: ReadonlyMap<string, NodeLike>,
): PoolProgress {
  const counts = emptyBucketCounts();
  const buckets = new Map<string, Bucket>();
  const classes = new Map<string, NodeClassification>();
  const completions: Date[] = [];
  const start = rolloutStart(pool);
  const members = poolMembers(pool.metadata?.name ?? "", bootcNodes);
  for (const bn of members) {
    const name = bn.metadata?.name ?? "";
    const cls = classifyMember(bn, nodes.get(name), pool);
    const bucket = bucketOf(cls);
    counts[bucket]++;
    buckets.set(name, bucket);
    classes.set(name, cls);
    if (bucket === "updated") {
      const done = completionTime(bn);
      if (done && start && done.getTime() >= start.getTime()) completions.push(done);
    }
  }
  completions.sort((a, b) => a.getTime() - b.getTime());
  return { total: members.length, counts, buckets, classes, completions };
}

/**
 * When the current rollout began: the last time the pool's `UpToDate` turned
 * False, or, when later, the start of the current revision (the newest entry of
 * `status.history`, when it is the target): a target changed while an older
 * rollout was still running leaves `UpToDate` False since the older one, whose
 * pace says nothing about this one. Undefined while `UpToDate` is True or unknown.
 */
export function rolloutStart(pool: BootcNodePool): Date | undefined {
  const up = findCondition(pool.status?.conditions, PoolConditionType.UpToDate);
  if (up?.status !== "False") return undefined;
  const since = parseTime(up.lastTransitionTime);
  const current = pool.status?.history?.at(-1);
  const revision = current && current.digest === pool.status?.targetDigest
    ? parseTime(current.startedAt)
    : undefined;
  if (!since || !revision) return since ?? revision;
  return revision.getTime() > since.getTime() ? revision : since;
}

/**
 * When an updated node finished its cycle: the transition time of an
 * `Updated=True` condition if the BootcNode has one, else of `Idle=True` (the
 * daemon turns Idle True when the node is back and runs the image).
 */
export function completionTime(bn: BootcNode): Date | undefined {
  const conditions = bn.status?.conditions;
  const updated = findCondition(conditions, NodeConditionType.Updated);
  if (updated?.status === "True") return parseTime(updated.lastTransitionTime);
  const idle = findCondition(conditions, NodeConditionType.Idle);
  return idle?.status === "True" ? parseTime(idle.lastTransitionTime) : undefined;
}

/** One thing that holds a pool back, or that a user should know about it. */
export interface Blocker {
  /** "wait": a gate holds new reboots; "degraded": the Degraded condition; "info": a note. */
  kind: "wait" | "degraded" | "info";
  /** A condition reason, e.g. `OutsideMaintenanceWindow`; "" for notes. */
  reason: string;
  /** What it means, from the condition's message (or a stock explanation). */
  message: string;
}

/** Stock explanations of the reasons a pool waits or is degraded. */
export const REASON_TEXT: Readonly<Record<string, string>> = {
  [UpToDateReason.Paused]: "spec.rollout.paused is true: no new reboot slots (staging goes on)",
  OutsideMaintenanceWindow: "outside the pool's maintenance windows: reboots wait for the next one",
  Blackout: "inside a blackout period: no reboots until it ends",
  BudgetExhausted: "the pool's disruption budget (maxUnavailable) is in use",
  ClusterBudgetExhausted: "a BootcDisruptionBudget shared with other pools is in use",
  WaitingForPool: "waits until the pools named in spec.rollout.after are up to date",
  [UpToDateReason.ExternalOrchestrator]:
    "spec.rollout.strategy is External: another orchestrator cordons, drains and reboots the nodes",
  StagingLimit: "spec.rollout.maxStaging nodes download at once; the others are queued",
  [PoolDegradedReason.RolloutHalted]:
    "two or more nodes in reboot slots are unhealthy: no new slots until they recover",
  [PoolDegradedReason.NodeStalled]: "a node has not caught up with its spec within a deadline",
  [PoolDegradedReason.NodeDegraded]: "a node reports errors or its drain is blocked",
  [PoolDegradedReason.ImageResolutionFailed]: "the image reference could not be resolved",
  [PoolDegradedReason.SignatureInvalid]:
    "the image's signature does not verify (spec.image.verification): it is not rolled out",
  [PoolDegradedReason.InvalidSpec]: "the pool's spec is invalid: no new reboot slots",
  [PoolDegradedReason.NodeConflict]: "a node matches this pool and another one",
  [PoolDegradedReason.PullSecretInvalid]: "the pool's pull Secret cannot be read",
  [PoolDegradedReason.HealthCheckFailed]: "a node failed its health checks after rebooting",
  [PoolDegradedReason.RolledBack]: "the pool rolled back to its last good image",
  [PoolDegradedReason.ApprovalWebhookFailing]:
    "the approval webhook keeps failing: approve by hand or fix the endpoint",
  [PoolDegradedReason.PreconditionFailing]:
    "a check of spec.rollout.preconditions.objects cannot be evaluated: no new reboot slots",
  [PoolDegradedReason.WritesFailing]:
    "the controller's writes for this pool keep failing (an admission policy, permissions)",
  CircuitOpen: "too many failed rollouts in a row: no automatic change until it is reset",
};

/** What holds the pool back, most important first. */
export function poolBlockers(pool: BootcNodePool): Blocker[] {
  const out: Blocker[] = [];
  const status = pool.status;
  if (!status?.conditions?.length) {
    return [{
      kind: "info",
      reason: "",
      message: "the controller has not reported on this pool yet",
    }];
  }
  const generation = pool.metadata?.generation;
  if (
    generation !== undefined && status.observedGeneration !== undefined &&
    status.observedGeneration < generation
  ) {
    out.push({
      kind: "info",
      reason: "",
      message: `the controller has not acted on the latest spec yet (generation ${generation}, ` +
        `observed ${status.observedGeneration})`,
    });
  }
  const degraded = findCondition(status.conditions, PoolConditionType.Degraded);
  if (degraded?.status === "True") {
    out.push({
      kind: "degraded",
      reason: degraded.reason,
      message: degraded.message || REASON_TEXT[degraded.reason] || "",
    });
  }
  const circuit = findCondition(status.conditions, PoolConditionType.CircuitOpen);
  if (circuit?.status === "True") {
    out.push({
      kind: "degraded",
      reason: PoolConditionType.CircuitOpen,
      message: circuit.message || REASON_TEXT.CircuitOpen,
    });
  }
  const up = findCondition(status.conditions, PoolConditionType.UpToDate);
  const upBlocker = up?.status === "False"
    ? upToDateBlocker(up, status.notes ?? [], out)
    : undefined;
  if (upBlocker) out.push(upBlocker);
  if (
    pool.spec?.rollout?.paused && up?.status !== "True" &&
    !out.some((b) => b.reason === UpToDateReason.Paused)
  ) {
    out.push({ kind: "wait", reason: UpToDateReason.Paused, message: REASON_TEXT.Paused });
  }
  return out;
}

/**
 * What a False UpToDate condition adds to `known`: the gate it waits on, a note
 * of a progressing rollout, or a problem that keeps the spec from being
 * realised (a newer controller turns UpToDate False for those: an unresolvable
 * tag, a halt, a rollback hold, the circuit) unless the Degraded condition
 * already says it. Its text is the pool's `status.notes` (none from a controller
 * that publishes none: the reason's stock text).
 */
function upToDateBlocker(
  up: Condition,
  notes: readonly string[],
  known: readonly Blocker[],
): Blocker | undefined {
  const text = notes.join("; ");
  if (up.reason === UpToDateReason.RolloutInProgress) {
    return text ? { kind: "info", reason: "", message: text } : undefined;
  }
  const problem = poolStateKind(up.reason) === "problem" ||
    (Object.values(PoolDegradedReason) as string[]).includes(up.reason);
  if (!problem) {
    return { kind: "wait", reason: up.reason, message: text || REASON_TEXT[up.reason] || "" };
  }
  // A Degraded reason's text is one of the issues the Degraded condition lists.
  const issue = (Object.values(PoolDegradedReason) as string[]).includes(up.reason);
  const said = known.some((b) => b.kind === "degraded" && (b.reason === up.reason || issue));
  return said
    ? undefined
    : { kind: "degraded", reason: up.reason, message: text || REASON_TEXT[up.reason] || "" };
}

/** True when the pool's UpToDate condition is True. */
export function poolUpToDate(pool: BootcNodePool): boolean {
  return findCondition(pool.status?.conditions, PoolConditionType.UpToDate)?.status === "True";
}
