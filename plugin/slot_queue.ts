/**
 * The reboot-slot queue of a pool as the controller's planner orders it: the
 * candidates are the members that are staged on the target, Ready, undisrupted
 * and healthy, sorted by name; the gates then admit them in that order while the
 * budgets have room.
 *
 * @module
 */
import { ANNOTATION_IN_REBOOT_SLOT, ANNOTATION_SLOT_POOL } from "../lib/api/constants.ts";
import type { BootcNode, BootcNodePool, NodeLike } from "./model.ts";
import { nodeReady } from "./model.ts";
import { classifyNode, poolMembers, poolTarget } from "./progress.ts";

/** The pool's slot candidates, in the order slots are handed out. */
export function slotQueue(
  pool: BootcNodePool,
  bootcNodes: readonly BootcNode[],
  nodes: ReadonlyMap<string, NodeLike>,
): string[] {
  const target = poolTarget(pool);
  return poolMembers(pool.metadata?.name ?? "", bootcNodes)
    .filter((bn) => {
      const node = nodes.get(bn.metadata?.name ?? "");
      return node !== undefined && nodeReady(node) && classifyNode(bn, node, target) === "staged";
    })
    .map((bn) => bn.metadata?.name ?? "");
}

/** The Nodes holding a reboot slot for `pool`, sorted by name. */
export function slotHolders(pool: string, nodes: Iterable<NodeLike>): string[] {
  const out: string[] = [];
  for (const n of nodes) {
    const a = n.metadata?.annotations ?? {};
    if (a[ANNOTATION_IN_REBOOT_SLOT] !== undefined && a[ANNOTATION_SLOT_POOL] === pool) {
      out.push(n.metadata?.name ?? "");
    }
  }
  return out.sort();
}

/**
 * The pool's `maxUnavailable` as a node count: an integer, or a percentage of
 * `total` rounded up (as the controller resolves it); undefined when unreadable.
 */
export function resolveMaxUnavailable(
  value: number | string | undefined,
  total: number,
): number | undefined {
  if (value === undefined) return 1;
  if (typeof value === "number") return value;
  const m = /^(\d+)%$/.exec(value.trim());
  if (m) return Math.ceil((Number(m[1]) * total) / 100);
  return /^\d+$/.test(value.trim()) ? Number(value) : undefined;
}
