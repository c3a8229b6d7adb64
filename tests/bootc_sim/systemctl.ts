/**
 * A tiny `systemctl` for the simulated host: unit enablement, activity and (runtime) masks, enough
 * for the daemon to find and neutralise `bootc-fetch-apply-updates.timer`; and the host's health
 * as systemd reports it (`is-system-running`, `is-active`, `is-failed`, `list-units`, `show`), so
 * a bad image's failed unit (see `bad_boot.ts`) is visible the way it is on a real host.
 *
 * Output formats and exit codes are systemd's (systemctl(1)): `is-system-running` exits 0 only
 * for `running`; `is-active` exits 0 when a unit is active, else 3; `is-failed` exits 0 when a
 * unit has failed, else 1.
 *
 * @module
 */

/** One unit's state. */
export interface UnitState {
  /** Enabled (`systemctl enable`): started at boot. */
  enabled: boolean;
  /** Currently active (running / timer armed). */
  active: boolean;
  /** Masked under `/etc` (persistent). */
  masked: boolean;
  /** Masked under `/run` (`mask --runtime`): gone after a full reboot, kept by a soft reboot. */
  runtimeMasked: boolean;
  /** The unit failed (ActiveState `failed`) since it was last started; any reboot clears it. */
  failed?: boolean;
  /** A boot check `boot-complete.target` requires: while it has failed the target is not reached. */
  bootCheck?: boolean;
  /** The unit's `Description=`. */
  description?: string;
  /**
   * The unit ships only in a bad image (`unit-fails` with the default unit): it disappears when
   * a deployment without it boots.
   */
  fromBadImage?: boolean;
}

/** All known units. */
export type UnitsState = Record<string, UnitState>;

/** The timer Fedora-based bootc images enable: it runs `bootc upgrade --apply`. */
export const AUTO_UPDATE_TIMER = "bootc-fetch-apply-updates.timer";

/** A unit every bootc base image enables, for health checks that list units. */
export const SSHD_UNIT = "sshd.service";

/** The units of a fresh host. */
export function initialUnits(autoUpdateTimerEnabled: boolean): UnitsState {
  return {
    [SSHD_UNIT]: {
      enabled: true,
      active: true,
      masked: false,
      runtimeMasked: false,
      description: "OpenSSH server daemon",
    },
    [AUTO_UPDATE_TIMER]: {
      enabled: autoUpdateTimerEnabled,
      active: autoUpdateTimerEnabled,
      masked: false,
      runtimeMasked: false,
    },
    "bootc-fetch-apply-updates.service": {
      enabled: false,
      active: false,
      masked: false,
      runtimeMasked: false,
    },
  };
}

/**
 * What a (soft) reboot does to units: runtime masks vanish on a full reboot; enabled units start;
 * failed states are forgotten (systemd starts afresh); units only a bad image shipped are gone.
 * With `failedUnit` (the booted image's `unit-fails` or `boot-incomplete` mode) that unit fails
 * this boot; with `bootCheck` it is a check `boot-complete.target` requires.
 */
export function rebootUnits(
  units: UnitsState,
  soft: boolean,
  opts: { failedUnit?: string | null; bootCheck?: boolean } = {},
): UnitsState {
  const out: UnitsState = {};
  for (const [name, u] of Object.entries(units)) {
    if (u.fromBadImage) continue;
    const runtimeMasked = soft ? u.runtimeMasked : false;
    const { failed: _failed, bootCheck: _check, ...rest } = u;
    out[name] = { ...rest, runtimeMasked, active: u.enabled && !u.masked && !runtimeMasked };
  }
  const failedUnit = opts.failedUnit;
  if (failedUnit) {
    const existing = out[failedUnit];
    const bootCheck = opts.bootCheck ? { bootCheck: true } : {};
    out[failedUnit] = existing ? { ...existing, active: false, failed: true, ...bootCheck } : {
      enabled: true,
      active: false,
      masked: false,
      runtimeMasked: false,
      failed: true,
      ...bootCheck,
      description: opts.bootCheck
        ? "bootc simulator: a bad image's boot check, required by boot-complete.target"
        : "bootc simulator: a unit of a bad image that fails at boot",
      fromBadImage: true,
    };
  }
  return out;
}

/** systemd's overall state, as `systemctl is-system-running` prints it. */
export type SystemState = "starting" | "running" | "degraded";

/** What systemctl sees of the boot beyond the units. */
export interface SystemContext {
  /** The boot is still in progress (`starting`): failing units are still `activating`. */
  starting?: boolean;
}

/** The target systemd's Automatic Boot Assessment waits for (systemd.special(7)). */
export const BOOT_COMPLETE_TARGET = "boot-complete.target";

/**
 * Whether the boot reached `boot-complete.target`: once it finished, unless a boot check it
 * requires failed. Every simulated image ships such checks (as greenboot's), all passing unless
 * the image is `boot-incomplete`.
 */
