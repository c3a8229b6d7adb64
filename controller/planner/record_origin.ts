/**
 * Records this pool did not grant. Every disrupted member is driven through
 * cordon, drain and reboot (`in_flight.ts`), past the gates that admitted it; so a
 * record that no grant of this pool made must not be driven:
 *
 * - a **stray** record (`NodeFacts.stray`: one annotation of the grant's three, no copy
 *   on the BootcNode, no reboot under way; a hand edit or another tool) is dropped,
 *   the node's cordon left as it is;
 * - a record of **another pool** (the node moved before that pool handed it back:
 *   its release cut short, or its controller down) is never taken over: no gate of
 *   this pool admitted it. While its machine may be rebooting (its daemon says so, or
 *   a finished drain was not yet followed by the Node being Ready) nothing is written
 *   (a reboot cannot be undone, and none is started here), past the reboot timeout
 *   the pool is Degraded naming it; then it is handed back here (its prior cordon
 *   restored), and waits for a slot of this pool's gates like any other node.
 *
 * Either way the node counts against the pool's budget until its record is gone,
 * and the old pool counts it too while the record names it (`releaseOrphans`).
 *
 * @module
 */
import { type BootcNode, PoolDegradedReason, readNodeFacts } from "../../lib/api/mod.ts";
import {
  dropRecordPatch,
  releaseBootcNodePatch,
  releaseCordonNote,
  releasePatch,
} from "../model/disruption.ts";
import type { NodeSummary } from "../model/types.ts";
import { type LeavingHold, rebootHold } from "./leaving.ts";
import { type Action, nodeObjectEvent, type StepOutput, stepOutput } from "./plan.ts";

/**
 * The writes for a disrupted member whose record `pool` did not grant (see the
 * module doc), or undefined when the record is this pool's (or is taken over).
 */
export function notGrantedHere(
  node: NodeSummary,
  bn: BootcNode,
  pool: string,
  at: { now: Date; rebootTimeoutMs: number },
): StepOutput | undefined {
  const name = node.name;
  const facts = readNodeFacts({ node, bootcNode: bn, now: at.now });
  if (facts.stray) {
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
        `node ${name} carried ${Object.keys(facts.record).length} annotation(s) of a ` +
          `disruption record that no grant wrote (a grant writes the slot, its pool and the ` +
          `prior cordon state together, and their copy on the BootcNode): removed, its cordon ` +
          `left as it is; a slot is only ever granted through the gates`,
      )],
    });
  }
  const other = facts.record.pool;
  if (other === undefined || other === pool) return undefined;
  // May its machine be down? The one rule (leaving.ts): its daemon says it reboots, or a
  // finished drain was not yet followed by the Node being Ready (this pool's BootcNode never
  // asked for that reboot, so unless its daemon reports one, only the Node tells).
  const hold = rebootHold(node, facts.rebootReport ? bn : undefined, at);
  if (hold) return waitForReboot(name, other, hold, at.now);
  return handBack(node, bn, pool, other, facts.priorCordon === undefined);
}

/**
 * Another pool's slot on a machine that may be down: nothing is written (its reboot
 * cannot be undone, and no new drain or reboot is started here); it counts, and past
 * the reboot timeout the pool is Degraded naming it. Handed back once it is up.
 */
function waitForReboot(name: string, other: string, hold: LeavingHold, now: Date): StepOutput {
  const note = `${name} carries a reboot slot of pool ${other} and may be rebooting: ` +
    `waiting for ${hold.waitsFor} before handing the slot back`;
  if (hold.deadline && !hold.overdue) {
    return stepOutput({ notes: [note], wake: hold.deadline.getTime() - now.getTime() });
  }
  return stepOutput({
    notes: [note],
    issues: [{
      reason: PoolDegradedReason.NodeStalled,
      message: `node ${name} carries a reboot slot of pool ${other} and has not come back ` +
        `from a reboot within its reboot timeout; it counts until it is back (check the host)`,
    }],
  });
}

/** Hands another pool's slot back: the BootcNode's copy first, then the Node's record. */
function handBack(
  node: NodeSummary,
  bn: BootcNode,
  pool: string,
  other: string,
  priorLost: boolean,
): StepOutput {
  const name = node.name;
  const actions: Action[] = [];
  const bnPatch = releaseBootcNodePatch(bn);
  if (bnPatch) {
    actions.push({ kind: "patchBootcNode", node: name, patch: bnPatch, why: "drop mirror" });
  }
  const patch = releasePatch(node, bn, { unlabel: false });
  if (patch) {
    actions.push({ kind: "patchNode", node: name, patch, why: "hand back another pool's slot" });
  }
  const lost = priorLost && node.unschedulable;
  const events = [nodeObjectEvent(
    name,
    "Warning",
    "SlotHandedBack",
    `node ${name} joined pool ${pool} holding a reboot slot of pool ${other}, no reboot under ` +
      `way: handed back${releaseCordonNote(node, bn)} rather than taken over; it waits for a ` +
      `slot of pool ${pool}'s gates like any other node`,
  )];
  if (lost) {
    events.push(nodeObjectEvent(
      name,
      "Warning",
      "PriorCordonStateLost",
      `node ${name}: the record of whether it was cordoned before pool ${other}'s update was ` +
        `lost; it stays cordoned (uncordon it by hand if it should run pods)`,
    ));
  }
  return stepOutput({ actions, events });
}
