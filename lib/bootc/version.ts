/**
 * bootc version detection and the staging/applying strategy it allows.
 *
 * Locked staging (`--download-only`: the staged deployment is not applied by an
 * unexpected reboot) is what makes pre-staging on every node safe:
 *
 * - bootc >= 1.16.10: `bootc switch --download-only <img>` pulls and stages
 *   `<img>` locked in one step; `bootc switch --from-downloaded --apply` unlocks
 *   and reboots.
 * - bootc 1.12 – 1.16.9: `switch` has no `--download-only`. What exists is
 *   `bootc upgrade --download-only`, which locks the *currently specified*
 *   image (the spec is taken from the staged deployment when there is one),
 *   and `bootc upgrade --from-downloaded --apply`. A plain `bootc switch <img>`
 *   stages `<img>` unlocked, so the fall-back is two commands: `bootc switch
 *   <img>` (pull + stage, unlocked: this makes `<img>` the spec) immediately
 *   followed by `bootc upgrade --download-only` (the spec is unchanged, the
 *   layers are cached, so it only locks the staged deployment). The window in
 *   which an unexpected reboot would boot `<img>` without a drain is the time
 *   between the end of the first command and the end of the second, seconds
 *   rather than the length of the pull. The daemon reports a staged entry that
 *   is still unlocked and locks it again (level-triggered), so a crash between
 *   the two commands is repaired.
 * - bootc < 1.12: there is no way to stage locked. The daemon reports Degraded
 *   "bootc too old" instead of staging unlocked.
 *
 * @module
 */

/** How an image is staged locked. */
export type StageMethod =
  /** `bootc switch --download-only <img>` (1.16.10+). */
  | "switch-download-only"
  /** `bootc switch <img>` then `bootc upgrade --download-only` (1.12 – 1.16.9). */
  | "switch-then-upgrade-download-only";

/** Which verb applies a downloaded (locked) deployment. */
export type ApplyMethod =
  /** `bootc switch --from-downloaded --apply` (1.16.10+). */
  | "switch"
  /** `bootc upgrade --from-downloaded --apply` (1.12+). */
  | "upgrade";

/** A parsed `major.minor.patch` version. */
export interface BootcVersion {
  major: number;
  minor: number;
  patch: number;
}

/** What the host's bootc can do, derived from its version. */
export interface BootcCapabilities {
  /** The version string as reported (e.g. "1.16.10"), if it could be parsed. */
  version?: string;
  /** How to stage locked; undefined when the host cannot. */
  stage?: StageMethod;
  /** How to apply a locked stage; undefined when the host cannot. */
  apply?: ApplyMethod;
  /** Why the host cannot be managed (e.g. "bootc too old"), when it cannot. */
  problem?: string;
}

/** The first version with `bootc switch --download-only`. */
export const SWITCH_DOWNLOAD_ONLY_SINCE: BootcVersion = { major: 1, minor: 16, patch: 10 };
/** The first version with `bootc upgrade --download-only` / `--from-downloaded`. */
export const UPGRADE_DOWNLOAD_ONLY_SINCE: BootcVersion = { major: 1, minor: 12, patch: 0 };

/** Parses the output of `bootc --version` (e.g. `bootc 1.16.10`); undefined when no version is found. */
export function parseBootcVersion(text: string): BootcVersion | undefined {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) };
}

/** Compares two versions: negative, zero or positive. */
export function compareVersions(a: BootcVersion, b: BootcVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** Formats a version as `major.minor.patch`. */
export function formatVersion(v: BootcVersion): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

/** The capabilities of a host whose `bootc --version` printed `text`. */
export function capabilitiesFromVersion(text: string): BootcCapabilities {
  const version = parseBootcVersion(text);
  if (!version) {
    return {
      problem: `cannot tell the bootc version from ${JSON.stringify(text.trim().slice(0, 100))}`,
    };
  }
  const formatted = formatVersion(version);
  if (compareVersions(version, SWITCH_DOWNLOAD_ONLY_SINCE) >= 0) {
    return { version: formatted, stage: "switch-download-only", apply: "switch" };
  }
  if (compareVersions(version, UPGRADE_DOWNLOAD_ONLY_SINCE) >= 0) {
    return { version: formatted, stage: "switch-then-upgrade-download-only", apply: "upgrade" };
  }
  return {
    version: formatted,
    problem: `bootc too old: ${formatted} cannot stage an image locked (needs ` +
      `${formatVersion(UPGRADE_DOWNLOAD_ONLY_SINCE)}+, ${
        formatVersion(SWITCH_DOWNLOAD_ONLY_SINCE)
      }+ recommended); not staging unlocked`,
  };
}
