/**
 * `approve POOL [--revision N]` as a pure plan: the merge patch that sets
 * `bootc.dev/approve-revision` to the pool's current rollout revision (the
 * approval gate, `spec.rollout.approval`), and the sentence that says what it
 * does, or why there is nothing to do. A revision other than the current one
 * is refused: approving it would approve nothing (or, raced by a new target,
 * something the person did not look at), so the patch also carries the pool's
 * resourceVersion.
 *
 * @module
 */
import { ANNOTATION_APPROVE_REVISION } from "../lib/api/constants.ts";
import type { ActionPlan } from "./actions.ts";
import { shortImage } from "./format.ts";
import type { BootcNodePool } from "./model.ts";

/** The pool's current rollout revision and its image, as its status says. */
export function currentRevision(
  pool: BootcNodePool,
): { revision: number; image: string } | undefined {
  const s = pool.status;
  if (s?.approval) return { revision: s.approval.revision, image: s.approval.image };
  const last = s?.history?.at(-1);
  return last && last.image === s?.targetImage
    ? { revision: last.revision, image: last.image }
    : undefined;
}

/** Plans `approve POOL [--revision N]` (see the module doc). */
export function planApprove(pool: BootcNodePool, revision?: number): ActionPlan {
  const name = pool.metadata?.name ?? "";
  const spec = pool.spec?.rollout?.approval;
  if (!spec) {
    return {
      kind: "nothing",
      message: `nothing to approve: pool ${name} asks for no approval (spec.rollout.approval ` +
        "is not set)",
    };
  }
  const current = currentRevision(pool);
  if (!current) {
    return {
      kind: "nothing",
      message: `nothing to approve yet: pool ${name} has no rollout revision (its target is ` +
        "not resolved yet); try again once kubectl bootc status shows one",
    };
  }
  const image = shortImage(current.image);
  if (revision !== undefined && revision !== current.revision) {
    return {
      kind: "nothing",
      message: `cannot approve revision ${revision}: pool ${name}'s current revision is ` +
        `${current.revision} (${image}); approve that one with kubectl bootc approve ${name} ` +
        `--revision ${current.revision}`,
    };
  }
  const record = pool.status?.approval;
  const recorded = record?.revision === current.revision ? record : undefined;
  if (recorded?.verdict === "Approved" || recorded?.verdict === "NotRequired") {
    return {
      kind: "nothing",
      message: `nothing to approve: revision ${current.revision} (${image}) of pool ${name} is ` +
        `already approved${recorded.message ? ` (${recorded.message})` : ""}`,
    };
  }
  const overrules = recorded?.verdict === "Refused"
    ? `; this overrules the webhook's refusal (${recorded.message ?? "no message"})`
    : spec.mode === "Webhook"
    ? "; this approves it without waiting for the webhook"
    : "";
  const rv = pool.metadata?.resourceVersion;
  return {
    kind: "patch",
    patch: {
      metadata: {
        ...(rv ? { resourceVersion: rv } : {}),
        annotations: { [ANNOTATION_APPROVE_REVISION]: String(current.revision) },
      },
    },
    message: `pool ${name}: revision ${current.revision} (${image}) approved ` +
      `(${ANNOTATION_APPROVE_REVISION}=${current.revision}): its nodes may take reboot slots` +
      overrules,
  };
}
