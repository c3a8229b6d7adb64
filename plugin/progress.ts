/**
 * Where each node of a pool stands in a rollout, and what holds the pool back.
 *
 * A node is in exactly one bucket, judged against the pool's target digest:
 * - `failed`: its BootcNode is `Degraded=True` or `Stalled=True`;
 * - `rebooting`: the operator is disrupting it (its Node carries the disruption
 *   record: reboot slot, cordon, drain) or it reports `Idle=False/Rebooting`;
 *   a node back on the target counts here until the operator releases it;
 * - `updated`: it boots the target and is released;
 * - `staged`: the target is staged (`Idle=False/Staged`), waiting for a slot;
 * - `staging`: it is downloading (`Idle=False/Staging`);
 * - `pending`: none of these yet (queued for staging, daemon not reacted, …).
 *
 * @module
 */
import {
  ANNOTATION_WAS_CORDONED,
  IdleReason,
  NodeConditionType,
  POOL,
  PoolConditionType,
  PoolDegradedReason,
  UpToDateReason,
} from "../lib/api/constants.ts";
import { isDisrupted } from "../lib/api/annotations.ts";
import { findCondition } from "../lib/api/conditions.ts";
import type { BootcNode, BootcNodePool, NodeLike } from "./model.ts";
import { parseTime } from "./model.ts";

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

/**
 * True when a boot entry provides `target`: its pullspec's digest, its
 * `imageDigest`, or the index's manifest for its architecture matches.
 */
export function entryProvides(
  entry: { image?: string; imageDigest?: string; architecture?: string } | undefined,
  target: TargetDigest,
): boolean {
  if (!entry) return false;
  if (digestOf(entry.image) === target.digest || entry.imageDigest === target.digest) return true;
  return (target.platforms ?? []).some((p) =>
    p.digest === entry.imageDigest &&
    (entry.architecture === undefined || p.architecture === undefined ||
      p.architecture === entry.architecture)
  );
}

/** The pool that controls a BootcNode (controller ownerReference). */
export function owningPool(bn: BootcNode): string | undefined {
  return bn.metadata?.ownerReferences?.find((o) => o.kind === POOL.kind && o.controller)?.name;
}

