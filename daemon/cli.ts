/**
 * Command-line parsing of the daemon (pure; `main.ts` runs the result).
 *
 * @module
 */
import type { DesiredImageState, RebootPolicy } from "../lib/api/schema.ts";
import { splitCommand } from "../lib/bootc/command.ts";
import {
  LogFlagError,
  type LogFormat,
  type LogLevel,
  parseLogFormat,
  parseLogLevel,
} from "../lib/log.ts";
import { wantsVersion } from "../lib/version.ts";

/**
 * Host access settings shared by `run` and `status`. The host root and the
 * exec prefix are detected at start-up (lib/bootc/host_namespace.ts) unless
 * given: undefined here means "detect".
 */
export interface HostSettings {
  /** The host's root as seen by the daemon; undefined: detected. */
  hostRoot?: string;
  /** The bootc argv. */
  bootcCommand: string[];
  /** Put before every host command; undefined: detected (nsenter only outside the host's namespace). */
  hostExecPrefix?: string[];
  /** The process whose mount namespace is the host's (default 1). */
  hostPid: number;
  /** The systemctl argv. */
  systemctlCommand: string[];
  /** The systemd-bless-boot argv (read only when the pool requires boot assessment). */
  blessBootCommand: string[];
  /** Run pulls and applies as transient host units. */
  transientUnits: boolean;
  /** `bootc status` time limit. */
  statusTimeoutMs: number;
  /** Pull/stage time limit. */
  stageTimeoutMs: number;
}

/** Parsed `daemon run`. */
export interface RunCommand extends HostSettings {
  command: "run";
  nodeName: string;
  kubeconfig?: string;
  context?: string;
  pollIntervalMs: number;
  statusBusyGraceMs: number;
  /** Host health check interval during the first 15 minutes. */
  healthIntervalMs: number;
  /** Host health check interval afterwards. */
  healthIntervalSettledMs: number;
  /** `--log-level`; undefined: the logger's default. */
  logLevel?: LogLevel;
  /** `--log-format`; undefined: the logger's default (json). */
  logFormat?: LogFormat;
}

/** Parsed `daemon status`. */
export interface StatusCommand extends HostSettings {
  command: "status";
  /** With a kubeconfig (or in a pod) and a node name, the spec and status come from the API. */
  kubeconfig?: string;
  context?: string;
  nodeName?: string;
  desiredImage?: string;
  desiredImageState: DesiredImageState;
  rebootPolicy: RebootPolicy;
  logLevel?: LogLevel;
  logFormat?: LogFormat;
}

/** Parsed `daemon help`. */
export interface HelpCommand {
  command: "help";
}

/** Parsed `daemon version` (or `--version` anywhere). */
export interface VersionCommand {
  command: "version";
}

/** Any parsed command. */
export type Command = RunCommand | StatusCommand | HelpCommand | VersionCommand;

/** A command-line error (exit code 2). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Usage text. */
export const USAGE = `Usage: daemon <run|status|version|help> [flags]

  run      watch this node's BootcNode and drive bootc (in a pod or standalone)
  status   print, as JSON, the BootcNode status the daemon would write now
  version  print the version and commit and exit (also --version)

Host flags (run, status). Where the host is, is detected: in the host's mount namespace
(standalone) commands run directly and the host root is "/"; in another one (a hostPID pod)
commands enter PID 1's namespace with "nsenter --mount=/proc/1/ns/mnt --" and the host root is
/proc/1/root. The flags override what is detected:
  --host-root DIR            host root as seen by the daemon (env HOST_ROOT)
  --host-exec-prefix CMD     prefix of every host command, "" for none (env HOST_EXEC_PREFIX)
  --host-pid PID             the process whose mount namespace is the host's (env HOST_PID; default 1)
  --bootc-command CMD        bootc command, split on whitespace (env BOOTC_COMMAND; default "bootc")
  --systemctl-command CMD    systemctl command (env SYSTEMCTL_COMMAND; default "systemctl")
  --bless-boot-command CMD   systemd-bless-boot command (env BLESS_BOOT_COMMAND;
                             default "/usr/lib/systemd/systemd-bless-boot")
  --transient-units          run pulls and applies as transient host units (systemd-run --wait --collect --pipe)
  --status-timeout DUR       bootc status time limit (default 2m)
  --stage-timeout DUR        pull/stage time limit (default 60m)
  --log-level LEVEL          debug, info, warn, error (env LOG_LEVEL; default info)
  --log-format FORMAT        json or text, the log lines on stderr (env LOG_FORMAT; default json)

run:
  --node-name NAME           this node (env NODE_NAME, from the downward API)
  --kubeconfig FILE          kubeconfig (env KUBECONFIG; default in-cluster, then ~/.kube/config)
  --context NAME             kubeconfig context
  --poll-interval DUR        fallback poll of bootc status (env POLL_INTERVAL; default 5m)
  --status-busy-grace DUR    how long a blocked bootc status is tolerated before Degraded (default 10m)
  --health-interval DUR      host health check interval for the first 15 minutes (default 15s)
  --health-interval-settled DUR
                             host health check interval afterwards (default 60s)

status:
  --node-name NAME (env NODE_NAME), --kubeconfig FILE, --context NAME
                             read the spec and last status of this node's BootcNode (and, when
                             Booted is asked for, the Node's reboot slot) from the API
  --desired-image REF        otherwise: the desiredImage to evaluate against
  --desired-image-state S    Staged (default) or Booted (offline there is no Node holding a
                             reboot slot: Booted shows the image kept staged, RebootAllowed False)
  --reboot-policy P          RebootOnly (default) or AllowSoftReboot

Durations: 500ms, 30s, 5m, 1h, or a number of seconds.`;

