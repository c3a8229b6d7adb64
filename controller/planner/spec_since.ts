/**
 * Every BootcNode spec change a plan makes carries the time it was made
 * (`bootc.dev/spec-since`, in the same write): the daemon has to report on a
 * new spec within `daemonReportTimeoutSeconds` of it (`stalled.ts`), whatever
 * the change (a new image, the reboot request, the release's revoke, a synced
 * pull Secret). Without it a release of a node that waited longer than that
 * deadline read as a silent daemon until the daemon acknowledged it.
 *
 * @module
 */
import { ANNOTATION_SPEC_SINCE } from "../../lib/api/mod.ts";
import { formatTime } from "../model/slots.ts";
import type { Action, MergePatch } from "./plan.ts";

/** `actions` with each BootcNode patch that changes the spec stamped with `now`. */
export function stampSpecChanges(actions: readonly Action[], now: Date): Action[] {
  return actions.map((a) => {
    if (a.kind !== "patchBootcNode" || a.patch.spec === undefined) return a;
    const metadata = (a.patch.metadata ?? {}) as MergePatch;
    const annotations = {
      ...(metadata.annotations as MergePatch | undefined),
      [ANNOTATION_SPEC_SINCE]: formatTime(now),
    };
    return { ...a, patch: { ...a.patch, metadata: { ...metadata, annotations } } };
  });
}
