/**
 * What a pool does when a node fails its health checks (`spec.rollout.onFailure`),
 * the circuit breaker, and the target the pool really rolls out given its
 * failure record. Pure functions of the pool and what the plan found.
 *
 * - `Halt`: the failed node keeps its slot and no other node gets one for the image.
 * - `RollbackNode`: the failed node goes back to the last good image (bootc
 *   rollback, through a slot and a drain like any reboot), is not retried on the
 *   failed image, and the pool takes no new slot for that image.
 * - `RollbackPool`: the pool goes back to its last good image everywhere; the
 *   failed digest is recorded and never chosen again automatically. The spec is
 *   the user's and is not rewritten: `status.rollbackHold` keeps the pool on the
 *   good image while `spec.image.ref` is unchanged and still means the failure.
 *
 * Every failed rollout counts; `maxRollbacks` in a row open the circuit: no
 * automatic change (no automatic rollback, no tag move adopted) until a user
 * sets the reset annotation. A user's retry annotation forgets one failed
 * revision, so its image is rolled out again (`retriedRevision`).
 *
 * @module
 */
import {
  ANNOTATION_RESET_CIRCUIT,
  ANNOTATION_RETRY_REVISION,
  type BootcNodePool,
  type BootcNodePoolStatus,
  type OnFailure,
  PoolFact,
  type Revision,
} from "../../lib/api/mod.ts";
import { digestOfPullspec, splitImageRef } from "../model/image_ref.ts";
import { shortDigest, shortReference } from "../../lib/api/display.ts";
import { formatTime } from "../model/slots.ts";
import type { Target } from "../model/types.ts";

/** Default `spec.rollout.maxRollbacks`. */
export const DEFAULT_MAX_ROLLBACKS = 3;

/** A node that failed its health checks on the target. */
export interface HealthFailure {
  node: string;
  message: string;
}

/** The pool's failure bookkeeping (a slice of its status). */
export interface FailureRecord {
  failedDigests: string[];
  consecutiveFailures: number;
  circuitReset?: string;
  rollbackHold?: BootcNodePoolStatus["rollbackHold"];
  /** The failed revision a user's retry forgives in this plan (see {@linkcode retriedRevision}). */
  retried?: Revision;
}

/**
 * The record as the pool's status holds it, with a user's requests applied: a
 * new circuit reset zeroes the count; a retry that still applies forgets its
 * revision's failure (the digest leaves `failedDigests`, a hold on it ends).
 */
export function failureRecord(pool: BootcNodePool): FailureRecord {
  const s = pool.status;
  const reset = pool.metadata.annotations?.[ANNOTATION_RESET_CIRCUIT];
  const record: FailureRecord = {
    failedDigests: [...(s?.failedDigests ?? [])],
    consecutiveFailures: s?.consecutiveFailures ?? 0,
    circuitReset: s?.circuitReset,
    rollbackHold: s?.rollbackHold,
  };
  if (reset !== undefined && reset !== s?.circuitReset) {
    record.consecutiveFailures = 0;
    record.circuitReset = reset;
  }
  const retried = retriedRevision(pool);
  if (retried) {
    record.retried = retried;
    record.failedDigests = record.failedDigests.filter((d) => d !== retried.digest);
    const held = record.rollbackHold;
    if (held && digestOfPullspec(held.failedImage) === retried.digest) {
      record.rollbackHold = undefined;
    }
  }
  return record;
}

/**
 * The revision a user asked to roll out again (annotation
 * {@linkcode ANNOTATION_RETRY_REVISION}: its number), while the request still
 * applies: that revision failed (Failed or RolledBack), the pool moved on to a
 * later revision, and no later one rolled its digest out again. Level-triggered
 * without a record of its own: the revision that rolls the digest out again ends
 * it, so a second failure of the same image counts and holds as the first did.
 * A failure on the newest revision (halted in place) is not retried this way:
 * forgetting it would record it again at once.
 */
