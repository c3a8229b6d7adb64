/**
 * Step 8 of the reconcile: the pool's status from the per-node states — counts,
 * the headline (`status.state`) and the UpToDate and Degraded conditions from
 * one precedence table (`lib/api/pool_state.ts`), the per-state breakdown
 * message, the target's short form and `deployedDigest`.
 *
 * @module
 */
import {
  type BootcNodePoolStatus,
  type Condition,
  type ConditionInput,
  conditionsEqual,
  DEGRADED_ORDER,
  findCondition,
  PoolConditionType,
  PoolDegradedReason,
  PoolFact,
  poolState,
  type PoolStateVerdict,
  type QueueEntry,
  setCondition,
  SLOT_QUEUE_LIMIT,
  type SlotsStatus,
} from "../../lib/api/mod.ts";
import { imageSummary } from "../../lib/api/display.ts";
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
  /**
   * Facts of the failure record that rank among the problems (`PoolFact`: the target's
   * rollout halted, the circuit or a failure record holding the spec's image back).
   */
  facts?: readonly string[];
  /**
   * How people name the target: the tag it came from (none when the failure record
   * chose another image than the spec's) and its version, when known.
   */
  targetLabel?: { tag?: string; version?: string };
  /** When the tag is next resolved (RFC 3339; tag references only). */
  nextTagResolutionTime?: string;
  /** The candidate image's signature verdict (spec.image.verification). */
  verification?: BootcNodePoolStatus["verification"];
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
  /** The approval gate's record (`status.approval`). */
  approval?: BootcNodePoolStatus["approval"];
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
    approval: prior?.approval,
  };
  const verdict = stateVerdict(input, nodeCount, r);
  const targetShort = target
    ? imageSummary({
      tag: input.targetLabel?.tag,
      version: input.targetLabel?.version,
      digest: target.digest,
    })
    : undefined;
  const status: BootcNodePoolStatus = {
    observedGeneration: input.generation,
    targetDigest: target?.digest,
    targetImage: target?.image,
    targetPlatforms: target?.platforms && target.platforms.length > 0
      ? target.platforms
      : undefined,
    targetShort,
    targetVersion: target ? input.targetLabel?.version : undefined,
    state: verdict.state,
    deployedDigest,
    updateAvailable: target !== undefined && target.digest !== deployedDigest,
    lastResolvedTime: input.lastResolvedTime,
    nextTagResolutionTime: input.nextTagResolutionTime,
    ...(input.verification ? { verification: input.verification } : {}),
    nodeCount,
    updatedCount: counts.UpToDate,
    updatingCount: nodeCount - counts.UpToDate - degradedCount,
    degradedCount,
    slotsInUse: input.slotsInUse,
    slots: input.slots ? { ...input.slots, inUse: input.slotsInUse } : undefined,
    queue: input.queue && input.queue.length > 0
      ? input.queue.slice(0, SLOT_QUEUE_LIMIT)
      : undefined,
    notes: verdict.upToDate ? undefined : nonEmpty(upToDateNotes(input, verdict)),
    conditions: poolConditions(input, { nodeCount, r, verdict, targetShort }),
    history: r.history && r.history.length > 0 ? r.history : undefined,
    failedDigests: r.failedDigests && r.failedDigests.length > 0 ? r.failedDigests : undefined,
    consecutiveFailures: r.consecutiveFailures ? r.consecutiveFailures : undefined,
    circuitReset: r.circuitReset,
    rollbackHold: r.rollbackHold,
    canary: r.canary,
    channel: r.channel,
    approval: r.approval,
  };
  return dropUndefined(status);
}

/** The headline and UpToDate verdict of the precedence table, from this plan's facts. */
function stateVerdict(
  input: PoolStatusInput,
  nodeCount: number,
  r: RolloutRecord,
): PoolStateVerdict {
  const { counts } = input;
  const circuitOpen = r.circuit
    ? r.circuit.open
    : findCondition(input.prior?.conditions, PoolConditionType.CircuitOpen)?.status === "True";
  return poolState({
    facts: [
      ...input.issues.map((i) => i.reason),
      ...(input.facts ?? []),
      ...(circuitOpen ? [PoolFact.CircuitOpen] : []),
    ],
    waitReason: input.waitReason,
    paused: input.paused,
    progress: {
      resolved: input.target !== undefined,
      nodes: nodeCount,
      updated: counts.UpToDate,
      underway: counts.Staged + counts.Rebooting,
    },
  });
}

/**
 * The pool's UpToDate condition (the verdict: all updated, else the breakdown,
 * what keeps the spec from being realised and why it waits), its Degraded
 * condition (the most severe issue's reason, every message) and, once the
 * circuit breaker ever opened, CircuitOpen.
 */
function poolConditions(
  input: PoolStatusInput,
  o: { nodeCount: number; r: RolloutRecord; verdict: PoolStateVerdict; targetShort?: string },
): Condition[] {
  const { counts, target, now } = input;
  const { nodeCount, r, verdict } = o;
  const observedGeneration = input.generation;
  let conditions: Condition[] = input.prior?.conditions ?? [];
  if (verdict.upToDate) {
    conditions = setCondition(conditions, {
      type: PoolConditionType.UpToDate,
      status: "True",
      reason: verdict.reason,
      message: `${nodeCount}/${nodeCount} nodes run ${o.targetShort}`,
      observedGeneration,
    }, now);
  } else {
    const breakdown = target === undefined
      ? "target image not resolved yet"
      : breakdownMessage(counts);
    const parts = [breakdown, ...upToDateNotes(input, verdict)];
    conditions = setCondition(conditions, {
      type: PoolConditionType.UpToDate,
      status: "False",
      reason: verdict.reason,
      message: truncate(parts.join("; "), 4096),
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

/**
 * The issues whose message says why UpToDate has a reason, where it is not the
 * issue of that name: a rollout halted by `onFailure: Halt` is told by the
 * failure's own issue.
 */
const EXPLAINED_BY: Readonly<Record<string, readonly string[]>> = {
  [PoolDegradedReason.RolloutHalted]: [
    PoolDegradedReason.RolloutHalted,
    PoolDegradedReason.HealthCheckFailed,
  ],
};

/**
 * What a False UpToDate says after the node counts (`status.notes`): what keeps the
 * spec from being realised, unless a note already says it, then the notes.
 */
function upToDateNotes(input: PoolStatusInput, verdict: PoolStateVerdict): string[] {
  const explains = EXPLAINED_BY[verdict.reason] ?? [verdict.reason];
  const why = input.issues.find((i) => explains.includes(i.reason))?.message;
  const out: string[] = [];
  if (why && !input.note?.includes(why)) out.push(truncate(why, 4096));
  if (input.note) out.push(truncate(input.note, 4096));
  return out;
}

function nonEmpty<T>(list: T[]): T[] | undefined {
  return list.length > 0 ? list : undefined;
}

/** The Degraded condition: the most severe issue's reason and every issue's message. */
function degradedCondition(
  issues: readonly PoolIssue[],
  observedGeneration: number | undefined,
): ConditionInput {
  const sorted = [...issues].sort((a, b) =>
    DEGRADED_ORDER.indexOf(a.reason) - DEGRADED_ORDER.indexOf(b.reason)
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
