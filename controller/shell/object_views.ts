/**
 * The controller's views of cluster objects: what each cache keeps of an object
 * (trimmed, like a controller-runtime cache transform) and the summaries the
 * planner reads, built from the caches' lists. Pure.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { ISecret } from "kubernetes-models/v1/Secret";
import type { BootcDisruptionBudget, BootcNode, BootcNodePool } from "../../lib/api/mod.ts";
import type { KubeObject } from "../../lib/kube/mod.ts";
import type { ClusterBudget } from "../gates/mod.ts";
import type { NodeSummary, PdbSummary, PoolSummary } from "../model/types.ts";

/** A Node as cached. */
export type Node = INode & KubeObject;
/** A Secret as cached. */
export type Secret = ISecret & KubeObject;
/** A PodDisruptionBudget as cached. */
export type Pdb = IPodDisruptionBudget & KubeObject;

const nodeSummaries = new WeakMap<Node, NodeSummary>();

/** Builds (and caches per object) the planner's view of a Node. */
export function summarizeNode(node: Node): NodeSummary {
  const cached = nodeSummaries.get(node);
  if (cached) return cached;
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  const summary: NodeSummary = {
    name: node.metadata?.name ?? "",
    uid: node.metadata?.uid,
    resourceVersion: node.metadata?.resourceVersion,
    labels: node.metadata?.labels ?? {},
    annotations: node.metadata?.annotations,
    unschedulable: node.spec?.unschedulable === true,
    ready: ready?.status === "True",
    readySince: ready?.lastTransitionTime as string | undefined,
    created: node.metadata?.creationTimestamp as string | undefined,
  };
  nodeSummaries.set(node, summary);
  return summary;
}

/** Summarises a PDB for the planner. */
export function summarizePdb(pdb: Pdb): PdbSummary {
  return {
    namespace: pdb.metadata?.namespace ?? "",
    name: pdb.metadata?.name ?? "",
    selector: pdb.spec?.selector as PdbSummary["selector"],
    disruptionsAllowed: pdb.status?.disruptionsAllowed ?? 0,
  };
}

/** Drops `metadata.managedFields`, which the controller never reads, from a cached object. */
export function withoutManagedFields<T extends KubeObject>(object: T): T {
  if (!object.metadata?.managedFields) return object;
  const { managedFields: _, ...metadata } = object.metadata;
  return { ...object, metadata };
}

/** Prefix of the operator's own labels and annotations. */
const OPERATOR_PREFIX = "bootc.dev/";

/**
 * Keeps only what the controller reads of a Node (identity, labels, the
 * operator's `bootc.dev/` annotations, `spec.unschedulable`, the Ready
 * condition's status and transition time), like a controller-runtime cache
 * transform. Nodes are the biggest objects in the cache (image lists, capacity,
 * nodeInfo, managedFields, other components' annotations, heartbeats); the
 * controller only ever patches them, never writes a cached copy back, so a
 * trimmed cache is safe. Labels stay whole: pool selectors may use any of them.
 */
export function trimNode(node: Node): Node {
  const m = node.metadata ?? {};
  let annotations: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(m.annotations ?? {})) {
    if (k.startsWith(OPERATOR_PREFIX)) (annotations ??= {})[k] = v;
  }
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  return {
    apiVersion: node.apiVersion,
    kind: node.kind,
    metadata: {
      name: m.name,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      labels: m.labels,
      ...(annotations ? { annotations } : {}),
    },
    spec: node.spec?.unschedulable === undefined ? {} : { unschedulable: node.spec.unschedulable },
    status: {
      conditions: ready
        ? [{ type: "Ready", status: ready.status, lastTransitionTime: ready.lastTransitionTime }]
        : [],
    },
  } as Node;
}

/** Keeps only what {@linkcode summarizePdb} reads of a PodDisruptionBudget. */
export function trimPdb(pdb: Pdb): Pdb {
  const m = pdb.metadata ?? {};
  return {
    apiVersion: pdb.apiVersion,
    kind: pdb.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
    },
    spec: { selector: pdb.spec?.selector },
    status: { disruptionsAllowed: pdb.status?.disruptionsAllowed ?? 0 },
  } as Pdb;
}

/** What the caches hold, as lists. */
export interface CachedLists {
  pools: readonly BootcNodePool[];
  nodes: readonly Node[];
  bootcNodes: readonly BootcNode[];
}

/** The cluster as every planning call reads it: pools, Nodes and BootcNodes by name. */
export interface ClusterView {
  pools: PoolSummary[];
  nodes: Map<string, NodeSummary>;
  bootcNodes: Map<string, BootcNode>;
}

/** The planner's view of the cached pools, Nodes and BootcNodes. */
export function clusterView(lists: CachedLists): ClusterView {
  const nodes = new Map<string, NodeSummary>();
  for (const n of lists.nodes) nodes.set(n.metadata?.name ?? "", summarizeNode(n));
  const bootcNodes = new Map<string, BootcNode>();
  for (const bn of lists.bootcNodes) bootcNodes.set(bn.metadata.name ?? "", bn);
  const pools: PoolSummary[] = lists.pools.map((p) => ({
    name: p.metadata.name ?? "",
    uid: p.metadata.uid,
    selector: p.spec.nodeSelector,
  }));
  return { pools, nodes, bootcNodes };
}

/** The cluster budgets as the cross-pool gates read them. */
export function clusterBudgets(budgets: readonly BootcDisruptionBudget[]): ClusterBudget[] {
  return budgets.map((b) => ({
    name: b.metadata.name ?? "",
    spec: b.spec as ClusterBudget["spec"],
  }));
}