/** Parses `500ms`, `30s`, `5m`, `1h` or plain seconds into milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new UsageError(`${flag}: invalid duration ${JSON.stringify(text)}`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"]!;
  return Math.round(n * unit);
}

function positive(ms: number, flag: string): number {
  if (ms <= 0) throw new UsageError(`${flag}: must be more than 0`);
  return ms;
}

const BOOLEAN_FLAGS = new Set(["transient-units"]);
const VALUE_FLAGS = new Set([
  "host-root",
  "bootc-command",
  "host-exec-prefix",
  "host-pid",
  "systemctl-command",
  "bless-boot-command",
  "status-timeout",
  "stage-timeout",
  "log-level",
  "log-format",
  "node-name",
  "kubeconfig",
  "context",
  "poll-interval",
  "status-busy-grace",
  "health-interval",
  "health-interval-settled",
  "desired-image",
  "desired-image-state",
  "reboot-policy",
]);
const RUN_ONLY = new Set([
  "poll-interval",
  "status-busy-grace",
  "health-interval",
  "health-interval-settled",
]);
const STATUS_ONLY = new Set(["desired-image", "desired-image-state", "reboot-policy"]);

function parseFlags(args: string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith("--")) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq >= 0 ? eq : undefined);
    if (BOOLEAN_FLAGS.has(name)) {
      const value = eq >= 0 ? arg.slice(eq + 1) : "true";
      if (value !== "true" && value !== "false") {
        throw new UsageError(`--${name}: expected true or false`);
      }
      flags.set(name, value);
      continue;
    }
    if (!VALUE_FLAGS.has(name)) throw new UsageError(`unknown flag --${name}`);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      if (i + 1 >= args.length) throw new UsageError(`--${name} needs a value`);
      value = args[++i];
    }
    flags.set(name, value);
  }
  return flags;
}

/** `--log-level` and `--log-format` (or their environment fallbacks) through lib/log.ts. */
function logFlags(
  level: string | undefined,
  format: string | undefined,
): { logLevel?: LogLevel; logFormat?: LogFormat } {
  try {
    return {
      logLevel: level === undefined ? undefined : parseLogLevel(level),
      logFormat: format === undefined ? undefined : parseLogFormat(format),
    };
  } catch (e) {
    if (e instanceof LogFlagError) throw new UsageError(e.message);
    throw e;
  }
}

