/**
 * Child processes for the test control plane: output goes to a log file, and
 * the child is killed by the kernel when the test process dies (`setpriv
 * --pdeathsig KILL`), so a crashed test leaves no etcd or API server behind.
 *
 * @module
 */

/** Options of {@linkcode startProcess}. */
export interface StartProcessOptions {
  /** Short name used in messages, e.g. "kube-apiserver". */
  name: string;
  /** Executable path. */
  command: string;
  args: string[];
  /** stdout and stderr are appended to this file. */
  logPath: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  cwd?: string;
}

/** A running child process. */
export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<Deno.CommandStatus>;
  /** True until the process has exited. */
  readonly running: boolean;
  /**
   * Sends SIGTERM, then SIGKILL after `graceMs` (default 5000), and resolves
   * with the exit status once the process is gone. Safe to call repeatedly.
   */
  stop(options?: { graceMs?: number }): Promise<Deno.CommandStatus>;
}

/**
 * The argv that runs `command args` with its output appended to `logPath` and
 * a parent-death signal of SIGKILL. `sh` only redirects and `exec`s, so the
 * pid we hold is the real program's pid and the death signal survives `exec`.
 */
export function wrappedArgv(command: string, args: string[]): string[] {
  return [
    "--pdeathsig",
    "KILL",
    "--",
    "/bin/sh",
    "-c",
    'exec "$@" >>"$BOOTC_HARNESS_LOG" 2>&1',
    "sh",
    command,
    ...args,
  ];
}

/** Starts `command` under `setpriv --pdeathsig KILL`, logging to `logPath`. */
export function startProcess(options: StartProcessOptions): ManagedProcess {
  const child = new Deno.Command("setpriv", {
    args: wrappedArgv(options.command, options.args),
    env: { ...options.env, BOOTC_HARNESS_LOG: options.logPath },
    cwd: options.cwd,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let running = true;
  const exited = child.status.then((status) => {
    running = false;
    return status;
  });
  let stopping: Promise<Deno.CommandStatus> | undefined;
  const stop = (stopOptions: { graceMs?: number } = {}) => {
    stopping ??= (async () => {
      if (!running) return await exited;
      signal(child, "SIGTERM");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), stopOptions.graceMs ?? 5000);
      });
      const first = await Promise.race([exited, timedOut]);
      clearTimeout(timer);
      if (first === "timeout") signal(child, "SIGKILL");
      return await exited;
    })();
    return stopping;
  };
  return {
    name: options.name,
    pid: child.pid,
    logPath: options.logPath,
    exited,
    get running() {
      return running;
    },
    stop,
  };
}

function signal(child: Deno.ChildProcess, sig: Deno.Signal): void {
  try {
    child.kill(sig);
  } catch {
    // Already exited between the check and the kill.
  }
}

/** The last `lines` lines of a log file, or a note when it cannot be read. */
export async function tailFile(path: string, lines = 40): Promise<string> {
  try {
    const text = await Deno.readTextFile(path);
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch (error) {
    return `(cannot read ${path}: ${error instanceof Error ? error.message : error})`;
  }
}

/**
 * Ports handed to child processes come from below Linux's ephemeral range (32768–60999): a
 * port picked there and released until the child binds it can meanwhile become the source port
 * of any outgoing connection (a busy parallel test run makes thousands), and the child then
 * fails with "address already in use".
 */
export const PORT_RANGE = { low: 20_000, high: 32_000 } as const;
/**
 * How long a handed-out port stays reserved for its taker: longer than any test file runs (a
 * child restarted on its port, as an API server restart does, finds it still free of others).
 */
const RESERVATION_MS = 30 * 60 * 1000;

/**
 * A free TCP port on 127.0.0.1 for a child process to bind: picked at random from
 * {@linkcode PORT_RANGE}, reserved across test files running in parallel (a file created
 * exclusively in a shared folder, so no two callers get the same port while it is reserved)
 * and checked to be bindable now.
 */
export function freePort(): number {
  const dir = `${Deno.env.get("TMPDIR") ?? "/tmp"}/bootc-test-ports`;
  Deno.mkdirSync(dir, { recursive: true });
  for (let attempt = 0; attempt < 2000; attempt++) {
    const port = PORT_RANGE.low + Math.floor(Math.random() * (PORT_RANGE.high - PORT_RANGE.low));
    if (!reservePort(`${dir}/${port}`)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch {
      continue; // bound by something else right now: keep it reserved, try another
    }
  }
  throw new Error(`no free port in ${PORT_RANGE.low}-${PORT_RANGE.high}`);
}

/** Creates the reservation file; false when another caller holds a recent one. */
function reservePort(path: string): boolean {
  for (let i = 0; i < 2; i++) {
    try {
      Deno.openSync(path, { createNew: true, write: true }).close();
      return true;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      const mtime = Deno.statSync(path).mtime?.getTime() ?? 0;
      if (Date.now() - mtime < RESERVATION_MS) return false;
      Deno.removeSync(path); // stale (an earlier file or run): take it over
    }
  }
  return false;
}
