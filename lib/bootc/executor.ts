/**
 * The bootc executor: the seam through which the daemon touches the host.
 * {@linkcode HostBootcExecutor} runs the real commands (`bootc`, `systemctl`)
 * in the host: through `nsenter --mount=/proc/1/ns/mnt --` from a privileged
 * `hostPID` pod, or directly (`hostExecPrefix: []`) when the daemon runs in the
 * host's mount namespace. The daemon tells which with `detectHostAccess`
 * (host_namespace.ts). Tests substitute a fake {@linkcode BootcExecutor}.
 *
 * @module
 */
import {
  type CommandResult,
  extractErrorLine,
  hostEnvironment,
  runCommand,
  startCommand,
} from "./command.ts";
import { parseHost } from "./parse.ts";
import type { Host } from "./types.ts";
import type { ApplyMethod, StageMethod } from "./version.ts";

/** The systemd unit that applies updates on its own (Fedora-based bootc images enable it). */
export const AUTO_UPDATE_TIMER = "bootc-fetch-apply-updates.timer";

/**
 * Prefix used when none is given: enters the host's mount namespace from a
 * `hostPID` pod. The daemon always passes the prefix `detectHostAccess` chose.
 */
export const DEFAULT_HOST_EXEC_PREFIX = ["nsenter", "-m/proc/1/ns/mnt", "--"];

/**
 * The argument forms of `bootc status` that print JSON, newest first. bootc
 * 1.1+ takes the first (the `org.containers.bootc/v1` document). Older hosts
 * reject it: 0.1.11 and before know only `--json` (a usage error, exit 2), and
 * the releases that added `--format-version` accepted only version 0 (exit 1,
 * naming the format version). `--json` works on all of them and prints the
 * host's own document (`v1alpha1` before 1.1), which the parser reads too.
 */
export const STATUS_ARGS: readonly (readonly string[])[] = [
  ["status", "--format=json", "--format-version=1"],
  ["status", "--json"],
];

/** A bootc (or systemctl) command failed, timed out or printed something unusable. */
export class BootcCommandError extends Error {
  /** Creates the error from a command result. */
  constructor(
    message: string,
    readonly result?: CommandResult,
  ) {
    super(message);
    this.name = "BootcCommandError";
  }

  /** True when the command was terminated by its timeout. */
  get timedOut(): boolean {
    return this.result?.timedOut ?? false;
  }
}

/** A command stopped on request (its abort signal), not because it failed. */
export class BootcCommandStopped extends BootcCommandError {
  /** Creates the error from the stopped command's result. */
  constructor(message: string, result?: CommandResult) {
    super(message, result);
    this.name = "BootcCommandStopped";
  }
}

/** Options of {@linkcode BootcExecutor.lockStaged}. */
export interface LockOptions {
  /**
   * A shorter time limit than a pull's: `upgrade --download-only` asks the spec image's
   * registry, which may be gone for an image the spec no longer wants.
   */
  timeoutMs?: number;
}

/** Options of {@linkcode BootcExecutor.stage}. */
export interface StageOptions {
  /**
   * Stops the pull when aborted (the spec moved on): the command is terminated and waited
   * for, so the sysroot lock is free again; rejects with {@linkcode BootcCommandStopped}
   * (unless it had ended by itself: then it succeeded). Only `switch --download-only`
   * (1.16.10+) is stopped: it stages locked, or not at all. The two-step stage
   * (1.12 – 1.16.9) is never stopped: its `switch` stages unlocked before it exits, and a
   * stopped one could leave an unlocked stage that any reboot would apply.
   */
  signal?: AbortSignal;
}

/** Options of {@linkcode BootcExecutor.apply}. */
export interface ApplyOptions {
  /** Pass `--soft-reboot=auto` (soft reboot when the staged entry allows it). */
  soft: boolean;
  /** Which verb applies the downloaded deployment. */
  method: ApplyMethod;
}

/** A detached `--apply` command: it normally never returns (the host reboots). */
export interface ApplyHandle {
  /**
   * Resolves when the command ends: with an error when it failed, with
   * undefined when it exited 0 (the reboot is under way).
   */
  readonly exited: Promise<BootcCommandError | undefined>;
}

