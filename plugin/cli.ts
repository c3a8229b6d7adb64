/**
 * Command-line parsing of `kubectl bootc` (pure; `main.ts` runs the result).
 * Flags follow kubectl: `--kubeconfig`, `--context`, `-n/--namespace`, each as
 * `--flag value` or `--flag=value`, anywhere on the line.
 *
 * @module
 */

/** Connection and output flags every command takes. */
export interface GlobalFlags {
  /** `--kubeconfig`: this file only (KUBECONFIG is then ignored, as in kubectl). */
  kubeconfig?: string;
  /** `--context`: the kubeconfig context. */
  context?: string;
  /**
   * `-n/--namespace`: the operator's namespace for `version` (where the controller
   * Deployment is). Elsewhere accepted for kubectl compatibility: the operator's objects
   * are cluster-scoped and their events live in "default", so it changes nothing.
   */
  namespace?: string;
  /** `--no-color`. */
  noColor: boolean;
}

/** A parsed command line. */
export type Command =
  | { command: "help" }
  | {
    command: "status";
    pool?: string;
    watch: boolean;
    intervalMs: number;
    strict: boolean;
    output: "text" | "json";
    /** `--timeout`: follow until every pool is done or unhealthy, at most this long. */
    timeoutMs?: number;
  }
  | { command: "why"; node: string }
  | { command: "pause" | "resume" | "history" | "abort" | "retry"; pool: string }
  | { command: "rollback"; pool: string; toRevision?: number }
  | { command: "approve"; pool: string; revision?: number }
  | { command: "version"; output: "text" | "json" };

/** A command-line error (exit code 2). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Default `--interval` of `status --watch`. */
export const DEFAULT_INTERVAL_MS = 2_000;

/** Usage text. */
export const USAGE = `kubectl bootc: watch and steer bootc OS image rollouts.

Usage:
  kubectl bootc status [POOL] [--watch] [--timeout DUR] [--interval DUR] [--strict] [-o text|json]
      Per pool: a headline coloured by health, what is wrong or what it waits for, the
      stable and new images, canary step, a progress bar, slots, time left, and a tree
      of its nodes (state, version, slot or queue place, what each waits for).
      --watch (-w) redraws on a terminal and prints a line per change otherwise.
      --timeout DUR follows like --watch until every pool is done (exit 0) or one is
      unhealthy (exit 1); still progressing when DUR runs out: exit 4.
      -o json prints the same per pool and node as JSON (not with --watch or --timeout).
      Exit code: 0 healthy or progressing, 1 a pool is degraded, halted, rolled back or
      its circuit is open; with --strict, 4 while a pool is still progressing.
  kubectl bootc why NODE
      Where the node stands and what it waits for: phase, images, its Node's disruption
      record, conditions, the pool's gate, its place in the slot queue, the latest events.
  kubectl bootc pause POOL | resume POOL
      Sets spec.rollout.paused (no new reboot slots while paused; staging goes on).
  kubectl bootc abort POOL
      Stops the rollout: pins spec.image.ref to the last good image (the newest revision
      that succeeded, or the image an automatic rollback went back to).
  kubectl bootc retry POOL
      Rolls a failed image out again (the controller forgets its failure) and closes an
      open circuit breaker.
  kubectl bootc approve POOL [--revision N]
      Approves the pool's current rollout revision (spec.rollout.approval): sets
      bootc.dev/approve-revision=N, so its nodes may take reboot slots. Refused when N is
      not the current revision.
  kubectl bootc rollback POOL [--to-revision N]
      Pins spec.image.ref to revision N's image (default: the newest revision that
      succeeded before the current target), from status.history.
  kubectl bootc history POOL
      The pool's revisions (outcome, start, end, digest), failed digests and circuit breaker.
  kubectl bootc version [-o text|json]
      The plugin's version and commit, and the controller's version (the bootc.dev/version
      annotation of the bootc-operator-controller Deployment in -n, default bootc-operator).

Flags:
  --kubeconfig FILE   kubeconfig file (default: KUBECONFIG, a colon list, then ~/.kube/config)
  --context NAME      kubeconfig context
  -n, --namespace NS  the operator's namespace for version (default bootc-operator); the
                      other commands accept it for kubectl compatibility (cluster-scoped)
  --no-color          no colours (also when NO_COLOR is set or stdout is not a terminal)
  -h, --help          this text

Exit codes: 0 done; 1 a pool is unhealthy (status) or the command was refused; 2 a usage
error, or the pool or node does not exist; 3 the API server or kubeconfig failed;
4 a pool still progressing (status --strict).

Durations: 500ms, 2s, 1m, or a number of seconds.`;

