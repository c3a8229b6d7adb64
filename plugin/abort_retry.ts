/**
 * `abort POOL` and `retry POOL` as pure plans: the merge patch and the
 * sentence that says what it does, or why there is nothing to do.
 *
 * - **abort** stops the rollout and settles the pool on its last good image:
 *   while a rollout runs (or failed), `spec.image.ref` is pinned to the newest
 *   revision that succeeded (as `rollback` without `--to-revision`); when the
 *   pool already went back by itself (an automatic rollback's hold, or a failure
 *   record or open circuit keeping the spec's image out), it is pinned to the
 *   image the pool runs, which ends the hold and its `RolledBack`. A pool with
 *   no rollout to stop is refused.
 * - **retry** rolls a failed image out again and closes the circuit: it sets
 *   `bootc.dev/retry-revision` to the failed revision the pool moved on from
 *   (the controller then forgets that failure: its digest in
 *   `status.failedDigests`, the hold on it), and `bootc.dev/reset-circuit-breaker`
 *   when the circuit is open. A rollout halted in place (its newest revision
 *   failed under `onFailure: Halt` or `RollbackNode`) is refused with what to do.
 *
 * @module
 */
import { findCondition } from "../lib/api/conditions.ts";
import {
  ANNOTATION_RESET_CIRCUIT,
  ANNOTATION_RETRY_REVISION,
  PoolConditionType,
} from "../lib/api/constants.ts";
import type { Revision } from "../lib/api/schema.ts";
import { type ActionPlan, pinImage, planRollback } from "./actions.ts";
import { shortImage } from "./format.ts";
import type { BootcNodePool } from "./model.ts";
import { digestOf } from "./progress.ts";

/** UpToDate reasons that say the failure record keeps the spec's image out. */
const HELD_BACK = new Set(["RolledBack", "ImageFailedBefore", "CircuitOpen"]);

/** True when a failed revision ended badly. */
function failed(r: Revision | undefined): boolean {
  return r?.outcome === "Failed" || r?.outcome === "RolledBack";
}

/** Plans `abort POOL` (see the module doc). */
export function planAbort(pool: BootcNodePool): ActionPlan {
  const name = pool.metadata?.name ?? "";
  const s = pool.status;
  const ref = pool.spec?.image?.ref ?? "";
  const target = s?.targetImage;
  const settled = s?.targetDigest !== undefined && s.targetDigest === s.deployedDigest;
  const up = findCondition(s?.conditions, PoolConditionType.UpToDate);
  const hold = s?.rollbackHold && s.rollbackHold.ref === ref ? s.rollbackHold : undefined;
  const heldBack = hold !== undefined ||
    (settled && up?.status === "False" && HELD_BACK.has(up.reason));
  if (heldBack && target && ref !== target) {
    const pin = pinImage(pool, target);
    const from = hold ? ` of ${shortImage(hold.failedImage)}` : "";
    return {
      kind: "patch",
      patch: pin.patch,
      message: `pool ${name}: rollout${from} aborted; it stays on ${shortImage(target)}, the ` +
        `image it runs: ${pin.change}` + pin.tagNote,
    };
  }
  if (settled || !s?.targetDigest) {
    return {
      kind: "nothing",
      message: `nothing to abort: pool ${name} is not rolling out (it runs ` +
        `${shortImage(target) === "-" ? "no image yet" : shortImage(target)})`,
    };
  }
  const back = planRollback(pool, undefined, `pool ${name}: rollout aborted`);
  if (back.kind === "nothing") {
    return { kind: "nothing", message: `cannot abort: ${back.message}` };
  }
  return {
    kind: "patch",
    patch: back.patch,
    message: back.message,
  };
}

/**
 * The failed revision `retry` asks the controller to roll out again: the newest
 * one that failed and that the pool moved on from, and that is still on record
 * as failed (its digest in `status.failedDigests`, or the hold's failed image).
 */
export function retryableRevision(pool: BootcNodePool): Revision | undefined {
  const s = pool.status;
  const history = s?.history ?? [];
  const onRecord = new Set([
    ...(s?.failedDigests ?? []),
    ...(s?.rollbackHold ? [digestOf(s.rollbackHold.failedImage) ?? ""] : []),
  ]);
  for (let i = history.length - 2; i >= 0; i--) {
    const r = history[i];
    if (!failed(r) || !onRecord.has(r.digest)) continue;
    const later = history.slice(i + 1);
    if (!later.some((l) => l.digest === r.digest)) return r;
  }
  return undefined;
}

/** Plans `retry POOL` at `now` (see the module doc). */
export function planRetry(pool: BootcNodePool, now: Date): ActionPlan {
  const name = pool.metadata?.name ?? "";
  const s = pool.status;
  const circuitOpen =
    findCondition(s?.conditions, PoolConditionType.CircuitOpen)?.status === "True";
  const revision = retryableRevision(pool);
  const annotations: Record<string, string> = {};
  const said: string[] = [];
  if (revision) {
    annotations[ANNOTATION_RETRY_REVISION] = String(revision.revision);
    said.push(
      `retrying revision ${revision.revision} (${shortImage(revision.image)}): the controller ` +
        "forgets its failure and rolls it out again while spec.image.ref means it",
    );
  }
  if (circuitOpen) {
    annotations[ANNOTATION_RESET_CIRCUIT] = now.toISOString();
    said.push(
      `circuit breaker reset (${s?.consecutiveFailures ?? 0} failed rollouts in a row): ` +
        "automatic changes resume",
    );
  }
  if (said.length === 0) return { kind: "nothing", message: nothingToRetry(pool) };
  const versions = s?.channel?.failedVersions ?? [];
  return {
    kind: "patch",
    patch: { metadata: { annotations } },
    message: `pool ${name}: ${said.join("; ")}` +
      (versions.length > 0
        ? `. The channel's failed versions (${versions.join(", ")}) stay excluded.`
        : ""),
  };
}

/** Why `retry` has nothing to do: a rollout halted in place, or no failure at all. */
function nothingToRetry(pool: BootcNodePool): string {
  const name = pool.metadata?.name ?? "";
  const newest = pool.status?.history?.at(-1);
  if (failed(newest) && newest!.digest === pool.status?.targetDigest) {
    const policy = pool.spec?.rollout?.onFailure ?? "Halt";
    return `cannot retry: the rollout of ${shortImage(newest!.image)} (revision ` +
      `${newest!.revision}) is halted in place (onFailure ${policy}), not rolled back: fix the ` +
      `failed nodes (kubectl bootc status ${name} names them; kubectl bootc why NODE), or ` +
      `abort it (kubectl bootc abort ${name})`;
  }
  return `nothing to retry: pool ${name} has no failed image to roll out again and its ` +
    "circuit breaker is closed";
}
