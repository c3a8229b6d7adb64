/**
 * The one source of the operator's version and commit, for every executable (controller,
 * daemon, kubectl plugin): `--version`, the first log line, the build-info metric.
 *
 * The version is a constant here rather than a `version` field read from deno.json: importing
 * deno.json would put the whole repository config into every bundle, and a constant keeps
 * lib/ free of it. `version_test.ts` keeps it equal to the chart's version and to the
 * annotation the manifests put on the controller Deployment ({@linkcode VERSION_ANNOTATION}).
 *
 * The commit is stamped into each bundle by `tools/build.ts` (`git rev-parse --short HEAD`),
 * which replaces {@linkcode COMMIT_PLACEHOLDER}; run from source it reads "dev".
 *
 * @module
 */
import type { Logger } from "./log.ts";

/** The operator's release version (semver). */
export const VERSION = "0.1.0";

/**
 * The annotation on the controller Deployment naming the operator version its manifests
 * deploy (manifests/controller.yaml), which `kubectl bootc version` reads: a Deployment is
 * readable wherever the operator's objects are, and needs no metrics access.
 */
export const VERSION_ANNOTATION = "bootc.dev/version";

/**
 * The string literal `tools/build.ts` replaces in a bundle with the commit it was built from.
 * The check below tells an unstamped value by its prefix alone, so the build's replacement
 * (which requires exactly one occurrence of the whole literal) cannot touch the check.
 */
export const COMMIT_PLACEHOLDER = "@@BOOTC_OPERATOR_COMMIT@@";

/** The commit the running code was built from; "dev" when run from source. */
export const COMMIT: string = COMMIT_PLACEHOLDER.startsWith("@@") ? "dev" : COMMIT_PLACEHOLDER;

/** What one executable reports about its build. */
export interface BuildInfo {
  version: string;
  commit: string;
}

/** This build's version and commit. */
export function buildInfo(): BuildInfo {
  return { version: VERSION, commit: COMMIT };
}

/**
 * The line `--version` prints, e.g. `controller 0.1.0 (commit 1a2b3c4, deno 2.9.6)`.
 * `info` and `deno` default to this build and runtime.
 */
export function versionLine(
  component: string,
  info: BuildInfo = buildInfo(),
  deno: string = Deno.version.deno,
): string {
  return `${component} ${info.version} (commit ${info.commit}, deno ${deno})`;
}

/** True when the command line asks for the version (`--version`, anywhere). */
export function wantsVersion(args: readonly string[]): boolean {
  return args.includes("--version");
}

/** Logs this build's version and commit: the first line every component writes. */
export function logVersion(log: Logger): void {
  log.info(`bootc-operator ${VERSION}`, { ...buildInfo() });
}
