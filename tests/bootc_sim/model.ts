/**
 * The simulated host's state and the pure transitions bootc and a reboot apply to it.
 *
 * Everything here is a plain function over plain objects: the CLI shell (`main.ts`) and the test
 * API (`host.ts`) read the state, call these, and write the result back.
 *
 * @module
 */

import type { BadBoot, BootRecord } from "./bad_boot.ts";

/** What is known about one pulled image (bootc's ImageStatus minus the reference). */
export interface PulledImage {
  /** The per-architecture manifest digest (`sha256:…`). */
  imageDigest: string;
  /** `org.opencontainers.image.version` (or `version`) label, if any. */
  version: string | null;
  /** Build timestamp (RFC 3339, UTC), if any. */
  timestamp: string | null;
  /** The config's architecture (`amd64`, `arm64`, …). */
  architecture: string;
}

/** One deployment on the simulated host (an ostree deployment or a composefs one). */
export interface Deployment {
  /** The pullspec exactly as it was passed to bootc. */
  pullspec: string;
  /** Always `registry` in the simulator. */
  transport: string;
  /** The image that was pulled for it; null for an `incompatible` (locally layered) deployment. */
  image: PulledImage | null;
  /** Result of the last `bootc upgrade --check` that found something newer, if any. */
  cachedUpdate: PulledImage | null;
  /** Local package layering bootc cannot represent: `image` is reported as null. */
  incompatible: boolean;
  /** Pinned deployments are never garbage collected. */
  pinned: boolean;
  /** Whether the host could soft-reboot into this deployment. */
  softRebootCapable: boolean;
  /** Staged and finalization-locked (`--download-only`): a reboot discards it. */
  downloadOnly: boolean;
  /** A soft reboot was prepared for this (staged) deployment (`--soft-reboot`). */
  softRebootPrepared: boolean;
  /** ostree commit checksum (derived from the digest); the composefs verity on composefs hosts. */
  checksum: string;
  /** ostree deployment serial: how many deployments of the same checksum came before. */
  deploySerial: number;
  /** The ostree stateroot. */
  stateroot: string;
  /**
   * Simulator only, never printed: how the image misbehaves when booted, from its
   * `dev.bootc.sim.bad-boot` config label (see `bad_boot.ts`); null or absent for a good image.
   */
  badBoot?: BadBoot | null;
}

/** A reboot that a `--apply` asked for and the harness has not performed yet. */
export interface RebootRequest {
  /** Whether systemd was asked for a soft reboot. */
  soft: boolean;
  /** The bootc command line that asked for it. */
  command: string[];
  /** When it was asked (ISO 8601). */
  at: string;
  /**
   * The id of the recorded `--apply` invocation that asked for it (see `apply_gate.ts`), so the
   * harness can tie the reboot it performs to the verdict it gave on that invocation.
   */
  invocation?: string | null;
}

/** The deployments and boot state (written by bootc commands under the sysroot lock). */
export interface HostState {
  /** Format marker. */
  format: 1;
  /** The current boot ID (`/proc/sys/kernel/random/boot_id`); a soft reboot keeps it. */
  bootId: string;
  /** The staged deployment, applied (or, when locked, discarded) by the next reboot. */
  staged: Deployment | null;
  /** The booted deployment; null on a host that is not deployed via bootc. */
  booted: Deployment | null;
  /** The previous deployment. */
  rollback: Deployment | null;
  /** Pinned or other-stateroot deployments. */
  other: Deployment[];
  /** `bootc rollback` queued the rollback deployment for the next boot. */
  rollbackQueued: boolean;
  /** The transient `/usr` overlay state, when one is active (`bootc usroverlay`). */
  usrOverlay: string | null;
  /** A pending reboot request from `--apply`. */
  rebootRequest: RebootRequest | null;
  /**
   * When the current boot started (ISO 8601); a soft reboot restarts userspace, so it resets it
   * too. `systemctl is-system-running` says `starting` for `startingMs` after it.
   */
  bootedAt?: string;
  /** What the latest boot came to (bad images, see `bad_boot.ts`); absent before any reboot. */
  lastBoot?: BootRecord | null;
}

