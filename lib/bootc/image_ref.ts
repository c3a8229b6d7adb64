/**
 * Comparing what a boot entry runs with a digest-pinned desired image.
 *
 * bootc keeps the pullspec exactly as it was given and reports as
 * `imageDigest` the per-architecture manifest digest. A desired image pinned to
 * a multi-arch index digest therefore never equals `imageDigest`, but it does
 * equal the digest in the recorded pullspec. An entry provides the desired
 * image when either matches.
 *
 * @module
 */
import type { BootEntry } from "./types.ts";

const DIGEST_SUFFIX = /@(sha256:[a-f0-9]{64})$/;

/** The `sha256:…` digest a reference is pinned to, or undefined for a tag-only reference. */
export function referenceDigest(reference: string): string | undefined {
  return DIGEST_SUFFIX.exec(reference)?.[1];
}

/** The reference without its `@digest` suffix (the repository, possibly with a tag). */
export function referenceName(reference: string): string {
  return reference.replace(/@sha256:[a-f0-9]{64}$/, "");
}

/**
 * True when `entry` runs `desiredImage`: the digest of the entry's pullspec or
 * its `imageDigest` equals the desired image's digest. A desired reference
 * without a digest (never written by the controller) only matches the same
 * pullspec string.
 */
export function entryProvides(
  entry: BootEntry | null | undefined,
  desiredImage: string,
): boolean {
  const image = entry?.image;
  if (!image) return false;
  const want = referenceDigest(desiredImage);
  if (want === undefined) return image.image.image === desiredImage;
  return referenceDigest(image.image.image) === want || image.imageDigest === want;
}
