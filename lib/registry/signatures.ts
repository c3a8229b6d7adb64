/**
 * Cosign signature verification against public keys, on the registry client.
 *
 * Cosign's tag scheme stores the signatures of the manifest `sha256:<hex>` as an
 * image manifest tagged `sha256-<hex>.sig` in the same repository. Each layer is
 * a "simple signing" payload (JSON naming the signed manifest digest under
 * `critical.image.docker-manifest-digest`), and its annotation
 * `dev.cosignproject.cosign/signature` holds the base64 signature over the
 * payload bytes. An image verifies when one of its payloads names its digest and
 * carries a signature that one of the trusted keys verifies.
 *
 * For an index, the index and every per-platform manifest a node may boot must
 * verify: a signed index alone does not vouch for the manifests a host pulls.
 *
 * Signatures are checked with the runtime's own `node:crypto` (ECDSA, RSA and
 * Ed25519 keys in PEM, DER-encoded signatures as cosign writes them).
 *
 * @module
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import type { RegistryClient } from "./client.ts";
import { RegistryError } from "./errors.ts";
import { type ImageReference, parseImageReference } from "./reference.ts";

/** The layer media type of a cosign signature payload. */
export const SIMPLE_SIGNING_MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json";
/** The layer annotation holding the base64 signature. */
export const SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature";
const MAX_PAYLOAD_BYTES = 64 * 1024;
const MAX_SIGNATURES = 32;

/** A trusted public key. */
export interface TrustedKey {
  /** How the key is named in verdicts (e.g. `keys[0]`). */
  name: string;
  /** The key, PEM (`-----BEGIN PUBLIC KEY-----`). */
  pem: string;
}

/** What verifying one image found. */
export type SignatureVerdict =
  | { verified: true; by: string }
  /** `unsigned`: no signature was found at all, as opposed to none that verifies. */
  | { verified: false; message: string; unsigned?: true };

/** The parsed form of a trusted key, or why it cannot be used. */
export function parsePublicKey(pem: string): KeyObject | string {
  try {
    const key = createPublicKey({ key: pem, format: "pem" });
    return key.type === "public" ? key : "not a public key";
  } catch {
    return "not a PEM public key (expected -----BEGIN PUBLIC KEY-----)";
  }
}

/** `sha256:<hex>` → `sha256-<hex>.sig`, the tag cosign stores the signatures under. */
export function signatureTag(digest: string): string {
  return `${digest.replace(":", "-")}.sig`;
}

/**
 * Verifies `image` (digest-pinned) and, for an index, each of its platform
 * manifests, against `keys`. Registry failures other than a missing signature
 * are thrown (the caller retries them); a verdict is returned otherwise.
 */
export async function verifyImageSignatures(
  client: RegistryClient,
  image: string,
  keys: readonly TrustedKey[],
  options: { platforms?: boolean } = {},
): Promise<SignatureVerdict> {
  const ref = parseImageReference(image);
  if (!ref.digest) return { verified: false, message: `${image} is not pinned to a digest` };
  const parsed: { name: string; key: KeyObject }[] = [];
  for (const k of keys) {
    const key = parsePublicKey(k.pem);
    if (typeof key !== "string") parsed.push({ name: k.name, key });
  }
  if (parsed.length === 0) return { verified: false, message: "no usable public key" };
  // `platforms: false` checks the named manifest only, as containers-image does on a pull.
  const top = options.platforms === false ? undefined : await client.fetchManifest(ref);
  const digests = [ref.digest, ...(top?.platforms ?? []).map((p) => p.digest)];
  let by = "";
  for (const digest of digests) {
    const verdict = await verifyDigest(client, ref, digest, parsed);
    if (!verdict.verified) {
      const what = digest === ref.digest
        ? ""
        : ` (platform ${platformName(top?.platforms, digest)} ${digest.slice(0, 19)})`;
      return { ...verdict, message: `${verdict.message}${what}` };
    }
    by ||= verdict.by;
  }
  return { verified: true, by };
}

function platformName(
  platforms:
    | readonly { os: string; architecture: string; variant?: string; digest: string }[]
    | undefined,
  digest: string,
): string {
  const p = platforms?.find((x) => x.digest === digest);
  return p ? `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ""}` : "manifest";
}

async function verifyDigest(
  client: RegistryClient,
  ref: ImageReference,
  digest: string,
  keys: readonly { name: string; key: KeyObject }[],
): Promise<SignatureVerdict> {
  const sigRef = parseImageReference(`${ref.domain}/${ref.repository}:${signatureTag(digest)}`);
  let layers: Record<string, unknown>[];
  try {
    const fetched = await client.fetchManifest(sigRef);
    layers = Array.isArray(fetched.manifest.layers)
      ? fetched.manifest.layers as Record<string, unknown>[]
      : [];
  } catch (e) {
    if (e instanceof RegistryError && e.kind === "NotFound") {
      return { verified: false, message: "no signature (no cosign signature tag)", unsigned: true };
    }
    throw e;
  }
  let signed = 0;
  let otherDigest = false;
  for (const layer of layers.slice(0, MAX_SIGNATURES)) {
    const annotations = (layer.annotations ?? {}) as Record<string, unknown>;
    const signature = annotations[SIGNATURE_ANNOTATION];
    if (layer.mediaType !== SIMPLE_SIGNING_MEDIA_TYPE || typeof signature !== "string") continue;
    if (typeof layer.digest !== "string") continue;
    signed++;
    const payload = await client.fetchBlob(sigRef, layer.digest, { maxBytes: MAX_PAYLOAD_BYTES });
    const sig = decodeBase64(signature);
    const key = sig && keys.find((k) => verifies(k.key, payload, sig));
    if (!key) continue;
    if (payloadDigest(payload) !== digest) {
      otherDigest = true;
      continue;
    }
    return { verified: true, by: key.name };
  }
  if (signed === 0) {
    return {
      verified: false,
      message: "no signature (the signature tag holds none)",
      unsigned: true,
    };
  }
  if (otherDigest) {
    return { verified: false, message: "the signed payload names another image digest" };
  }
  return {
    verified: false,
    message: `none of ${signed} signature(s) verifies with the trusted key(s)`,
  };
}

function verifies(key: KeyObject, payload: Uint8Array, signature: Uint8Array): boolean {
  try {
    // Ed25519 takes no digest; ECDSA and RSA keys sign the SHA-256 of the payload.
    const algorithm = key.asymmetricKeyType === "ed25519" ? null : "sha256";
    return verify(algorithm, payload, key, signature);
  } catch {
    return false;
  }
}

function payloadDigest(payload: Uint8Array): string | undefined {
  try {
    const json = JSON.parse(new TextDecoder().decode(payload));
    const digest = json?.critical?.image?.["docker-manifest-digest"];
    return typeof digest === "string" ? digest : undefined;
  } catch {
    return undefined;
  }
}

function decodeBase64(text: string): Uint8Array | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}