/** How the simulated machine is set up (written only by the test harness). */
export interface SimSettings {
  /** Host architecture in OCI terms (`amd64`, `arm64`, …). */
  architecture: string;
  /** The bootc version the host pretends to run (`1.16.10`, `1.12.0`, `1.10`). */
  bootcVersion: string;
  /** `softRebootCapable` given to newly staged deployments. */
  softRebootCapable: boolean;
  /** Registries reached over plain HTTP (`host:port`), like `insecure = true` in registries.conf. */
  insecureRegistries: string[];
  /** Extra time a pull holds the sysroot lock, so that a blocked `status` is observable. */
  pullDelayMs: number;
  /** bootc believes it runs in a container: status is the empty host, writes fail. */
  inContainer: boolean;
  /** When set, `bootc status` fails with this cause (exit 1). */
  statusFailure: string | null;
  /** The machine is not a bootc host at all: status is the empty host. */
  notBootc: boolean;
  /** composefs-native backend: no `/ostree/bootc`, deployments under `/sysroot/state/deploy`. */
  composefs: boolean;
  /** An extra CA (PEM) the host trusts, for registries served over TLS by a test CA. */
  caCertPem: string | null;
  /**
   * When true, every `--apply` waits after recording its invocation until the harness has
   * written its verdict on it (see `apply_gate.ts`), before it changes anything or asks for a
   * reboot. Off by default: nothing waits unless a harness answers.
   */
  applyGate: boolean;
  /**
   * How long after a boot systemd is still `starting` (`is-system-running`), with a bad image's
   * failing unit still `activating`. Default 0: a booted host is up at once.
   */
  startingMs: number;
  /**
   * Per-host bad-boot overrides: image digest (`sha256:…`) or pullspec → a
   * `dev.bootc.sim.bad-boot` value (`none` makes a labelled image good on this host).
   */
  badBoot: Record<string, string>;
}

/** Default settings of a new simulated host. */
export const DEFAULT_SETTINGS: SimSettings = {
  architecture: "amd64",
  bootcVersion: "1.16.10",
  softRebootCapable: false,
  insecureRegistries: [],
  pullDelayMs: 0,
  inContainer: false,
  statusFailure: null,
  notBootc: false,
  composefs: false,
  caCertPem: null,
  applyGate: false,
  startingMs: 0,
  badBoot: {},
};

/** Parses a bootc version (`1.16.10`, `1.10`) into comparable numbers. */
export function parseVersion(version: string): [number, number, number] {
  const parts = version.replace(/^v/, "").split(/[.+-]/).slice(0, 3).map((p) => Number(p));
  const [a = 0, b = 0, c = 0] = parts.map((n) => (Number.isFinite(n) ? n : 0));
  return [a, b, c];
}

/** True when `version` is at least `min` (both dotted versions). */
export function versionAtLeast(version: string, min: string): boolean {
  const a = parseVersion(version);
  const b = parseVersion(min);
  for (let i = 0; i < 3; i++) {
    if (a[i] !== b[i]) return a[i] > b[i];
  }
  return true;
}

/** Which bootc features a version has (the ones the operator depends on). */
export interface Capabilities {
  /** `bootc switch --download-only` / `--from-downloaded` (1.16.10). */
  switchDownloadOnly: boolean;
  /** `bootc upgrade --download-only` / `--from-downloaded` and the `downloadOnly` field (1.12). */
  upgradeDownloadOnly: boolean;
}

/** The capabilities of a bootc version. */
export function capabilitiesOf(version: string): Capabilities {
  return {
    switchDownloadOnly: versionAtLeast(version, "1.16.10"),
    upgradeDownloadOnly: versionAtLeast(version, "1.12.0"),
  };
}

