/**
 * A pool's headline: the one word that says how it is doing (the controller's
 * `status.state` when it publishes one, else read from the conditions), its
 * health (the colour and icon of the headline), and the exit code `status`
 * gives for it, so CI can act on it.
 *
 * @module
 */
import { findCondition } from "../lib/api/conditions.ts";
import { PoolConditionType, UpToDateReason } from "../lib/api/constants.ts";
import { type PoolStateKind, poolStateKind } from "../lib/api/pool_state.ts";
import { ExitCode } from "./errors.ts";
import { type BootcNodePool, publishedState } from "./model.ts";
import type { Style } from "./style.ts";

/**
 * How a pool is doing:
 * - `healthy`: every node runs the target;
 * - `progressing`: the rollout moves;
 * - `held`: the rollout waits on a gate (paused, a window, a budget, the staging limit…);
 * - `unhealthy`: Degraded, halted, rolled back, the circuit open, the image or the spec
 *   not usable.
 */
export type PoolHealth = "healthy" | "progressing" | "held" | "unhealthy";

/** The headline of one pool. */
export interface Headline {
  /** `status.state`, else the Degraded reason, CircuitOpen, or the UpToDate reason. */
  state: string;
  health: PoolHealth;
}

/** The health of each kind of published state (`lib/api/pool_state.ts`, the one table). */
const HEALTH_OF: Readonly<Record<PoolStateKind, PoolHealth>> = {
  problem: "unhealthy",
  waiting: "held",
  progress: "progressing",
  done: "healthy",
};

/**
 * The pool's headline (see the module doc): the published `status.state` and
 * its kind when the controller publishes one; else the conditions (an older
 * controller): Degraded or the circuit open first, then UpToDate.
 */
export function poolHeadline(pool: BootcNodePool): Headline {
  const conditions = pool.status?.conditions;
  const degraded = findCondition(conditions, PoolConditionType.Degraded);
  const circuit = findCondition(conditions, PoolConditionType.CircuitOpen);
  const up = findCondition(conditions, PoolConditionType.UpToDate);
  const problem = degraded?.status === "True" || circuit?.status === "True";
  const published = publishedState(pool).state;
  if (published !== undefined) {
    const kind = poolStateKind(published) ?? "waiting";
    return { state: published, health: problem ? "unhealthy" : HEALTH_OF[kind] };
  }
  if (degraded?.status === "True") return { state: degraded.reason, health: "unhealthy" };
  if (circuit?.status === "True") return { state: "CircuitOpen", health: "unhealthy" };
  const state = up?.reason || "Unknown";
  if (up?.status === "True") return { state, health: "healthy" };
  const gated = pool.spec?.rollout?.paused === true ||
    (up?.status === "False" && up.reason !== UpToDateReason.RolloutInProgress);
  return { state, health: gated ? "held" : "progressing" };
}

/** The icon of each health (the same glyphs as the node tree's). */
export const HEALTH_ICON: Readonly<Record<PoolHealth, string>> = {
  healthy: "✔",
  progressing: "◌",
  held: "॥",
  unhealthy: "✖",
};

/** Paints `text` in the colour of `health`: green, yellow (moving or waiting) or red. */
export function paintHealth(style: Style, health: PoolHealth, text: string): string {
  switch (health) {
    case "healthy":
      return style.green(text);
    case "unhealthy":
      return style.red(text);
    default:
      return style.yellow(text);
  }
}

/** The exit code of `status` for the pools shown (the worst wins). */
export function statusExitCode(healths: readonly PoolHealth[], strict = false): number {
  if (healths.includes("unhealthy")) return ExitCode.Unhealthy;
  if (strict && healths.some((h) => h !== "healthy")) return ExitCode.NotDone;
  return ExitCode.Ok;
}
