/**
 * How people name a pool's target (`status.targetShort`, `status.targetVersion`,
 * condition and event messages): the tag it came from and the version bootc
 * reports for it. The full reference stays in `status.targetImage` once.
 *
 * @module
 */
import { type BootcNode, type BootcNodePool, entryMatches } from "../../lib/api/mod.ts";
import { imageSummary, referenceTag, summaryTag } from "../../lib/api/display.ts";
import type { Target } from "../model/types.ts";

/** The tag and version of a target, each when known. */
export interface TargetLabel {
  tag?: string;
  version?: string;
}

/** What {@linkcode targetLabel} reads. */
export interface TargetLabelInput {
  pool: BootcNodePool;
  /** The target rolled out (after the failure record had its say). */
  target: Target | undefined;
  /**
   * What `spec.image.ref` means now, when known (its tag names the target only if
   * they agree); undefined while the ref is not resolved (yet, or it failed).
   */
  specTarget: Target | undefined;
  /** The pool's BootcNodes (their staged and booted entries report the version). */
  bootcNodes: Iterable<BootcNode>;
}

/**
 * The target's tag (from `spec.image.ref` when the target is what it resolves
 * to; a channel pool's ref carries the chosen version's tag) and its version:
 * the first member that staged or booted it says. While the ref cannot say (not
 * resolved, failed, an invalid spec), the target the status already names keeps
 * the tag and version it was shown with, so views do not flicker.
 */
export function targetLabel(input: TargetLabelInput): TargetLabel {
  const { pool, target, specTarget } = input;
  if (!target) return {};
  const same = pool.status?.targetDigest === target.digest;
  const tag = specTarget?.digest === target.digest
    ? referenceTag(pool.spec.image.ref)
    : same
    ? summaryTag(pool.status?.targetShort, target.digest)
    : undefined;
  const version = versionOf(input.bootcNodes, target) ??
    (same ? pool.status?.targetVersion : undefined);
  return { tag, version };
}

/** The version a node's staged or booted entry reports for `target`, if any does. */
export function versionOf(bootcNodes: Iterable<BootcNode>, target: Target): string | undefined {
  const desired = { image: target.image, platforms: target.platforms };
  for (const bn of bootcNodes) {
    for (const entry of [bn.status?.booted, bn.status?.staged]) {
      if (entry?.version && entryMatches(entry, desired)) return entry.version;
    }
  }
  return undefined;
}

/** An image in messages: the target's short form when it is the target, else its own. */
export function imageLabel(image: string, target?: Target, label?: TargetLabel): string {
  if (target && image === target.image) {
    return imageSummary({ ...label, digest: target.digest });
  }
  return imageSummary({ ref: image });
}
