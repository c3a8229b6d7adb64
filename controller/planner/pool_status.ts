/**
 * Step 4 of the reconcile: the pool's status from the per-node states — counts,
 * the UpToDate and Degraded conditions with the design's reasons, the
 * per-state breakdown message and `deployedDigest`.
 *
 * @module
 */
import {
  type BootcNodePoolStatus,
  type Condition,
  type ConditionInput,
  conditionsEqual,
  findCondition,
  PoolConditionType,
  PoolDegradedReason,
  type QueueEntry,
  setCondition,
  SLOT_QUEUE_LIMIT,
  type SlotsStatus,
  UpToDateReason,
} from "../../lib/api/mod.ts";
import { EffectiveState } from "../model/effective_state.ts";
import type { Target } from "../model/types.ts";

/**
 * Node counts per effective state. A node the controller itself found stuck
 * (drain or reboot timeout) is counted as Degraded.
 */
export type StateCounts = Record<EffectiveState, number>;

/** A zeroed {@linkcode StateCounts}. */
export function emptyCounts(): StateCounts {
  return { Degraded: 0, UpToDate: 0, Pending: 0, Staging: 0, Staged: 0, Rebooting: 0 };
}

/** A problem that makes the pool Degraded. */
export interface PoolIssue {
  reason: typeof PoolDegradedReason[keyof typeof PoolDegradedReason];
  message: string;
}

/** Most severe first: the Degraded condition carries the first issue's reason. */
const ISSUE_ORDER: readonly PoolIssue["reason"][] = [
  PoolDegradedReason.InvalidSpec,
  PoolDegradedReason.PullSecretInvalid,
  PoolDegradedReason.ImageResolutionFailed,
  PoolDegradedReason.RolloutHalted,
  PoolDegradedReason.RolledBack,
  PoolDegradedReason.HealthCheckFailed,
  PoolDegradedReason.NodeConflict,
  PoolDegradedReason.NodeStalled,
  PoolDegradedReason.NodeDegraded,
];

/** Inputs of {@linkcode buildPoolStatus}. */
export interface PoolStatusInput {
  prior: BootcNodePoolStatus | undefined;
  generation: number | undefined;
  /** The target after step 1; undefined while nothing has been resolved. */
  target: Target | undefined;
  lastResolvedTime?: string;
  counts: StateCounts;
  slotsInUse: number;
  /**
   * `status.slots` but `inUse`, which is `slotsInUse` (gated_slots.ts): the limit, what
   * sets it and how many nodes wait. Absent: left out.
   */
  slots?: Omit<SlotsStatus, "inUse">;
  /** `status.queue`: the first waiting nodes in grant order (at most SLOT_QUEUE_LIMIT). */
  queue?: readonly QueueEntry[];
  paused: boolean;
  /**
   * The reason new reboots wait, from the gate that blocks (e.g. OutsideMaintenanceWindow);
   * becomes the UpToDate reason while the rollout is not done.
   */
  waitReason?: string;
  issues: readonly PoolIssue[];
  /** Appended to the UpToDate message while the rollout is not done (e.g. why slots wait). */
  note?: string;
  /** Health-gated rollout bookkeeping: history, failure record, canary, circuit. */
  rollout?: RolloutRecord;
  now: Date;
}

/** The health-gated rollout's part of the status. */
export interface RolloutRecord {
  history?: BootcNodePoolStatus["history"];
  failedDigests?: string[];
  consecutiveFailures?: number;
  circuitReset?: string;
  rollbackHold?: BootcNodePoolStatus["rollbackHold"];
  canary?: BootcNodePoolStatus["canary"];
  channel?: BootcNodePoolStatus["channel"];
  /** The CircuitOpen condition (absent: the condition is left out while it never opened). */
  circuit?: { open: boolean; message: string };
}

/** "5/10 updated; 2 staging, 2 staged, 1 rebooting". */
export function breakdownMessage(counts: StateCounts): string {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const parts: string[] = [];
  const add = (n: number, label: string) => {
    if (n > 0) parts.push(`${n} ${label}`);
  };
  add(counts.Pending, "pending");
  add(counts.Staging, "staging");
  add(counts.Staged, "staged");
  add(counts.Rebooting, "rebooting");
  add(counts.Degraded, "degraded");
  const head = `${counts.UpToDate}/${total} updated`;
  return parts.length > 0 ? `${head}; ${parts.join(", ")}` : head;
}

