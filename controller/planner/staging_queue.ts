/**
 * The pool's staging places (`spec.rollout.maxStaging`): how many nodes may
 * start downloading the target now, counted from the BootcNodes already told
 * to stage it.
 *
 * @module
 */
import { ANNOTATION_DESIRED_SINCE, MAX_STAGING, resolveIntOrPercent } from "../../lib/api/mod.ts";
import { daemonProgress, type DesiredImage, EffectiveState } from "../../lib/api/node_state.ts";
import { NO_OUTPUT, ownedBootcNodes, type PlanInput, type StepOutput, stepOutput } from "./plan.ts";
import { type PoolWait, STAGING_LIMIT } from "./condition_events.ts";
import { stagingLimitMessage, type StagingUse } from "../../lib/api/display.ts";
import { parseTime } from "../model/slots.ts";
import { stallDeadlines } from "./deadlines.ts";
import type { Target } from "../model/types.ts";

/** The pool's staging places (`spec.rollout.maxStaging`): how many may start a download now. */
export interface StagingQueue {
  /** Resolved limit. */
  limit: number;
  /** Nodes downloading the target now. */
  active: number;
  /** Places still free after this plan. */
  room: number;
  /** Nodes held back, waiting for a place. */
  held: readonly string[];
  /** Why the held nodes wait (their classification's `heldBy`). */
  heldBy: { reason: string; message: string };
}

/**
 * The staging places of a pool for `target` before this plan's members take any:
 * nodes already told to stage it that have not reported it staged (nor failed,
 * nor run past the staging deadline, so a failed download does not hold a place
 * forever) use one each. Undefined: no limit.
 */
export function stagingQueue(
  input: PlanInput,
  target: Target,
  memberCount: number,
  open = true,
): StagingQueue | undefined {
  const rollout = input.pool.spec.rollout;
  if (rollout?.maxStaging === undefined && open) return undefined;
  const limit = open && rollout?.maxStaging !== undefined
    ? resolveIntOrPercent(rollout.maxStaging, memberCount, MAX_STAGING)
    : 0;
  const deadlines = stallDeadlines(rollout as Record<string, unknown> | undefined);
  const d: DesiredImage = { image: target.image, platforms: target.platforms };
  let active = 0;
  for (const bn of ownedBootcNodes(input)) {
    if (bn.spec.desiredImage !== target.image) continue;
    const state = daemonProgress(bn, d);
    if (state !== EffectiveState.Pending && state !== EffectiveState.Staging) continue;
    const since = parseTime(bn.metadata.annotations?.[ANNOTATION_DESIRED_SINCE]);
    if (since && input.now.getTime() >= since.getTime() + deadlines.stagingMs) continue;
    active++;
  }
  const heldBy = open
    ? {
      reason: "StagingLimit",
      message: `a staging place (spec.rollout.maxStaging: ${limit} at a time, ${active} in use)`,
    }
    : {
      reason: "OutsideMaintenanceWindow",
      message: "the next maintenance window (maintenance.stageOutsideWindows: false)",
    };
  return { limit, active, room: Math.max(0, limit - active), held: [], heldBy };
}

/** The note on nodes the staging limit (or a closed window) holds back, if any. */
export function stagingNote(staging: StagingQueue | undefined): StepOutput {
  const wait = stagingWait(staging);
  return wait ? stepOutput({ notes: [wait.message] }) : NO_OUTPUT;
}

/** The staging limit as the pool's wait, when it holds nodes back and no gate does. */
export function stagingWait(staging: StagingQueue | undefined): PoolWait | undefined {
  const use = stagingUse(staging);
  return use && { reason: STAGING_LIMIT, message: stagingLimitMessage(use) };
}

/** `status.staging`: the staging limit's use, while it holds nodes back. */
export function stagingUse(staging: StagingQueue | undefined): StagingUse | undefined {
  if (!staging || staging.held.length === 0) return undefined;
  return {
    limit: staging.limit,
    downloading: staging.limit - staging.room,
    queued: staging.held.length,
  };
}
