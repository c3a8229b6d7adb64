/**
 * The effective state of a BootcNode (the design's six states) and the
 * "runs the target" test that accepts both the pullspec digest and the
 * per-architecture digest bootc reports (bootc-host.md "Digests").
 *
 * @module
 */
import {
  type BootcNode,
  type BootEntryStatus,
  findCondition,
  IdleReason,
  isConditionTrue,
  NodeConditionType,
  type PlatformDigest,
} from "../lib/api/mod.ts";
import { digestOfPullspec } from "./image_ref.ts";

/** The six effective states, Degraded taking priority. */
export const EffectiveState = {
  Degraded: "Degraded",
  UpToDate: "UpToDate",
  Pending: "Pending",
  Staging: "Staging",
  Staged: "Staged",
  Rebooting: "Rebooting",
} as const;
/** One of the six effective states. */
export type EffectiveState = typeof EffectiveState[keyof typeof EffectiveState];

/** The digest-pinned image a node should run, with the index's per-platform digests. */
export interface DesiredImage {
  /** `repository@sha256:…`. */
  image: string;
  /** Per-platform manifest digests when the image's digest is an index. */
  platforms?: readonly PlatformDigest[];
}

/**
 * True when a boot entry is `desired`: its pullspec digest equals the desired
 * digest, its imageDigest equals it, or its imageDigest is the desired index's
 * manifest for the entry's architecture.
 */
export function entryMatches(
  entry: BootEntryStatus | undefined,
  desired: DesiredImage,
): boolean {
  if (!entry) return false;
  const want = digestOfPullspec(desired.image);
  if (!want) return false;
  if (digestOfPullspec(entry.image) === want) return true;
  if (!entry.imageDigest) return false;
  if (entry.imageDigest === want) return true;
  return (desired.platforms ?? []).some((p) =>
    p.digest === entry.imageDigest &&
    (entry.architecture === undefined || p.architecture === entry.architecture)
  );
}

/**
 * Classifies a BootcNode against the image it should run (normally its
 * `spec.desiredImage`). A `Staged` report whose staged entry is some other
 * image counts as Pending: the daemon has not yet reacted to the new desired
 * image, and giving it a slot would drain a node for nothing.
 */
export function effectiveState(bootcNode: BootcNode, desired: DesiredImage): EffectiveState {
  const conditions = bootcNode.status?.conditions;
  if (isConditionTrue(conditions, NodeConditionType.Degraded)) return EffectiveState.Degraded;
  if (entryMatches(bootcNode.status?.booted, desired)) return EffectiveState.UpToDate;
  const idle = findCondition(conditions, NodeConditionType.Idle);
  if (!idle || idle.status !== "False") return EffectiveState.Pending;
  switch (idle.reason) {
    case IdleReason.Staging:
      return EffectiveState.Staging;
    case IdleReason.Staged: {
      const staged = bootcNode.status?.staged;
      if (staged && !entryMatches(staged, desired)) return EffectiveState.Pending;
      return EffectiveState.Staged;
    }
    case IdleReason.Rebooting:
      return EffectiveState.Rebooting;
    default:
      return EffectiveState.Pending;
  }
}
