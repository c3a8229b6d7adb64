/**
 * The host health check: what systemd says about the host, as the daemon
 * reports it in `status.hostHealth` and the `HostHealthy` condition.
 *
 * Without `spec.healthUnits` the answer is `systemctl is-system-running`:
 *
 * | is-system-running                | state     | HostHealthy reason |
 * |----------------------------------|-----------|--------------------|
 * | `running`                        | Healthy   | SystemRunning      |
 * | `initializing`, `starting`       | Starting  | Starting           |
 * | `degraded`                       | Unhealthy | UnitFailed ¹       |
 * | `maintenance`, `stopping`, other | Unhealthy | UnitFailed ²       |
 * | `offline`, `unknown`, no answer  | Unknown   | CheckError ³       |
 *
 * 1. The failed units are listed (`systemctl list-units --state=failed`) and named.
 * 2. The message names the state. `stopping` is ignored while the daemon's own
 *    reboot is under way (see decide.ts), since every reboot passes through it.
 * 3. systemd cannot tell (not the host's init, or the bus is unreachable): the
 *    check says nothing about the host.
 *
 * With `spec.healthUnits`, `systemctl is-active <units…>`: every unit `active` is
 * Healthy/UnitsActive; `failed` (or an unknown answer) is Unhealthy naming it;
 * otherwise (`activating`, `reloading`, `inactive`, `deactivating`) Starting. A
 * check that cannot run is Unknown/CheckError.
 *
 * With `spec.bootAssessment: Require`, systemd's Automatic Boot Assessment counts too
 * (see {@linkcode assessBoot}): a boot that finished without reaching
 * `boot-complete.target` is Unhealthy/BootIncomplete, an entry `systemd-bless-boot status`
 * calls `bad` is Unhealthy/BootMarkedBad, and either wins over the check above.
 *
 * The functions building a {@linkcode HealthCheck} from systemd's answers are
 * pure; {@linkcode checkHostHealth} runs the commands.
 *
 * @module
 */
import { HostHealthyReason } from "../lib/api/constants.ts";
import type { BootcNodeSpec } from "../lib/api/schema.ts";
import type { BootcExecutor } from "../lib/bootc/executor.ts";

/** `status.hostHealth.state`. */
export type HostHealthState = "Healthy" | "Starting" | "Unhealthy" | "Unknown";

/** A reason of the HostHealthy condition. */
export type HealthReason = typeof HostHealthyReason[keyof typeof HostHealthyReason];

/** The outcome of one health check (not yet tied to a boot: decide adds `bootedDigest`). */
export interface HealthCheck {
  state: HostHealthState;
  reason: HealthReason;
  /** The failed units, sorted (at most {@linkcode MAX_FAILED_UNITS}). */
  failedUnits: string[];
  message: string;
  /** True when systemd said `stopping`: the host is shutting down. */
  stopping?: boolean;
  /** When the check ran. */
  at: Date;
}

/** At most this many failed units are named (the schema's limit). */
export const MAX_FAILED_UNITS = 64;
/** Messages are cut to this length (the schema's limit). */
export const MAX_HEALTH_MESSAGE = 4096;

function limit(message: string): string {
  return message.length <= MAX_HEALTH_MESSAGE
    ? message
    : message.slice(0, MAX_HEALTH_MESSAGE - 1) + "…";
}

function names(units: readonly string[]): string[] {
  return [...new Set(units)].sort().slice(0, MAX_FAILED_UNITS);
}

/** A check that could not run. */
export function healthCheckError(message: string, at: Date): HealthCheck {
  return {
    state: "Unknown",
    reason: HostHealthyReason.CheckError,
    failedUnits: [],
    message: limit(`cannot check the host's health: ${message}`),
    at,
  };
}

/**
 * The check without `healthUnits`, from `systemctl is-system-running`'s answer and,
 * when degraded, the failed units (or why they could not be listed).
 */
