/**
 * Helpers for tests that run the simulator as a process, the way the daemon does.
 *
 * @module
 */

import type { SimulatedHost } from "./host.ts";

/** What a finished command printed. */
export interface RunResult {
  /** Exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
  /** Wall time in milliseconds. */
  ms: number;
}

const decoder = new TextDecoder();

/** Runs `bootc <args>` (or any argv suffix) on the simulated host and waits for it. */
export async function runBootc(
  host: SimulatedHost,
  args: string[],
  opts: { env?: Record<string, string> } = {},
): Promise<RunResult> {
  const [cmd, ...prefix] = host.command();
  const started = performance.now();
  const out = await new Deno.Command(cmd, {
    args: [...prefix, ...args],
    stdout: "piped",
    stderr: "piped",
    ...(opts.env ? { env: opts.env } : {}),
  }).output();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
    ms: performance.now() - started,
  };
}

/** A bootc process left running (e.g. `--apply`, or a `status` waiting on the lock). */
export interface RunningBootc {
  /** Resolves when it exits. */
  done: Promise<RunResult>;
  /** Whether it is still running after `ms` milliseconds. */
  stillRunningAfter(ms: number): Promise<boolean>;
  /** SIGKILLs it (as systemd does at reboot) and waits for it. */
  kill(): Promise<RunResult>;
}

/** Starts `bootc <args>` without waiting for it. */
export function startBootc(host: SimulatedHost, args: string[]): RunningBootc {
  const [cmd, ...prefix] = host.command();
  const started = performance.now();
  const child = new Deno.Command(cmd, {
    args: [...prefix, ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let exited = false;
  const done = child.output().then((out) => {
    exited = true;
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
      ms: performance.now() - started,
    };
  });
  return {
    done,
    async stillRunningAfter(ms: number) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([done, new Promise((r) => (timer = setTimeout(r, ms)))]);
      clearTimeout(timer);
      return !exited;
    },
    async kill() {
      if (!exited) {
        try {
          child.kill("SIGKILL");
        } catch {
          // exited meanwhile
        }
      }
      return await done;
    },
  };
}

/** Parses `bootc status --format=json` output, checking it is one line. */
export function parseStatus(stdout: string): Record<string, unknown> {
  if (stdout.trimEnd().includes("\n")) throw new Error(`status is not one line: ${stdout}`);
  return JSON.parse(stdout);
}