/** Everything the daemon asks of the host. */
export interface BootcExecutor {
  /** Output of `bootc --version`. */
  version(): Promise<string>;
  /** Parsed `bootc status --format=json --format-version=1`. */
  status(): Promise<Host>;
  /** Pulls and stages `image` locked, with the given method. */
  stage(image: string, method: StageMethod, options?: StageOptions): Promise<void>;
  /** Locks the staged deployment of the current spec (`bootc upgrade --download-only`). */
  lockStaged(options?: LockOptions): Promise<void>;
  /** Starts the detached apply + reboot; call only after `Rebooting` is persisted. */
  apply(options: ApplyOptions): ApplyHandle;
  /** `systemctl mask --runtime --now bootc-fetch-apply-updates.timer`. */
  maskAutoUpdates(): Promise<void>;
  /** True when `bootc-fetch-apply-updates.timer` is masked (`systemctl is-enabled`). */
  autoUpdatesMasked(): Promise<boolean>;
  /**
   * Starts the detached `bootc rollback --apply [--soft-reboot=auto]`: reboots into
   * the rollback deployment. Call only after `Rebooting` is persisted.
   */
  applyRollback(options: RollbackOptions): ApplyHandle;
  /**
   * `bootc rollback` without `--apply`, only to undo a queued rollback (it toggles the
   * boot order back): a queued rollback would boot on an unexpected reboot.
   */
  unqueueRollback(): Promise<void>;
  /** What `systemctl is-system-running` prints (`running`, `degraded`, …), whatever its exit code. */
  systemState(): Promise<string>;
  /** The units systemd lists as failed (`systemctl list-units --state=failed`). */
  failedUnits(): Promise<string[]>;
  /** `systemctl is-active` of each unit, in order (`active`, `failed`, `inactive`, …). */
  unitStates(units: readonly string[]): Promise<string[]>;
  /**
   * What `systemd-bless-boot status` prints (`good`, `bad`, `indeterminate`, `clean`),
   * or `absent` when the host has no such program (no systemd-boot counting).
   */
  blessStatus(): Promise<string>;
}

/** Options of {@linkcode BootcExecutor.applyRollback}. */
export interface RollbackOptions {
  /** Pass `--soft-reboot=auto` (soft reboot when the rollback entry allows it). */
  soft: boolean;
}

/** Time limits of the host commands, in milliseconds. */
export interface ExecutorTimeouts {
  /** `bootc status` (it blocks while a pull holds the sysroot lock). Default 2 min. */
  statusMs: number;
  /** `bootc --version`. Default 30 s. */
  versionMs: number;
  /** A stage (pull) command. Default 60 min. */
  stageMs: number;
  /** `systemctl` commands. Default 30 s. */
  systemctlMs: number;
}

/** Default {@linkcode ExecutorTimeouts}. */
export const DEFAULT_TIMEOUTS: ExecutorTimeouts = {
  statusMs: 120_000,
  versionMs: 30_000,
  stageMs: 60 * 60_000,
  systemctlMs: 30_000,
};

/** Options of {@linkcode HostBootcExecutor}. */
export interface HostBootcExecutorOptions {
  /** The bootc argv (default `["bootc"]`). */
  bootcCommand?: string[];
  /** The systemctl argv (default `["systemctl"]`). */
  systemctlCommand?: string[];
  /** The systemd-bless-boot argv (default {@linkcode DEFAULT_BLESS_BOOT_COMMAND}). */
  blessBootCommand?: string[];
  /** Put before every command (default {@linkcode DEFAULT_HOST_EXEC_PREFIX}; `[]` standalone). */
  hostExecPrefix?: string[];
  /**
   * Run stage and apply commands as transient host units (`systemd-run --wait
   * --collect --pipe`), so a pull survives a pod restart and is not charged to
   * the pod's memory limit. Off by default.
   */
  transientUnits?: boolean;
  /** The systemd-run argv (default `["systemd-run"]`). */
  systemdRunCommand?: string[];
  /** Command time limits. */
  timeouts?: Partial<ExecutorTimeouts>;
  /** Time between SIGTERM and SIGKILL (default 10 s). */
  killGraceMs?: number;
  /** Environment for the commands (default: this process's); `container` is always dropped. */
  env?: Record<string, string>;
}

/** Unit names used when {@linkcode HostBootcExecutorOptions.transientUnits} is on. */
export const TRANSIENT_UNITS = {
  stage: "bootc-operator-stage",
  apply: "bootc-operator-apply",
} as const;

/**
 * How long systemd lets a stopped stage unit's bootc exit before it kills it
 * (`TimeoutStopSec`): shorter than the wait for `systemctl stop` (`systemctlMs`, 30 s
 * by default), so a stop that returns has ended the unit and freed the sysroot lock.
 */
export const STAGE_UNIT_STOP_TIMEOUT_S = 20;

