/**
 * Which pools a watch event wakes: pure functions from an event (and what the
 * controller has cached) to the pool keys to put on the work queue, plus the
 * predicates that drop updates no reconcile cares about. The controller's
 * caches (`caches.ts`, `wire`) only forward informer events here.
 *
 * The rule throughout: wake every pool whose decision the change can alter, and
 * no other. A node can matter to a pool because the pool's selector matches its
 * labels (now or before the change), because the pool owns its BootcNode, or
 * because its Node's disruption record names the pool (`bootc.dev/reboot-slot-pool`):
 * that pool must finish or undo what it started there even after the node left it.
 * Pools conflict with each other over nodes, so a pool appearing, going or
 * changing its selector wakes every pool.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import type { ISecret } from "kubernetes-models/v1/Secret";
import {
  ANNOTATION_APPROVE_REVISION,
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_RESET_CIRCUIT,
  ANNOTATION_RETRY_REVISION,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  BOOTC_NODE_INFO_ANNOTATIONS,
  type BootcNode,
  type BootcNodePool,
  LABEL_POOL,
  owningPool,
} from "../../lib/api/mod.ts";
import { matchesSelector } from "../model/selector.ts";

/** What the mapping reads of the controller's caches. */
export interface WatchCache {
  /** Every cached pool. */
  pools(): Iterable<BootcNodePool>;
  /** The cached BootcNode of a node (same name), if any. */
  bootcNode(name: string): BootcNode | undefined;
  /** The cached Node, if any. */
  node(name: string): INode | undefined;
}

/** An informer event. On delete, `object` is the last state the cache knew. */
export type WatchEvent<T> =
  | { type: "add"; object: T }
  | { type: "update"; old: T; object: T }
  | { type: "delete"; object: T };

/** The Node annotations of the operator's disruption record. */
const RECORD_ANNOTATIONS = [
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
] as const;

function readyStatus(node: INode): string | undefined {
  return node.status?.conditions?.find((c) => c.type === "Ready")?.status;
}

function sameLabels(a: Record<string, string> = {}, b: Record<string, string> = {}): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length &&
    ka.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/**
 * True when a Node update matters to pools: its labels, its Ready status, its
 * `spec.unschedulable`, or any annotation of the disruption record changed (a
 * record someone edited or deleted by hand must be noticed and repaired).
 */
export function nodeChangeMatters(oldNode: INode, newNode: INode): boolean {
  const before = oldNode.metadata?.annotations ?? {};
  const after = newNode.metadata?.annotations ?? {};
  return !sameLabels(oldNode.metadata?.labels, newNode.metadata?.labels) ||
    readyStatus(oldNode) !== readyStatus(newNode) ||
    (oldNode.spec?.unschedulable === true) !== (newNode.spec?.unschedulable === true) ||
    RECORD_ANNOTATIONS.some((k) => before[k] !== after[k]);
}

/** True when a pool update needs a reconcile (spec or lifecycle, not our own status writes). */
export function poolChangeMatters(oldPool: BootcNodePool, newPool: BootcNodePool): boolean {
  return oldPool.metadata.generation !== newPool.metadata.generation ||
    oldPool.metadata.deletionTimestamp !== newPool.metadata.deletionTimestamp ||
    // A user resetting the circuit breaker or retrying a failed revision (annotations:
    // no new generation).
    oldPool.metadata.annotations?.[ANNOTATION_RESET_CIRCUIT] !==
      newPool.metadata.annotations?.[ANNOTATION_RESET_CIRCUIT] ||
    oldPool.metadata.annotations?.[ANNOTATION_RETRY_REVISION] !==
      newPool.metadata.annotations?.[ANNOTATION_RETRY_REVISION] ||
    // A person approving a revision (spec.rollout.approval).
    oldPool.metadata.annotations?.[ANNOTATION_APPROVE_REVISION] !==
      newPool.metadata.annotations?.[ANNOTATION_APPROVE_REVISION] ||
    JSON.stringify(oldPool.metadata.finalizers ?? []) !==
      JSON.stringify(newPool.metadata.finalizers ?? []);
}

