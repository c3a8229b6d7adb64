/**
 * The BootcNode conditions that state a fact of the node's Node, recomputed
 * from the Node as the caches see it on every plan: `Cordoned` and `Drained`
 * (the rule is `lib/api/drain_conditions.ts`). The daemon sets them True from
 * the Node it reads before a reboot and the controller while it drains; once
 * the fact ends (the slot released, or undone) nobody reads that Node again
 * for them, so here one that still says True is set False, whoever wrote it.
 *
 * The correction rides in the plan's own status write for that BootcNode when
 * it makes one (its conditions are the whole list), else it is a status write
 * of its own, guarded by the BootcNode's resourceVersion like the others.
 *
 * @module
 */
import {
  type BootcNode,
  type Condition,
  drainFacts,
  endedDrainConditions,
} from "../../lib/api/mod.ts";
import type { Action, MergePatch } from "./plan.ts";
import type { NodeSummary } from "../model/types.ts";

/** Why the shell sends a status write of its own for an ended fact. */
export const FACT_CONDITIONS_WHY = "condition no longer holds";

/** What {@linkcode withFactConditions} reads of a member (the planner's `Member` fits). */
export interface FactMember {
  node: NodeSummary;
  bn?: BootcNode;
}

/**
 * `actions` with every member's ended Cordoned and Drained set False: in the
 * plan's last status write for that BootcNode, else in one of its own after
 * the others.
 */
export function withFactConditions(
  actions: readonly Action[],
  members: readonly FactMember[],
  now: Date,
): Action[] {
  const out = [...actions];
  const lastStatus = new Map<string, number>();
  out.forEach((a, i) => {
    if (a.kind === "patchBootcNodeStatus") lastStatus.set(a.node, i);
  });
  for (const m of members) {
    const bn = m.bn;
    if (!bn || bn.metadata.deletionTimestamp) continue;
    const name = m.node.name;
    const facts = drainFacts(m.node, bn.spec.desiredImage);
    const i = lastStatus.get(name);
    const planned = i === undefined ? undefined : out[i];
    if (planned?.kind === "patchBootcNodeStatus") {
      const status = (planned.patch.status ?? {}) as MergePatch;
      const written = status.conditions as Condition[] | undefined;
      const conditions = endedDrainConditions(written ?? bn.status?.conditions, facts, now);
      if (!conditions) continue;
      out[i!] = { ...planned, patch: { ...planned.patch, status: { ...status, conditions } } };
      continue;
    }
    const conditions = endedDrainConditions(bn.status?.conditions, facts, now);
    if (!conditions) continue;
    out.push({
      kind: "patchBootcNodeStatus",
      node: name,
      patch: { metadata: { resourceVersion: bn.metadata.resourceVersion }, status: { conditions } },
      why: FACT_CONDITIONS_WHY,
    });
  }
  return out;
}
