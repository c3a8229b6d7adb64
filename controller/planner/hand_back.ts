/**
 * Handing nodes back: a member that left the pool, a node that still carries
 * this pool's disruption record without being a member, and the nodes of a
 * pool that is gone. A node whose reboot may be under way is held instead
 * (`leaving.ts`), so its slot is never freed while its machine may be down.
 *
 * @module
 */
import { type BootcNode, type BootcNodePool, owningPool } from "../../lib/api/mod.ts";
import {
  mirrorOf,
  nodeDisrupted,
  recordOf,
  releaseBootcNodePatch,
  releasePatch,
} from "../model/disruption.ts";
import { type LeavingHold, rebootHold, reportLeavingHold } from "./leaving.ts";
import {
  type Action,
  mergeOutputs,
  NO_OUTPUT,
  type PlanInput,
  type PlannedEvent,
  poolEvent,
  type StepOutput,
  stepOutput,
} from "./plan.ts";
import type { NodeSummary } from "../model/types.ts";

/**
 * Hands a node back: its BootcNode goes first (with its mirror of the prior cordon
 * state), then the Node's record is removed and its cordon state restored, so a
 * crash in between leaves a record that {@linkcode releaseOrphans} finishes.
 * A node whose reboot has not finished is held instead (`leaving.ts`): it keeps
 * its BootcNode, record and cordon, and counts against every budget (`held`).
 */
export function releaseNode(
  input: PlanInput,
  name: string,
  bn: BootcNode | undefined,
  why: string,
): { held: boolean; out: StepOutput } {
  const poolName = input.pool.metadata.name ?? "";
  const node = input.nodes.get(name);
  const hold = holdOf(input, node, bn);
  const events: PlannedEvent[] = [];
  if (hold) {
    // Held however long its reboot takes (its machine may be down right now: freeing the
    // slot would let a second node go down beside it); past its reboot timeout the pool is
    // Degraded naming it and how to let it go (reportLeavingHold).
    return {
      held: true,
      out: reportLeavingHold(name, hold, why, { poolName, now: input.now, nodeGone: !node }),
    };
  }
  // A BootcNode already going away (a finalizer of someone else's holds it) is not
  // deleted again on every pass.
  const deleting = bn !== undefined && !bn.metadata.deletionTimestamp;
  const patch = node ? releasePatch(node, bn, { unlabel: true }) : undefined;
  const actions: Action[] = [];
  if (!deleting && !patch) {
    // Its Node is restored: the cordon mirror left on the held BootcNode would keep the
    // node counted as disrupted for as long as the finalizer holds it. Drop it.
    const bnPatch = mirrorOf(bn) !== undefined ? releaseBootcNodePatch(bn) : undefined;
    if (bnPatch) {
      actions.push({ kind: "patchBootcNode", node: name, patch: bnPatch, why: "drop mirror" });
    }
    return { held: false, out: stepOutput({ actions, events }) };
  }
  if (deleting) actions.push({ kind: "deleteBootcNode", node: name, uid: bn.metadata.uid });
  if (patch) actions.push({ kind: "patchNode", node: name, patch, why: "release node" });
  events.push(poolEvent(poolName, "Normal", "NodeRemoved", `node ${name} left the pool: ${why}`));
  return { held: false, out: stepOutput({ actions, events }) };
}

/** {@linkcode rebootHold} of a node of `input.pool` (its Node perhaps gone), with the pool's reboot timeout. */
function holdOf(
  input: PlanInput,
  node: NodeSummary | undefined,
  bn: BootcNode | undefined,
): LeavingHold | undefined {
  const seconds = input.pool.spec.rollout?.rebootTimeoutSeconds;
  return rebootHold(node, bn, {
    rebootTimeoutMs: seconds !== undefined ? seconds * 1000 : undefined,
    now: input.now,
  });
}