/** What {@linkcode poolsForNode} reads of a node. */
export interface NodeKeys {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/**
 * Pools a node matters to: those whose selector matches `labels`, the pool its
 * disruption record names, and the pool owning its (cached) BootcNode.
 */
export function poolsForNode(cache: WatchCache, node: NodeKeys): string[] {
  const out = new Set<string>();
  if (node.labels) {
    for (const pool of cache.pools()) {
      if (matchesSelector(pool.spec.nodeSelector, node.labels)) out.add(pool.metadata.name ?? "");
    }
  }
  const slotPool = node.annotations?.[ANNOTATION_SLOT_POOL];
  if (slotPool) out.add(slotPool);
  const bn = cache.bootcNode(node.name);
  const owner = bn ? owningPool(bn) : undefined;
  if (owner) out.add(owner);
  return sorted(out);
}

function keysOf(node: INode): NodeKeys {
  return {
    name: node.metadata?.name ?? "",
    labels: node.metadata?.labels,
    annotations: node.metadata?.annotations,
  };
}

/**
 * Pools a Node event wakes. An update that {@linkcode nodeChangeMatters} rejects
 * wakes none; one that matters wakes the pools of the old and the new state (the
 * pools it left must let it go; a deleted slot-pool annotation still wakes the
 * pool it named).
 */
export function nodeEventPools(cache: WatchCache, event: WatchEvent<INode>): string[] {
  if (event.type !== "update") return poolsForNode(cache, keysOf(event.object));
  if (!nodeChangeMatters(event.old, event.object)) return [];
  return sorted([
    ...poolsForNode(cache, keysOf(event.old)),
    ...poolsForNode(cache, keysOf(event.object)),
  ]);
}

function bootcNodePools(bn: BootcNode): string[] {
  const out: string[] = [];
  const owner = owningPool(bn);
  if (owner) out.push(owner);
  const label = bn.metadata.labels?.[LABEL_POOL];
  if (label) out.push(label);
  return out;
}

/** A BootcNode without what changes when only its display annotations are written. */
function withoutDisplay(bn: BootcNode): string {
  const annotations = { ...bn.metadata.annotations };
  for (const k of BOOTC_NODE_INFO_ANNOTATIONS) delete annotations[k];
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = bn.metadata as
    & BootcNode["metadata"]
    & { managedFields?: unknown };
  return JSON.stringify({ ...bn, metadata: { ...metadata, annotations } });
}

/** True when only the display annotations (`bootc_node_display.ts`) differ. */
export function displayOnlyChange(before: BootcNode, after: BootcNode): boolean {
  const a = before.metadata.annotations ?? {};
  const b = after.metadata.annotations ?? {};
  if (!BOOTC_NODE_INFO_ANNOTATIONS.some((k) => a[k] !== b[k])) return false;
  return withoutDisplay(before) === withoutDisplay(after);
}

/**
 * Pools a BootcNode event wakes: its owner and the pool its label names (before
 * and after an update), and every pool its Node matters to — a BootcNode
 * appearing, changing hands or going away can start or end a contest for the
 * node, and a deleted one must be recreated by the pool that matches it.
 */
export function bootcNodeEventPools(cache: WatchCache, event: WatchEvent<BootcNode>): string[] {
  // The controller's own annotations for `kubectl get` changed, nothing else: no news.
  if (event.type === "update" && displayOnlyChange(event.old, event.object)) return [];
  const out = [...bootcNodePools(event.object)];
  if (event.type === "update") out.push(...bootcNodePools(event.old));
  const name = event.object.metadata.name ?? "";
  const node = cache.node(name);
  if (node) out.push(...poolsForNode(cache, keysOf(node)));
  return sorted(out);
}

/**
 * Pools a pool event wakes: on add, delete or a selector change every pool
 * (conflicts are between pools; a deleted pool is no longer in the cache and
 * needs no reconcile), otherwise the pool itself when {@linkcode poolChangeMatters}.
 */
export function poolEventPools(cache: WatchCache, event: WatchEvent<BootcNodePool>): string[] {
  const name = event.object.metadata.name ?? "";
  const all = () => [...cache.pools()].map((p) => p.metadata.name ?? "");
  switch (event.type) {
    case "add":
      return sorted([...all(), name]);
    case "delete":
      // The deleted pool's own key too: nodes still carrying its record are handed back.
      return sorted([...all().filter((p) => p !== name), name]);
    case "update":
      if (
        JSON.stringify(event.old.spec.nodeSelector) !==
          JSON.stringify(event.object.spec.nodeSelector)
      ) {
        return sorted([...all(), name]);
      }
      return poolChangeMatters(event.old, event.object) ? [name] : [];
  }
}

/** Pools a (pull) Secret event wakes: those whose `pullSecretRef` names it. */
export function secretEventPools(cache: WatchCache, event: WatchEvent<ISecret>): string[] {
  const name = event.object.metadata?.name;
  const namespace = event.object.metadata?.namespace;
  const out: string[] = [];
  for (const pool of cache.pools()) {
    const ref = pool.spec.pullSecretRef;
    if (ref && ref.name === name && ref.namespace === namespace) {
      out.push(pool.metadata.name ?? "");
    }
  }
  return sorted(out);
}

function sorted(names: Iterable<string>): string[] {
  return [...new Set(names)].filter((n) => n !== "").sort();
}
