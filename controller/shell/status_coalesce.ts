/**
 * When to write a pool's status: the reconciler computes the status on every
 * reconcile, and this pure decision keeps the writes to what matters.
 *
 * A status that differs from the one in the API in a field anything acts on
 * (the target, observedGeneration, a condition's status or reason, the rollout
 * record: history, failed digests, circuit breaker, rollback hold, canary) is
 * written at once: other pools' gates read those fields and the planner's
 * events are derived from them, so they must not lag.
 *
 * A status that differs only in **progress** (the node counts, `slotsInUse`,
 * `slots`, the slot `queue`, condition messages) is coalesced: the first such change waits
 * {@linkcode CoalesceOptions.settleMs} for the burst it starts (a slot released
 * and granted again, nodes finishing staging together) and writes are at
 * least {@linkcode CoalesceOptions.windowMs} apart. The reconciler requeues the
 * pool for the returned time, so the last state is always written; a crash
 * loses at most that window, and the next reconcile computes it again.
 *
 * A status that differs only in `lastResolvedTime` and `nextTagResolutionTime`
 * (every registry poll) is a heartbeat: it rides along with the next other
 * write, and is written on its own only once either stored time is
 * {@linkcode CoalesceOptions.heartbeatMs} behind.
 *
 * @module
 */
import type { BootcNodePoolStatus } from "../../lib/api/mod.ts";
import { statusEqual } from "../planner/pool_status.ts";

/** How a computed status differs from the stored one. */
export type StatusChange =
  /** Equal: nothing to write. */
  | "none"
  /** Only `lastResolvedTime` (and `nextTagResolutionTime`) moved. */
  | "heartbeat"
  /** Only counts, `slotsInUse` and condition messages (maybe `lastResolvedTime` too). */
  | "progress"
  /** Anything else. */
  | "significant";

/** Tunables of {@linkcode statusWriteDecision}. */
export interface CoalesceOptions {
  /** Least time between two progress-only writes of a pool (default 1 s). */
  windowMs: number;
  /** How long the first progress-only change waits for the rest of its burst (default 250 ms). */
  settleMs: number;
  /** Age of the stored `lastResolvedTime` that is worth a write of its own (default 60 s). */
  heartbeatMs: number;
}

/** Default {@linkcode CoalesceOptions}. */
export const DEFAULT_COALESCE: CoalesceOptions = {
  windowMs: 1_000,
  settleMs: 250,
  heartbeatMs: 60_000,
};

/** Fields that only report progress (recomputed from the caches on every reconcile). */
const PROGRESS_FIELDS = [
  "nodeCount",
  "updatedCount",
  "updatingCount",
  "degradedCount",
  "slotsInUse",
  // What views read (the slot limit and what sets it, the slot queue, the staging limit's
  // use, the UpToDate message's parts): nothing acts on them.
  "slots",
  "queue",
  "staging",
  "notes",
  // The hooks' last deliveries (controller/hooks/): reported, nothing acts on them.
  "hooks",
] as const;

/** The status without its progress fields, condition messages and (optionally) its poll times. */
function withoutProgress(
  status: BootcNodePoolStatus | undefined,
  dropResolvedTime: boolean,
): BootcNodePoolStatus {
  const out: Record<string, unknown> = { ...status };
  for (const f of PROGRESS_FIELDS) delete out[f];
  if (dropResolvedTime) {
    delete out.lastResolvedTime;
    delete out.nextTagResolutionTime;
  }
  if (status?.conditions) {
    out.conditions = status.conditions.map((c) => ({ ...c, message: "" }));
  }
  return out as BootcNodePoolStatus;
}

/** Classifies the difference between the stored status and the computed one. */
export function classifyStatusChange(
  stored: BootcNodePoolStatus | undefined,
  next: BootcNodePoolStatus,
): StatusChange {
  if (statusEqual(stored, next)) return "none";
  if (stored === undefined) return "significant";
  if (!statusEqual(withoutProgress(stored, true), withoutProgress(next, true))) {
    return "significant";
  }
  const noTimes = { lastResolvedTime: undefined, nextTagResolutionTime: undefined };
  const sameExceptTime = statusEqual({ ...stored, ...noTimes }, { ...next, ...noTimes });
  return sameExceptTime ? "heartbeat" : "progress";
}

/** Input of {@linkcode statusWriteDecision}. */
export interface StatusWriteInput {
  /** The status in the API (the cached pool's). */
  stored: BootcNodePoolStatus | undefined;
  /** The status this reconcile computed. */
  next: BootcNodePoolStatus;
  /** Now (epoch ms). */
  now: number;
  /** When this process last wrote the pool's status (epoch ms), if it has. */
  lastWriteAt?: number;
  /** When a progress-only change was first seen and deferred (epoch ms), if one is pending. */
  pendingSince?: number;
  options?: Partial<CoalesceOptions>;
}

/** What to do with a computed status. */
export type StatusWriteDecision =
  /** Nothing worth a write (equal, or a heartbeat that is not due). */
  | { kind: "skip"; change: StatusChange }
  /** Write it now. */
  | { kind: "write"; change: StatusChange }
  /** A progress-only change: reconcile again at `at` (epoch ms) and write then. */
  | { kind: "defer"; change: "progress"; at: number };

function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

/** True when the stored time differs from the new one and lags it by a heartbeat or more. */
function behind(stored: string | undefined, next: string | undefined, o: CoalesceOptions): boolean {
  if (stored === next) return false;
  const s = parseTime(stored);
  const n = parseTime(next);
  return s === undefined || n === undefined || Math.abs(n - s) >= o.heartbeatMs;
}

/** Decides whether (and when) to write a pool's computed status; see the module doc. */
export function statusWriteDecision(input: StatusWriteInput): StatusWriteDecision {
  const o = { ...DEFAULT_COALESCE, ...input.options };
  const change = classifyStatusChange(input.stored, input.next);
  switch (change) {
    case "none":
      return { kind: "skip", change };
    case "significant":
      return { kind: "write", change };
    case "heartbeat": {
      const due = behind(input.stored?.lastResolvedTime, input.next.lastResolvedTime, o) ||
        behind(input.stored?.nextTagResolutionTime, input.next.nextTagResolutionTime, o);
      return due ? { kind: "write", change } : { kind: "skip", change };
    }
    case "progress": {
      const settled = (input.pendingSince ?? input.now) + o.settleMs;
      const spaced = input.lastWriteAt === undefined ? 0 : input.lastWriteAt + o.windowMs;
      const at = Math.max(settled, spaced);
      return at <= input.now ? { kind: "write", change } : { kind: "defer", change, at };
    }
  }
}