/**
 * Nodes carrying this pool's disruption record (or, for a record naming a pool
 * that no longer exists, the first pool by name) that are no longer members and
 * whose BootcNode no other pool owns: restore them so nothing stays cordoned (once
 * their reboot, if one was under way, has finished). One another pool owns is handed
 * back by that pool (record_origin.ts), never taken over; while the record names this
 * pool it counts here too, named. `released` names the nodes released, held or counted:
 * they count against the budget in this plan.
 */
export function releaseOrphans(
  input: PlanInput,
  members: ReadonlySet<string>,
): { released: string[]; out: StepOutput } {
  const poolName = input.pool.metadata.name ?? "";
  const names = new Set(input.pools.map((p) => p.name));
  const first = [...names].sort()[0] === poolName;
  const released: string[] = [];
  const outs: StepOutput[] = [];
  for (const node of input.nodes.values()) {
    if (members.has(node.name)) continue;
    const bn = input.bootcNodes.get(node.name);
    const owner = bn ? owningPool(bn) : undefined;
    if (owner === poolName) continue; // leaving: planLeavers releases or keeps it
    if (!nodeDisrupted(node, bn)) continue;
    const recordPool = recordOf(node).pool;
    const mine = recordPool === poolName ||
      (first && (recordPool === undefined || !names.has(recordPool)));
    if (!mine) continue;
    if (owner !== undefined) {
      // Another pool has its BootcNode: that pool hands the slot back once no reboot may be
      // under way (record_origin.ts). While the record names this pool, it counts here too.
      if (recordPool === poolName) {
        released.push(node.name);
        outs.push(stepOutput({
          notes: [`${node.name} (now in pool ${owner}) still carries this pool's slot`],
        }));
      }
      continue;
    }
    // No BootcNode: no pool acts on it but this one (one it joined may have no target yet).
    const orphan = restoreOrphan(input, node, bn);
    if (orphan.counted) released.push(node.name);
    outs.push(orphan.out);
  }
  return { released, out: mergeOutputs(outs) };
}

/** One orphan: held while still rebooting (it counts until back), else restored. */
function restoreOrphan(
  input: PlanInput,
  node: NodeSummary,
  bn: BootcNode | undefined,
): { counted: boolean; out: StepOutput } {
  const poolName = input.pool.metadata.name ?? "";
  const hold = holdOf(input, node, bn);
  if (hold) {
    const out = reportLeavingHold(node.name, hold, "no longer a member", {
      poolName,
      now: input.now,
    });
    return { counted: true, out };
  }
  const patch = releasePatch(node, bn, { unlabel: false });
  if (!patch) return { counted: false, out: NO_OUTPUT };
  // The record goes with its mirror (first, as in every release): a mirror left on the
  // BootcNode would read as a lost record to a pool that adopts it later, which would
  // restore a slot no gate granted.
  const bnPatch = mirrorOf(bn) !== undefined && !bn?.metadata.deletionTimestamp
    ? releaseBootcNodePatch(bn)
    : undefined;
  return {
    counted: true,
    out: stepOutput({
      actions: [
        ...(bnPatch
          ? [{
            kind: "patchBootcNode" as const,
            node: node.name,
            patch: bnPatch,
            why: "drop mirror",
          }]
          : []),
        { kind: "patchNode", node: node.name, patch, why: "restore orphaned node" },
      ],
      events: [poolEvent(
        poolName,
        "Warning",
        "OrphanRestored",
        `node ${node.name} carried this pool's disruption record but is no longer a member ` +
          `(its BootcNode was deleted or its labels changed); restored its cordon state`,
      )],
    }),
  };
}

/**
 * The writes that hand back nodes whose disruption record names pool `name`, which
 * no longer exists (deleted without its finalizer, say): their prior cordon state
 * is restored and the record removed, unless another pool owns their BootcNode (it hands
 * them back itself).
 */
export function planGonePool(
  name: string,
  input: Pick<PlanInput, "pools" | "nodes" | "bootcNodes" | "now">,
): StepOutput {
  const stub = { metadata: { name }, spec: { nodeSelector: {} } } as unknown as BootcNodePool;
  return releaseOrphans({ ...input, pool: stub, podsByNode: new Map(), pdbs: [] }, new Set()).out;
}
