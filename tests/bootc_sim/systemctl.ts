/**
 * A tiny `systemctl` for the simulated host: unit enablement, activity and (runtime) masks, enough
 * for the daemon to find and neutralise `bootc-fetch-apply-updates.timer`.
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
}

/** All known units. */
export type UnitsState = Record<string, UnitState>;

/** The timer Fedora-based bootc images enable: it runs `bootc upgrade --apply`. */
export const AUTO_UPDATE_TIMER = "bootc-fetch-apply-updates.timer";

/** The units of a fresh host. */
export function initialUnits(autoUpdateTimerEnabled: boolean): UnitsState {
  return {
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

/** What a (soft) reboot does to units: runtime masks vanish on a full reboot; enabled units start. */
export function rebootUnits(units: UnitsState, soft: boolean): UnitsState {
  const out: UnitsState = {};
  for (const [name, u] of Object.entries(units)) {
    const runtimeMasked = soft ? u.runtimeMasked : false;
    out[name] = { ...u, runtimeMasked, active: u.enabled && !u.masked && !runtimeMasked };
  }
  return out;
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

/** Runs a systemctl command line against the units. */
export function systemctl(args: string[], before: UnitsState): SystemctlResult {
  const units: UnitsState = structuredClone(before);
  const flags = new Set(args.filter((a) => a.startsWith("-")));
  const [verb, ...names] = args.filter((a) => !a.startsWith("-"));
  const quiet = flags.has("--quiet") || flags.has("-q");
  const runtime = flags.has("--runtime");
  const now = flags.has("--now");
  let stdout = "";
  let stderr = "";
  let code = 0;
  const say = (line: string) => {
    if (!quiet) stdout += `${line}\n`;
  };
  if (!verb) return { units, stdout, stderr: "Too few arguments.\n", code: 1 };
  if (names.length === 0 && verb !== "daemon-reload") {
    return { units, stdout, stderr: "Too few arguments.\n", code: 1 };
  }
  switch (verb) {
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
        const active = units[name]?.active ?? false;
        say(active ? "active" : "inactive");
        if (active) code = 0;
      }
      break;
    }
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