/**
 * Parses `systemctl list-units --plain --no-legend` output: the unit is the first field of
 * each line (a leading `●` marker, printed by some versions even with `--plain`, is dropped).
 */
export function parseUnitList(stdout: string): string[] {
  const out: string[] = [];
  for (const line of stdout.split("\n")) {
    const fields = line.trim().replace(/^[●*]\s*/, "").split(/\s+/);
    if (fields[0]) out.push(fields[0]);
  }
  return out;
}

/** True when `bootc status` failed because it does not know the arguments it was given. */
function statusFormRejected(e: unknown): boolean {
  if (!(e instanceof BootcCommandError) || !e.result || e.result.timedOut) return false;
  const { code, stderr } = e.result;
  return code === 2 || (code === 1 && /format.?version/i.test(stderr));
}

/** Where systemd installs systemd-bless-boot (systemd-bless-boot.service(8)). */
export const DEFAULT_BLESS_BOOT_COMMAND = ["/usr/lib/systemd/systemd-bless-boot"];

/** The exit code of a program that could not be found (nsenter, env, a shell). */
const NOT_FOUND_EXIT = 127;

/** Runs bootc and systemctl in the host. */
export class HostBootcExecutor implements BootcExecutor {
  readonly #bootc: string[];
  readonly #systemctl: string[];
  readonly #blessBoot: string[];
  readonly #prefix: string[];
  readonly #transient: boolean;
  readonly #systemdRun: string[];
  readonly #timeouts: ExecutorTimeouts;
  readonly #grace: number;
  readonly #env: Record<string, string>;
  /** Index into {@linkcode STATUS_ARGS} of the form this host accepted. */
  #statusForm = 0;

