/**
 * A pool's headline for people (`status.state`, the STATE column) and its
 * `UpToDate` condition, from one precedence table: the most important problem
 * first, then the gate the pool waits on, then how far the rollout got. The
 * Degraded condition names its most severe issue by the same table, so the
 * three never disagree.
 *
 * `UpToDate` is True only when every node runs the target and nothing keeps
 * the spec from being realised: an invalid spec, a tag that cannot be
 * resolved, a halted rollout, a rollback hold, a circuit or a failure record
 * that holds the spec's image back, and a matching node the pool cannot take
 * (another pool owns or contests it) all make it False, naming that reason.
 *
 * Kept free of the TypeBox schema so the plugin can import the table cheaply
 * (which states are problems, waits or progress: its colours and exit codes).
 *
 * @module
 */
import { PoolDegradedReason, UpToDateReason } from "./constants.ts";

/** The headline states a pool reports besides its Degraded reasons and gate reasons. */
export const PoolState = {
  /** The spec has errors the schema cannot catch (Degraded reason). */
  InvalidSpec: PoolDegradedReason.InvalidSpec,
  /** The pull Secret's content is malformed (Degraded reason). */
  PullSecretInvalid: PoolDegradedReason.PullSecretInvalid,
  /** The tag cannot be resolved (Degraded reason). */
  ImageResolutionFailed: PoolDegradedReason.ImageResolutionFailed,
  /** The candidate image's signature does not verify (Degraded reason). */
  SignatureInvalid: PoolDegradedReason.SignatureInvalid,
  /** The rollout of the target is halted: maxUnhealthy slot nodes unhealthy, or a failed check. */
  Halted: "Halted",
  /** The pool rolled back to its last good image by itself (onFailure: RollbackPool). */
  RolledBack: PoolDegradedReason.RolledBack,
  /** The circuit breaker is open: no automatic change until someone resets it. */
  CircuitOpen: "CircuitOpen",
  /** The spec's image failed its health checks before: it is not rolled out again. */
  ImageFailedBefore: "ImageFailedBefore",
  /** No target yet: the tag (or channel) has not been resolved. */
  Resolving: "Resolving",
  /** Nodes are downloading the target; none is staged or in a reboot slot yet. */
  Staging: "Staging",
  /** Nodes are staged, in reboot slots or being verified. */
  RollingOut: "RollingOut",
  /** Every node runs the target. */
  AllUpdated: UpToDateReason.AllUpdated,
} as const;

/** What kind of headline a state is: the plugin colours by it, CI fails on `problem`. */
export type PoolStateKind = "problem" | "waiting" | "progress" | "done";

/** One row of the precedence table. */
export interface ProblemRow {
  /** The headline (`status.state`). */
  state: string;
  /** The fact that raises it: a Degraded issue reason, or a fact of the failure record. */
  fact: string;
  /**
   * The UpToDate reason when this problem keeps the spec from being realised
   * (UpToDate is then False whatever the nodes run); undefined: it does not.
   */
  blocks?: string;
}

/** Facts that are no Degraded issue but rank in the table. */
export const PoolFact = {
  /** The rollout of the target is halted (an image gets no new slot). */
  Halted: "RolloutHalted",
  /** The circuit breaker is open. */
  CircuitOpen: "CircuitOpen",
  /** The circuit holds the spec's new image back. */
  CircuitHoldsTarget: "CircuitHoldsTarget",
  /** The spec's image failed before and is not rolled out again. */
  ImageFailedBefore: "ImageFailedBefore",
} as const;

/**
 * The problems, most important first. The first present is the headline; the
 * first present that `blocks` is the UpToDate reason. The Degraded condition
 * names the first of its issues in this order too ({@linkcode DEGRADED_ORDER}).
 */
