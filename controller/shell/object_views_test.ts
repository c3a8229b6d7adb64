import assert from "node:assert/strict";
import {
  clusterBudgets,
  clusterView,
  type Node,
  type Pdb,
  summarizeNode,
  summarizePdb,
  trimNode,
  trimPdb,
  withoutManagedFields,
} from "./object_views.ts";
import { nodeChangeMatters } from "./watch_mapping.ts";

function fullNode(overrides: { annotations?: Record<string, string>; ready?: string } = {}): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: "n1",
      uid: "u1",
      resourceVersion: "7",
      creationTimestamp: "2026-01-01T00:00:00Z",
      labels: { pool: "a", "kubernetes.io/hostname": "n1" },
      annotations: {
        note: "x",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "bootc.dev/in-reboot-slot": "2026-01-01T00:00:00Z",
        "bootc.dev/reboot-slot-pool": "workers",
        "bootc.dev/was-cordoned": "false",
        ...overrides.annotations,
      },
      managedFields: [{ manager: "kubelet" }],
    },
    spec: { unschedulable: true, podCIDR: "10.0.0.0/24", taints: [{ key: "k", effect: "x" }] },
    status: {
      conditions: [
        { type: "MemoryPressure", status: "False" },
        {
          type: "Ready",
          status: overrides.ready ?? "True",
          reason: "KubeletReady",
          message: "kubelet is posting ready status",
          lastHeartbeatTime: "2026-01-01T00:05:00Z",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
      images: [{ names: ["big"], sizeBytes: 1 }],
      capacity: { cpu: "2" },
      nodeInfo: { machineID: "m", bootID: "b" },
      volumesAttached: [],
    },
  } as unknown as Node;
}

Deno.test("trimNode keeps what the planner reads and drops the bulk", () => {
  const node = fullNode();
  const trimmed = trimNode(node);
  assert.deepEqual(trimmed.metadata?.labels, node.metadata?.labels);
  assert.equal(trimmed.metadata?.resourceVersion, "7");
  assert.equal(trimmed.spec?.unschedulable, true);
  assert.equal(trimmed.spec?.podCIDR, undefined);
  assert.equal(trimmed.spec?.taints, undefined);
  assert.deepEqual(trimmed.status?.conditions, [
    { type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" },
  ]);
  assert.equal(trimmed.status?.images, undefined);
  assert.equal(trimmed.status?.nodeInfo, undefined);
  assert.equal(trimmed.metadata?.managedFields, undefined);
  // Only the operator's annotations (the disruption record) stay.
  assert.deepEqual(trimmed.metadata?.annotations, {
    "bootc.dev/in-reboot-slot": "2026-01-01T00:00:00Z",
    "bootc.dev/reboot-slot-pool": "workers",
    "bootc.dev/was-cordoned": "false",
  });
  // A node without any of them carries no annotations at all.
  const plain = trimNode({ ...node, metadata: { ...node.metadata, annotations: { a: "b" } } });
  assert.equal(plain.metadata?.annotations, undefined);
});

Deno.test("trimNode drops nothing the controller reads: same summary, same change decisions", () => {
  const node = fullNode();
  // The planner reads the operator's annotations only (the disruption record).
  const full = summarizeNode(structuredClone(node));
  const ours = Object.fromEntries(
    Object.entries(full.annotations ?? {}).filter(([k]) => k.startsWith("bootc.dev/")),
  );
  assert.deepEqual(summarizeNode(trimNode(node)), { ...full, annotations: ours });
  const variants = [
    fullNode({ ready: "False" }),
    fullNode({ annotations: { "bootc.dev/drained-at": "2026-01-01T00:01:00Z" } }),
    fullNode({ annotations: { note: "changed" } }),
  ];
  for (const changed of variants) {
    assert.equal(
      nodeChangeMatters(trimNode(node), trimNode(changed)),
      nodeChangeMatters(node, changed),
    );
  }
});

Deno.test("trimPdb keeps what summarizePdb reads", () => {
  const pdb = {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: "p", namespace: "apps", uid: "u", managedFields: [{}], labels: { a: "b" } },
    spec: { minAvailable: 1, selector: { matchLabels: { app: "x" } } },
    status: { disruptionsAllowed: 2, currentHealthy: 3, expectedPods: 3, conditions: [] },
  } as unknown as Pdb;
  const trimmed = trimPdb(pdb);
  assert.deepEqual(summarizePdb(trimmed), summarizePdb(pdb));
  assert.equal(trimmed.metadata?.managedFields, undefined);
  assert.equal(trimmed.status?.currentHealthy, undefined);
});

Deno.test("withoutManagedFields drops only managedFields", () => {
  const o = withoutManagedFields({
    metadata: { name: "p", labels: { a: "b" }, managedFields: [{}] },
    spec: { x: 1 },
  } as {
    metadata: { name: string; labels: Record<string, string>; managedFields?: unknown[] };
    spec: { x: number };
  });
  assert.deepEqual(o, { metadata: { name: "p", labels: { a: "b" } }, spec: { x: 1 } });
});

Deno.test("clusterView: pools, Nodes and BootcNodes by name as the planner reads them", () => {
  const node = trimNode(fullNode());
  const view = clusterView({
    pools: [{
      metadata: { name: "workers", uid: "p1" },
      spec: { nodeSelector: { pool: "a" } },
    }] as never,
    nodes: [node],
    bootcNodes: [{ metadata: { name: "n1" }, spec: {} }] as never,
  });
  assert.deepEqual(view.pools, [{ name: "workers", uid: "p1", selector: { pool: "a" } }]);
  assert.equal(view.nodes.get("n1"), summarizeNode(node));
  assert.deepEqual([...view.bootcNodes.keys()], ["n1"]);
  assert.deepEqual(
    clusterBudgets([{ metadata: { name: "b" }, spec: { maxUnavailable: 1 } }] as never),
    [{ name: "b", spec: { maxUnavailable: 1 } }],
  );
});
