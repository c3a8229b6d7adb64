/**
 * Bad images: what happens when the simulated host BOOTS a deployment whose image is marked bad.
 *
 * An image is marked by its OCI config label {@linkcode BAD_BOOT_LABEL}, so every host that boots
 * it behaves the same with no per-host setup (a host's `badBoot` setting can override it per
 * image digest). The simulator reads the label from the config blob it pulls anyway and keeps it
 * on the {@linkcode Deployment}. Values:
 *
 * - `unit-fails[:<unit>]`: the host runs, but the unit (default {@linkcode DEFAULT_BAD_UNIT})
 *   failed: `systemctl is-system-running` says `degraded`, `is-active <unit>` says `failed`.
 * - `boot-incomplete[:<unit>]`: the host runs, but the boot check the image ships (default
 *   {@linkcode DEFAULT_BOOT_CHECK_UNIT}, ordered before `boot-complete.target` and required by it,
 *   as greenboot's is) failed, so `boot-complete.target` is never reached and
 *   `systemd-bless-boot status` stays `indeterminate`; the system is `degraded`.
 * - `never-ready`: the host runs (the daemon runs) but its kubelet never becomes Ready.
 * - `falls-back`: boot counting (greenboot): the boot fails and the bootloader by itself boots
 *   the previous deployment: booted = the previous one, rollback = the bad one, nothing staged.
 * - `reboot-loop[:<N>]`: the host crashes before Ready, `N` times (default
 *   {@linkcode DEFAULT_REBOOT_LOOP_CRASHES}); each crash is a boot of its own (the machine reboots
 *   by itself); the boot after the N-th crash falls back as above.
 * - `none`: a good image (only useful to override a label with the host setting).
 *
 * Everything here is pure; `host.ts` applies {@linkcode bootHost} in `SimulatedHost.reboot()`.
 *
 * @module
 */

import { type Deployment, type HostState, reboot } from "./model.ts";

/** The OCI image config label that marks an image bad for the simulator. */
export const BAD_BOOT_LABEL = "dev.bootc.sim.bad-boot";

/** The unit a `unit-fails` image fails when the label names none. */
export const DEFAULT_BAD_UNIT = "bootc-sim-bad.service";

/** The boot check a `boot-incomplete` image fails when the label names none. */
export const DEFAULT_BOOT_CHECK_UNIT = "bootc-sim-boot-check.service";

/** How many times a `reboot-loop` image crashes before the host falls back, by default. */
export const DEFAULT_REBOOT_LOOP_CRASHES = 3;

/** How a bad image misbehaves when booted. */
export type BadBoot =
  | { mode: "unit-fails"; unit: string }
  | { mode: "boot-incomplete"; unit: string }
  | { mode: "never-ready" }
  | { mode: "falls-back" }
  | { mode: "reboot-loop"; crashes: number };

/** A label value that is not a bad-boot mode. */
export class BadBootLabelError extends Error {
  /** Creates the error for `value`. */
  constructor(value: string) {
    super(
      `invalid ${BAD_BOOT_LABEL} value ${JSON.stringify(value)}: want unit-fails[:<unit>], ` +
        `boot-incomplete[:<unit>], ` +
        `never-ready, falls-back, reboot-loop[:<N≥1>] or none`,
    );
    this.name = "BadBootLabelError";
  }
}

/** Parses a label value; null for `none` (or an empty value). Throws {@linkcode BadBootLabelError}. */
export function parseBadBoot(value: string): BadBoot | null {
  const trimmed = value.trim();
  const colon = trimmed.indexOf(":");
  const mode = colon < 0 ? trimmed : trimmed.slice(0, colon);
  const arg = colon < 0 ? undefined : trimmed.slice(colon + 1);
  switch (mode) {
    case "":
    case "none":
      if (arg !== undefined) break;
      return null;
    case "unit-fails":
      if (arg === "") break;
      return { mode, unit: arg ?? DEFAULT_BAD_UNIT };
    case "boot-incomplete":
      if (arg === "") break;
      return { mode, unit: arg ?? DEFAULT_BOOT_CHECK_UNIT };
    case "never-ready":
    case "falls-back":
      if (arg !== undefined) break;
      return { mode };
    case "reboot-loop": {
      if (arg === undefined) return { mode, crashes: DEFAULT_REBOOT_LOOP_CRASHES };
      if (!/^\d+$/.test(arg) || Number(arg) < 1) break;
      return { mode, crashes: Number(arg) };
    }
  }
  throw new BadBootLabelError(value);
}

