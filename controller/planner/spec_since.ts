/**
 * A BootcNode spec change a plan makes carries the time it was made
 * (`bootc.dev/spec-since`, in the same write) when the node's daemon had
 * reported on the spec before it: the daemon has to report on the new spec
 * within `daemonReportTimeoutSeconds` of it (`stalled.ts`), whatever the change
 * (a new image, the reboot request, the release's revoke, a synced pull
 * Secret). Without it a release of a node that waited longer than that deadline
 * read as a silent daemon until the daemon acknowledged it. A daemon already
 * behind keeps its clock: a change made meanwhile never restarts it, so a dead
 * daemon is reported however often its spec changes.
 *
 * A spec change other than a release carrying its verdict removes the last
 * release's verdict (`bootc.dev/verified-for`/`-at`, lib/api/verified.ts) in the
 * same write, so it can never come back to life on a later spec.
 *
 * Every spec change also records the generation it produces
 * (`bootc.dev/spec-generation`): a spec someone else wrote after it (a hand edit
 * the plan reverts) is not held against a daemon that had reported on the
 * controller's (`daemonBehindController`), so the revert starts a clock of its own
 * and the edit never reads as a silent daemon. The exemption holds only in the
 * plan that writes the controller's spec back (`stalled.ts`): an edited record
 * alone never hides a silent daemon.
 *
 * @module
 */
import {
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_SPEC_SINCE,
  ANNOTATION_VERIFIED_AT,
  ANNOTATION_VERIFIED_FOR,
  ANNOTATION_VERIFIED_GENERATION,
  type BootcNode,
  daemonBehindController,
} from "../../lib/api/mod.ts";
import { formatTime } from "../model/slots.ts";
import type { Action, MergePatch } from "./plan.ts";

/** True when `patch` changes a field of `bn`'s spec. */
function changesSpec(bn: BootcNode, patch: MergePatch): boolean {
  const spec = bn.spec as unknown as Record<string, unknown>;
  return Object.entries(patch).some(([k, v]) =>
    JSON.stringify(spec[k] ?? null) !== JSON.stringify(v ?? null)
  );
}

/**
 * `actions` with each BootcNode patch that changes the spec (its BootcNode in
 * `bootcNodes`) stamped with the generation it produces, and with `now` when the
 * node's daemon had caught up with the controller's spec.
 */
export function stampSpecChanges(
  actions: readonly Action[],
  now: Date,
  bootcNodes: ReadonlyMap<string, BootcNode>,
): Action[] {
  // A node's k-th spec change in this plan produces the generation k after the cached one.
  const changes = new Map<string, number>();
  return actions.map((a) => {
    if (a.kind !== "patchBootcNode" || a.patch.spec === undefined) return a;
    const bn = bootcNodes.get(a.node);
    if (!bn || !changesSpec(bn, a.patch.spec as MergePatch)) return a;
    const k = (changes.get(a.node) ?? 0) + 1;
    changes.set(a.node, k);
    const metadata = (a.patch.metadata ?? {}) as MergePatch;
    const generation = String((bn.metadata.generation ?? 0) + k);
    const annotations: MergePatch = {
      ...(metadata.annotations as MergePatch | undefined),
      [ANNOTATION_SPEC_GENERATION]: generation,
    };
    // A release's verdict holds only while the release is the last spec change
    // (lib/api/verified.ts): it names its generation, and any other change takes it away.
    if (typeof annotations[ANNOTATION_VERIFIED_FOR] === "string") {
      annotations[ANNOTATION_VERIFIED_GENERATION] = generation;
    } else {
      const keys = [
        ANNOTATION_VERIFIED_FOR,
        ANNOTATION_VERIFIED_AT,
        ANNOTATION_VERIFIED_GENERATION,
      ];
      for (const key of keys) {
        if (bn.metadata.annotations?.[key] !== undefined) annotations[key] = null;
      }
    }
    if (!daemonBehindController(bn)) annotations[ANNOTATION_SPEC_SINCE] = formatTime(now);
    return { ...a, patch: { ...a.patch, metadata: { ...metadata, annotations } } };
  });
}
