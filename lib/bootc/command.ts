/**
 * Running host commands with bounded time: every command gets a timeout, is
 * started in its own process group, and is terminated with SIGTERM then SIGKILL
 * (to the whole group, so helpers it forked cannot keep it alive). The
 * environment passed on drops `container`, which would make bootc believe it
 * runs in a container and report an empty host.
 *
 * @module
 */

/** The outcome of one command. */
export interface CommandResult {
  /** The argv that ran. */
  argv: string[];
  /** Exit code (128 + signal number when killed by a signal). */
  code: number;
  /** The signal that ended the process, if any. */
  signal: Deno.Signal | null;
  stdout: string;
  stderr: string;
  /** True when the timeout (or the abort signal) ended the command. */
  timedOut: boolean;
  /** Wall time in milliseconds. */
  durationMs: number;
}

/** Options of {@linkcode runCommand}. */
export interface RunCommandOptions {
  /** Time after which the command is terminated (SIGTERM, then SIGKILL). */
  timeoutMs: number;
  /** Time between SIGTERM and SIGKILL (default 5 s). */
  killGraceMs?: number;
  /** Environment (default: this process's, without `container`). */
  env?: Record<string, string>;
  /** Terminates the command early when aborted (reported like a timeout). */
  signal?: AbortSignal;
  /** Text written to the command's stdin; stdin is closed otherwise. */
  stdin?: string;
}

/** Environment variables never passed to host commands. */
export const DROPPED_ENVIRONMENT = ["container"] as const;

/** This process's environment without the variables bootc must not see. */
export function hostEnvironment(env?: Record<string, string>): Record<string, string> {
  const source = env ?? Deno.env.toObject();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(source)) {
    if (!(DROPPED_ENVIRONMENT as readonly string[]).includes(k)) out[k] = v;
  }
  return out;
}

/** Splits a command flag into an argv list on whitespace; "" yields []. */
export function splitCommand(text: string): string[] {
  return text.split(/\s+/).filter((s) => s !== "");
}

/**
 * The message of a failed bootc command: the last `error:` line of stderr
 * (bootc prints `error: <context>: <cause>`), else the last non-empty line.
 */
export function extractErrorLine(stderr: string): string | undefined {
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const error = lines.findLast((l) => /^error:/i.test(l));
  const line = error ?? lines.at(-1);
  return line === undefined ? undefined : line.slice(0, 1024);
}

function killGroup(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

async function readText(
  stream: ReadableStream<Uint8Array>,
  stop: Promise<void>,
): Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let stopped = false;
  // A grandchild that inherited the pipe may hold it open after the command
  // died: stop reading when told to.
  stop.then(() => {
    stopped = true;
    reader.cancel().catch(() => {});
  });
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
    }
  } catch (e) {
    if (!stopped) throw e;
  } finally {
    reader.releaseLock();
  }
  return text;
}

/** A started command whose completion can be awaited. */
export interface RunningCommand {
  /** Process id (also the process group id). */
  readonly pid: number;
  /** Resolves when the command has ended and its output was read. */
  readonly result: Promise<CommandResult>;
  /** Terminates the command's process group (SIGTERM, then SIGKILL after the grace time). */
  terminate(): void;
}

/** Options of {@linkcode startCommand}. */
export interface StartCommandOptions extends Omit<RunCommandOptions, "timeoutMs"> {
  /** Time after which the command is terminated; none when undefined. */
  timeoutMs?: number;
}

/** Starts `argv` in its own process group; see {@linkcode RunningCommand}. */
export function startCommand(argv: string[], options: StartCommandOptions = {}): RunningCommand {
  if (argv.length === 0) throw new Error("empty command");
  const started = Date.now();
  const grace = options.killGraceMs ?? 5_000;
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env: options.env ?? hostEnvironment(),
    clearEnv: true,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    detached: true,
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    writer.write(new TextEncoder().encode(options.stdin)).then(() => writer.close()).catch(
      () => {},
    );
  }
  let timedOut = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  let exited = false;
  const terminate = () => {
    if (exited || killTimer !== undefined) return;
    timedOut = true;
    killGroup(child.pid, "SIGTERM");
    killTimer = setTimeout(() => killGroup(child.pid, "SIGKILL"), grace);
  };
  const timer = options.timeoutMs === undefined ? undefined : setTimeout(
    terminate,
    options.timeoutMs,
  );
  const onAbort = () => terminate();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) terminate();

  let releaseReaders!: () => void;
  const stopReading = new Promise<void>((resolve) => releaseReaders = resolve);
  const stdout = readText(child.stdout, stopReading);
  const stderr = readText(child.stderr, stopReading);

  const result = (async (): Promise<CommandResult> => {
    const status = await child.status;
    exited = true;
    clearTimeout(timer);
    clearTimeout(killTimer);
    options.signal?.removeEventListener("abort", onAbort);
    // Leftover group members (forked helpers) must not outlive the command.
    killGroup(child.pid, "SIGKILL");
    const linger = setTimeout(releaseReaders, 1_000);
    const [out, err] = await Promise.all([stdout, stderr]);
    clearTimeout(linger);
    releaseReaders();
    return {
      argv,
      code: status.code,
      signal: status.signal,
      stdout: out,
      stderr: err,
      timedOut,
      durationMs: Date.now() - started,
    };
  })();
  return { pid: child.pid, result, terminate };
}

/**
 * Runs `argv` to completion, terminating it after `timeoutMs`. Never throws
 * for a failing command: inspect `code` and `timedOut`. Throws only when the
 * program cannot be started (e.g. not found).
 */
export async function runCommand(
  argv: string[],
  options: RunCommandOptions,
): Promise<CommandResult> {
  return await startCommand(argv, options).result;
}
