/**
 * Which pools to wake when something another pool's gates depend on changes:
 * a pool finishing (for pools ordered after it), a place in a cluster-wide
 * budget freeing (for every pool a budget may span), a budget changing. Pure,
 * like `watch_mapping.ts`, which covers a pool's own objects.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  isDisrupted,
  PoolConditionType,
} from "../../lib/api/mod.ts";
import { readNodeFacts } from "../../lib/api/node_state.ts";
import { rolloutAfter } from "../gates/mod.ts";

/** Names of every pool. */
export function allPools(pools: Iterable<BootcNodePool>): string[] {
  return [...pools].map((p) => p.metadata.name ?? "").filter((n) => n !== "");
}

function progress(pool: BootcNodePool | undefined): string {
  const up = findCondition(pool?.status?.conditions, PoolConditionType.UpToDate);
  const degraded = findCondition(pool?.status?.conditions, PoolConditionType.Degraded);
  return `${pool?.status?.observedGeneration}/${up?.status}/${up?.reason}/${degraded?.status}/${degraded?.reason}`;
}

/**
 * Pools to wake when `changed`'s status moves: those ordered after it (their
 * WaitingForPool gate may open) and, while cluster budgets exist, every pool (a
 * pool that becomes blocked or unblocked changes who competes for a budget).
 */
export function poolStatusWakes(
  old: BootcNodePool | undefined,
  changed: BootcNodePool,
  pools: Iterable<BootcNodePool>,
  budgetsExist: boolean,
): string[] {
  if (old && progress(old) === progress(changed)) return [];
  const all = [...pools];
  if (budgetsExist) return allPools(all);
  const name = changed.metadata.name ?? "";
  return all.filter((p) => rolloutAfter(p).includes(name)).map((p) => p.metadata.name ?? "");
}

/**
 * Pools to wake when a Node's disruption record appears or goes while cluster
 * budgets exist: a freed (or taken) place matters to every pool a budget spans.
 */
export function nodeRecordWakes(
  old: INode | undefined,
  changed: INode | undefined,
  pools: Iterable<BootcNodePool>,
  budgetsExist: boolean,
): string[] {
  if (!budgetsExist) return [];
  const before = old
    ? isDisrupted(old as { metadata?: { annotations?: Record<string, string> } })
    : false;
  const after = changed
    ? isDisrupted(changed as { metadata?: { annotations?: Record<string, string> } })
    : false;
  return before === after ? [] : allPools(pools);
}

/**
 * What of a BootcNode makes it count as disrupted without its Node's record
 * (`unrecordedDisruptions`): its prior-cordon mirror, and its daemon saying Rebooting.
 */
export function unrecordedSignal(bn: BootcNode | undefined): string {
  if (!bn) return "";
  const facts = readNodeFacts({ bootcNode: bn });
  return `${facts.mirror ?? "-"}/${facts.rebootReport !== undefined}`;
}

/**
 * Pools to wake when a BootcNode's {@linkcode unrecordedSignal} changes (or it goes) while
 * cluster budgets exist: a node counted without its Node's record (its Node deleted while
 * rebooting, say) stops counting then, and pools sharing a budget with it may go on. The
 * owner lets go of such a node by deleting its BootcNode, which wakes nobody else.
 */
export function bootcNodeHoldWakes(
  old: BootcNode | undefined,
  changed: BootcNode | undefined,
  pools: Iterable<BootcNodePool>,
  budgetsExist: boolean,
): string[] {
  if (!budgetsExist || unrecordedSignal(old) === unrecordedSignal(changed)) return [];
  return allPools(pools);
}