/** The BootcNodes a pool owns, sorted by name. */
export function poolMembers(pool: string, bootcNodes: readonly BootcNode[]): BootcNode[] {
  return bootcNodes.filter((bn) => owningPool(bn) === pool).sort((a, b) =>
    (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1
  );
}

/**
 * True while the operator has work to finish or undo on the node: the Node
 * carries part of the disruption record, or the BootcNode mirrors a prior
 * cordon state (as the controller judges it).
 */
export function disrupted(bn: BootcNode | undefined, node: NodeLike | undefined): boolean {
  return (node !== undefined && isDisrupted(node)) ||
    bn?.metadata?.annotations?.[ANNOTATION_WAS_CORDONED] !== undefined;
}

/** The target a node is judged against: the pool's, else its own desired image. */
function targetFor(bn: BootcNode, target: TargetDigest | undefined): TargetDigest | undefined {
  if (target) return target;
  const digest = digestOf(bn.spec?.desiredImage);
  return digest ? { digest } : undefined;
}

/** The bucket of one node (see the module doc). */
export function classifyNode(
  bn: BootcNode,
  node: NodeLike | undefined,
  poolTargetDigest: TargetDigest | undefined,
): Bucket {
  const conditions = bn.status?.conditions;
  if (
    findCondition(conditions, NodeConditionType.Degraded)?.status === "True" ||
    findCondition(conditions, NodeConditionType.Stalled)?.status === "True"
  ) return "failed";
  const idle = findCondition(conditions, NodeConditionType.Idle);
  if (disrupted(bn, node)) return "rebooting";
  if (idle?.status === "False" && idle.reason === IdleReason.Rebooting) return "rebooting";
  const target = targetFor(bn, poolTargetDigest);
  if (target && entryProvides(bn.status?.booted, target)) return "updated";
  if (idle?.status !== "False") return "pending";
  if (idle.reason === IdleReason.Staging) return "staging";
  if (idle.reason === IdleReason.Staged) {
    // A staged entry of some other image (the daemon has not reacted to the new
    // target, or the node is queued behind the staging limit) is not progress.
    const desired = digestOf(bn.spec?.desiredImage);
    const staged = bn.status?.staged;
    const forTarget = target === undefined || desired === target.digest;
    if (forTarget && (target === undefined || entryProvides(staged, target))) return "staged";
  }
  return "pending";
}

/** The progress of one pool. */
export interface PoolProgress {
  total: number;
  counts: BucketCounts;
  /** Each member's bucket, by name. */
  buckets: Map<string, Bucket>;
  /** When each node updated in this rollout finished (see {@linkcode completionTime}). */
  completions: Date[];
}

/** Classifies every member of `pool`. */
export function poolProgress(
  pool: BootcNodePool,
  bootcNodes: readonly BootcNode[],
  nodes: ReadonlyMap<string, NodeLike>,
): PoolProgress {
  const target = poolTarget(pool);
  const counts = emptyBucketCounts();
  const buckets = new Map<string, Bucket>();
  const completions: Date[] = [];
  const start = rolloutStart(pool);
  const members = poolMembers(pool.metadata?.name ?? "", bootcNodes);
  for (const bn of members) {
    const name = bn.metadata?.name ?? "";
    const bucket = classifyNode(bn, nodes.get(name), target);
    counts[bucket]++;
    buckets.set(name, bucket);
    if (bucket === "updated") {
      const done = completionTime(bn);
      if (done && start && done.getTime() >= start.getTime()) completions.push(done);
    }
  }
  completions.sort((a, b) => a.getTime() - b.getTime());
  return { total: members.length, counts, buckets, completions };
}

/**
 * When the rollout began: the last time the pool's `UpToDate` turned False
 * (undefined while it is True or unknown).
 */
export function rolloutStart(pool: BootcNodePool): Date | undefined {
  const up = findCondition(pool.status?.conditions, PoolConditionType.UpToDate);
  return up?.status === "False" ? parseTime(up.lastTransitionTime) : undefined;
}

/**
 * When an updated node finished its cycle: the transition time of an
 * `Updated=True` condition if the BootcNode has one, else of `Idle=True` (the
 * daemon turns Idle True when the node is back and runs the image).
 */
export function completionTime(bn: BootcNode): Date | undefined {
  const conditions = bn.status?.conditions;
  const updated = findCondition(conditions, "Updated");
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
  StagingLimit: "spec.rollout.maxStaging nodes download at once; the others are queued",
  [PoolDegradedReason.RolloutHalted]:
    "two or more nodes in reboot slots are unhealthy: no new slots until they recover",
  [PoolDegradedReason.NodeStalled]: "a node has not caught up with its spec within a deadline",
  [PoolDegradedReason.NodeDegraded]: "a node reports errors or its drain is blocked",
  [PoolDegradedReason.ImageResolutionFailed]: "the image reference could not be resolved",
  [PoolDegradedReason.InvalidSpec]: "the pool's spec is invalid: no new reboot slots",
  [PoolDegradedReason.NodeConflict]: "a node matches this pool and another one",
  [PoolDegradedReason.PullSecretInvalid]: "the pool's pull Secret cannot be read",
};

/**
 * The UpToDate message without its leading breakdown ("3/5 updated; 1 staged,
 * 1 rebooting; "), which the progress bar already shows.
 */
export function withoutBreakdown(message: string): string {
  return message.replace(/^\d+\/\d+ updated(?:; (?:\d+ [a-z]+)(?:, \d+ [a-z]+)*)?(?:; |$)/, "")
    .trim();
}

/** The message without a leading "reason: " ("paused: no new slots" under reason Paused). */
function withoutReason(message: string, reason: string): string {
  return message.toLowerCase().startsWith(`${reason.toLowerCase()}: `)
    ? message.slice(reason.length + 2)
    : message;
}

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
  const up = findCondition(status.conditions, PoolConditionType.UpToDate);
  if (up?.status === "False" && up.reason !== UpToDateReason.RolloutInProgress) {
    out.push({
      kind: "wait",
      reason: up.reason,
      message: withoutReason(withoutBreakdown(up.message), up.reason) || REASON_TEXT[up.reason] ||
        "",
    });
  } else if (up?.status === "False") {
    const note = withoutBreakdown(up.message);
    if (note) out.push({ kind: "info", reason: "", message: note });
  }
  if (
    pool.spec?.rollout?.paused && up?.status !== "True" &&
    !out.some((b) => b.reason === UpToDateReason.Paused)
  ) {
    out.push({ kind: "wait", reason: UpToDateReason.Paused, message: REASON_TEXT.Paused });
  }
  return out;
}

/** True when the pool's UpToDate condition is True. */
export function poolUpToDate(pool: BootcNodePool): boolean {
  return findCondition(pool.status?.conditions, PoolConditionType.UpToDate)?.status === "True";
}