export function bootComplete(units: UnitsState, ctx: SystemContext = {}): boolean {
  return !ctx.starting && !Object.values(units).some((u) => u.failed && u.bootCheck);
}

/** A unit by name: the stored one, or `boot-complete.target`, which follows the boot. */
function unitOf(units: UnitsState, name: string, ctx: SystemContext): UnitState | undefined {
  if (name !== BOOT_COMPLETE_TARGET || units[name]) return units[name];
  return {
    enabled: false,
    active: bootComplete(units, ctx),
    masked: false,
    runtimeMasked: false,
    description: "Boot Completion Check",
  };
}

/** A unit's ActiveState. */
export function activeStateOf(
  u: UnitState | undefined,
  ctx: SystemContext = {},
): "active" | "inactive" | "failed" | "activating" {
  if (!u) return "inactive";
  if (u.failed) return ctx.starting ? "activating" : "failed";
  return u.active ? "active" : "inactive";
}

/** A unit's SubState (`running`/`waiting`/`dead`/`failed`/`start`). */
function subStateOf(name: string, u: UnitState | undefined, ctx: SystemContext): string {
  const active = activeStateOf(u, ctx);
  if (active === "failed") return "failed";
  if (active === "activating") return "start";
  if (active === "inactive") return "dead";
  if (name.endsWith(".timer")) return "waiting";
  if (name.endsWith(".target") || name.endsWith(".mount")) return "active";
  return "running";
}

function loadStateOf(u: UnitState | undefined): string {
  if (!u) return "not-found";
  return u.masked || u.runtimeMasked ? "masked" : "loaded";
}

/** The units in ActiveState `failed`, sorted. */
export function failedUnits(units: UnitsState, ctx: SystemContext = {}): string[] {
  return Object.keys(units).filter((n) => activeStateOf(units[n], ctx) === "failed").sort();
}

/** `is-system-running`: starting while the boot runs, degraded when a unit failed, else running. */
export function systemState(units: UnitsState, ctx: SystemContext = {}): SystemState {
  if (ctx.starting) return "starting";
  return failedUnits(units, ctx).length > 0 ? "degraded" : "running";
}

/** Result of one systemctl call. */
export interface SystemctlResult {
  /** The units afterwards. */
  units: UnitsState;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
  /** Exit code. */
  code: number;
}

const FRESH: UnitState = { enabled: false, active: false, masked: false, runtimeMasked: false };

/** Options that take a value, as `--opt=value`, `--opt value` or `-xvalue`/`-x value`. */
const VALUE_OPTIONS: Record<string, string> = {
  "--state": "state",
  "--type": "type",
  "-t": "type",
  "--property": "property",
  "-p": "property",
  "--output": "output",
  "-o": "output",
};

interface ParsedArgs {
  verb?: string;
  names: string[];
  flags: Set<string>;
  values: Record<string, string[]>;
  error?: string;
}

function parseArgs(args: string[]): ParsedArgs {
  const out: ParsedArgs = { names: [], flags: new Set(), values: {} };
  const addValue = (key: string, value: string) => {
    for (const v of value.split(",")) if (v) (out.values[key] ??= []).push(v);
  };
  let positionalOnly = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (positionalOnly || !a.startsWith("-") || a === "-") {
      if (out.verb === undefined) out.verb = a;
      else out.names.push(a);
    } else if (a === "--") {
      // Everything after `--` is a verb or a unit name, even when it starts with a dash.
      positionalOnly = true;
    } else if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq < 0 ? a : a.slice(0, eq);
      const key = VALUE_OPTIONS[name];
      if (key) {
        const value = eq < 0 ? args[++i] : a.slice(eq + 1);
        if (value === undefined) {
          out.error = `option '${name}' requires an argument`;
          return out;
        }
        addValue(key, value);
      } else {
        // Kept whole: `--legend=false` differs from `--legend`.
        out.flags.add(a);
      }
    } else {
      const short = a.slice(0, 2);
      const key = VALUE_OPTIONS[short];
      if (key) {
        const value = a.length > 2 ? a.slice(2) : args[++i];
        if (value === undefined) {
          out.error = `option requires an argument -- '${short.slice(1)}'`;
          return out;
        }
        addValue(key, value);
      } else {
        for (const c of a.slice(1)) out.flags.add(`-${c}`);
      }
    }
  }
  return out;
}

/** fnmatch-style glob (`*`, `?`) as systemctl's unit patterns. */
function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    "^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replaceAll("*", ".*").replaceAll("?", ".") +
      "$",
  );
  return re.test(name);
}

interface UnitRow {
  unit: string;
  load: string;
  active: string;
  sub: string;
  description: string;
}

