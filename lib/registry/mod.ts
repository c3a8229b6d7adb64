/**
 * OCI registry access on `fetch`: parse image references, resolve tags to
 * digests (with per-platform digests for multi-arch indexes), list tags, and
 * fetch manifests and blobs, with anonymous, Basic (`.dockerconfigjson`) and
 * Bearer-token auth.
 *
 * ```ts
 * const client = new RegistryClient({ dockerConfigJson: secretData });
 * try {
 *   const { digest, platforms } = await client.resolve("quay.io/org/os:v2");
 * } finally {
 *   client.close();
 * }
 * ```
 *
 * @module
 */
export {
  type FetchedManifest,
  type ImageReferenceInput,
  type PlatformDigest,
  type PlatformSelector,
  platformsOf,
  RegistryClient,
  type RegistryClientOptions,
  type ResolvedImage,
} from "./client.ts";
export {
  DOCKER_HUB_DOMAIN,
  DOCKER_HUB_REGISTRY,
  type ImageReference,
  ImageReferenceError,
  parseImageReference,
} from "./reference.ts";
export { RegistryError, type RegistryErrorKind } from "./errors.ts";
export { dockerConfigJson, type RegistryCredentials } from "./docker_config.ts";
export { computeDigest } from "./digest.ts";
export * as mediaTypes from "./media_types.ts";
