/**
 * Parses a `bootc` command line the way bootc's clap definitions do, including which options the
 * simulated bootc version knows, and formats clap's usage errors (exit code 2).
 *
 * @module
 */

import { capabilitiesOf } from "./model.ts";

/** `--soft-reboot` values. */
export type SoftRebootMode = "auto" | "required";

/** A parsed bootc invocation. */
export type BootcCommand =
  | { kind: "version" }
  | { kind: "help"; text: string }
  | {
    kind: "status";
    format: "json" | "yaml" | "humanreadable" | null;
    json: boolean;
    formatVersion: number | null;
    booted: boolean;
    verbose: boolean;
  }
  | {
    kind: "switch";
    target: string | null;
    transport: string;
    apply: boolean;
    softReboot: SoftRebootMode | null;
    downloadOnly: boolean;
    fromDownloaded: boolean;
    quiet: boolean;
    retain: boolean;
  }
  | {
    kind: "upgrade";
    apply: boolean;
    check: boolean;
    softReboot: SoftRebootMode | null;
    downloadOnly: boolean;
    fromDownloaded: boolean;
    quiet: boolean;
  }
  | { kind: "rollback"; apply: boolean; softReboot: SoftRebootMode | null };

/** A parse result: a command, or clap's usage error text (to print on stderr, exit 2). */
export type ParseResult = { ok: true; command: BootcCommand } | { ok: false; usageError: string };

interface OptSpec {
  long: string;
  short?: string;
  /** Value name for a value-taking option (clap prints `--long <NAME>`). */
  valueName?: string;
  /** Allowed values (clap's ValueEnum). */
  values?: string[];
  /** Validates a value; returns a clap error suffix when invalid. */
  check?: (value: string) => string | null;
  /** Conflicting option names (long form). */
  conflicts?: string[];
}

interface SubcommandSpec {
  name: string;
  usage: string;
  opts: OptSpec[];
  /** Name of the positional argument (clap prints `<NAME>`), if any. */
  positional?: { name: string; required: boolean; conflicts?: string[] };
}

const SOFT_REBOOT: OptSpec = {
  long: "soft-reboot",
  valueName: "SOFT_REBOOT",
  values: ["required", "auto"],
};

function u32(value: string): string | null {
  if (!/^\d+$/.test(value)) {
    return value === ""
      ? "cannot parse integer from empty string"
      : "invalid digit found in string";
  }
  return Number(value) > 4294967295 ? "number too large to fit in target type" : null;
}

function subcommands(version: string): SubcommandSpec[] {
  const caps = capabilitiesOf(version);
  const switchOpts: OptSpec[] = [
    { long: "quiet" },
    { long: "apply" },
    SOFT_REBOOT,
    { long: "transport", valueName: "TRANSPORT" },
    { long: "no-signature-verification" },
    { long: "enforce-container-sigpolicy" },
    { long: "mutate-in-place" },
    { long: "retain" },
  ];
  if (caps.switchDownloadOnly) {
    switchOpts.push(
      { long: "download-only", conflicts: ["apply"] },
      { long: "from-downloaded", conflicts: ["download-only"] },
    );
  }
  const upgradeOpts: OptSpec[] = [
    { long: "quiet" },
    { long: "check", conflicts: ["apply"] },
    { long: "apply", conflicts: ["check"] },
    { ...SOFT_REBOOT, conflicts: ["check"] },
  ];
  if (caps.upgradeDownloadOnly) {
    upgradeOpts.push(
      { long: "download-only", conflicts: ["check", "apply"] },
      { long: "from-downloaded", conflicts: ["check", "download-only"] },
    );
  }
  return [
    {
      name: "status",
      usage: "bootc status [OPTIONS]",
      opts: [
        { long: "json" },
        { long: "format", valueName: "FORMAT", values: ["humanreadable", "yaml", "json"] },
        { long: "format-version", valueName: "FORMAT_VERSION", check: u32 },
        { long: "booted" },
        { long: "verbose", short: "v" },
      ],
    },
    {
      name: "switch",
      usage: caps.switchDownloadOnly
        ? "bootc switch [OPTIONS] [TARGET]"
        : "bootc switch [OPTIONS] <TARGET>",
      opts: switchOpts,
      positional: caps.switchDownloadOnly
        ? { name: "TARGET", required: false, conflicts: ["from-downloaded"] }
        : { name: "TARGET", required: true },
    },
    { name: "upgrade", usage: "bootc upgrade [OPTIONS]", opts: upgradeOpts },
    { name: "update", usage: "bootc upgrade [OPTIONS]", opts: upgradeOpts },
    { name: "rollback", usage: "bootc rollback [OPTIONS]", opts: [{ long: "apply" }, SOFT_REBOOT] },
  ];
}

