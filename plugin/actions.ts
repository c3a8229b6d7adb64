/**
 * The writes of `pause`, `resume` and `rollback`, as pure functions from the
 * pool to a merge patch and the sentence that says what it does.
 *
 * `rollback` pins `spec.image.ref` to an earlier revision's digest-pinned image
 * from `status.history`: the one `--to-revision` names, else the newest one
 * that succeeded (falling back to `status.deployedDigest` for pools whose
 * history is empty). It is the user's spec change, made for them.
 *
 * @module
 */
import { isConflict } from "../lib/kube/errors.ts";
import { shortDigest, shortImage } from "./format.ts";
import type { Revision } from "../lib/api/schema.ts";
import type { BootcNodePool } from "./model.ts";

/** Reads and conditional writes `rollback` tries before a conflict is reported. */
export const ROLLBACK_ATTEMPTS = 5;

/** A planned write: a merge patch and what it does, or why there is nothing to write. */
export type ActionPlan =
  | { kind: "patch"; patch: Record<string, unknown>; message: string }
  | { kind: "nothing"; message: string };

/**
 * Reads the pool, plans, and writes the plan's conditional patch. The controller
 * writes the pool's status often, so a conflict means: read again and decide
 * again (never overwrite blindly). Used by `rollback`, `abort` and `retry`.
 */
export async function planAndPatch(options: {
  get: () => Promise<BootcNodePool>;
  patch: (patch: Record<string, unknown>) => Promise<unknown>;
  plan: (pool: BootcNodePool) => ActionPlan;
  attempts?: number;
}): Promise<{ ok: boolean; message: string }> {
  const attempts = options.attempts ?? ROLLBACK_ATTEMPTS;
  for (let attempt = 1;; attempt++) {
    const plan = options.plan(await options.get());
    if (plan.kind === "nothing") return { ok: false, message: plan.message };
    try {
      await options.patch(plan.patch);
      return { ok: true, message: plan.message };
    } catch (e) {
      if (!isConflict(e) || attempt >= attempts) throw e;
    }
  }
}

/** `rollback POOL [--to-revision N]` (see {@linkcode planAndPatch}). */
export function rollback(options: {
  get: () => Promise<BootcNodePool>;
  patch: (patch: Record<string, unknown>) => Promise<unknown>;
  toRevision?: number;
  attempts?: number;
}): Promise<{ ok: boolean; message: string }> {
  return planAndPatch({ ...options, plan: (pool) => planRollback(pool, options.toRevision) });
}

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

/**
 * Plans `rollback POOL [--to-revision N]` (see the module doc); `done` heads the
 * message of a patch (`abort` says the rollout was aborted).
 */
export function planRollback(
  pool: BootcNodePool,
  toRevision?: number,
  done = `pool ${pool.metadata?.name ?? ""} rolled back`,
): RollbackPlan {
  const name = pool.metadata?.name ?? "";
  const history = pool.status?.history ?? [];
  const target = pool.status?.targetDigest;
  const current = pool.spec?.image?.ref ?? "";
  let to: { image: string; digest: string; why: string } | undefined;
  if (toRevision !== undefined) {
    const r = history.find((h) => h.revision === toRevision);
    if (!r) {
      const known = history.map((h) => h.revision).join(", ") || "none";
      return {
        kind: "nothing",
        message: `pool ${name} has no revision ${toRevision} in its history (revisions: ${known})`,
      };
    }
    to = { image: r.image, digest: r.digest, why: `revision ${r.revision}, ${r.outcome}` };
  } else {
    const good = [...history].reverse().find((h) =>
      h.outcome === "Succeeded" && h.digest !== target
    );
    if (good) {
      to = {
        image: good.image,
        digest: good.digest,
        why: `revision ${good.revision}, the last one that succeeded`,
      };
    } else if (pool.status?.deployedDigest && pool.status.deployedDigest !== target) {
      const d = pool.status.deployedDigest;
      to = {
        image: `${repositoryOf(pool.status?.targetImage ?? current)}@${d}`,
        digest: d,
        why: "the last digest fully rolled out",
      };
    }
  }
  if (!to) {
    return {
      kind: "nothing",
      message: `nothing to roll back to: pool ${name} has no earlier revision that succeeded ` +
        `(see kubectl bootc history ${name})`,
    };
  }
  if (to.digest === target && current === to.image) {
    return { kind: "nothing", message: `pool ${name} already targets ${to.image}` };
  }
  const pin = pinImage(pool, to.image);
  return {
    kind: "patch",
    patch: pin.patch,
    ref: to.image,
    message: `${done}: ${pin.change} (${to.why}` +
      (target && target !== to.digest
        ? `; the rollout of ${shortDigest(target)} stops there`
        : "") +
      ")" + pin.tagNote,
  };
}

