/**
 * Records this pool did not grant. Every disrupted member is driven through
 * cordon, drain and reboot (`in_flight.ts`), past the gates that admitted it; so a
 * record that no grant of this pool made must not be driven:
 *
 * - a **stray** record (`strayRecord`: one annotation of the grant's three, no copy
 *   on the BootcNode, no reboot under way; a hand edit or another tool) is dropped,
 *   the node's cordon left as it is;
 * - a record of **another pool** (the node moved before that pool handed it back:
 *   its release cut short, or its controller down) with no reboot under way is
 *   handed back here (its prior cordon restored), not taken over: the node then
 *   waits for a slot of this pool's gates like any other. With a drain finished or a
 *   reboot under way it is taken over and finished (`repairPatch`): a reboot cannot
 *   be undone.
 *
 * Either way the node counts against the pool's budget until its record is gone,
 * and the old pool counts it too while the record names it (`releaseOrphans`).
 *
 * @module
 */
import type { BootcNode } from "../../lib/api/mod.ts";
import { daemonSaysRebooting } from "../../lib/api/node_state.ts";
import {
  dropRecordPatch,
  recordOf,
  releaseBootcNodePatch,
  releasePatch,
  strayRecord,
} from "../model/disruption.ts";
import type { NodeSummary } from "../model/types.ts";
import { type Action, nodeObjectEvent, type StepOutput, stepOutput } from "./plan.ts";

/**
 * The writes for a disrupted member whose record `pool` did not grant (see the
 * module doc), or undefined when the record is this pool's (or is taken over).
 */
export function notGrantedHere(
  node: NodeSummary,
  bn: BootcNode,
  pool: string,
): StepOutput | undefined {
  const name = node.name;
  const rebooting = daemonSaysRebooting(bn);
  if (strayRecord(node, bn, rebooting)) {
    const patch = dropRecordPatch(node);
    const actions: Action[] = patch
      ? [{ kind: "patchNode", node: name, patch, why: "drop stray record" }]
      : [];
    return stepOutput({
      actions,
      events: [nodeObjectEvent(
        name,
        "Warning",
        "StrayRecordDropped",
        `node ${name} carried ${Object.keys(recordOf(node)).length} annotation(s) of a ` +
          `disruption record that no grant wrote (a grant writes the slot, its pool and the ` +
          `prior cordon state together, and their copy on the BootcNode): removed, its cordon ` +
          `left as it is; a slot is only ever granted through the gates`,
      )],
    });
  }
  const record = recordOf(node);
  const underWay = record.drainedAt !== undefined || record.drainedFor !== undefined || rebooting;
  if (record.pool === undefined || record.pool === pool || underWay) return undefined;
  const actions: Action[] = [];
  const bnPatch = releaseBootcNodePatch(bn);
  if (bnPatch) {
    actions.push({ kind: "patchBootcNode", node: name, patch: bnPatch, why: "drop mirror" });
  }
  const patch = releasePatch(node, bn, { unlabel: false });
  if (patch) {
    actions.push({ kind: "patchNode", node: name, patch, why: "hand back another pool's slot" });
  }
  return stepOutput({
    actions,
    events: [nodeObjectEvent(
      name,
      "Warning",
      "SlotHandedBack",
      `node ${name} joined pool ${pool} holding a reboot slot of pool ${record.pool}, its ` +
        `reboot not under way: handed back (prior cordon state restored) rather than taken ` +
        `over; it waits for a slot of pool ${pool}'s gates like any other node`,
    )],
  });
}
