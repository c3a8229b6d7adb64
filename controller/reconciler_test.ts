import assert from "node:assert/strict";
import { type Node, trimNode, withoutManagedFields } from "./reconciler.ts";

Deno.test("trimNode keeps what the planner reads and drops the bulk", () => {
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: "n1",
      uid: "u1",
      resourceVersion: "7",
      labels: { pool: "a" },
      annotations: { note: "x" },
      managedFields: [{ manager: "kubelet" }],
    },
    spec: { unschedulable: true, podCIDR: "10.0.0.0/24" },
    status: {
      conditions: [
        { type: "MemoryPressure", status: "False" },
        { type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" },
      ],
      images: [{ names: ["big"], sizeBytes: 1 }],
      capacity: { cpu: "2" },
    },
  } as unknown as Node;
  const trimmed = trimNode(node);
  assert.deepEqual(trimmed.metadata?.labels, { pool: "a" });
  assert.equal(trimmed.metadata?.resourceVersion, "7");
  assert.equal(trimmed.spec?.unschedulable, true);
  assert.equal(trimmed.spec?.podCIDR, undefined);
  assert.deepEqual(trimmed.status?.conditions?.map((c) => c.type), ["Ready"]);
  assert.equal(trimmed.status?.images, undefined);
  assert.equal(trimmed.metadata?.managedFields, undefined);
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