/** `list-units`: the table systemctl prints (or its JSON with `--output=json`). */
function listUnits(units: UnitsState, parsed: ParsedArgs, ctx: SystemContext): string {
  const states = parsed.values.state ?? [];
  if (parsed.flags.has("--failed")) states.push("failed");
  const types = parsed.values.type ?? [];
  const all = parsed.flags.has("--all") || parsed.flags.has("-a");
  const rows: UnitRow[] = Object.keys(units).sort().map((name) => ({
    unit: name,
    load: loadStateOf(units[name]),
    active: activeStateOf(units[name], ctx),
    sub: subStateOf(name, units[name], ctx),
    description: units[name].description ?? name,
  })).filter((r) =>
    (parsed.names.length === 0 || parsed.names.some((p) => globMatch(p, r.unit))) &&
    (types.length === 0 || types.some((t) => r.unit.endsWith(`.${t}`))) &&
    (states.length > 0
      ? states.some((s) => s === r.load || s === r.active || s === r.sub)
      // Without --all systemctl lists what is active, changing or failed.
      : all || r.active !== "inactive")
  );
  const output = parsed.values.output?.at(-1);
  if (output === "json" || output === "json-pretty") {
    return JSON.stringify(rows, null, output === "json-pretty" ? 2 : undefined) + "\n";
  }
  const plain = parsed.flags.has("--plain");
  const legend = !parsed.flags.has("--no-legend") && !parsed.flags.has("--legend=false");
  const headers: UnitRow = {
    unit: "UNIT",
    load: "LOAD",
    active: "ACTIVE",
    sub: "SUB",
    description: "DESCRIPTION",
  };
  const table = legend ? [headers, ...rows] : rows;
  const width = (k: keyof UnitRow) => Math.max(0, ...table.map((r) => r[k].length));
  const columns = ["unit", "load", "active", "sub"] as const;
  const line = (r: UnitRow, mark: string) =>
    (plain ? "" : mark) +
    columns.map((k) => r[k].padEnd(width(k))).join(" ") + " " + r.description;
  let text = "";
  if (legend) text += line(headers, "  ").trimEnd() + "\n";
  // Non-plain output marks failed units with a dot, as systemctl does.
  for (const r of rows) text += line(r, r.active === "failed" ? "● " : "  ") + "\n";
  if (legend) {
    if (rows.length > 0) {
      text += "\nLOAD   = Reflects whether the unit definition was properly loaded.\n" +
        "ACTIVE = The high-level unit activation state, i.e. generalization of SUB.\n" +
        "SUB    = The low-level unit activation state, values depend on unit type.\n";
    }
    text += `\n${rows.length} loaded units listed.` +
      (all ? "\n" : " Pass --all to see loaded but inactive units, too.\n") +
      "To show all installed unit files use 'systemctl list-unit-files'.\n";
  }
  return text;
}

/** `show [-p P…] [--value] [unit…]`: manager properties without a unit, else unit properties. */
function show(units: UnitsState, parsed: ParsedArgs, ctx: SystemContext): string {
  const wanted = parsed.values.property;
  const valueOnly = parsed.flags.has("--value");
  const render = (props: [string, string][]) =>
    props.filter(([k]) => !wanted || wanted.includes(k))
      .map(([k, v]) => (valueOnly ? v : `${k}=${v}`) + "\n").join("");
  if (parsed.names.length === 0) {
    return render([
      ["SystemState", systemState(units, ctx)],
      ["NFailedUnits", String(failedUnits(units, ctx).length)],
    ]);
  }
  return parsed.names.map((name) => {
    const u = unitOf(units, name, ctx);
    const unitFileState = !u
      ? ""
      : u.runtimeMasked
      ? "masked-runtime"
      : u.masked
      ? "masked"
      : u.enabled
      ? "enabled"
      : "disabled";
    return render([
      ["Id", name],
      ["Description", u?.description ?? name],
      ["LoadState", loadStateOf(u)],
      ["ActiveState", activeStateOf(u, ctx)],
      ["SubState", subStateOf(name, u, ctx)],
      ["UnitFileState", unitFileState],
      ["Result", activeStateOf(u, ctx) === "failed" ? "exit-code" : "success"],
    ]);
  }).join("\n");
}

/** Verbs that work without unit names. */
const NO_NAMES_OK = new Set([
  "daemon-reload",
  "is-system-running",
  "is-failed",
  "list-units",
  "show",
  "reset-failed",
]);

/**
 * Runs a systemctl command line against the units. `ctx.starting` says whether the boot is still
 * in progress (see {@linkcode systemState}).
 */
