/**
 * Nodes that leave a pool (relabelled, or the pool deleted) while the operator
 * is updating them: one asked to reboot is held — its BootcNode, its Node's
 * disruption record and its cordon stay, so it keeps counting against the
 * pool's budget and every cluster budget — until its reboot has finished
 * (its daemon reports it booted, the Node is Ready); only then is it handed
 * back. One not yet asked to reboot is undone at once (its daemon needs
 * `desiredImageState: Booted` and the record to apply anything).
 *
 * Releasing a rebooting node early would free its slot while the machine is
 * down, and the next grant would disrupt a second node.
 *
 * @module
 */
import {
  type BootcNode,
  type BootcNodePool,
  type DownFacts,
  isDisrupted,
  owningPool,
  PoolDegradedReason,
  readNodeFacts,
} from "../../lib/api/mod.ts";
import { mirrorOf } from "../model/disruption.ts";
import type { UnrecordedDisruption } from "../gates/mod.ts";
import { poolEvent, type StepOutput, stepOutput } from "./plan.ts";
import { formatTime } from "../model/slots.ts";
import type { NodeSummary } from "../model/types.ts";

/** A node held because its machine may be down for a reboot (`NodeFacts.down`). */
export type LeavingHold = DownFacts;

/**
 * Whether a node whose pool lets it go must still be held: its machine may be down for
 * a reboot (the one rule, `down` of `lib/api/node_facts.ts`). Without its Node object
 * only its daemon's Rebooting holds it: deleting the Node does not stop the machine, and
 * its kubelet registers the Node again when it boots. Past the reboot timeout (or with no
 * readable time) it is still held, and reported: only a person knows the machine is gone
 * for good (they delete its BootcNode). Pure.
 */
export function rebootHold(
  node: NodeSummary | undefined,
  bn: BootcNode | undefined,
  at: { rebootTimeoutMs?: number; now: Date },
): LeavingHold | undefined {
  return readNodeFacts({ node, bootcNode: bn, rebootTimeoutMs: at.rebootTimeoutMs, now: at.now })
    .down;
}

/**
 * Nodes disrupted by their BootcNode's account while their Node carries no disruption
 * record, over every pool's members. Pure. Pools sharing a cluster budget count
 * disruption by the Node's record; these would be missed:
 * - its Node exists and its BootcNode still mirrors a prior cordon (`mirrorOf`) and its pool
 *   exists: the node is in a slot by its pool's account (back from its reboot without its
 *   record, or the record removed; the pool restores or finishes it), the rule of
 *   `nodeDisrupted`;
 * - or its Node object is gone while {@linkcode rebootHold} holds it (its daemon said
 *   Rebooting): as long as its pool holds it, past the reboot timeout too (its BootcNode
 *   deleted by a person ends it).
 */
export function unrecordedDisruptions(input: {
  pools: readonly BootcNodePool[];
  bootcNodes: Iterable<BootcNode>;
  nodes: ReadonlyMap<string, NodeSummary>;
  now: Date;
}): UnrecordedDisruption[] {
  const byName = new Map(input.pools.map((p) => [p.metadata.name ?? "", p]));
  const out: UnrecordedDisruption[] = [];
  for (const bn of input.bootcNodes) {
    const name = bn.metadata.name ?? "";
    const node = input.nodes.get(name);
    if (node && isDisrupted({ metadata: { annotations: node.annotations } })) continue;
    const pool = byName.get(owningPool(bn) ?? "");
    // A mirror counts while its Node and its pool exist (the pool restores the record or
    // lets the node go, so the count ends). With its Node gone only the bounded Rebooting
    // hold counts: a mirror alone could count for as long as an invalid pool does not act.
    const mirrored = node !== undefined && pool !== undefined && mirrorOf(bn) !== undefined;
    const hold = node ? undefined : heldWithoutNode(bn, pool, input.now);
    if (!mirrored && !hold) continue;
    if (node) out.push({ node: name, labels: node.labels });
    else {
      out.push({
        node: name,
        ...(pool ? { poolSelector: pool.spec.nodeSelector } : {}),
        ...(hold?.until ? { until: hold.until } : {}),
      });
    }
  }
  return out.sort((a, b) => a.node < b.node ? -1 : a.node > b.node ? 1 : 0);
}

/**
 * Whether a {@linkcode rebootHold} holds `bn` (its Node gone), and until when it is bound to end
 * (`until`, undefined once overdue: its pool holds it until a person lets it go).
 */
function heldWithoutNode(
  bn: BootcNode,
  pool: BootcNodePool | undefined,
  now: Date,
): { until?: Date } | undefined {
  const seconds = pool?.spec.rollout?.rebootTimeoutSeconds;
  const hold = rebootHold(undefined, bn, {
    rebootTimeoutMs: seconds !== undefined ? seconds * 1000 : undefined,
    now,
  });
  if (!hold) return undefined;
  // Overdue, it counts while its pool holds it (and says so); a BootcNode whose pool is
  // gone counts no longer than the reboot timeout (nobody would report it).
  if (hold.overdue) return pool ? {} : undefined;
  return { until: hold.deadline };
}

/**
 * What the pool's plan says of a held node: a note (and an event once), a
 * wake-up at its deadline, and once overdue a NodeStalled issue (it stays held).
 */
export function reportLeavingHold(
  name: string,
  hold: LeavingHold,
  why: string,
  at: { poolName: string; now: Date; nodeGone?: boolean },
): StepOutput {
  const notes = [
    `${name} left the pool (${why}) while rebooting: held, waiting for ${hold.waitsFor}`,
  ];
  const events = [poolEvent(
    at.poolName,
    "Normal",
    "NodeLeavingAfterReboot",
    `node ${name} left the pool (${why}) while rebooting; it keeps its reboot slot while ` +
      `waiting for ${hold.waitsFor}, then it is handed back`,
    `leaving/${name}/${hold.deadline ? formatTime(hold.deadline) : "-"}`,
  )];
  if (!hold.overdue) {
    const wake = hold.deadline ? hold.deadline.getTime() - at.now.getTime() : undefined;
    return stepOutput({ notes, events, ...(wake !== undefined ? { wake } : {}) });
  }
  const message = `node ${name} left the pool while rebooting and is still waiting for ` +
    `${hold.waitsFor} ${
      hold.deadline ? "past its reboot timeout" : "with no readable time to bound the wait"
    }; it keeps its reboot slot until then ` +
    `(check the host; if the machine is gone for good, delete its BootcNode` +
    `${at.nodeGone ? "" : " and its Node object"} to let the slot go)`;
  const issues = [{ reason: PoolDegradedReason.NodeStalled, message }];
  // Said as a Warning too: a deleted pool writes no status (its finalizer waits for this).
  events.push(poolEvent(
    at.poolName,
    "Warning",
    "NodeStalled",
    message,
    `leaving-overdue/${name}/${hold.deadline ? formatTime(hold.deadline) : "-"}`,
  ));
  return stepOutput({ notes, events, issues });
}