/** The label value for a mode (the inverse of {@linkcode parseBadBoot}). */
export function formatBadBoot(badBoot: BadBoot | null): string {
  if (!badBoot) return "none";
  if (badBoot.mode === "unit-fails" || badBoot.mode === "boot-incomplete") {
    return `${badBoot.mode}:${badBoot.unit}`;
  }
  if (badBoot.mode === "reboot-loop") return `reboot-loop:${badBoot.crashes}`;
  return badBoot.mode;
}

/**
 * The config labels that mark an image bad, for the registry harness:
 * `reg.pushImage({ repository, tag, version, labels: badImageLabels("falls-back") })`.
 */
export function badImageLabels(mode: string | BadBoot): Record<string, string> {
  const value = typeof mode === "string" ? mode : formatBadBoot(mode);
  parseBadBoot(value);
  return { [BAD_BOOT_LABEL]: value };
}

/** The bad-boot mode an image's config labels ask for (null: a good image). */
export function badBootFromLabels(
  labels: Record<string, string> | null | undefined,
): BadBoot | null {
  const value = labels?.[BAD_BOOT_LABEL];
  return value === undefined ? null : parseBadBoot(value);
}

/**
 * The mode that applies when `d` boots: the host's override for its image digest (or its
 * pullspec) when there is one, else the image's label.
 */
export function effectiveBadBoot(
  d: Deployment | null,
  overrides: Record<string, string> = {},
): BadBoot | null {
  if (!d) return null;
  const override = (d.image && overrides[d.image.imageDigest]) ?? overrides[d.pullspec];
  if (override !== undefined) return parseBadBoot(override);
  return d.badBoot ?? null;
}

/**
 * What one boot of the machine came to:
 * - `up`: it runs the booted deployment (possibly `degraded` with `failedUnit`, or with its
 *   kubelet never `ready`);
 * - `crashed`: it crashed before Ready while booting a `reboot-loop` image and reboots by itself:
 *   the harness must perform the next boot (`SimulatedHost.reboot()` again);
 * - `fell-back`: the boot of a bad image failed and the bootloader booted the previous
 *   deployment, which now runs (booted = previous, rollback = the bad one).
 */
export type BootOutcome = "up" | "crashed" | "fell-back";

/** The record of the latest boot (kept in the host state as `lastBoot`). */
export interface BootRecord {
  /** What the boot came to. */
  outcome: BootOutcome;
  /** When it happened (ISO 8601). */
  at: string;
  /** The boot ID after it. */
  bootId: string;
  /** Whether it was a soft reboot (a crash or a fall-back always ends in a full boot). */
  soft: boolean;
  /** imageDigest of the deployment the machine tried to boot (the bad one when it fell back). */
  triedDigest: string | null;
  /** imageDigest of the deployment that runs now (null while crashed). */
  bootedDigest: string | null;
  /** The mode of the deployment tried, if it is bad (label or override). */
  badBoot: BadBoot | null;
  /** Whether the kubelet becomes Ready (false while crashed and for `never-ready`). */
  ready: boolean;
  /** The unit that failed this boot (`unit-fails`, `boot-incomplete`): the system is `degraded`. */
  failedUnit: string | null;
  /** The failed unit is a boot check: `boot-complete.target` is not reached (`boot-incomplete`). */
  bootCheckFailed: boolean;
  /** Consecutive crashed boots of the tried deployment, this one included (`reboot-loop`). */
  crashes: number;
  /** For `fell-back`: imageDigest of the bad deployment the host fell back from. */
  fellBackFrom: string | null;
}

/** Options of {@linkcode bootHost}. */
export interface BootOptions {
  /** A soft reboot (userspace restart): the boot ID survives unless the boot fails. */
  soft: boolean;
  /** The boot ID of a full boot. */
  newBootId: string;
  /** When the machine comes up (ISO 8601). */
  now: string;
  /** The host's per-image overrides (`SimSettings.badBoot`). */
  overrides?: Record<string, string>;
}