/** Lower-case hex SHA-256 of a string. */
export async function sha256Hex(text: string): Promise<string> {
  const bytes = new TextEncoder().encode(text);
  const hash = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** All deployments of a state, staged first. */
export function allDeployments(state: HostState): Deployment[] {
  return [state.staged, state.booted, state.rollback, ...state.other].filter(
    (d): d is Deployment => d !== null,
  );
}

/** Options for {@linkcode newDeployment}. */
export interface NewDeploymentOptions {
  /** The current state (for the deploy serial). */
  state: HostState;
  /** The pullspec exactly as passed. */
  pullspec: string;
  /** What the pull found. */
  image: PulledImage;
  /** The commit checksum for this image (see {@linkcode checksumFor}). */
  checksum: string;
  /** Whether the new deployment can be soft-rebooted into. */
  softRebootCapable: boolean;
  /** Stage it finalization-locked. */
  downloadOnly: boolean;
  /** The image's bad-boot mode (from its label), if it is a bad image. */
  badBoot?: BadBoot | null;
}

/** Only the {@linkcode PulledImage} fields of a pull result (which may carry more). */
export function pulledImage(image: PulledImage): PulledImage {
  return {
    imageDigest: image.imageDigest,
    version: image.version,
    timestamp: image.timestamp,
    architecture: image.architecture,
  };
}

/** The ostree commit checksum the simulator uses for an image digest. */
export function checksumFor(imageDigest: string): Promise<string> {
  return sha256Hex(`ostree-commit:${imageDigest}`);
}

/** Builds a new deployment of a pulled image. */
export function newDeployment(opts: NewDeploymentOptions): Deployment {
  // ostree numbers deployments of the same commit in a stateroot 0, 1, 2, …
  const serials = allDeployments(opts.state)
    .filter((d) => d.checksum === opts.checksum)
    .map((d) => d.deploySerial);
  return {
    pullspec: opts.pullspec,
    transport: "registry",
    image: pulledImage(opts.image),
    cachedUpdate: null,
    incompatible: false,
    pinned: false,
    softRebootCapable: opts.softRebootCapable,
    downloadOnly: opts.downloadOnly,
    softRebootPrepared: false,
    checksum: opts.checksum,
    deploySerial: serials.length === 0 ? 0 : Math.max(...serials) + 1,
    stateroot: "default",
    badBoot: opts.badBoot ?? null,
  };
}

/** The image bootc considers specified: the staged deployment's, else the booted one's. */
export function specImage(state: HostState): { image: string; transport: string } | null {
  const entry = state.staged ?? state.booted;
  if (!entry || entry.incompatible || !entry.image) return null;
  return { image: entry.pullspec, transport: entry.transport };
}

/** Stages a deployment: it replaces any staged one and becomes the default next boot. */
export function stage(state: HostState, deployment: Deployment): HostState {
  return { ...state, staged: deployment, rollbackQueued: false };
}

/** Result of {@linkcode unlockStaged}. */
export type UnlockResult =
  | { ok: true; state: HostState; changed: boolean }
  | { ok: false; error: string };

/** `--from-downloaded`: unlocks whatever is staged, without checking which image it is. */
export function unlockStaged(state: HostState): UnlockResult {
  if (!state.staged) return { ok: false, error: "No staged deployment found" };
  if (!state.staged.downloadOnly) return { ok: true, state, changed: false };
  return {
    ok: true,
    state: { ...state, staged: { ...state.staged, downloadOnly: false } },
    changed: true,
  };
}

/** Locks the staged deployment (`upgrade --download-only` when the staged image is current). */
export function lockStaged(state: HostState): { state: HostState; changed: boolean } {
  if (!state.staged || state.staged.downloadOnly) return { state, changed: false };
  return { state: { ...state, staged: { ...state.staged, downloadOnly: true } }, changed: true };
}

/** Result of {@linkcode rollback}. */
export type RollbackResult =
  | { ok: true; state: HostState; reverting: boolean }
  | { ok: false; error: string };

/** `bootc rollback`: swaps the boot order and discards any staged deployment. */
export function rollback(state: HostState): RollbackResult {
  if (!state.rollback) return { ok: false, error: "No rollback available" };
  const reverting = state.rollbackQueued;
  return {
    ok: true,
    reverting,
    state: { ...state, staged: null, rollbackQueued: !reverting },
  };
}

/** Result of {@linkcode softRebootDecision}. */
export type SoftRebootDecision = { ok: true; soft: boolean } | { ok: false; error: string };

/** `--soft-reboot=auto|required` against the deployment that would boot next. */
export function softRebootDecision(
  mode: "auto" | "required" | null,
  target: Deployment | null,
  kind: "staged" | "rollback",
): SoftRebootDecision {
  if (mode === null) return { ok: true, soft: false };
  const capable = target?.softRebootCapable ?? false;
  if (mode === "required" && !capable) {
    return {
      ok: false,
      error: `Soft reboot was required but ${kind} deployment is not soft-reboot capable`,
    };
  }
  return { ok: true, soft: capable };
}

/** Marks the staged deployment as prepared for a soft reboot. */
export function prepareSoftReboot(state: HostState): HostState {
  if (!state.staged) return state;
  return { ...state, staged: { ...state.staged, softRebootPrepared: true } };
}

/** Options for {@linkcode reboot}. */
export interface RebootOptions {
  /** A soft reboot (userspace restart): the boot ID survives. */
  soft: boolean;
  /** The boot ID to use after a full reboot. */
  newBootId: string;
  /** When the machine comes up (ISO 8601; default now). */
  now?: string;
}

/**
 * What a (soft) reboot does to the deployments:
 * - an unlocked staged deployment is finalized: it boots, the old booted one becomes the rollback
 *   and the old rollback is garbage collected (unless pinned);
 * - a locked (`downloadOnly`) staged deployment is discarded;
 * - otherwise a queued rollback boots, and the old booted deployment becomes the rollback.
 */
export function reboot(state: HostState, opts: RebootOptions): HostState {
  const base: HostState = {
    ...state,
    bootId: opts.soft ? state.bootId : opts.newBootId,
    usrOverlay: null,
    rebootRequest: null,
    bootedAt: opts.now ?? new Date().toISOString(),
  };
  const pinnedOf = (d: Deployment | null) => (d && d.pinned ? [d] : []);
  if (state.staged && !state.staged.downloadOnly) {
    const next = { ...state.staged, downloadOnly: false, softRebootPrepared: false };
    return {
      ...base,
      staged: null,
      booted: next,
      rollback: state.booted,
      other: [...state.other, ...pinnedOf(state.rollback)],
      rollbackQueued: false,
    };
  }
  if (state.rollbackQueued && state.rollback) {
    return {
      ...base,
      staged: null,
      booted: state.rollback,
      rollback: state.booted,
      rollbackQueued: false,
    };
  }
  return { ...base, staged: null };
}

/** The initial state of a host booted into `booted` (at `bootedAt`, default now). */
export function initialState(
  booted: Deployment | null,
  bootId: string,
  bootedAt: string = new Date().toISOString(),
): HostState {
  return {
    format: 1,
    bootId,
    staged: null,
    booted,
    rollback: null,
    other: [],
    rollbackQueued: false,
    usrOverlay: null,
    rebootRequest: null,
    bootedAt,
  };
}