export function assessSystem(
  systemState: string,
  failed: { units: readonly string[] } | { error: string } | undefined,
  at: Date,
): HealthCheck {
  const said = `systemctl is-system-running: ${systemState}`;
  switch (systemState) {
    case "running":
      return {
        state: "Healthy",
        reason: HostHealthyReason.SystemRunning,
        failedUnits: [],
        message: said,
        at,
      };
    case "initializing":
    case "starting":
      return {
        state: "Starting",
        reason: HostHealthyReason.Starting,
        failedUnits: [],
        message: `the system is still starting (${said})`,
        at,
      };
    case "degraded": {
      const units = failed && "units" in failed ? names(failed.units) : [];
      const detail = failed && "error" in failed
        ? ` (the failed units could not be listed: ${failed.error})`
        : units.length > 0
        ? `: failed units: ${units.join(", ")}`
        : "";
      return {
        state: "Unhealthy",
        reason: HostHealthyReason.UnitFailed,
        failedUnits: units,
        message: limit(`the system is degraded${detail}`),
        at,
      };
    }
    case "offline":
    case "unknown":
      return healthCheckError(
        `${said} (systemd cannot tell the state: it is not the host's init, or not reachable)`,
        at,
      );
    default: {
      const what = systemState === "maintenance"
        ? "the system is in maintenance mode (rescue or emergency target)"
        : systemState === "stopping"
        ? "the system is shutting down"
        : "the system is not running";
      return {
        state: "Unhealthy",
        reason: HostHealthyReason.UnitFailed,
        failedUnits: [],
        message: limit(`${what} (${said})`),
        ...(systemState === "stopping" ? { stopping: true } : {}),
        at,
      };
    }
  }
}

/** States of `systemctl is-active` that are on their way (not failed, not yet active). */
const TRANSIENT_STATES = new Set([
  "activating",
  "reloading",
  "refreshing",
  "inactive",
  "deactivating",
]);

/** The check with `healthUnits`, from `systemctl is-active`'s answer for each unit (in order). */
export function assessUnits(
  units: readonly string[],
  states: readonly string[],
  at: Date,
): HealthCheck {
  const failed: string[] = [];
  const waiting: string[] = [];
  units.forEach((unit, i) => {
    const state = states[i] ?? "unknown";
    if (state === "active") return;
    if (TRANSIENT_STATES.has(state)) waiting.push(`${unit} (${state})`);
    else failed.push(unit);
  });
  const failedStates = failed.map((u) => `${u} (${states[units.indexOf(u)] ?? "unknown"})`);
  if (failed.length > 0) {
    return {
      state: "Unhealthy",
      reason: HostHealthyReason.UnitFailed,
      failedUnits: names(failed),
      message: limit(
        `failed units: ${failedStates.join(", ")}` +
          (waiting.length ? `; not active yet: ${waiting.join(", ")}` : ""),
      ),
      at,
    };
  }
  if (waiting.length > 0) {
    return {
      state: "Starting",
      reason: HostHealthyReason.Starting,
      failedUnits: [],
      message: limit(`waiting for units: ${waiting.join(", ")}`),
      at,
    };
  }
  return {
    state: "Healthy",
    reason: HostHealthyReason.UnitsActive,
    failedUnits: [],
    message: limit(`all units active: ${units.join(", ")}`),
    at,
  };
}

/** The unit systemd reaches once every check ordered before it passed (systemd.special(7)). */
export const BOOT_COMPLETE_TARGET = "boot-complete.target";

/** What the host says of its boot assessment. */
export interface BootAnswers {
  /** `systemctl is-system-running`. */
  systemState: string;
  /** `systemctl is-active boot-complete.target`. */
  target: string;
  /** `systemd-bless-boot status`, or `absent`. */
  bless: string;
  /** The failed units, when the system is degraded. */
  failedUnits?: readonly string[];
}

/**
 * The boot assessment alone: Healthy once boot-complete.target is active and the entry
 * is not waiting to be blessed; Starting while the boot runs; Unhealthy when the boot
 * ended short of the target or the entry was marked bad.
 */
