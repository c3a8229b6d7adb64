/**
 * The repair phase: what someone removed from a node's disruption record is put back
 * before anything else is decided on it.
 *
 * @module
 */
import {
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type DisruptionRecord,
} from "../../../lib/api/mod.ts";
import { mirrorOf, repairPatch } from "../../model/disruption.ts";
import { type Action, nodeObjectEvent, type PlannedEvent, stepOutput } from "../plan.ts";
import type { NodeSummary } from "../../model/types.ts";
import { InFlightEnv, NodeOutcome } from "./context.ts";

/**
 * Repairs what someone removed from the record, before anything else is decided
 * on it: the Node as it will be after the repair, the record, and the BootcNode's
 * mirror of the prior cordon state kept equal to it.
 */
export function repairPhase(
  node: NodeSummary,
  bn: BootcNode,
  env: InFlightEnv,
): NodeOutcome & { node: NodeSummary; record: DisruptionRecord; mirror?: Action } {
  const name = node.name;
  const repair = repairPatch(node, bn, env.poolName, env.now);
  const actions: Action[] = [];
  const events: PlannedEvent[] = [];
  const degraded: string[] = [];
  if (repair.patch) {
    actions.push({
      kind: "patchNode",
      node: name,
      patch: repair.patch,
      why: "repair record",
      intent: "repairRecord",
    });
  }
  if (repair.fixed.length > 0) {
    events.push(nodeObjectEvent(
      name,
      "Warning",
      "DisruptionRecordRepaired",
      `node ${name}'s disruption record was damaged (edited or deleted by hand?): ` +
        repair.fixed.join("; "),
    ));
  }
  if (repair.priorCordonLost) {
    const msg = `node ${name}: the record of whether it was cordoned before the update was ` +
      `lost on both the Node and the BootcNode; it will stay cordoned after the update ` +
      `(uncordon it by hand if it should run pods)`;
    degraded.push(msg);
    events.push(nodeObjectEvent(name, "Warning", "PriorCordonStateLost", msg));
  }
  const repairedNode: NodeSummary = {
    ...node,
    annotations: {
      ...node.annotations,
      ...(repair.patch
        ? (repair.patch.metadata as { annotations: Record<string, string> }).annotations
        : {}),
    },
  };
  const mirror: Action | undefined = mirrorOf(bn) !== repair.record.wasCordoned
    ? {
      kind: "patchBootcNode",
      node: name,
      patch: {
        metadata: { annotations: { [ANNOTATION_WAS_CORDONED]: repair.record.wasCordoned } },
      },
      why: "mirror prior cordon state",
    }
    : undefined;
  return {
    out: stepOutput({ actions, events }),
    degraded,
    node: repairedNode,
    record: repair.record,
    mirror,
  };
}
