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

/** What an entry runs, as bootc reports it (the host's entry or its BootcNode mirror). */
export interface EntryImage {
  /** The pullspec exactly as given to bootc (`image.image.image`). */
  image?: string;
  /** The per-architecture manifest digest. */
  imageDigest?: string;
  architecture?: string;
}

/** The digest-pinned image a node should run, with the index's per-platform digests. */
export interface DesiredImage {
  /** `repository@sha256:…`. */
  image: string;
  /** Per-platform manifest digests when the image's digest is an index. */
  platforms?: readonly { digest: string; architecture?: string; os?: string }[];
}

/**
 * The one rule for "this entry runs the desired image", used by the daemon, the
 * controller and the plugin: the entry's pullspec digest equals the desired
 * digest, its imageDigest equals it, or its imageDigest is the desired index's
 * manifest for the entry's architecture (bootc-host.md "Digests"). A desired
 * reference without a digest (never written by the controller) only matches the
 * same pullspec string.
 */
export function entryRuns(entry: EntryImage | undefined, desired: DesiredImage): boolean {
  if (!entry) return false;
  const want = referenceDigest(desired.image);
  if (!want) return entry.image !== undefined && entry.image === desired.image;
  if (entry.image !== undefined && referenceDigest(entry.image) === want) return true;
  if (!entry.imageDigest) return false;
  if (entry.imageDigest === want) return true;
  return (desired.platforms ?? []).some((p) =>
    p.digest === entry.imageDigest &&
    (entry.architecture === undefined || p.architecture === entry.architecture)
  );
}

/** {@linkcode entryRuns} for a host's boot entry (bootc status). */
export function entryProvides(
  entry: BootEntry | null | undefined,
  desiredImage: string,
): boolean {
  const image = entry?.image;
  if (!image) return false;
  return entryRuns({
    image: image.image.image,
    imageDigest: image.imageDigest,
    architecture: image.architecture ?? undefined,
  }, { image: desiredImage });
}