const MORE = "For more information, try '--help'.\n";

function unexpected(arg: string, usage: string, hasPositional: boolean): string {
  const tip = hasPositional && arg.startsWith("-")
    ? `  tip: to pass '${arg}' as a value, use '-- ${arg}'\n\n`
    : "";
  return `error: unexpected argument '${arg}' found\n\n${tip}Usage: ${usage}\n\n${MORE}`;
}

function optDisplay(o: OptSpec): string {
  return o.valueName ? `--${o.long} <${o.valueName}>` : `--${o.long}`;
}

function mainHelp(version: string): string {
  return [
    `Deploy and transactionally in-place with bootable container images (simulated bootc ${version}).`,
    "",
    "Usage: bootc <COMMAND>",
    "",
    "Commands:",
    "  upgrade   Download and queue an updated container image to apply",
    "  switch    Target a new container image reference to boot",
    "  rollback  Change the bootloader entry ordering; the deployment under `rollback` will be queued for the next boot, and the current will become rollback",
    "  status    Display status",
    "",
    "Options:",
    "  -h, --help     Print help",
    "  -V, --version  Print version",
    "",
  ].join("\n");
}

/** Parses bootc's argv (without the program name) as the given bootc version would. */
export function parseBootcArgs(argv: string[], version: string): ParseResult {
  const [sub, ...rest] = argv;
  if (sub === undefined) {
    return { ok: false, usageError: mainHelp(version) };
  }
  if (sub === "--version" || sub === "-V") return { ok: true, command: { kind: "version" } };
  if (sub === "--help" || sub === "-h" || sub === "help") {
    return { ok: true, command: { kind: "help", text: mainHelp(version) } };
  }
  if (sub.startsWith("-")) {
    return { ok: false, usageError: unexpected(sub, "bootc <COMMAND>", false) };
  }
  const spec = subcommands(version).find((s) => s.name === sub);
  if (!spec) {
    return {
      ok: false,
      usageError: `error: unrecognized subcommand '${sub}'\n\nUsage: bootc <COMMAND>\n\n${MORE}`,
    };
  }
  const values = new Map<string, string | true>();
  const positionals: string[] = [];
  let onlyPositionals = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (onlyPositionals || !arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      if (!spec.positional || positionals.length > 1) {
        return { ok: false, usageError: unexpected(arg, spec.usage, false) };
      }
      continue;
    }
    if (arg === "--") {
      onlyPositionals = true;
      continue;
    }
    if (arg === "--help" || arg === "-h") {
      const lines = spec.opts.map((o) => `      ${optDisplay(o)}`);
      return {
        ok: true,
        command: { kind: "help", text: `Usage: ${spec.usage}\n\nOptions:\n${lines.join("\n")}\n` },
      };
    }
    let name: string;
    let inline: string | undefined;
    let opt: OptSpec | undefined;
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      inline = eq === -1 ? undefined : arg.slice(eq + 1);
      opt = spec.opts.find((o) => o.long === name);
    } else {
      name = arg.slice(1, 2);
      inline = arg.length > 2 ? arg.slice(2) : undefined;
      opt = spec.opts.find((o) => o.short === name);
    }
    if (!opt) {
      const shown = arg.startsWith("--") ? arg.split("=")[0] : arg;
      return {
        ok: false,
        usageError: unexpected(shown, spec.usage, spec.positional !== undefined),
      };
    }
    if (!opt.valueName) {
      if (inline !== undefined) {
        return {
          ok: false,
          usageError:
            `error: unexpected value '${inline}' for '--${opt.long}' found; no more were expected\n\nUsage: ${spec.usage}\n\n${MORE}`,
        };
      }
      if (values.has(opt.long)) {
        return {
          ok: false,
          usageError:
            `error: the argument '--${opt.long}' cannot be used multiple times\n\nUsage: ${spec.usage}\n\n${MORE}`,
        };
      }
      values.set(opt.long, true);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      value = rest[i + 1];
      if (value === undefined || value.startsWith("--")) {
        const possible = opt.values ? `  [possible values: ${opt.values.join(", ")}]\n` : "";
        return {
          ok: false,
          usageError: `error: a value is required for '${
            optDisplay(opt)
          }' but none was supplied\n${possible}\n${MORE}`,
        };
      }
      i++;
    }
    if (opt.values && !opt.values.includes(value)) {
      return {
        ok: false,
        usageError: `error: invalid value '${value}' for '${
          optDisplay(opt)
        }'\n  [possible values: ${opt.values.join(", ")}]\n\n${MORE}`,
      };
    }
    const bad = opt.check?.(value);
    if (bad) {
      return {
        ok: false,
        usageError: `error: invalid value '${value}' for '${optDisplay(opt)}': ${bad}\n\n${MORE}`,
      };
    }
    values.set(opt.long, value);
  }
  // clap checks conflicts before missing required arguments.
  for (const opt of spec.opts) {
    if (!values.has(opt.long)) continue;
    for (const other of opt.conflicts ?? []) {
      if (values.has(other)) {
        const otherSpec = spec.opts.find((o) => o.long === other)!;
        return {
          ok: false,
          usageError: `error: the argument '${optDisplay(opt)}' cannot be used with '${
            optDisplay(otherSpec)
          }'\n\nUsage: ${spec.usage}\n\n${MORE}`,
        };
      }
    }
  }
  if (spec.positional && positionals.length > 0) {
    for (const other of spec.positional.conflicts ?? []) {
      if (values.has(other)) {
        return {
          ok: false,
          usageError:
            `error: the argument '--${other}' cannot be used with '[${spec.positional.name}]'\n\nUsage: ${spec.usage}\n\n${MORE}`,
        };
      }
    }
  }
  const flag = (n: string) => values.get(n) === true;
  const str = (n: string) => {
    const v = values.get(n);
    return typeof v === "string" ? v : null;
  };
  switch (spec.name) {
    case "status":
      return {
        ok: true,
        command: {
          kind: "status",
          format: str("format") as "json" | "yaml" | "humanreadable" | null,
          json: flag("json"),
          formatVersion: str("format-version") === null ? null : Number(str("format-version")),
          booted: flag("booted"),
          verbose: flag("verbose"),
        },
      };
    case "switch": {
      const target = positionals[0] ?? null;
      if (target === null && !flag("from-downloaded")) {
        return {
          ok: false,
          usageError:
            `error: the following required arguments were not provided:\n  <TARGET>\n\nUsage: bootc switch <TARGET>\n\n${MORE}`,
        };
      }
      return {
        ok: true,
        command: {
          kind: "switch",
          target,
          transport: str("transport") ?? "registry",
          apply: flag("apply"),
          softReboot: str("soft-reboot") as SoftRebootMode | null,
          downloadOnly: flag("download-only"),
          fromDownloaded: flag("from-downloaded"),
          quiet: flag("quiet"),
          retain: flag("retain"),
        },
      };
    }
    case "upgrade":
    case "update":
      return {
        ok: true,
        command: {
          kind: "upgrade",
          apply: flag("apply"),
          check: flag("check"),
          softReboot: str("soft-reboot") as SoftRebootMode | null,
          downloadOnly: flag("download-only"),
          fromDownloaded: flag("from-downloaded"),
          quiet: flag("quiet"),
        },
      };
    default:
      return {
        ok: true,
        command: {
          kind: "rollback",
          apply: flag("apply"),
          softReboot: str("soft-reboot") as SoftRebootMode | null,
        },
      };
  }
}
