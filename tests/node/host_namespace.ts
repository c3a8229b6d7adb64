/**
 * A "host" of its own for a real test node: a mount namespace (`unshare --mount`, private
 * propagation) in which `/usr/local/sbin` is a fresh tmpfs holding `bootc` and `systemctl` of a
 * simulated host (tests/bootc_sim). Only processes that enter the namespace (a hostPID pod's
 * `nsenter --mount=/proc/<pid>/ns/mnt`) find them; this machine's own namespace does not.
 *
 * The namespace lives as long as its holder process (`sleep`); stop() kills it, and the mounts
 * made inside vanish with the namespace.
 *
 * @module
 */

import type { SimulatedHost } from "../bootc_sim/mod.ts";
import type { CommandResult } from "../harness/control_plane.ts";
import { type ManagedProcess, startProcess } from "../harness/process.ts";
import { waitFor } from "../harness/wait.ts";

/** Where the host's commands are, inside the namespace only. */
export const HOST_BIN_DIR = "/usr/local/sbin";

/** A running host namespace. */
export interface HostNamespace {
  /** Pid of the process holding the namespace: `/proc/<pid>/ns/mnt`. */
  readonly pid: number;
  /** Runs `argv` inside the namespace (never throws on an exit code). */
  run(argv: string[]): Promise<CommandResult>;
  /** Kills the holder; the namespace and its mounts go with it. */
  stop(): Promise<void>;
}

/** A POSIX shell word quoting `s`. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** A script that runs `argv` plus its own arguments, with the Deno cache of this process. */
export function wrapperScript(argv: string[], env: Record<string, string>): string {
  const assignments = Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`);
  return `#!/bin/sh\nexec env ${[...assignments, ...argv.map(shellQuote)].join(" ")} "$@"\n`;
}

async function run(argv: string[]): Promise<CommandResult> {
  const out = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

/** Starts the namespace for `host` and installs its `bootc` and `systemctl` inside. */
export async function startHostNamespace(
  options: { host: SimulatedHost; logPath: string },
): Promise<HostNamespace> {
  const holder: ManagedProcess = startProcess({
    name: "host-namespace",
    command: "unshare",
    args: ["--mount", "--propagation", "private", "sleep", "infinity"],
    logPath: options.logPath,
  });
  const own = await Deno.readLink("/proc/self/ns/mnt");
  const pid = holder.pid;
  const inside = (argv: string[]) => run(["nsenter", `--mount=/proc/${pid}/ns/mnt`, "--", ...argv]);
  try {
    await waitFor(async () => {
      const link = await Deno.readLink(`/proc/${pid}/ns/mnt`).catch(() => undefined);
      return link !== undefined && link !== own;
    }, { timeoutMs: 10_000, intervalMs: 20, message: "unshare --mount to make a namespace" });
    // The Deno cache of this process, so the simulator starts without downloads.
    const env: Record<string, string> = { HOME: Deno.env.get("HOME") ?? "/root" };
    const denoDir = Deno.env.get("DENO_DIR");
    if (denoDir) env.DENO_DIR = denoDir;
    const bootc = wrapperScript(options.host.command(), env);
    const systemctl = wrapperScript(options.host.systemctlCommand(), env);
    const setup = await inside([
      "sh",
      "-ec",
      `mount -t tmpfs -o mode=0755 bootc-test-host-bin "$1"
       printf '%s' "$2" >"$1/bootc" && printf '%s' "$3" >"$1/systemctl"
       chmod 0755 "$1/bootc" "$1/systemctl"`,
      "setup",
      HOST_BIN_DIR,
      bootc,
      systemctl,
    ]);
    if (setup.code !== 0) throw new Error(`host namespace setup failed: ${setup.stderr}`);
  } catch (e) {
    await holder.stop({ graceMs: 1000 });
    throw e;
  }
  return {
    pid,
    run: inside,
    stop: async () => {
      await holder.stop({ graceMs: 1000 });
    },
  };
}
