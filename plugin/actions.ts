/**
 * The writes of `pause`, `resume` and `rollback`, as pure functions from the
 * pool to a merge patch and the sentence that says what it does.
 *
 * `rollback` before revision history exists (issue 14): the only earlier
 * digest the API records is `status.deployedDigest`, the last one fully rolled
 * out. Rolling back pins `spec.image.ref` to it, in the target's repository.
 *
 * @module
 */
import { shortDigest } from "./format.ts";
import type { BootcNodePool } from "./model.ts";

/** The merge patch that pauses or resumes a pool. */
export function pausePatch(paused: boolean): Record<string, unknown> {
  return { spec: { rollout: { paused } } };
}

/** What `pause`/`resume` did, from the pool as it was before the patch. */
export function pauseMessage(before: BootcNodePool, paused: boolean): string {
  const name = before.metadata?.name ?? "";
  const was = before.spec?.rollout?.paused ?? false;
  if (paused) {
    return was
      ? `pool ${name} was already paused`
      : `pool ${name} paused: no new reboot slots are handed out (staging goes on; nodes already ` +
        "in a slot finish)";
  }
  return was
    ? `pool ${name} resumed: reboot slots are handed out again`
    : `pool ${name} was not paused`;
}

/** The answer of {@linkcode planRollback}. */
export type RollbackPlan =
  | { kind: "patch"; patch: Record<string, unknown>; ref: string; message: string }
  | { kind: "nothing"; message: string };

/** The repository of an image reference (no tag, no digest). */
export function repositoryOf(ref: string): string {
  const noDigest = ref.replace(/@sha256:[a-f0-9]{64}$/, "");
  const slash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

/** Plans `rollback POOL` (see the module doc). */
export function planRollback(pool: BootcNodePool): RollbackPlan {
  const name = pool.metadata?.name ?? "";
  const target = pool.status?.targetDigest;
  const deployed = pool.status?.deployedDigest;
  const current = pool.spec?.image?.ref ?? "";
  if (!deployed) {
    return {
      kind: "nothing",
      message: `nothing to roll back to: pool ${name} has never fully rolled out an image ` +
        "(status.deployedDigest is empty)",
    };
  }
  if (!target || target === deployed) {
    return {
      kind: "nothing",
      message:
        `nothing to roll back to: pool ${name} already targets ${
          shortDigest(deployed)
        }, the last digest it fully rolled out; earlier ones are not recorded until revision ` +
        "history exists (issue 14)",
    };
  }
  const ref = `${repositoryOf(pool.status?.targetImage ?? current)}@${deployed}`;
  // A tag ref (no digest) was followed by the controller; a pinned digest stops that.
  const tag = !current.includes("@") && /:[^/]+$/.test(current) ? current : undefined;
  return {
    kind: "patch",
    // The resourceVersion makes the write conditional: a pool changed since it was read
    // is refused (409) instead of silently overwritten.
    patch: {
      metadata: { resourceVersion: pool.metadata?.resourceVersion },
      spec: { image: { ref } },
    },
    ref,
    message: `pool ${name} rolled back: spec.image.ref ${current} → ${ref} (the last digest ` +
      `fully rolled out; the rollout of ${shortDigest(target)} stops there)` +
      (tag ? `. The pool no longer follows ${tag}; set spec.image.ref back to it to resume.` : ""),
  };
}

/** What `history POOL` prints until revision history exists. */
export function historyMessage(pool: BootcNodePool): string {
  const name = pool.metadata?.name ?? "";
  return [
    `revision history is not available yet (issue 14: health checks and rollback).`,
    `pool ${name}: target ${pool.status?.targetImage ?? "(not resolved)"}`,
    `  last fully rolled out: ${pool.status?.deployedDigest ?? "(none)"}`,
    `\`kubectl bootc rollback ${name}\` pins spec.image.ref to the last fully rolled-out digest.`,
  ].join("\n");
}