/** Parses `500ms`, `2s`, `1m`, `1h` or plain seconds into milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new UsageError(`${flag}: invalid duration ${JSON.stringify(text)}`);
  return Math.round(Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"]!);
}

const VALUE_FLAGS: Record<string, string> = {
  "--kubeconfig": "kubeconfig",
  "--context": "context",
  "--namespace": "namespace",
  "-n": "namespace",
  "--interval": "interval",
  "--timeout": "timeout",
  "--to-revision": "to-revision",
  "--revision": "revision",
  "--output": "output",
  "-o": "output",
};
const BOOLEAN_FLAGS: Record<string, string> = {
  "--watch": "watch",
  "-w": "watch",
  "--strict": "strict",
  "--no-color": "no-color",
  "--help": "help",
  "-h": "help",
};

/** Parses argv (without the program name). */
export function parseCommandLine(
  argv: readonly string[],
): { flags: GlobalFlags; command: Command } {
  const values = new Map<string, string>();
  const switches = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (name in VALUE_FLAGS) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || value === "") throw new UsageError(`${name} needs a value`);
      values.set(VALUE_FLAGS[name], value);
    } else if (name in BOOLEAN_FLAGS && eq < 0) {
      switches.add(BOOLEAN_FLAGS[name]);
    } else if (/^-n[^=]/.test(arg)) {
      values.set("namespace", arg.slice(2)); // -nNAMESPACE, as kubectl accepts
    } else if (/^-o[^=]/.test(arg)) {
      values.set("output", arg.slice(2)); // -ojson, as kubectl accepts
    } else {
      throw new UsageError(`unknown flag ${name}`);
    }
  }
  const flags: GlobalFlags = {
    kubeconfig: values.get("kubeconfig"),
    context: values.get("context"),
    namespace: values.get("namespace"),
    noColor: switches.has("no-color"),
  };
  const [verb, ...rest] = positional;
  if (switches.has("help") || verb === undefined || verb === "help") {
    return { flags, command: { command: "help" } };
  }
  const only = (allowed: string[]) => {
    for (const key of [...values.keys(), ...switches]) {
      if (["kubeconfig", "context", "namespace", "no-color"].includes(key)) continue;
      if (!allowed.includes(key)) throw new UsageError(`${verb} does not take --${key}`);
    }
  };
  const one = (what: string): string => {
    if (rest.length !== 1) {
      throw new UsageError(
        `${verb} takes exactly one ${what}, e.g. kubectl bootc ${verb} ${
          what === "NODE" ? "worker-1" : "workers"
        }`,
      );
    }
    return rest[0];
  };
  switch (verb) {
    case "status": {
      only(["watch", "interval", "strict", "output", "timeout"]);
      if (rest.length > 1) throw new UsageError("status takes at most one POOL");
      const output = outputFormat(values.get("output"));
      for (const follow of ["watch", "timeout"]) {
        if (output === "json" && (switches.has(follow) || values.has(follow))) {
          throw new UsageError(`status -o json prints once: it does not take --${follow}`);
        }
      }
      const timeout = values.get("timeout");
      const timeoutMs = timeout === undefined ? undefined : parseDuration(timeout, "--timeout");
      if (timeoutMs !== undefined && timeoutMs <= 0) {
        throw new UsageError("--timeout must be more than 0s");
      }
      const interval = values.get("interval");
      const intervalMs = interval === undefined
        ? DEFAULT_INTERVAL_MS
        : parseDuration(interval, "--interval");
      if (intervalMs < 200) throw new UsageError("--interval must be at least 200ms");
      return {
        flags,
        command: {
          command: "status",
          pool: rest[0],
          watch: switches.has("watch"),
          intervalMs,
          strict: switches.has("strict"),
          output,
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        },
      };
    }
    case "why":
      only([]);
      return { flags, command: { command: "why", node: one("NODE") } };
    case "pause":
    case "resume":
    case "history":
    case "abort":
    case "retry":
      only([]);
      return { flags, command: { command: verb, pool: one("POOL") } };
    case "approve": {
      only(["revision"]);
      const raw = values.get("revision");
      if (raw !== undefined && !/^\d+$/.test(raw)) {
        throw new UsageError(`--revision: not a revision number: ${raw}`);
      }
      return {
        flags,
        command: {
          command: "approve",
          pool: one("POOL"),
          revision: raw === undefined ? undefined : Number(raw),
        },
      };
    }
    case "rollback": {
      only(["to-revision"]);
      const raw = values.get("to-revision");
      if (raw !== undefined && !/^\d+$/.test(raw)) {
        throw new UsageError(`--to-revision: not a revision number: ${raw}`);
      }
      return {
        flags,
        command: {
          command: "rollback",
          pool: one("POOL"),
          toRevision: raw === undefined ? undefined : Number(raw),
        },
      };
    }
    case "version": {
      only(["output"]);
      if (rest.length > 0) throw new UsageError("version takes no arguments");
      return { flags, command: { command: "version", output: outputFormat(values.get("output")) } };
    }
    default:
      throw new UsageError(`unknown command ${verb}; see kubectl bootc --help`);
  }
}

/** `--output`'s value: text (the default) or json. */
function outputFormat(value: string | undefined): "text" | "json" {
  const output = value ?? "text";
  if (output !== "text" && output !== "json") {
    throw new UsageError(`--output: expected text or json, not ${JSON.stringify(output)}`);
  }
  return output;
}