export function assessBoot(a: BootAnswers, at: Date): HealthCheck {
  const bless = `systemd-bless-boot status: ${a.bless}`;
  const units = names(a.failedUnits ?? []);
  const failed = units.length > 0 ? `; failed units: ${units.join(", ")}` : "";
  if (a.bless === "bad") {
    return {
      state: "Unhealthy",
      reason: HostHealthyReason.BootMarkedBad,
      failedUnits: units,
      message: limit(`the boot loader entry was marked bad (${bless})${failed}`),
      at,
    };
  }
  if (a.target !== "active") {
    if (a.systemState === "starting" || a.systemState === "initializing") {
      return {
        state: "Starting",
        reason: HostHealthyReason.Starting,
        failedUnits: [],
        message: `waiting for ${BOOT_COMPLETE_TARGET} (the system is still starting)`,
        at,
      };
    }
    return {
      state: "Unhealthy",
      reason: HostHealthyReason.BootIncomplete,
      failedUnits: units,
      message: limit(
        `the boot did not reach ${BOOT_COMPLETE_TARGET} (${a.target}; ` +
          `systemctl is-system-running: ${a.systemState})${failed}`,
      ),
      at,
    };
  }
  if (a.bless === "indeterminate") {
    return {
      state: "Starting",
      reason: HostHealthyReason.Starting,
      failedUnits: [],
      message:
        `${BOOT_COMPLETE_TARGET} reached; waiting for the entry to be marked good (${bless})`,
      at,
    };
  }
  const counting = a.bless === "absent" ? "no boot counting" : bless;
  return {
    state: "Healthy",
    reason: HostHealthyReason.SystemRunning,
    failedUnits: [],
    message: `${BOOT_COMPLETE_TARGET} reached (${counting})`,
    at,
  };
}

/**
 * The host check with the boot assessment: a failed assessment wins, then a failed or
 * unknown host check, then an assessment still under way; else the host check says so.
 */
export function withBootAssessment(host: HealthCheck, boot: HealthCheck): HealthCheck {
  if (boot.state === "Unhealthy") return boot;
  if (host.state === "Unhealthy" || host.state === "Unknown") return host;
  if (boot.state !== "Healthy") return boot;
  return { ...host, message: limit(`${host.message}; ${boot.message}`) };
}

function text(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** What the daemon's health check covers (from its BootcNode's spec). */
export interface HealthScope {
  /** `spec.healthUnits`. */
  units?: readonly string[];
  /** `spec.bootAssessment`. */
  bootAssessment?: "Ignore" | "Require";
}

/** The scope a BootcNode's spec asks for. */
export function healthScope(spec: BootcNodeSpec | undefined): HealthScope {
  return { units: spec?.healthUnits, bootAssessment: spec?.bootAssessment };
}

type HealthExecutor = Pick<
  BootcExecutor,
  "systemState" | "failedUnits" | "unitStates" | "blessStatus"
>;

async function failedOrError(
  executor: HealthExecutor,
): Promise<{ units: string[] } | { error: string }> {
  try {
    return { units: await executor.failedUnits() };
  } catch (e) {
    return { error: text(e) };
  }
}

/** `is-system-running`, and the failed units when degraded. */
interface SystemAnswers {
  state: string;
  failed?: { units: string[] } | { error: string };
}

async function readSystem(executor: HealthExecutor): Promise<SystemAnswers> {
  const state = await executor.systemState();
  return { state, failed: state === "degraded" ? await failedOrError(executor) : undefined };
}

async function hostCheck(
  executor: HealthExecutor,
  units: readonly string[] | undefined,
  system: () => Promise<SystemAnswers>,
  now: () => Date,
): Promise<HealthCheck> {
  if (units && units.length > 0) return assessUnits(units, await executor.unitStates(units), now());
  const { state, failed } = await system();
  return assessSystem(state, failed, now());
}

async function bootCheck(
  executor: HealthExecutor,
  system: () => Promise<SystemAnswers>,
  now: () => Date,
): Promise<HealthCheck> {
  const [target] = await executor.unitStates([BOOT_COMPLETE_TARGET]);
  const { state, failed } = await system();
  return assessBoot({
    systemState: state,
    target,
    bless: await executor.blessStatus(),
    failedUnits: failed && "units" in failed ? failed.units : undefined,
  }, now());
}

/**
 * Runs the check in the host: `systemctl is-active <units…>` when the scope lists
 * units, else `systemctl is-system-running` (and, when degraded, the list of failed
 * units); with `bootAssessment: Require` also the boot assessment. Never throws: a
 * check that cannot run is Unknown/CheckError.
 */
export async function checkHostHealth(
  executor: HealthExecutor,
  scope: HealthScope | undefined,
  now: () => Date,
): Promise<HealthCheck> {
  try {
    // Both checks may need the system state: it is asked once per check.
    let asked: Promise<SystemAnswers> | undefined;
    const system = () => asked ??= readSystem(executor);
    const host = await hostCheck(executor, scope?.units, system, now);
    if (scope?.bootAssessment !== "Require") return host;
    return withBootAssessment(host, await bootCheck(executor, system, now));
  } catch (e) {
    return healthCheckError(text(e), now());
  }
}