/** The unit a mode fails at boot, and whether it is a boot check. */
function failedUnitOf(b: BadBoot | null): Pick<BootRecord, "failedUnit" | "bootCheckFailed"> {
  if (b?.mode === "unit-fails") return { failedUnit: b.unit, bootCheckFailed: false };
  if (b?.mode === "boot-incomplete") return { failedUnit: b.unit, bootCheckFailed: true };
  return { failedUnit: null, bootCheckFailed: false };
}

const digestOf = (d: Deployment | null) => d?.image?.imageDigest ?? null;

/** True when `a` and `b` are the same deployment (commit and serial). */
function sameDeployment(a: Deployment | null, b: Deployment | null): boolean {
  return a !== null && b !== null && a.checksum === b.checksum &&
    a.deploySerial === b.deploySerial && a.stateroot === b.stateroot;
}

/**
 * One boot of the machine: the deployment transition of {@linkcode reboot}, then what the booted
 * deployment's bad-boot mode does to it (see the module doc). Returns the new state, whose
 * `lastBoot` says what happened.
 */
export function bootHost(state: HostState, opts: BootOptions): HostState {
  const next = reboot(state, { soft: opts.soft, newBootId: opts.newBootId, now: opts.now });
  const tried = next.booted;
  const badBoot = effectiveBadBoot(tried, opts.overrides);
  // A machine that crashed while booting this same deployment is on its next attempt.
  const prior = state.lastBoot?.outcome === "crashed" && sameDeployment(state.booted, tried)
    ? state.lastBoot.crashes
    : 0;
  const record: BootRecord = {
    outcome: "up",
    at: opts.now,
    bootId: next.bootId,
    soft: opts.soft,
    triedDigest: digestOf(tried),
    bootedDigest: digestOf(tried),
    badBoot,
    ready: true,
    ...failedUnitOf(null),
    crashes: 0,
    fellBackFrom: null,
  };
  const failing = badBoot?.mode === "falls-back" || badBoot?.mode === "reboot-loop";
  if (!failing) {
    if (badBoot?.mode === "never-ready") record.ready = false;
    return { ...next, lastBoot: { ...record, ...failedUnitOf(badBoot) } };
  }
  // A failing boot is never soft in the end: the crash or the fall-back is a real boot.
  const hard = { ...next, bootId: opts.newBootId };
  const limit = badBoot.mode === "reboot-loop" ? badBoot.crashes : 0;
  if (prior < limit) {
    return {
      ...hard,
      lastBoot: {
        ...record,
        outcome: "crashed",
        bootId: opts.newBootId,
        soft: false,
        bootedDigest: null,
        ready: false,
        crashes: prior + 1,
      },
    };
  }
  if (!next.rollback) {
    // Nothing to fall back to (a host created on a bad image): greenboot gives up and the
    // machine stays up on it, never Ready.
    return { ...hard, lastBoot: { ...record, soft: false, ready: false, crashes: prior } };
  }
  const fellBack: HostState = {
    ...hard,
    staged: null,
    booted: next.rollback,
    rollback: tried,
    rollbackQueued: false,
  };
  // The previous deployment boots as what it is; its own crash modes are not followed (that
  // would need a third deployment), but unit-fails / never-ready apply.
  const previous = effectiveBadBoot(fellBack.booted, opts.overrides);
  return {
    ...fellBack,
    lastBoot: {
      ...record,
      outcome: "fell-back",
      bootId: opts.newBootId,
      soft: false,
      bootedDigest: digestOf(fellBack.booted),
      ready: previous?.mode !== "never-ready",
      ...failedUnitOf(previous),
      crashes: prior + (badBoot.mode === "falls-back" ? 1 : 0),
      fellBackFrom: digestOf(tried),
    },
  };
}

/** The record for a host created booted into `booted` (no crash modes: nothing to fall back to). */
export function initialBootRecord(
  state: HostState,
  opts: { now: string; overrides?: Record<string, string> },
): BootRecord {
  const badBoot = effectiveBadBoot(state.booted, opts.overrides);
  return {
    outcome: "up",
    at: opts.now,
    bootId: state.bootId,
    soft: false,
    triedDigest: digestOf(state.booted),
    bootedDigest: digestOf(state.booted),
    badBoot,
    ready: badBoot === null || badBoot.mode === "unit-fails" || badBoot.mode === "boot-incomplete",
    ...failedUnitOf(badBoot),
    crashes: 0,
    fellBackFrom: null,
  };
}