/** Builds the new pool status; conditions keep their transition time when unchanged. */
export function buildPoolStatus(input: PoolStatusInput): BootcNodePoolStatus {
  const { counts, target, prior } = input;
  const nodeCount = Object.values(counts).reduce((a, b) => a + b, 0);
  const allUpdated = target !== undefined && counts.UpToDate === nodeCount;
  const degradedCount = counts.Degraded;
  const deployedDigest = allUpdated ? target.digest : prior?.deployedDigest;
  // Steps that do not touch the rollout record (an invalid spec) keep it as it was.
  const r: RolloutRecord = input.rollout ?? {
    history: prior?.history,
    failedDigests: prior?.failedDigests,
    consecutiveFailures: prior?.consecutiveFailures,
    circuitReset: prior?.circuitReset,
    rollbackHold: prior?.rollbackHold,
    canary: prior?.canary,
    channel: prior?.channel,
  };
  const status: BootcNodePoolStatus = {
    observedGeneration: input.generation,
    targetDigest: target?.digest,
    targetImage: target?.image,
    targetPlatforms: target?.platforms && target.platforms.length > 0
      ? target.platforms
      : undefined,
    deployedDigest,
    updateAvailable: target !== undefined && target.digest !== deployedDigest,
    lastResolvedTime: input.lastResolvedTime,
    nodeCount,
    updatedCount: counts.UpToDate,
    updatingCount: nodeCount - counts.UpToDate - degradedCount,
    degradedCount,
    slotsInUse: input.slotsInUse,
    slots: input.slots ? { ...input.slots, inUse: input.slotsInUse } : undefined,
    queue: input.queue && input.queue.length > 0
      ? input.queue.slice(0, SLOT_QUEUE_LIMIT)
      : undefined,
    conditions: poolConditions(input, nodeCount, r),
    history: r.history && r.history.length > 0 ? r.history : undefined,
    failedDigests: r.failedDigests && r.failedDigests.length > 0 ? r.failedDigests : undefined,
    consecutiveFailures: r.consecutiveFailures ? r.consecutiveFailures : undefined,
    circuitReset: r.circuitReset,
    rollbackHold: r.rollbackHold,
    canary: r.canary,
    channel: r.channel,
  };
  return dropUndefined(status);
}

/**
 * The pool's UpToDate condition (all updated, else the breakdown and why it
 * waits), its Degraded condition (the most severe issue's reason, every
 * message) and, once the circuit breaker ever opened, CircuitOpen.
 */
function poolConditions(input: PoolStatusInput, nodeCount: number, r: RolloutRecord): Condition[] {
  const { counts, target, now } = input;
  const observedGeneration = input.generation;
  let conditions: Condition[] = input.prior?.conditions ?? [];
  if (target !== undefined && counts.UpToDate === nodeCount) {
    conditions = setCondition(conditions, {
      type: PoolConditionType.UpToDate,
      status: "True",
      reason: UpToDateReason.AllUpdated,
      message: `${nodeCount}/${nodeCount} nodes run ${target.image}`,
      observedGeneration,
    }, now);
  } else {
    const breakdown = target === undefined
      ? "target image not resolved yet"
      : breakdownMessage(counts);
    conditions = setCondition(conditions, {
      type: PoolConditionType.UpToDate,
      status: "False",
      reason: input.waitReason ??
        (input.paused ? UpToDateReason.Paused : UpToDateReason.RolloutInProgress),
      message: input.note ? `${breakdown}; ${input.note}` : breakdown,
      observedGeneration,
    }, now);
  }
  conditions = setCondition(conditions, degradedCondition(input.issues, observedGeneration), now);
  if (r.circuit && (r.circuit.open || findCondition(conditions, PoolConditionType.CircuitOpen))) {
    conditions = setCondition(conditions, {
      type: PoolConditionType.CircuitOpen,
      status: r.circuit.open ? "True" : "False",
      reason: r.circuit.open ? "TooManyFailedRollouts" : "Closed",
      message: r.circuit.message,
      observedGeneration,
    }, now);
  }
  return conditions;
}

/** The Degraded condition: the most severe issue's reason and every issue's message. */
function degradedCondition(
  issues: readonly PoolIssue[],
  observedGeneration: number | undefined,
): ConditionInput {
  const sorted = [...issues].sort((a, b) =>
    ISSUE_ORDER.indexOf(a.reason) - ISSUE_ORDER.indexOf(b.reason)
  );
  if (sorted.length === 0) {
    return {
      type: PoolConditionType.Degraded,
      status: "False",
      reason: PoolDegradedReason.Healthy,
      message: "No issues",
      observedGeneration,
    };
  }
  return {
    type: PoolConditionType.Degraded,
    status: "True",
    reason: sorted[0].reason,
    message: truncate(sorted.map((i) => i.message).join("; "), 4096),
    observedGeneration,
  };
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function dropUndefined<T extends object>(obj: T): T {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as T;
}

/** True when two statuses are equal (conditions compared ignoring order). */
export function statusEqual(
  a: BootcNodePoolStatus | undefined,
  b: BootcNodePoolStatus | undefined,
): boolean {
  const { conditions: ca, ...ra } = a ?? {};
  const { conditions: cb, ...rb } = b ?? {};
  return conditionsEqual(ca, cb) && stableJson(ra) === stableJson(rb);
}

function stableJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(
          Object.entries(v).filter(([, x]) => x !== undefined).sort(([x], [y]) => x < y ? -1 : 1),
        )
        : v,
  );
}
