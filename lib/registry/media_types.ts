/**
 * Manifest media types the client asks for and understands.
 *
 * @module
 */

/** OCI image index (multi-platform). */
export const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
/** OCI image manifest (one platform). */
export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
/** Docker manifest list (multi-platform). */
export const DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
/** Docker image manifest, schema 2 (one platform). */
export const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
/** OCI image config blob. */
export const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
/** OCI gzip-compressed layer. */
export const OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip";

/** The `Accept` header value for manifest requests: every type above, indexes first. */
export const MANIFEST_ACCEPT = [OCI_INDEX, DOCKER_MANIFEST_LIST, OCI_MANIFEST, DOCKER_MANIFEST]
  .join(", ");

/** True for the multi-platform types (OCI index, Docker manifest list). */
export function isIndexMediaType(mediaType: string): boolean {
  return mediaType === OCI_INDEX || mediaType === DOCKER_MANIFEST_LIST;
}

/** True for the single-platform manifest types. */
export function isImageManifestMediaType(mediaType: string): boolean {
  return mediaType === OCI_MANIFEST || mediaType === DOCKER_MANIFEST;
}

/** The bare media type of a `Content-Type` header value (parameters dropped, lower-cased). */
export function bareMediaType(contentType: string | null): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}
