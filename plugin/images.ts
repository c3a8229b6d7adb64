/**
 * The images section of `status`: the stable image (the last one fully
 * rolled out, `status.deployedDigest`) and the new one (the target), each as
 * tag, version and short digest in the shared short form
 * (`lib/api/display.ts` `imageSummary`), the image a pool rolled back from,
 * and the canary's step.
 *
 * ```
 *   images     stable  v1 (1.0) aaaaaaaaaaaa
 *              new     v2 (2.0) bbbbbbbbbbbb
 *   canary     step 2/3: soaking 1 node until 10:20:00 UTC (4m00s left)
 * ```
 *
 * Versions are what the nodes' bootc reports for that digest; the target's
 * short form is the controller's `status.targetShort` when it publishes one.
 *
 * @module
 */
import { findCondition } from "../lib/api/conditions.ts";
import { PoolConditionType, PoolDegradedReason } from "../lib/api/constants.ts";
import type { BootEntryStatus } from "../lib/api/schema.ts";
import { clock, formatDuration, imageSummary } from "./format.ts";
import { type BootcNode, type BootcNodePool, parseTime, publishedState } from "./model.ts";
import { digestOf } from "./progress.ts";

/** The images of one pool, each in its short form. */
export interface ImagesView {
  /** The last image fully rolled out (undefined: none yet). */
  stable?: string;
  /** The target (undefined: not resolved yet). */
  next?: string;
  /** The target is the stable image. */
  same: boolean;
  /** The image an automatic rollback left (`status.rollbackHold`). */
  rolledBackFrom?: string;
}

/** The version bootc reports for `digest` on any member (booted, staged or rollback entry). */
export function versionOf(
  digest: string | undefined,
  bootcNodes: readonly BootcNode[],
  platforms: readonly { digest: string }[] = [],
): string | undefined {
  if (!digest) return undefined;
  const digests = new Set([digest, ...platforms.map((p) => p.digest)]);
  const matches = (e: BootEntryStatus | undefined) =>
    e?.version !== undefined && e.version !== "" &&
    ((e.imageDigest !== undefined && digests.has(e.imageDigest)) ||
      digests.has(digestOf(e.image) ?? ""));
  for (const bn of bootcNodes) {
    const s = bn.status;
    const entry = [s?.booted, s?.staged, s?.rollback].find(matches);
    if (entry) return entry.version;
  }
  return undefined;
}

/**
 * The tag the target came from, when that is sure: the spec's tag (or the
 * channel's) while the controller acts on the current spec, resolves it and
 * holds no rollback. Otherwise none: a typo'd tag must not be shown beside the
 * old digest it failed to replace.
 */
function targetTag(pool: BootcNodePool): { ref?: string; tag?: string } {
  const s = pool.status;
  const degraded = findCondition(s?.conditions, PoolConditionType.Degraded);
  const unresolved = degraded?.status === "True" &&
    (degraded.reason === PoolDegradedReason.ImageResolutionFailed ||
      degraded.reason === PoolDegradedReason.SignatureInvalid ||
      degraded.reason === PoolDegradedReason.InvalidSpec);
  const current = pool.metadata?.generation === undefined ||
    s?.observedGeneration === pool.metadata.generation;
  if (unresolved || !current || s?.rollbackHold) return {};
  const ref = pool.spec?.image?.ref;
  const digest = digestOf(ref);
  if (digest !== undefined && digest !== s?.targetDigest) return {};
  return { ref, tag: s?.channel?.currentTag };
}

/** The images of `pool` (see the module doc). */
export function poolImages(pool: BootcNodePool, bootcNodes: readonly BootcNode[]): ImagesView {
  const s = pool.status;
  const target = s?.targetDigest;
  const deployed = s?.deployedDigest;
  const next = target
    ? publishedState(pool).targetShort ?? imageSummary({
      ...targetTag(pool),
      digest: target,
      version: versionOf(target, bootcNodes, s?.targetPlatforms) ?? s?.channel?.currentVersion,
    })
    : undefined;
  const same = target !== undefined && target === deployed;
  const stable = deployed
    ? same ? next : imageSummary({ digest: deployed, version: versionOf(deployed, bootcNodes) })
    : undefined;
  const failed = s?.rollbackHold?.failedImage;
  return {
    stable,
    next,
    same,
    rolledBackFrom: failed
      ? imageSummary({ ref: failed, version: versionOf(digestOf(failed), bootcNodes) })
      : undefined,
  };
}

/** The section's lines, labels included (13 columns of label, as the other lines). */
export function renderImages(view: ImagesView): string[] {
  const label = "  images     ";
  const more = " ".repeat(label.length);
  if (!view.next) return [`${label}none resolved yet`];
  const lines = view.same ? [`${label}stable  ${view.stable}  (the target)`] : [
    `${label}stable  ${view.stable ?? "none yet (no rollout finished)"}`,
    `${more}new     ${view.next}`,
  ];
  if (view.rolledBackFrom) lines.push(`${more}failed  ${view.rolledBackFrom}  (rolled back from)`);
  return lines;
}

/** The canary's step in words, or undefined when the pool has no canary for its target. */
export function canaryText(
  pool: BootcNodePool,
  updated: number,
  now: Date,
): { text: string; failed: boolean } | undefined {
  const canary = pool.status?.canary;
  if (!canary || canary.image !== pool.status?.targetImage) return undefined;
  const n = canary.nodes;
  const nodes = `${n} node${n === 1 ? "" : "s"}`;
  switch (canary.phase) {
    case "Updating":
      return {
        text: `step 1/3: updating ${nodes} (${Math.min(updated, n)}/${n} updated)`,
        failed: false,
      };
    case "Soaking": {
      const until = parseTime(canary.soakUntil);
      const left = until ? ` (${formatDuration(until.getTime() - now.getTime())} left)` : "";
      return {
        text: `step 2/3: soaking ${nodes}` + (until ? ` until ${clock(until)} UTC${left}` : ""),
        failed: false,
      };
    }
    case "Passed":
      return { text: `step 3/3: passed; the rest of the pool follows`, failed: false };
    case "Failed":
      return { text: `failed on ${nodes}: the rollout of the target is halted`, failed: true };
  }
}
