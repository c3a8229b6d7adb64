/**
 * The host's commands of a real test node: in the node's mount namespace
 * (tests/node/node_namespaces.ts), `/usr/local/sbin` is a fresh tmpfs holding `bootc` and
 * `systemctl` of a simulated host (tests/bootc_sim). Only processes that enter the namespace (a
 * hostPID pod's `nsenter --mount=/proc/1/ns/mnt`, as the daemon does) find them; this machine's
 * own namespace does not. The tmpfs vanishes with the namespace.
 *
 * @module
 */

import type { SimulatedHost } from "../bootc_sim/mod.ts";
import type { CommandResult } from "../harness/control_plane.ts";

/** Where the host's commands are, inside the namespace only. */
export const HOST_BIN_DIR = "/usr/local/sbin";

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
 * Installs `host`'s `bootc` and `systemctl` in a fresh tmpfs at {@linkcode HOST_BIN_DIR} of a
 * mount namespace; `run` runs a command inside it (a real node's `runInHost`).
 */
export async function installHostCommands(options: {
  host: SimulatedHost;
  run: (argv: string[]) => Promise<CommandResult>;
}): Promise<void> {
  // The Deno cache of this process, so the simulator starts without downloads.
  const env: Record<string, string> = { HOME: Deno.env.get("HOME") ?? "/root" };
  const denoDir = Deno.env.get("DENO_DIR");
  if (denoDir) env.DENO_DIR = denoDir;
  const bootc = wrapperScript(options.host.command(), env);
  const systemctl = wrapperScript(options.host.systemctlCommand(), env);
  const setup = await options.run([
    "sh",
    "-ec",
    `mountpoint -q "$1" || mount -t tmpfs -o mode=0755 bootc-test-host-bin "$1"
     printf '%s' "$2" >"$1/bootc" && printf '%s' "$3" >"$1/systemctl"
     chmod 0755 "$1/bootc" "$1/systemctl"`,
    "setup",
    HOST_BIN_DIR,
    bootc,
    systemctl,
  ]);
  if (setup.code !== 0) throw new Error(`installing the host's commands failed: ${setup.stderr}`);
}
