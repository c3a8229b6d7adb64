/**
 * Content digests (`sha256:<hex>`) computed with `crypto.subtle`.
 *
 * @module
 */

const SUBTLE_ALGORITHMS: Record<string, string> = {
  sha256: "SHA-256",
  sha384: "SHA-384",
  sha512: "SHA-512",
};

/** True when {@linkcode computeDigest} can compute digests of `algorithm` (e.g. "sha256"). */
export function isSupportedDigestAlgorithm(algorithm: string): boolean {
  return algorithm in SUBTLE_ALGORITHMS;
}

/** The digest of `bytes` as `algorithm:<lower-case hex>` (default sha256). */
export async function computeDigest(
  bytes: Uint8Array<ArrayBuffer>,
  algorithm = "sha256",
): Promise<string> {
  const subtleName = SUBTLE_ALGORITHMS[algorithm];
  if (!subtleName) throw new Error(`unsupported digest algorithm ${algorithm}`);
  const hash = new Uint8Array(await crypto.subtle.digest(subtleName, bytes));
  return `${algorithm}:${Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** True when `bytes` hash to `digest` (whose algorithm must be supported). */
export async function matchesDigest(
  bytes: Uint8Array<ArrayBuffer>,
  digest: string,
): Promise<boolean> {
  const algorithm = digest.split(":", 1)[0];
  return (await computeDigest(bytes, algorithm)) === digest.toLowerCase();
}
