/**
 * Entry point of the bootc host simulator, an executable stand-in for `bootc`:
 *
 *     deno run --allow-all tests/bootc_sim/main.ts --sim-root <dir> <bootc args…>
 *     deno run --allow-all tests/bootc_sim/main.ts --sim-root <dir> systemctl <args…>
 *     deno run --allow-all tests/bootc_sim/main.ts --sim-root <dir> bless-boot status
 *
 * `--sim-root` may be replaced by the environment variable `BOOTC_SIM_ROOT`. See README.md.
 *
 * @module
 */

import { runBlessBoot, runBootc, runSystemctl } from "./commands.ts";
import { simPaths } from "./store.ts";

const encoder = new TextEncoder();

function writeAll(stream: { writeSync(p: Uint8Array): number }, text: string) {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(stream.writeSync(bytes));
}

async function main(args: string[]): Promise<number> {
  let root = Deno.env.get("BOOTC_SIM_ROOT") ?? null;
  let rest = args;
  if (rest[0] === "--sim-root") {
    root = rest[1] ?? null;
    rest = rest.slice(2);
  } else if (rest[0]?.startsWith("--sim-root=")) {
    root = rest[0].slice("--sim-root=".length);
    rest = rest.slice(1);
  }
  if (!root) {
    writeAll(
      Deno.stderr,
      "error: bootc simulator: --sim-root <dir> or BOOTC_SIM_ROOT is required\n",
    );
    return 2;
  }
  const systemctlMode = rest[0] === "systemctl";
  const blessMode = rest[0] === "bless-boot";
  const ctx = {
    paths: simPaths(root),
    argv: systemctlMode || blessMode ? rest.slice(1) : rest,
    env: Deno.env.toObject(),
    out: (t: string) => writeAll(Deno.stdout, t),
    err: (t: string) => writeAll(Deno.stderr, t),
    stdoutIsTerminal: Deno.stdout.isTerminal(),
  };
  if (systemctlMode) return await runSystemctl(ctx);
  if (blessMode) return await runBlessBoot(ctx);
  const outcome = await runBootc(ctx);
  if (outcome === "hang") {
    // bootc asked systemd to reboot and now sleeps until it is killed, holding the sysroot lock.
    setInterval(() => {}, 1 << 30);
    return await new Promise<number>(() => {});
  }
  return outcome;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
