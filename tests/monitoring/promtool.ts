/**
 * Runs Prometheus' `promtool` (Debian package `prometheus`, installed by
 * tests/prepare.sh). A missing promtool is an error, never a skip: the alert
 * tests are part of the suite.
 *
 * @module
 */

/** What one promtool run printed. */
export interface PromtoolResult {
  success: boolean;
  code: number;
  /** stdout and stderr together (promtool splits its reports between them). */
  output: string;
}

/** The promtool executable: `PROMTOOL` if set, else `promtool` on PATH. */
export function promtoolPath(): string {
  return Deno.env.get("PROMTOOL") ?? "promtool";
}

/** Runs `promtool args…` in `cwd`; throws when promtool cannot be started. */
export async function promtool(args: string[], cwd?: string): Promise<PromtoolResult> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(promtoolPath(), {
      args,
      cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(
        `${promtoolPath()} not found: run \`bash tests/prepare.sh\` (installs Debian's ` +
          "`prometheus` package, which ships promtool) or set PROMTOOL",
      );
    }
    throw e;
  }
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    success: out.success,
    code: out.code,
    output: decode(out.stdout) + decode(out.stderr),
  };
}
