/**
 * The image-reference views the planner needs, on top of the shared parsers:
 * `lib/registry` (the Docker reference grammar, with messages saying what is
 * wrong) and `lib/bootc` (the digest a pullspec is pinned to).
 *
 * @module
 */
import { referenceDigest } from "../../lib/bootc/image_ref.ts";
import { parseImageReference } from "../../lib/registry/mod.ts";

/** The digest after `@` in a pullspec, if any. */
export function digestOfPullspec(pullspec: string | undefined): string | undefined {
  return pullspec === undefined ? undefined : referenceDigest(pullspec);
}

/** The parts of an image reference. */
export interface ImageRefParts {
  /** Registry host and path as the user spelled the registry: `quay.io/example/os`. */
  repository: string;
  tag?: string;
  /** `sha256:<hex>` when the reference is pinned by digest. */
  digest?: string;
}

/** Parses `ref`; throws an Error naming the problem when it is not a valid reference. */
export function splitImageRef(ref: string): ImageRefParts {
  const parsed = parseImageReference(ref);
  const pinned = parsed.pinned("sha256:" + "0".repeat(64));
  return {
    repository: pinned.slice(0, pinned.lastIndexOf("@")),
    tag: parsed.tag,
    digest: parsed.digest,
  };
}