export function systemctl(
  args: string[],
  before: UnitsState,
  ctx: SystemContext = {},
): SystemctlResult {
  const units: UnitsState = structuredClone(before);
  const parsed = parseArgs(args);
  if (parsed.flags.has("--failed") && parsed.verb === undefined) parsed.verb = "list-units";
  const { verb, names, flags } = parsed;
  const quiet = flags.has("--quiet") || flags.has("-q");
  const runtime = flags.has("--runtime");
  const now = flags.has("--now");
  let stdout = "";
  let stderr = "";
  let code = 0;
  const say = (line: string) => {
    if (!quiet) stdout += `${line}\n`;
  };
  if (parsed.error) {
    return { units: before, stdout, stderr: `systemctl: ${parsed.error}\n`, code: 1 };
  }
  if (!verb) return { units, stdout, stderr: "Too few arguments.\n", code: 1 };
  if (names.length === 0 && !NO_NAMES_OK.has(verb)) {
    return { units, stdout, stderr: "Too few arguments.\n", code: 1 };
  }
  switch (verb) {
    case "is-system-running": {
      const state = systemState(units, ctx);
      say(state);
      code = state === "running" ? 0 : 1;
      break;
    }
    case "is-enabled": {
      code = 1;
      for (const name of names) {
        const u = units[name];
        if (!u) {
          stderr += `Failed to get unit file state for ${name}: No such file or directory\n`;
          continue;
        }
        const state = u.runtimeMasked
          ? "masked-runtime"
          : u.masked
          ? "masked"
          : u.enabled
          ? "enabled"
          : "disabled";
        say(state);
        if (state === "enabled") code = 0;
      }
      break;
    }
    case "is-active": {
      code = 3;
      for (const name of names) {
        const state = activeStateOf(unitOf(units, name, ctx), ctx);
        say(state);
        if (state === "active") code = 0;
      }
      break;
    }
    case "is-failed": {
      code = 1;
      if (names.length === 0) {
        // systemd ≥ 256: without units, whether the system is degraded.
        const state = systemState(units, ctx);
        say(state);
        if (state === "degraded") code = 0;
        break;
      }
      for (const name of names) {
        const state = activeStateOf(unitOf(units, name, ctx), ctx);
        say(state);
        if (state === "failed") code = 0;
      }
      break;
    }
    case "list-units":
      stdout += listUnits(units, parsed, ctx);
      break;
    case "show":
      stdout += show(units, parsed, ctx);
      break;
    case "reset-failed":
      for (const [name, u] of Object.entries(units)) {
        if (names.length > 0 && !names.some((p) => globMatch(p, name))) continue;
        if (u.failed) units[name] = { ...u, failed: false, active: false };
      }
      break;
    case "mask":
      for (const name of names) {
        const u = units[name] ?? { ...FRESH };
        const dir = runtime ? "/run/systemd/system" : "/etc/systemd/system";
        if (runtime) u.runtimeMasked = true;
        else u.masked = true;
        if (now) u.active = false;
        units[name] = u;
        stderr += `Created symlink '${dir}/${name}' → '/dev/null'.\n`;
      }
      break;
    case "unmask":
      for (const name of names) {
        const u = units[name];
        if (!u) continue;
        if (runtime && u.runtimeMasked) {
          u.runtimeMasked = false;
          stderr += `Removed '/run/systemd/system/${name}'.\n`;
        } else if (!runtime && u.masked) {
          u.masked = false;
          stderr += `Removed '/etc/systemd/system/${name}'.\n`;
        }
      }
      break;
    case "start":
    case "stop":
    case "restart":
      for (const name of names) {
        const u = units[name];
        if (!u) {
          stderr += `Failed to ${verb} ${name}: Unit ${name} not found.\n`;
          code = 5;
          continue;
        }
        if (verb !== "stop" && (u.masked || u.runtimeMasked)) {
          stderr += `Failed to ${verb} ${name}: Unit ${name} is masked.\n`;
          code = 1;
          continue;
        }
        if (verb !== "stop" && u.failed) {
          // The bad image's unit fails again whenever it is started.
          stderr += `Job for ${name} failed because the control process exited with error ` +
            `code.\nSee "systemctl status ${name}" and "journalctl -xeu ${name}" for details.\n`;
          code = 1;
          continue;
        }
        u.active = verb !== "stop";
      }
      break;
    case "enable":
    case "disable":
      for (const name of names) {
        const u = units[name];
        if (!u) {
          stderr += `Failed to ${verb} unit: Unit ${name} does not exist\n`;
          code = 1;
          continue;
        }
        if (verb === "enable" && (u.masked || u.runtimeMasked)) {
          stderr += `Failed to enable unit: Unit ${name} is masked.\n`;
          code = 1;
          continue;
        }
        u.enabled = verb === "enable";
        if (now) u.active = u.enabled;
      }
      break;
    case "daemon-reload":
      break;
    default:
      return { units: before, stdout: "", stderr: `Unknown command verb '${verb}'.\n`, code: 1 };
  }
  return { units, stdout, stderr, code };
}
