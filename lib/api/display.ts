/**
 * Short forms of images for people: the one place every view (printer
 * columns, condition and event messages, the plugin, Node annotations) gets
 * "which image is this" from. Full references stay in the objects once
 * (`status.targetImage`, `spec.desiredImage`); messages and columns use these.
 *
 * @module
 */

/** How many hex digits of a digest people see (as `docker images` and `git log --oneline`). */
export const SHORT_DIGEST_LENGTH = 12;

/** The first 12 hex digits of a `sha256:…` digest; "-" when there is none. */
export function shortDigest(digest: string | undefined): string {
  if (!digest) return "-";
  const m = /^sha256:([a-f0-9]{12})/.exec(digest);
  return m ? m[1] : digest;
}

/** The tag of a reference (`quay.io/org/os:v2@sha256:…` → `v2`), if it has one. */
export function referenceTag(reference: string | undefined): string | undefined {
  if (!reference) return undefined;
  const name = reference.replace(/@sha256:[a-f0-9]{64}$/, "");
  const lastSlash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  return colon > lastSlash ? name.slice(colon + 1) : undefined;
}

/** What {@linkcode imageSummary} describes; every part is optional. */
export interface ImageParts {
  /** The reference as the user wrote it or as pinned (its tag is shown). */
  ref?: string;
  /** The `sha256:…` digest (12 hex digits are shown). */
  digest?: string;
  /** The image's version (bootc's `version`, or the channel's version), shown when it is not the tag. */
  version?: string;
  /** A tag known otherwise (a channel's tag) when `ref` carries none. */
  tag?: string;
}

/**
 * An image in a dozen or two columns: `v2 (2.0) 3f2a9c1d4e5b`, the tag, the
 * version when it says more than the tag, and the short digest. A
 * digest-pinned reference without tag or version shows its short digest only.
 */
export function imageSummary(parts: ImageParts): string {
  const digest = parts.digest ?? digestOf(parts.ref);
  const tag = referenceTag(parts.ref) ?? parts.tag;
  const out: string[] = [];
  if (tag) out.push(tag);
  if (parts.version && parts.version !== tag && `v${parts.version}` !== tag) {
    out.push(`(${parts.version})`);
  }
  if (digest) out.push(shortDigest(digest));
  return out.length > 0 ? out.join(" ") : "-";
}

/**
 * The tag an {@linkcode imageSummary} of `digest` names, if it names one (its
 * first word, unless that is the version or the digest itself).
 */
export function summaryTag(summary: string | undefined, digest: string): string | undefined {
  const first = summary?.split(" ")[0];
  if (!first || first.startsWith("(") || first === shortDigest(digest)) return undefined;
  return summary!.endsWith(` ${shortDigest(digest)}`) ? first : undefined;
}

/** A reference with its digest shortened: `quay.io/org/os:v2@sha256:0123456789ab`. */
export function shortReference(reference: string | undefined): string {
  if (!reference) return "-";
  return reference.replace(/@sha256:([a-f0-9]{12})[a-f0-9]{52}$/, "@sha256:$1");
}

function digestOf(reference: string | undefined): string | undefined {
  return reference ? /@(sha256:[a-f0-9]{64})$/.exec(reference)?.[1] : undefined;
}

/** How far the staging limit is used (`status.staging` of a pool). */
export interface StagingUse {
  limit: number;
  downloading: number;
  queued: number;
}

/** "staging limit: 2/3 downloading, 4 queued": the pool's wait, when the limit holds nodes back. */
export function stagingLimitMessage(s: StagingUse): string {
  return `staging limit: ${s.downloading}/${s.limit} downloading, ${s.queued} queued`;
}