/** Parses the daemon's arguments; `env` supplies the documented environment fallbacks. */
export function parseCommandLine(
  args: string[],
  env: (name: string) => string | undefined = () => undefined,
): Command {
  if (wantsVersion(args)) return { command: "version" };
  const [command, ...rest] = args;
  if (command === "version") return { command: "version" };
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    return { command: "help" };
  }
  if (command !== "run" && command !== "status") {
    throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
  const flags = parseFlags(rest);
  for (const name of flags.keys()) {
    if (command === "status" && RUN_ONLY.has(name)) {
      throw new UsageError(`--${name} applies to run only`);
    }
    if (command === "run" && STATUS_ONLY.has(name)) {
      throw new UsageError(`--${name} applies to status only`);
    }
  }
  const get = (flag: string, envName?: string) =>
    flags.get(flag) ?? (envName ? env(envName) : undefined);
  const bootcCommand = splitCommand(get("bootc-command", "BOOTC_COMMAND") ?? "bootc");
  if (bootcCommand.length === 0) throw new UsageError("--bootc-command must not be empty");
  const systemctlCommand = splitCommand(
    get("systemctl-command", "SYSTEMCTL_COMMAND") ?? "systemctl",
  );
  if (systemctlCommand.length === 0) throw new UsageError("--systemctl-command must not be empty");
  const blessBootCommand = splitCommand(
    get("bless-boot-command", "BLESS_BOOT_COMMAND") ?? "/usr/lib/systemd/systemd-bless-boot",
  );
  if (blessBootCommand.length === 0) {
    throw new UsageError("--bless-boot-command must not be empty");
  }
  const hostRoot = get("host-root", "HOST_ROOT");
  if (hostRoot === "") throw new UsageError("--host-root must not be empty");
  const prefix = get("host-exec-prefix", "HOST_EXEC_PREFIX");
  const pidText = get("host-pid", "HOST_PID") ?? "1";
  if (!/^[1-9]\d*$/.test(pidText)) {
    throw new UsageError(`--host-pid: expected a process id, got ${JSON.stringify(pidText)}`);
  }
  const host: HostSettings = {
    hostRoot,
    bootcCommand,
    hostExecPrefix: prefix === undefined ? undefined : splitCommand(prefix),
    hostPid: Number(pidText),
    systemctlCommand,
    blessBootCommand,
    transientUnits: (get("transient-units", "TRANSIENT_UNITS") ?? "false") === "true",
    statusTimeoutMs: parseDuration(get("status-timeout") ?? "2m", "--status-timeout"),
    stageTimeoutMs: parseDuration(get("stage-timeout") ?? "60m", "--stage-timeout"),
  };
  const { logLevel, logFormat } = logFlags(
    get("log-level", "LOG_LEVEL"),
    get("log-format", "LOG_FORMAT"),
  );
  const nodeName = get("node-name", "NODE_NAME");
  if (command === "run") {
    if (!nodeName) throw new UsageError("run needs --node-name (or NODE_NAME)");
    return {
      command,
      ...host,
      nodeName,
      kubeconfig: flags.get("kubeconfig"),
      context: flags.get("context"),
      pollIntervalMs: parseDuration(
        get("poll-interval", "POLL_INTERVAL") ?? "5m",
        "--poll-interval",
      ),
      statusBusyGraceMs: parseDuration(get("status-busy-grace") ?? "10m", "--status-busy-grace"),
      healthIntervalMs: positive(
        parseDuration(get("health-interval") ?? "15s", "--health-interval"),
        "--health-interval",
      ),
      healthIntervalSettledMs: positive(
        parseDuration(get("health-interval-settled") ?? "60s", "--health-interval-settled"),
        "--health-interval-settled",
      ),
      logLevel,
      logFormat,
    };
  }
  const state = flags.get("desired-image-state") ?? "Staged";
  if (state !== "Staged" && state !== "Booted") {
    throw new UsageError("--desired-image-state: expected Staged or Booted");
  }
  const policy = flags.get("reboot-policy") ?? "RebootOnly";
  if (policy !== "RebootOnly" && policy !== "AllowSoftReboot") {
    throw new UsageError("--reboot-policy: expected RebootOnly or AllowSoftReboot");
  }
  const kubeconfig = flags.get("kubeconfig");
  if (kubeconfig && !nodeName) throw new UsageError("--kubeconfig needs --node-name");
  if (kubeconfig && flags.has("desired-image")) {
    throw new UsageError("--desired-image and --kubeconfig exclude each other");
  }
  const desiredImage = flags.get("desired-image");
  return {
    command,
    ...host,
    kubeconfig,
    context: flags.get("context"),
    // An explicit --desired-image means "evaluate offline", even in a pod with NODE_NAME.
    nodeName: desiredImage === undefined ? nodeName : undefined,
    desiredImage,
    desiredImageState: state,
    rebootPolicy: policy,
    logLevel,
    logFormat,
  };
}
