/**
 * The release: the prior cordon state restored and the record removed, after a verified
 * update or when an update is undone before its reboot.
 *
 * @module
 */
import { type BootcNode, verifiedReleasePatch } from "../../../lib/api/mod.ts";
import { releaseBootcNodePatch, releasePatch } from "../../model/disruption.ts";
import {
  type Action,
  mergeOutputs,
  type MergePatch,
  nodeObjectEvent,
  type StepOutput,
  stepOutput,
} from "../plan.ts";
import type { NodeSummary } from "../../model/types.ts";
import { InFlightEnv, NodeOutcome, SlotNode } from "./context.ts";

/** Its update must stop before the reboot (`why`: the spec went bad, its image is refused): hand it back as it was. */
export function undoPhase(f: SlotNode, env: InFlightEnv, why: string): NodeOutcome {
  return {
    released: true,
    out: mergeOutputs([
      releaseOutput(f.node, f.bn, undefined, env.now),
      stepOutput({
        events: [nodeObjectEvent(
          f.name,
          "Warning",
          "UpdateUndone",
          `node ${f.name} was not rebooting yet when ${why}; its update is undone and its ` +
            `cordon state restored`,
        )],
      }),
    ]),
  };
}

/**
 * Hands a finished (or undone) node back: the BootcNode's mirror and reboot request
 * go first, then the Node's record goes and its prior cordon state comes back.
 */
export function releaseOutput(
  node: NodeSummary,
  bn: BootcNode,
  slotAt: Date | undefined,
  now: Date,
  verifiedImage?: string,
): StepOutput {
  const name = node.name;
  const actions: Action[] = [];
  let bnPatch = releaseBootcNodePatch(bn);
  if (bnPatch && verifiedImage !== undefined) {
    const metadata = (bnPatch.metadata ?? {}) as MergePatch;
    const annotations = {
      ...(metadata.annotations as MergePatch | undefined),
      ...verifiedReleasePatch(verifiedImage, now),
    };
    bnPatch = { ...bnPatch, metadata: { ...metadata, annotations } };
  }
  if (bnPatch) {
    actions.push({
      kind: "patchBootcNode",
      node: name,
      patch: bnPatch,
      why: "release slot",
      intent: "release",
    });
  }
  const patch = releasePatch(node, bn, { unlabel: false });
  if (patch) {
    actions.push({
      kind: "patchNode",
      node: name,
      patch,
      why: "release slot",
      intent: "release",
      observe: slotAt
        ? { metric: "update_seconds", seconds: (now.getTime() - slotAt.getTime()) / 1000 }
        : undefined,
    });
  }
  return stepOutput({ actions });
}
