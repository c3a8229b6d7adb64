/**
 * Splitting an image reference into repository, tag and digest. Validation
 * uses the same pattern as the CRD schema, so what the API server accepted
 * parses here; anything else is reported as an invalid spec.
 *
 * @module
 */
import { IMAGE_REFERENCE_PATTERN } from "../lib/api/mod.ts";

/** The parts of an image reference. */
export interface ImageRefParts {
  /** Registry host (if any) and path, as written: `quay.io/example/os`. */
  repository: string;
  tag?: string;
  /** `sha256:<hex>` when the reference is pinned by digest. */
  digest?: string;
}

const referencePattern = new RegExp(IMAGE_REFERENCE_PATTERN);

/** Parses `ref`; throws an Error naming the problem when it is not a valid reference. */
export function splitImageRef(ref: string): ImageRefParts {
  if (!referencePattern.test(ref)) {
    throw new Error(`image.ref ${JSON.stringify(ref)} is not a valid image reference`);
  }
  const at = ref.indexOf("@");
  const name = at >= 0 ? ref.slice(0, at) : ref;
  const digest = at >= 0 ? ref.slice(at + 1) : undefined;
  const colon = name.lastIndexOf(":");
  const slash = name.lastIndexOf("/");
  if (colon > slash) {
    return { repository: name.slice(0, colon), tag: name.slice(colon + 1), digest };
  }
  return { repository: name, digest };
}

/** The digest after `@` in a pullspec, if any. */
export function digestOfPullspec(pullspec: string | undefined): string | undefined {
  if (!pullspec) return undefined;
  const at = pullspec.lastIndexOf("@");
  return at >= 0 ? pullspec.slice(at + 1) : undefined;
}
