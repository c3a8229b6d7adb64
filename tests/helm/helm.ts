/**
 * helm for the tests: built from the Go module proxy by tests/helm/build.sh (cached under
 * ~/.cache/bootc-operator), run with its own config, cache and data folders so nothing of the
 * user's helm setup leaks in or out.
 *
 * @module
 */

import { cachedBuildOutput } from "../harness/cached_build.ts";

/** The repository's helm build script. */
const BUILD_SCRIPT = new URL("build.sh", import.meta.url).pathname;

/** The chart, as an absolute path. */
export const CHART = new URL("../../charts/bootc-operator", import.meta.url).pathname;

/** The Kubernetes version `helm lint` and `helm template` assume (the test control plane's). */
export const KUBE_VERSION = "v1.36.3";

/** Result of one helm run. */
export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A helm binary with a private home; `run` never throws on a non-zero exit. */
export interface Helm {
  readonly path: string;
  run(args: string[]): Promise<HelmResult>;
  /** Runs and throws (with helm's stderr) unless it exits 0; returns stdout. */
  ok(args: string[]): Promise<string>;
  /** Removes the private home. */
  close(): Promise<void>;
}

/**
 * The helm binary: `BOOTC_HELM_BIN`, else the last stdout line of tests/helm/build.sh (instant
 * when cached). Throws with a clear message when it cannot be had: a missing helm fails the
 * test, it never skips it.
 */
export async function resolveHelm(): Promise<string> {
  // BOOTC_HELM_BIN is honoured by the script itself (it checks the file is executable).
  return await cachedBuildOutput({
    script: BUILD_SCRIPT,
    missing: "helm is missing (tests/helm/build.sh builds it from the Go module proxy, needs Go; " +
      "`bash tests/prepare.sh --test-tools`, run by `deno task test`, builds it, or set " +
      "BOOTC_HELM_BIN)",
  });
}

/** Starts using helm (see {@linkcode resolveHelm}) with a private home. */
export async function openHelm(): Promise<Helm> {
  const path = await resolveHelm();
  const home = await Deno.makeTempDir({ prefix: "bootc-helm-" });
  const env = {
    HELM_CACHE_HOME: `${home}/cache`,
    HELM_CONFIG_HOME: `${home}/config`,
    HELM_DATA_HOME: `${home}/data`,
  };
  const run = async (args: string[]): Promise<HelmResult> => {
    const out = await new Deno.Command(path, {
      args,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
  };
  return {
    path,
    run,
    ok: async (args) => {
      const r = await run(args);
      if (r.code !== 0) throw new Error(`helm ${args.join(" ")}: exit ${r.code}\n${r.stderr}`);
      return r.stdout;
    },
    close: () => Deno.remove(home, { recursive: true }),
  };
}
