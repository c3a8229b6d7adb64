/**
 * The pool's revision history (`status.history`): one entry per target the pool
 * rolled out, with when it started and ended and how it ended. Pure; the
 * planner hands in what this plan found.
 *
 * @module
 */
import { type Revision, RevisionOutcome } from "../../lib/api/mod.ts";
import { formatTime } from "../model/slots.ts";
import type { Target } from "../model/types.ts";

/** Most revisions kept. */
export const MAX_HISTORY = 10;

/** What happened to the current revision in this plan. */
export interface HistoryInput {
  prior: readonly Revision[] | undefined;
  /** The target rolled out now (undefined: nothing yet). */
  target?: Target;
  /** Every member runs the target, verified, and none is in flight. */
  complete: boolean;
  /** The target failed: RolledBack (pool rollback) or Failed (halted). */
  failed?: { outcome: "RolledBack" | "Failed"; message: string };
  /** A note for a new revision (e.g. "automatic rollback from revision 3"). */
  note?: string;
  /** The target's signature verdict, recorded on a new revision. */
  signature?: string;
  now: Date;
}

/**
 * The revision number of `target`: the newest revision's when it rolls the same
 * image out, else the next number (the revision this plan starts). The one
 * place revisions are numbered (the approval gate asks about it).
 */
export function currentRevision(prior: readonly Revision[] | undefined, target: Target): number {
  const last = prior?.at(-1);
  if (last && last.image === target.image) return last.revision;
  return Math.max(0, ...(prior ?? []).map((r) => r.revision)) + 1;
}

/** The history after this plan. */
export function nextHistory(input: HistoryInput): Revision[] {
  const list = [...(input.prior ?? [])];
  const now = formatTime(input.now);
  if (!input.target) return list;
  let last = list.at(-1);
  if (!last || last.image !== input.target.image) {
    if (last && last.outcome === RevisionOutcome.Progressing) {
      list[list.length - 1] = { ...last, outcome: RevisionOutcome.Superseded, endedAt: now };
    }
    const revision = currentRevision(list, input.target);
    last = {
      revision,
      image: input.target.image,
      digest: input.target.digest,
      startedAt: now,
      outcome: RevisionOutcome.Progressing,
      ...(input.note ? { message: input.note } : {}),
      ...(input.signature ? { signature: input.signature } : {}),
    };
    list.push(last);
  }
  const i = list.length - 1;
  if (input.failed && last.outcome !== input.failed.outcome && last.outcome !== "RolledBack") {
    list[i] = {
      ...last,
      outcome: input.failed.outcome,
      endedAt: now,
      message: input.failed.message,
    };
  } else if (
    input.complete && !input.failed &&
    (last.outcome === RevisionOutcome.Progressing || last.outcome === RevisionOutcome.Failed)
  ) {
    const { message: _m, ...rest } = last;
    list[i] = {
      ...rest,
      outcome: RevisionOutcome.Succeeded,
      endedAt: now,
      ...(last.outcome === RevisionOutcome.Progressing && last.message
        ? { message: last.message }
        : {}),
    };
  }
  return list.slice(-MAX_HISTORY);
}

/** The image of the newest revision that succeeded, other than `except`. */
export function lastGoodImage(
  history: readonly Revision[] | undefined,
  except?: string,
): Revision | undefined {
  return [...(history ?? [])].reverse().find((r) =>
    r.outcome === RevisionOutcome.Succeeded && r.image !== except
  );
}
