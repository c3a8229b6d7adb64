/**
 * Test tooling built once and cached by a repository build script (tests/kube, tests/helm,
 * tests/node): the script prints the ready path as its last stdout line (instant when cached).
 *
 * @module
 */

/** Options of {@linkcode cachedBuildOutput}. */
export interface CachedBuildOptions {
  /** The build script (run with bash). */
  script: string;
  /** An environment variable that, when set, is the answer (no build). */
  override?: string;
  /** Said first in the error when the script fails (what is missing and how to get it). */
  missing?: string;
}

/**
 * Runs the build script and returns its last stdout line; the script's stderr goes to ours.
 * Throws, naming the script and its exit code, when it fails or prints nothing: a missing tool
 * fails the test, it never skips it.
 */
export async function cachedBuildOutput(options: CachedBuildOptions): Promise<string> {
  const fromEnv = options.override ? Deno.env.get(options.override) : undefined;
  if (fromEnv) return fromEnv;
  const out = await new Deno.Command("bash", {
    args: [options.script],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const last = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1);
  if (!out.success || !last) {
    const why = `${options.script} failed (exit ${out.code}); see its output above`;
    throw new Error(options.missing ? `${options.missing}: ${why}` : why);
  }
  return last;
}
