/**
 * The host's commands of a real test node: in the node's mount namespace
 * (tests/node/node_namespaces.ts), `/usr/bin` is an overlay whose upper layer holds `bootc` and
 * `systemctl` of a simulated host (tests/bootc_sim), where a bootc host has them and where the
 * daemon's `PATH` (`/usr/bin:/bin`) finds them. Only processes that enter the namespace (a
 * hostPID pod's `nsenter --mount=/proc/1/ns/mnt`, as the daemon does) see them; this machine's
 * own `/usr/bin` is unchanged. The overlay vanishes with the namespace.
 *
 * @module
 */

import type { SimulatedHost } from "../bootc_sim/mod.ts";
import type { CommandResult } from "../harness/control_plane.ts";

/** Where the host's commands are, inside the namespace only. */
export const HOST_BIN_DIR = "/usr/bin";

/** A POSIX shell word quoting `s`. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** A script that runs `argv` plus its own arguments, with the Deno cache of this process. */
export function wrapperScript(argv: string[], env: Record<string, string>): string {
  const assignments = Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`);
  return `#!/bin/sh\nexec env ${[...assignments, ...argv.map(shellQuote)].join(" ")} "$@"\n`;
}

/**
 * Installs `host`'s `bootc` and `systemctl` into `layerDir` (a folder of the node's) and lays it
 * over {@linkcode HOST_BIN_DIR} in a mount namespace; `run` runs a command inside it (a real
 * node's `runInHost`).
 */
export async function installHostCommands(options: {
  host: SimulatedHost;
  layerDir: string;
  run: (argv: string[]) => Promise<CommandResult>;
}): Promise<void> {
  // The Deno cache of this process, so the simulator starts without downloads.
  const env: Record<string, string> = { HOME: Deno.env.get("HOME") ?? "/root" };
  const denoDir = Deno.env.get("DENO_DIR");
  if (denoDir) env.DENO_DIR = denoDir;
  const bootc = wrapperScript(options.host.command(), env);
  const systemctl = wrapperScript(options.host.systemctlCommand(), env);
  await Deno.mkdir(options.layerDir, { recursive: true });
  for (const [name, script] of [["bootc", bootc], ["systemctl", systemctl]]) {
    await Deno.writeTextFile(`${options.layerDir}/${name}`, script, { mode: 0o755 });
  }
  const setup = await options.run([
    "sh",
    "-ec",
    `grep -q ' bootc-test-host-bin ' /proc/self/mountinfo ||
       mount -t overlay bootc-test-host-bin -o "lowerdir=$2:$1" "$1"`,
    "setup",
    HOST_BIN_DIR,
    options.layerDir,
  ]);
  if (setup.code !== 0) throw new Error(`installing the host's commands failed: ${setup.stderr}`);
}
