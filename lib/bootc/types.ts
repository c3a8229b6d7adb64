/**
 * Types of `bootc status --format=json --format-version=1` (the `BootcHost`
 * document), as the parser in `parse.ts` returns them. Field names follow
 * bootc's JSON; absent entries are `null` like in bootc's output, absent
 * optional scalars are `undefined`.
 *
 * @module
 */

/** `apiVersion` of bootc's host document. */
export const BOOTC_HOST_API_VERSION = "org.containers.bootc/v1";
/**
 * `apiVersion` printed by bootc before 1.1 (2023 – mid 2024). Same shape, fewer
 * fields: no `architecture`, `softRebootCapable`, `downloadOnly`; the earliest
 * releases also lack `bootOrder`, `cachedUpdate`, `rollbackQueued` and `type`,
 * and carry `status.isContainer` and a string `signature` (`"insecure"`).
 */
export const BOOTC_HOST_API_VERSION_V1ALPHA1 = "org.containers.bootc/v1alpha1";
/** Every `apiVersion` the parser reads. */
export const BOOTC_HOST_API_VERSIONS: readonly string[] = [
  BOOTC_HOST_API_VERSION,
  BOOTC_HOST_API_VERSION_V1ALPHA1,
];
/** `kind` of bootc's host document. */
export const BOOTC_HOST_KIND = "BootcHost";

/** An image reference as bootc records it: the pullspec string exactly as it was given. */
export interface ImageReference {
  /** The pullspec, e.g. `quay.io/example/os@sha256:…` or `quay.io/example/os:latest`. */
  image: string;
  /** Transport, usually `registry`. */
  transport: string;
  /** Signature policy, kept as bootc reported it. */
  signature?: unknown;
}

/** An image deployed in a boot entry. */
export interface ImageStatus {
  image: ImageReference;
  /** The image's version label, if any. */
  version?: string;
  /** The image's creation time (RFC 3339), if known. */
  timestamp?: string;
  /** The per-architecture manifest digest (`sha256:…`), never an index digest. */
  imageDigest: string;
  /** The image architecture (`amd64`, `arm64`, …); older hosts omit it. */
  architecture?: string;
}

/** The ostree part of a boot entry. */
export interface BootEntryOstree {
  checksum: string;
  deploySerial: number;
  /** Older hosts omit it. */
  stateroot?: string;
}

/** One deployment (booted, staged, rollback or other). */
export interface BootEntry {
  /** Null when the entry is incompatible or not container based. */
  image: ImageStatus | null;
  /** A newer image already downloaded for this entry, if any. */
  cachedUpdate: ImageStatus | null;
  /** True when the deployment has local mutations (package layering) bootc cannot manage. */
  incompatible: boolean;
  /** True when the deployment is pinned. */
  pinned: boolean;
  /** True when a soft reboot into this (staged) entry is possible; false when unknown. */
  softRebootCapable: boolean;
  /**
   * True when the staged entry is finalization-locked (staged with `--download-only`):
   * an unexpected reboot discards it. `undefined` on hosts that do not report it.
   */
  downloadOnly?: boolean;
  /** Storage backend (`ostreeContainer`), if reported. */
  store?: string;
  /** ostree details, if an ostree deployment. */
  ostree: BootEntryOstree | null;
  /** composefs details, kept as reported. */
  composefs: unknown;
}

/** `spec` of the host document: what the host will boot next. */
export interface HostSpec {
  /** Taken from the staged deployment when one exists, else from the booted one. */
  image: ImageReference | null;
  /** `default` or `rollback`. */
  bootOrder?: string;
}

/** `status` of the host document. */
export interface HostStatus {
  staged: BootEntry | null;
  booted: BootEntry | null;
  rollback: BootEntry | null;
  /** Further deployments (omitted by bootc when empty). */
  otherDeployments: BootEntry[];
  rollbackQueued: boolean;
  /** `bootcHost`, or null when the host is not a bootc host. */
  type: string | null;
  usrOverlay?: unknown;
  readOnly?: unknown;
}

/** The whole `bootc status` document. */
export interface Host {
  apiVersion: string;
  kind: string;
  metadata: { name?: string };
  spec: HostSpec;
  status: HostStatus;
}