  /** Creates the executor. */
  constructor(options: HostBootcExecutorOptions = {}) {
    this.#bootc = options.bootcCommand ?? ["bootc"];
    this.#systemctl = options.systemctlCommand ?? ["systemctl"];
    this.#blessBoot = options.blessBootCommand ?? DEFAULT_BLESS_BOOT_COMMAND;
    this.#prefix = options.hostExecPrefix ?? DEFAULT_HOST_EXEC_PREFIX;
    this.#transient = options.transientUnits ?? false;
    this.#systemdRun = options.systemdRunCommand ?? ["systemd-run"];
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.#grace = options.killGraceMs ?? 10_000;
    this.#env = hostEnvironment(options.env);
    if (this.#bootc.length === 0) throw new Error("empty bootc command");
  }

  /** The argv that runs `bootc <args>` in the host (optionally as a transient unit). */
  bootcArgv(args: string[], unit?: string): string[] {
    if (unit && this.#transient) {
      return [
        ...this.#prefix,
        ...this.#systemdRun,
        "--wait",
        "--collect",
        "--pipe",
        "--quiet",
        `--unit=${unit}`,
        ...(unit === TRANSIENT_UNITS.stage
          ? [`--property=TimeoutStopSec=${STAGE_UNIT_STOP_TIMEOUT_S}`]
          : []),
        "--",
        ...this.#bootc,
        ...args,
      ];
    }
    return [...this.#prefix, ...this.#bootc, ...args];
  }

  async #run(
    argv: string[],
    timeoutMs: number,
    what: string,
    signal?: AbortSignal,
  ): Promise<CommandResult> {
    let result: CommandResult;
    try {
      result = await runCommand(argv, {
        timeoutMs,
        killGraceMs: this.#grace,
        env: this.#env,
        signal,
      });
    } catch (e) {
      throw new BootcCommandError(
        `${what}: cannot run ${argv[0]}: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    // Ended on its own just as it was stopped (or timed out): what it did stands.
    if (result.code === 0 && result.signal === null) return result;
    if (result.timedOut && signal?.aborted) {
      throw new BootcCommandStopped(`${what}: stopped`, result);
    }
    if (result.timedOut) {
      throw new BootcCommandError(
        `${what}: timed out after ${Math.round(timeoutMs / 1000)}s`,
        result,
      );
    }
    if (result.code !== 0) {
      const line = extractErrorLine(result.stderr) ?? `exit code ${result.code}`;
      throw new BootcCommandError(`${what}: ${line}`, result);
    }
    return result;
  }

  /** @inheritdoc */
  async version(): Promise<string> {
    const r = await this.#run(
      this.bootcArgv(["--version"]),
      this.#timeouts.versionMs,
      "bootc --version",
    );
    return r.stdout.trim();
  }

  /** @inheritdoc */
  async status(): Promise<Host> {
    const what = "bootc status";
    let out: CommandResult;
    for (let form = this.#statusForm;; form++) {
      try {
        out = await this.#run(
          this.bootcArgv([...STATUS_ARGS[form]]),
          this.#timeouts.statusMs,
          what,
        );
        // Remembered: an idle daemon's polls run one command, not a failing one first.
        this.#statusForm = form;
        break;
      } catch (e) {
        if (form + 1 >= STATUS_ARGS.length || !statusFormRejected(e)) throw e;
      }
    }
    try {
      return parseHost(out.stdout);
    } catch (e) {
      throw new BootcCommandError(e instanceof Error ? e.message : String(e), out);
    }
  }

  /** @inheritdoc */
  async stage(image: string, method: StageMethod, options: StageOptions = {}): Promise<void> {
    if (method === "switch-download-only") {
      await this.#inStageUnit(
        ["switch", "--download-only", image],
        "bootc switch --download-only",
        options,
      );
      return;
    }
    // 1.12 – 1.16.9: see version.ts. `switch` makes `image` the spec and stages
    // it (unlocked); `upgrade --download-only` then locks that staged spec. Not
    // stoppable (see StageOptions).
    await this.#inStageUnit(["switch", image], "bootc switch", {});
    await this.lockStaged();
  }

  /**
   * `bootc <args>` in the stage unit (a pull or a lock), stoppable by `signal`. Run as a
   * transient unit, killing `systemd-run` need not end the unit: a command stopped or
   * timed out has its unit stopped too, so it cannot hold the sysroot lock behind our
   * back: systemd kills a bootc that does not exit within
   * {@linkcode STAGE_UNIT_STOP_TIMEOUT_S}, within the wait for `systemctl stop` (a failure
   * to run that stop is not reported: the next pull's unit then says so).
   */
  async #inStageUnit(
    args: string[],
    what: string,
    { timeoutMs = this.#timeouts.stageMs, signal }: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<void> {
    try {
      await this.#run(this.bootcArgv(args, TRANSIENT_UNITS.stage), timeoutMs, what, signal);
    } catch (e) {
      if (this.#transient && e instanceof BootcCommandError && e.timedOut) {
        await this.#systemctlQuery(["stop", `${TRANSIENT_UNITS.stage}.service`], "systemctl stop")
          .catch(() => undefined);
      }
      throw e;
    }
  }

  /** @inheritdoc */
  async lockStaged(options: LockOptions = {}): Promise<void> {
    await this.#inStageUnit(["upgrade", "--download-only"], "bootc upgrade --download-only", {
      timeoutMs: Math.min(options.timeoutMs ?? Infinity, this.#timeouts.stageMs),
    });
  }

  /** @inheritdoc */
  apply(options: ApplyOptions): ApplyHandle {
    const args = [options.method, "--from-downloaded", "--apply"];
    if (options.soft) args.push("--soft-reboot=auto");
    return this.#detached(args);
  }

  /** @inheritdoc */
  applyRollback(options: RollbackOptions): ApplyHandle {
    const args = ["rollback", "--apply"];
    if (options.soft) args.push("--soft-reboot=auto");
    return this.#detached(args);
  }

  /** @inheritdoc */
  async unqueueRollback(): Promise<void> {
    await this.#run(this.bootcArgv(["rollback"]), this.#timeouts.stageMs, "bootc rollback");
  }

  /** Starts `bootc <args>` detached (an `--apply`: no timeout, it waits for the reboot). */
  #detached(args: string[]): ApplyHandle {
    const what = `bootc ${args.join(" ")}`;
    const argv = this.bootcArgv(args, TRANSIENT_UNITS.apply);
    let running;
    try {
      // No timeout: the command waits for the reboot to kill it. It runs in its
      // own session, so it outlives a daemon that exits meanwhile.
      running = startCommand(argv, { env: this.#env });
    } catch (e) {
      return {
        exited: Promise.resolve(
          new BootcCommandError(
            `${what}: cannot run ${argv[0]}: ${e instanceof Error ? e.message : String(e)}`,
          ),
        ),
      };
    }
    const exited = running.result.then((r) => {
      if (r.code === 0) return undefined;
      const line = extractErrorLine(r.stderr) ?? `exit code ${r.code}`;
      return new BootcCommandError(`${what}: ${line}`, r);
    });
    return { exited };
  }

  /**
   * Runs `systemctl <args>` in the host and returns its output whatever the exit code
   * (systemctl's query verbs answer through stdout and exit non-zero for most answers).
   */
  async #systemctlQuery(args: string[], what: string): Promise<CommandResult> {
    const argv = [...this.#prefix, ...this.#systemctl, ...args];
    let result: CommandResult;
    try {
      result = await runCommand(argv, {
        timeoutMs: this.#timeouts.systemctlMs,
        killGraceMs: this.#grace,
        env: this.#env,
      });
    } catch (e) {
      throw new BootcCommandError(
        `${what}: cannot run ${argv[0]}: ${e instanceof Error ? e.message : e}`,
      );
    }
    if (result.timedOut) {
      throw new BootcCommandError(
        `${what}: timed out after ${Math.round(this.#timeouts.systemctlMs / 1000)}s`,
        result,
      );
    }
    return result;
  }

  /** @inheritdoc */
  async systemState(): Promise<string> {
    const what = "systemctl is-system-running";
    const r = await this.#systemctlQuery(["is-system-running"], what);
    const state = r.stdout.trim().split("\n").at(-1)?.trim() ?? "";
    if (state === "") {
      throw new BootcCommandError(
        `${what}: ${extractErrorLine(r.stderr) ?? `no answer (exit code ${r.code})`}`,
        r,
      );
    }
    return state;
  }

  /** @inheritdoc */
  async failedUnits(): Promise<string[]> {
    const what = "systemctl list-units --state=failed";
    const r = await this.#systemctlQuery(
      ["list-units", "--state=failed", "--plain", "--no-legend"],
      what,
    );
    if (r.code !== 0) {
      throw new BootcCommandError(
        `${what}: ${extractErrorLine(r.stderr) ?? `exit code ${r.code}`}`,
        r,
      );
    }
    return parseUnitList(r.stdout);
  }

  /** @inheritdoc */
  async unitStates(units: readonly string[]): Promise<string[]> {
    const what = "systemctl is-active";
    // `--`: a unit name is never taken for an option.
    const r = await this.#systemctlQuery(["is-active", "--", ...units], what);
    const states = r.stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "");
    if (states.length !== units.length) {
      throw new BootcCommandError(
        `${what}: expected ${units.length} answers, got ${states.length}` +
          (r.stderr.trim() ? ` (${extractErrorLine(r.stderr)})` : ""),
        r,
      );
    }
    return states;
  }

  /** @inheritdoc */
  async blessStatus(): Promise<string> {
    const what = "systemd-bless-boot status";
    const argv = [...this.#prefix, ...this.#blessBoot, "status"];
    let r: CommandResult;
    try {
      r = await runCommand(argv, {
        timeoutMs: this.#timeouts.systemctlMs,
        killGraceMs: this.#grace,
        env: this.#env,
      });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return "absent";
      throw new BootcCommandError(
        `${what}: cannot run ${argv[0]}: ${e instanceof Error ? e.message : e}`,
      );
    }
    if (r.timedOut) throw new BootcCommandError(`${what}: timed out`, r);
    if (r.code === NOT_FOUND_EXIT) return "absent";
    const answer = r.stdout.trim().split("\n").at(-1)?.trim() ?? "";
    if (r.code !== 0 || answer === "") {
      throw new BootcCommandError(
        `${what}: ${extractErrorLine(r.stderr) ?? `no answer (exit code ${r.code})`}`,
        r,
      );
    }
    return answer;
  }

  /** @inheritdoc */
  async maskAutoUpdates(): Promise<void> {
    await this.#run(
      [...this.#prefix, ...this.#systemctl, "mask", "--runtime", "--now", AUTO_UPDATE_TIMER],
      this.#timeouts.systemctlMs,
      `systemctl mask ${AUTO_UPDATE_TIMER}`,
    );
  }

  /** @inheritdoc */
  async autoUpdatesMasked(): Promise<boolean> {
    const argv = [...this.#prefix, ...this.#systemctl, "is-enabled", AUTO_UPDATE_TIMER];
    // is-enabled exits non-zero for masked and disabled units: read its answer, not its code.
    let result: CommandResult;
    try {
      result = await runCommand(argv, {
        timeoutMs: this.#timeouts.systemctlMs,
        killGraceMs: this.#grace,
        env: this.#env,
      });
    } catch (e) {
      throw new BootcCommandError(
        `systemctl is-enabled: cannot run ${argv[0]}: ${e instanceof Error ? e.message : e}`,
      );
    }
    if (result.timedOut) throw new BootcCommandError("systemctl is-enabled: timed out", result);
    return /^masked/.test(result.stdout.trim());
  }
}