export function retriedRevision(pool: BootcNodePool): Revision | undefined {
  const raw = pool.metadata.annotations?.[ANNOTATION_RETRY_REVISION]?.trim();
  if (!raw || !/^\d+$/.test(raw)) return undefined;
  const history = pool.status?.history ?? [];
  const revision = history.find((r) => r.revision === Number(raw));
  if (!revision) return undefined;
  if (revision.outcome !== "Failed" && revision.outcome !== "RolledBack") return undefined;
  const later = history.filter((r) => r.revision > revision.revision);
  if (later.length === 0 || later.some((r) => r.digest === revision.digest)) return undefined;
  return revision;
}

/** The history message of the revision a retry starts. */
export function retryNote(revision: Revision): string {
  return `retry of revision ${revision.revision} (${ANNOTATION_RETRY_REVISION})`;
}

/** `spec.rollout.maxRollbacks` with its default. */
export function maxRollbacks(pool: BootcNodePool): number {
  return pool.spec.rollout?.maxRollbacks ?? DEFAULT_MAX_ROLLBACKS;
}

/** True when the circuit is open. */
export function circuitOpen(pool: BootcNodePool, record: FailureRecord): boolean {
  return record.consecutiveFailures >= maxRollbacks(pool);
}

/** The target to roll out, after the failure record had its say. */
export interface EffectiveTarget {
  target?: Target;
  /** True when the target is an automatic rollback (no canary needed). */
  rollback: boolean;
  /** Why the spec's target is not rolled out, for the pool's message. */
  note?: string;
  /** The hold to keep in status (undefined: none). */
  hold?: FailureRecord["rollbackHold"];
  /**
   * Why the spec's new image is not the target, when the record holds it back: it
   * failed before, or the circuit is open (`PoolFact`, ranked in `lib/api/pool_state.ts`).
   */
  heldBack?: typeof PoolFact.ImageFailedBefore | typeof PoolFact.CircuitHoldsTarget;
}

/**
 * The target after the failure record: a hold keeps the pool on its good image
 * while the spec still means the failed one; a tag that resolves to a failed
 * digest, or (circuit open) moved by itself, does not move the pool.
 */
export function effectiveTarget(options: {
  pool: BootcNodePool;
  /** What the spec resolves to now. */
  specTarget: Target | undefined;
  /** What the pool rolled out so far (status). */
  priorTarget: Target | undefined;
  record: FailureRecord;
}): EffectiveTarget {
  const { pool, specTarget, priorTarget, record } = options;
  const ref = pool.spec.image.ref ?? "";
  const hold = record.rollbackHold ?? heldByHistory(pool, specTarget, record);
  if (hold && hold.ref === ref && (!specTarget || specTarget.image === hold.failedImage)) {
    const digest = digestOfPullspec(hold.image) ?? "";
    return {
      target: { image: hold.image, digest },
      rollback: true,
      hold,
      note:
        `rolled back to ${shortReference(hold.image)} after ${
          shortReference(hold.failedImage)
        } failed; change ` +
        `spec.image.ref to roll out something else`,
    };
  }
  if (!specTarget) return { target: priorTarget, rollback: false };
  let pinned = false;
  try {
    pinned = splitImageRef(ref).digest !== undefined;
  } catch {
    pinned = false;
  }
  const stay = priorTarget && priorTarget.image !== specTarget.image &&
      !record.failedDigests.includes(priorTarget.digest)
    ? priorTarget
    : undefined;
  if (!pinned && record.failedDigests.includes(specTarget.digest)) {
    return {
      target: stay ?? priorTarget,
      rollback: false,
      heldBack: PoolFact.ImageFailedBefore,
      note:
        `${ref} resolves to sha256:${
          shortDigest(specTarget.digest)
        }, which failed its health checks before; ` +
        `not rolled out again`,
    };
  }
  const specUnchanged = pool.metadata.generation !== undefined &&
    pool.metadata.generation === pool.status?.observedGeneration;
  if (stay && specUnchanged && !pinned && circuitOpen(pool, record)) {
    return {
      target: stay,
      rollback: false,
      heldBack: PoolFact.CircuitHoldsTarget,
      note:
        `circuit open: ${ref} now resolves to sha256:${
          shortDigest(specTarget.digest)
        }; not rolled out until ` +
        `the circuit is reset (annotate the pool with ${ANNOTATION_RESET_CIRCUIT})`,
    };
  }
  return { target: specTarget, rollback: false };
}

