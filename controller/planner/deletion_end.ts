/**
 * A deleted pool's last rollout (`spec.deletionPolicy`). Release (the default) hands every
 * node back where it stands. The other modes first bring every node to one image, the
 * target (Forward) or the last image that rolled out before it (Back), and only then hand
 * the nodes back: a fleet is never left half on each image. Threshold picks Forward when at
 * least its share of the nodes run the target.
 *
 * The choice is made once, at the first plan after the deletion, and kept in
 * `status.deletion`, so nodes finishing meanwhile never flip it. Until the nodes are
 * there, the pool is planned as a live pool pinned to that image
 * ({@linkcode finishingPool}): the gates, the trust policy, the health checks and the
 * budgets all still hold, and so do the pollers the shell feeds them from.
 *
 * @module
 */
import {
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  entryMatches,
  findCondition,
  owningPool,
  PoolConditionType,
  PoolState,
} from "../../lib/api/mod.ts";
import { shortReference } from "../../lib/api/display.ts";
import { lastGoodImage } from "./history.ts";
import { formatTime } from "../model/slots.ts";

/** `status.deletion`: where a deleted pool finishes. */
export type DeletionEnd = NonNullable<BootcNodePoolStatus["deletion"]>;

/** Default of `spec.deletionPolicy.threshold`. */
export const DEFAULT_DELETION_THRESHOLD = "50%";

/**
 * Where the deleted `pool` finishes before its nodes are handed back; undefined when they
 * are handed back where they stand (Release, nothing to finish on, or not deleted).
 */
export function deletionEnd(
  pool: BootcNodePool,
  bootcNodes: Iterable<BootcNode>,
  now: Date,
): DeletionEnd | undefined {
  if (!pool.metadata.deletionTimestamp) return undefined;
  if (pool.status?.deletion) return pool.status.deletion;
  const mode = pool.spec.deletionPolicy?.mode ?? "Release";
  const image = pool.status?.targetImage;
  const digest = pool.status?.targetDigest;
  if (mode === "Release" || !image || !digest) return undefined;
  const before = lastGoodImage(pool.status?.history, image);
  const decidedAt = formatTime(now);
  const forward: DeletionEnd = { direction: "Forward", image, digest, decidedAt };
  const back: DeletionEnd | undefined = before
    ? { direction: "Back", image: before.image, digest: before.digest, decidedAt }
    : undefined;
  if (mode === "RollForward") return forward;
  if (mode === "RollBack") return back;
  // Threshold: with nothing to go back to, forward is the only image the fleet ran whole.
  return onTargetShare(pool, bootcNodes) >= thresholdOf(pool) || !back ? forward : back;
}

/**
 * The pool as it is planned while it finishes on `end`: live (no deletion time), its image
 * pinned to `end`'s (a channel no longer chooses), every other policy as it was.
 */
export function finishingPool(pool: BootcNodePool, end: DeletionEnd): BootcNodePool {
  const { deletionTimestamp: _, ...metadata } = pool.metadata;
  const { channel: _channel, ...image } = pool.spec.image;
  return {
    ...pool,
    metadata,
    spec: { ...pool.spec, image: { ...image, ref: end.image } },
    status: { ...pool.status, deletion: end },
  };
}

/**
 * The pool as the pollers that feed its plan see it: {@linkcode finishingPool} while a
 * deleted pool finishes, else `pool` itself.
 */
export function livePool(
  pool: BootcNodePool,
  bootcNodes: Iterable<BootcNode>,
  now: Date,
): BootcNodePool {
  const end = deletionEnd(pool, bootcNodes, now);
  return end ? finishingPool(pool, end) : pool;
}

/** The share (0–100) of the pool's nodes that boot its target. */
function onTargetShare(pool: BootcNodePool, bootcNodes: Iterable<BootcNode>): number {
  const name = pool.metadata.name ?? "";
  const target = { image: pool.status?.targetImage ?? "", platforms: pool.status?.targetPlatforms };
  const mine = [...bootcNodes].filter((bn) => owningPool(bn) === name);
  if (mine.length === 0) return 100;
  const on = mine.filter((bn) => entryMatches(bn.status?.booted, target)).length;
  return (100 * on) / mine.length;
}

/** `spec.deletionPolicy.threshold` as a number from 0 to 100. */
function thresholdOf(pool: BootcNodePool): number {
  const text = pool.spec.deletionPolicy?.threshold ?? DEFAULT_DELETION_THRESHOLD;
  return Number.parseInt(text, 10);
}

/** Pool states a finishing rollout does not get past without a person: its nodes go back as they stand. */
const STUCK_STATES: ReadonlySet<string> = new Set([
  PoolState.InvalidSpec,
  PoolState.SignatureInvalid,
  PoolState.Halted,
  PoolState.RolledBack,
  PoolState.CircuitOpen,
  PoolState.ImageFailedBefore,
]);

/** How far a finishing pool got, from the status its last plan computed. */
export interface FinishingOutcome {
  /** Every node runs the image (or the rollout cannot go on): hand the nodes back now. */
  done: boolean;
  /** Done because the rollout cannot go on, not because it finished. */
  abandoned: boolean;
  reason: string;
  message: string;
}

/** {@linkcode FinishingOutcome} of a plan of the finishing pool whose status is `status`. */
export function finishingOutcome(
  status: BootcNodePoolStatus | undefined,
  end: DeletionEnd,
): FinishingOutcome {
  const image = shortReference(end.image);
  const how = end.direction === "Forward" ? "forward" : "back";
  const upToDate = findCondition(status?.conditions, PoolConditionType.UpToDate);
  if (upToDate?.status === "True" && status?.targetDigest === end.digest) {
    return {
      done: true,
      abandoned: false,
      reason: "DeletionFinished",
      message: `every node runs ${image} (rolled ${how}): handing the nodes back`,
    };
  }
  if (status?.state !== undefined && STUCK_STATES.has(status.state)) {
    return {
      done: true,
      abandoned: true,
      reason: "DeletionFinishAbandoned",
      message: `the rollout ${how} to ${image} cannot go on (${status.state}): handing the ` +
        `nodes back where they stand`,
    };
  }
  return {
    done: false,
    abandoned: false,
    reason: "DeletionFinishing",
    message: `pool deleted: rolling every node ${how} to ${image} before handing the nodes ` +
      `back (spec.deletionPolicy)`,
  };
}