export const PROBLEM_PRECEDENCE: readonly ProblemRow[] = [
  { state: PoolState.InvalidSpec, fact: PoolDegradedReason.InvalidSpec, blocks: "InvalidSpec" },
  { state: PoolState.PullSecretInvalid, fact: PoolDegradedReason.PullSecretInvalid },
  {
    state: PoolState.ImageResolutionFailed,
    fact: PoolDegradedReason.ImageResolutionFailed,
    blocks: "ImageResolutionFailed",
  },
  {
    state: PoolState.SignatureInvalid,
    fact: PoolDegradedReason.SignatureInvalid,
    blocks: "SignatureInvalid",
  },
  { state: PoolState.Halted, fact: PoolFact.Halted, blocks: "RolloutHalted" },
  { state: PoolState.RolledBack, fact: PoolDegradedReason.RolledBack, blocks: "RolledBack" },
  { state: PoolState.CircuitOpen, fact: PoolFact.CircuitHoldsTarget, blocks: "CircuitOpen" },
  { state: PoolState.CircuitOpen, fact: PoolFact.CircuitOpen },
  {
    state: PoolState.ImageFailedBefore,
    fact: PoolFact.ImageFailedBefore,
    blocks: "ImageFailedBefore",
  },
  { state: PoolDegradedReason.HealthCheckFailed, fact: PoolDegradedReason.HealthCheckFailed },
  // A node the selector matches that this pool cannot take does not run the target.
  {
    state: PoolDegradedReason.NodeConflict,
    fact: PoolDegradedReason.NodeConflict,
    blocks: "NodeConflict",
  },
  { state: PoolDegradedReason.NodeStalled, fact: PoolDegradedReason.NodeStalled },
  { state: PoolDegradedReason.NodeDegraded, fact: PoolDegradedReason.NodeDegraded },
  {
    state: PoolDegradedReason.ApprovalWebhookFailing,
    fact: PoolDegradedReason.ApprovalWebhookFailing,
  },
  {
    state: PoolDegradedReason.PreconditionFailing,
    fact: PoolDegradedReason.PreconditionFailing,
  },
  // Said by the shell (controller/shell/writes_failing.ts), never over another problem.
  { state: PoolDegradedReason.WritesFailing, fact: PoolDegradedReason.WritesFailing },
];

/** The Degraded reasons, most severe first: the table's order of the Degraded issues. */
export const DEGRADED_ORDER: readonly string[] = PROBLEM_PRECEDENCE
  .map((r) => r.fact === PoolFact.Halted ? PoolDegradedReason.RolloutHalted : r.fact)
  .filter((f) => (Object.values(PoolDegradedReason) as string[]).includes(f));

/** How far the rollout got: the pool's node counts. */
export interface PoolProgress {
  /** False while no target is known (the tag or channel not resolved yet). */
  resolved: boolean;
  nodes: number;
  updated: number;
  /** Nodes staged, in a reboot slot, rebooting or being verified. */
  underway: number;
}

/** What {@linkcode poolState} decides from. */
export interface PoolStateFacts {
  /** The Degraded issues' reasons and the {@linkcode PoolFact}s that hold (any order). */
  facts: readonly string[];
  /** The reason of the gate that holds reboots back, if one does (its gate order decided). */
  waitReason?: string;
  /** `spec.rollout.paused`. */
  paused: boolean;
  progress: PoolProgress;
}

/** The headline and the UpToDate condition's status and reason. */
export interface PoolStateVerdict {
  state: string;
  kind: PoolStateKind;
  upToDate: boolean;
  /** The UpToDate reason: AllUpdated, a blocking problem, the gate, Paused or RolloutInProgress. */
  reason: string;
}

/** The pool's headline and UpToDate verdict (see the module documentation). Pure. */
export function poolState(f: PoolStateFacts): PoolStateVerdict {
  const present = new Set(f.facts);
  const problem = PROBLEM_PRECEDENCE.find((r) => present.has(r.fact));
  const blocking = PROBLEM_PRECEDENCE.find((r) => r.blocks && present.has(r.fact));
  const p = f.progress;
  const allUpdated = p.resolved && p.updated === p.nodes;
  if (allUpdated && !blocking) {
    return problem
      ? { state: problem.state, kind: "problem", upToDate: true, reason: UpToDateReason.AllUpdated }
      : { state: PoolState.AllUpdated, kind: "done", upToDate: true, reason: PoolState.AllUpdated };
  }
  const reason = blocking?.blocks ?? f.waitReason ??
    (f.paused ? UpToDateReason.Paused : UpToDateReason.RolloutInProgress);
  if (problem) return { state: problem.state, kind: "problem", upToDate: false, reason };
  if (f.waitReason) return { state: f.waitReason, kind: "waiting", upToDate: false, reason };
  if (!p.resolved) return { state: PoolState.Resolving, kind: "progress", upToDate: false, reason };
  if (f.paused) return { state: UpToDateReason.Paused, kind: "waiting", upToDate: false, reason };
  const state = p.underway > 0 ? PoolState.RollingOut : PoolState.Staging;
  return { state, kind: "progress", upToDate: false, reason };
}

/**
 * The kind of a `status.state` value as a reader sees it: a problem of the
 * table, done, progress, else a gate's wait.
 */
export function poolStateKind(state: string | undefined): PoolStateKind | undefined {
  if (state === undefined) return undefined;
  if (PROBLEM_PRECEDENCE.some((r) => r.state === state)) return "problem";
  if (state === PoolState.AllUpdated) return "done";
  const progress: string[] = [PoolState.Resolving, PoolState.Staging, PoolState.RollingOut];
  return progress.includes(state) ? "progress" : "waiting";
}