/**
 * A hold rebuilt from the history when `status.rollbackHold` was lost (edited away):
 * the newest revision is the automatic rollback from the very image the spec still
 * names, and that image's digest is recorded as failed.
 */
function heldByHistory(
  pool: BootcNodePool,
  specTarget: Target | undefined,
  record: FailureRecord,
): FailureRecord["rollbackHold"] {
  if (!specTarget || !record.failedDigests.includes(specTarget.digest)) return undefined;
  const last = pool.status?.history?.at(-1);
  if (!last || last.message !== rollbackNote(specTarget.image)) return undefined;
  return {
    ref: pool.spec.image.ref ?? "",
    failedImage: specTarget.image,
    image: last.image,
    at: last.startedAt,
  };
}

/** The history message of the revision an automatic rollback from `failedImage` starts. */
export function rollbackNote(failedImage: string): string {
  return `automatic rollback after ${failedImage} failed`;
}

/** What the pool does about health failures on its target. */
export type FailureResponse =
  | { kind: "halt"; message: string }
  | { kind: "rollbackNodes"; nodes: string[]; to: string; message: string }
  | { kind: "rollbackPool"; to: string; message: string };

/** Decides the response to `failures` on `target` under the pool's `onFailure`. */
export function respondToFailure(options: {
  pool: BootcNodePool;
  target: Target;
  failures: readonly HealthFailure[];
  /** The last image that succeeded (other than the target), if any. */
  lastGood?: string;
  record: FailureRecord;
}): FailureResponse {
  const { pool, target, failures, lastGood, record } = options;
  const policy: OnFailure = pool.spec.rollout?.onFailure ?? "Halt";
  const what = failures.map((f) => f.message).join("; ");
  const image = shortReference(target.image);
  const good = lastGood && shortReference(lastGood);
  if (policy === "Halt") {
    return { kind: "halt", message: `${what}; the rollout of ${image} is halted` };
  }
  if (!lastGood) {
    return {
      kind: "halt",
      message: `${what}; no earlier image succeeded in this pool, so nothing to roll back ` +
        `to: the rollout of ${image} is halted`,
    };
  }
  if (policy === "RollbackNode") {
    return {
      kind: "rollbackNodes",
      nodes: failures.map((f) => f.node),
      to: lastGood,
      message: `${what}; rolling ${failures.map((f) => f.node).join(", ")} back to ${good}; ` +
        `the rollout of ${image} is halted`,
    };
  }
  if (circuitOpen(pool, record)) {
    return {
      kind: "halt",
      message: `${what}; the circuit is open (${record.consecutiveFailures} failed rollouts ` +
        `in a row), so no automatic rollback: the rollout of ${image} is halted`,
    };
  }
  return {
    kind: "rollbackPool",
    to: lastGood,
    message: `${what}; rolling the pool back to ${good}`,
  };
}

/** The record after a failed rollout of `target` (counted once per target). */
export function recordFailure(
  record: FailureRecord,
  target: Target,
  alreadyCounted: boolean,
  hold?: { ref: string; image: string; now: Date },
): FailureRecord {
  const next = { ...record, failedDigests: [...record.failedDigests] };
  if (!next.failedDigests.includes(target.digest)) next.failedDigests.push(target.digest);
  next.failedDigests = next.failedDigests.slice(-32);
  if (!alreadyCounted) next.consecutiveFailures++;
  if (hold) {
    next.rollbackHold = {
      ref: hold.ref,
      failedImage: target.image,
      image: hold.image,
      at: formatTime(hold.now),
    };
  }
  return next;
}
