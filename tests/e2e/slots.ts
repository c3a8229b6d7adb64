/**
 * Reading reboot slots in scenarios: the disruption record lives on each Node,
 * so a pool's slot holders are its BootcNodes whose Node carries the slot
 * annotation.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import { type BootcNode, holdsRebootSlot } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import type { Stack } from "../harness/stack.ts";
import { poolNodes, waitPool } from "./scenario.ts";

/** A pool member holding a reboot slot: its BootcNode and its Node's annotations. */
export interface SlotHolder {
  name: string;
  bn: BootcNode;
  annotations: Record<string, string>;
}

/** The pool's members whose Node holds a reboot slot, by name. */
export async function slotHolders(stack: Stack, pool: string): Promise<SlotHolder[]> {
  const [bns, nodes] = await Promise.all([
    poolNodes(stack, pool),
    stack.cp.client.resource<INode>(Resources.nodes).list(),
  ]);
  const byName = new Map(nodes.items.map((n) => [n.metadata?.name ?? "", n]));
  return bns.flatMap((bn) => {
    const node = byName.get(bn.metadata.name ?? "");
    if (!node || !holdsRebootSlot(node)) return [];
    return [{ name: bn.metadata.name ?? "", bn, annotations: node.metadata?.annotations ?? {} }];
  }).sort((a, b) => a.name < b.name ? -1 : 1);
}

/** Waits until `predicate` holds for the pool's slot holders. */
export async function waitSlots(
  stack: Stack,
  pool: string,
  predicate: (holders: SlotHolder[]) => boolean,
  message: string,
  timeoutMs = 60_000,
): Promise<SlotHolder[]> {
  return await waitPool(
    stack,
    pool,
    async () => {
      const holders = await slotHolders(stack, pool);
      return predicate(holders) ? holders : undefined;
    },
    message,
    timeoutMs,
  );
}