/**
 * The conditional merge patch that pins `spec.image.ref` to `ref`, the change in
 * words, and a note when the pool followed a tag (it no longer does).
 */
export function pinImage(
  pool: BootcNodePool,
  ref: string,
): { kind: "patch"; patch: Record<string, unknown>; change: string; tagNote: string } {
  const current = pool.spec?.image?.ref ?? "";
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
    change: `spec.image.ref ${current} → ${ref}`,
    tagNote: tag
      ? `. The pool no longer follows ${tag}; set spec.image.ref back to it to resume.`
      : "",
  };
}

/**
 * The revision the pool rolls out or runs now: the newest one whose digest is
 * the target (an image rolled out again has an older revision of the same
 * digest; only the newest is current).
 */
export function currentRevision(pool: BootcNodePool): Revision | undefined {
  const target = pool.status?.targetDigest;
  return target ? pool.status?.history?.findLast((h) => h.digest === target) : undefined;
}

/** `history POOL`: the pool's revisions, newest last, and its failure record. */
export function historyMessage(pool: BootcNodePool): string {
  const name = pool.metadata?.name ?? "";
  const s = pool.status;
  const history = s?.history ?? [];
  if (history.length === 0) {
    return `pool ${name} has no revision history yet (target ${s?.targetImage ?? "not resolved"})`;
  }
  const current = currentRevision(pool);
  const rows = history.map((h) => [
    String(h.revision) + (h.revision === current?.revision ? "*" : ""),
    h.outcome,
    h.startedAt,
    h.endedAt ?? "-",
    shortDigest(h.digest),
    h.message ?? "",
  ]);
  const head = ["REVISION", "OUTCOME", "STARTED", "ENDED", "DIGEST", "MESSAGE"];
  const widths = head.map((t, i) => Math.max(t.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd();
  const out = [line(head), ...rows.map(line)];
  out.push(
    current
      ? `* the current revision: ${shortImage(s?.targetImage)}`
      : `no revision is the current target (${shortImage(s?.targetImage)}) yet`,
  );
  if (s?.failedDigests?.length) {
    out.push(
      `failed digests (never chosen again automatically): ${
        s.failedDigests.map(shortDigest).join(", ")
      }`,
    );
  }
  const circuit = s?.conditions?.find((c) => c.type === "CircuitOpen");
  if (circuit?.status === "True") out.push(`circuit open: ${circuit.message}`);
  else if (s?.consecutiveFailures) {
    out.push(`consecutive failed rollouts: ${s.consecutiveFailures}`);
  }
  if (s?.rollbackHold) {
    out.push(
      `automatic rollback holds: ${s.rollbackHold.failedImage} failed, running ` +
        `${s.rollbackHold.image} until spec.image.ref changes`,
    );
  }
  out.push(
    `roll back with: kubectl bootc rollback ${name} [--to-revision N] (or abort ${name}); ` +
      `roll a failed image out again with: kubectl bootc retry ${name}`,
  );
  return out.join("\n");
}
