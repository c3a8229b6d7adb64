/**
 * Planning step 1, the target: whether the pool's tag needs resolving, and the
 * digest-pinned target the pool rolls out (a digest ref as is; a tag from the
 * latest resolution, else the last target in status).
 *
 * @module
 */
import {
  type BootcNodePool,
  findCondition,
  PoolConditionType,
  PoolDegradedReason,
} from "../../lib/api/mod.ts";
import { type ImageRefParts, splitImageRef } from "../model/image_ref.ts";
import {
  NO_OUTPUT,
  PLANNER_DEFAULTS,
  type PlannerOptions,
  type StepOutput,
  stepOutput,
} from "./plan.ts";
import { formatTime, parseTime } from "../model/slots.ts";
import type { ResolutionMemo, Target } from "../model/types.ts";

export type { ResolutionMemo, ResolveResult } from "../model/types.ts";

/** What step 1 needs from the shell. */
export type ResolutionNeed =
  | { kind: "invalid"; message: string }
  /** A channel pool whose first version is not chosen yet: nothing to resolve. */
  | { kind: "none" }
  | { kind: "pinned"; parts: ImageRefParts }
  | { kind: "resolve"; ref: string; parts: ImageRefParts }
  | { kind: "fresh"; parts: ImageRefParts; nextAt: Date };

/** Poll interval of a pool in milliseconds. */
export function pollIntervalMs(pool: BootcNodePool, options: PlannerOptions = {}): number {
  const s = pool.spec.image.pollIntervalSeconds;
  return s !== undefined && s > 0
    ? s * 1000
    : (options.defaultPollIntervalMs ?? PLANNER_DEFAULTS.defaultPollIntervalMs);
}

/**
 * Does this reconcile have to ask the registry? A digest ref never does; a tag
 * does when the spec changed, the last attempt failed and its retry is due, or
 * the poll interval has passed.
 */
export function resolutionNeed(
  pool: BootcNodePool,
  now: Date,
  memo: ResolutionMemo | undefined,
  options: PlannerOptions = {},
): ResolutionNeed {
  const ref = pool.spec.image.ref;
  if (ref === undefined) return { kind: "none" };
  let parts: ImageRefParts;
  try {
    parts = splitImageRef(ref);
  } catch (e) {
    return { kind: "invalid", message: (e as Error).message };
  }
  if (parts.digest) return { kind: "pinned", parts };
  const interval = pollIntervalMs(pool, options);
  const generation = pool.metadata.generation;
  const due = (nextAt: Date): ResolutionNeed =>
    now.getTime() >= nextAt.getTime()
      ? { kind: "resolve", ref, parts }
      : { kind: "fresh", parts, nextAt };
  if (memo && memo.generation === generation) {
    const wait = memo.result.ok
      ? interval
      : Math.min(interval, options.resolveRetryMs ?? PLANNER_DEFAULTS.resolveRetryMs);
    return due(new Date(memo.at.getTime() + wait));
  }
  const status = pool.status;
  const last = parseTime(status?.lastResolvedTime);
  const failedBefore = findCondition(status?.conditions, PoolConditionType.Degraded)?.reason ===
    PoolDegradedReason.ImageResolutionFailed;
  if (
    !last || !status?.targetImage || status.observedGeneration !== generation || failedBefore ||
    !status.targetImage.startsWith(`${parts.repository}@`)
  ) {
    return { kind: "resolve", ref, parts };
  }
  return due(new Date(last.getTime() + interval));
}

/** The target recorded in a pool's status, if any. */
export function priorTarget(pool: BootcNodePool): Target | undefined {
  const s = pool.status;
  if (!s?.targetDigest || !s.targetImage) return undefined;
  return { digest: s.targetDigest, image: s.targetImage, platforms: s.targetPlatforms };
}

/** What step 1 settled. */
export interface Resolution {
  target?: Target;
  /**
   * True when `target` is what `spec.image.ref` means now (its tag names it): the
   * digest itself, this generation's resolution, or a fresh one in status; false
   * when the last target is kept because the ref is not resolved (yet, or failed).
   */
  fromSpec?: boolean;
  lastResolvedTime?: string;
  /** A failed resolution's issue; the next poll's wake-up. */
  out: StepOutput;
}

/**
 * Step 1: the target. A failed resolution keeps the last target (in-flight nodes
 * finish on it) and reports `ImageResolutionFailed`.
 */
export function resolveTarget(
  pool: BootcNodePool,
  need: Exclude<ResolutionNeed, { kind: "invalid" }>,
  memo: ResolutionMemo | undefined,
  now: Date,
): Resolution {
  if (need.kind === "none") return { target: priorTarget(pool), out: NO_OUTPUT };
  const parts = need.parts;
  const current = memo?.generation === pool.metadata.generation ? memo : undefined;
  const wake = need.kind === "fresh" ? need.nextAt.getTime() - now.getTime() : undefined;
  if (need.kind === "pinned") {
    const digest = parts.digest ?? "";
    const prior = pool.status?.targetDigest === digest ? pool.status?.targetPlatforms : undefined;
    return {
      target: { digest, image: `${parts.repository}@${digest}`, platforms: prior },
      fromSpec: true,
      out: NO_OUTPUT,
    };
  }
  if (current?.result.ok) {
    return {
      target: {
        digest: current.result.digest,
        image: `${parts.repository}@${current.result.digest}`,
        platforms: current.result.platforms,
      },
      lastResolvedTime: formatTime(current.at),
      fromSpec: true,
      out: stepOutput({ wake }),
    };
  }
  const failed = current && !current.result.ok
    ? [{
      reason: PoolDegradedReason.ImageResolutionFailed,
      message: `resolving ${pool.spec.image.ref}: ${current.result.message}`,
    }]
    : [];
  return {
    target: priorTarget(pool),
    lastResolvedTime: pool.status?.lastResolvedTime,
    // The status's resolution is this generation's and still fresh (after a restart).
    fromSpec: need.kind === "fresh" && failed.length === 0,
    out: stepOutput({ issues: failed, wake }),
  };
}
