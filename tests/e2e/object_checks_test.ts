/**
 * Object preconditions on the real control plane, over a custom resource whose status the test
 * flips (a stand-in "CephCluster" CRD): without read access the pool names the permission it
 * lacks (Degraded); granted, an unhealthy object holds every new slot; healthy, the rollout
 * finishes. An expression that fails on the object fails closed, Degraded; one that does not
 * compile is InvalidSpec naming the field.
 */
import assert from "node:assert/strict";
import { type BootcNodePool, findCondition } from "../../lib/api/mod.ts";
import type { Stack } from "../harness/stack.ts";
import { startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cephclusters.storage.test.bootc.dev
spec:
  group: storage.test.bootc.dev
  scope: Namespaced
  names: { plural: cephclusters, singular: cephcluster, kind: CephCluster }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`;

const cluster = (health: string) =>
  `apiVersion: storage.test.bootc.dev/v1
kind: CephCluster
metadata: { name: rook, namespace: default }
status: { ceph: { health: ${health} } }
`;

const READER = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: bootc-preconditions }
rules:
  - apiGroups: [storage.test.bootc.dev]
    resources: [cephclusters]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: bootc-preconditions }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bootc-preconditions }
subjects:
  - { kind: ServiceAccount, name: bootc-operator-controller, namespace: bootc-operator }
`;

const HEALTHY = 'object.status.ceph.health == "HEALTH_OK"';

function conditions(p: BootcNodePool) {
  return {
    upToDate: findCondition(p.status?.conditions, "UpToDate"),
    degraded: findCondition(p.status?.conditions, "Degraded"),
  };
}

/** Waits until the pool's conditions satisfy `ok`. */
function waitConditions(
  stack: Stack,
  ok: (c: ReturnType<typeof conditions>) => boolean,
  what: string,
) {
  return waitPool(stack, "oc", async () => {
    const c = conditions(await getPool(stack, "oc"));
    return ok(c) ? c : undefined;
  }, what);
}

Deno.test("object checks: CEL over a custom resource holds reboots until it passes", async (t) => {
  const stack = await startStack({ limits: { oc: { maxUnavailable: 1 } } });
  const { v1, v2, repository } = stack.images;
  const objects = (expression: string) => [{
    apiVersion: "storage.test.bootc.dev/v1",
    kind: "CephCluster",
    namespace: "default",
    name: "rook",
    expression,
  }];
  try {
    await stack.cp.applyYaml(CRD);
    await waitPool(stack, "oc", async () => {
      const r = await stack.cp.kubectl(["get", "cephclusters", "-A"]);
      return r.code === 0;
    }, "the CRD served");
    await stack.cp.applyYaml(cluster("HEALTH_WARN"));
    const nodes = await addNodes(stack, "oc", 3);
    await stack.createPool(
      "oc",
      poolSpec("oc", `${repository}@${v1.digest}`, {
        maxUnavailable: 1,
        preconditions: { objects: objects(HEALTHY) },
      }),
    );

    await step(
      t,
      "without read access: Degraded names the permission, nothing granted",
      async () => {
        await patchPoolSpec(stack, "oc", { image: { ref: `${repository}@${v2.digest}` } });
        const c = await waitConditions(
          stack,
          (c) =>
            c.degraded?.reason === "PreconditionFailing" &&
            c.upToDate?.reason === "PreconditionUnknown",
          "Degraded PreconditionFailing, the staged nodes held",
        );
        assert.match(
          c.degraded?.message ?? "",
          /may not get cephclusters\.storage\.test\.bootc\.dev in namespace default/,
        );
        assert.deepEqual(stack.tracker.intervals, [], "no node disrupted");
      },
    );

    await step(t, "granted: an unhealthy object holds; healthy, the rollout ends", async () => {
      await stack.cp.applyYaml(READER);
      const c = await waitConditions(
        stack,
        (c) => c.upToDate?.reason === "PreconditionNotMet" && c.degraded?.status === "False",
        "held by the unhealthy object, no longer Degraded",
      );
      assert.match(c.upToDate?.message ?? "", /is false for default\/rook/);
      await new Promise((r) => setTimeout(r, 6_000));
      assert.deepEqual(stack.tracker.intervals, [], "no slot while HEALTH_WARN");
      await stack.cp.applyYaml(cluster("HEALTH_OK"));
      await waitConverged(stack, "oc", v2.digest, 3, 120_000);
    });

    await step(
      t,
      "an expression that errs fails closed; one that cannot compile is InvalidSpec",
      async () => {
        const before = stack.tracker.intervals.length;
        await patchPoolSpec(stack, "oc", {
          image: { ref: `${repository}@${v1.digest}` },
          rollout: { preconditions: { objects: objects('object.status.osd.state == "up"') } },
        });
        const erring = await waitConditions(
          stack,
          (c) => c.degraded?.reason === "PreconditionFailing",
          "Degraded for the failing expression",
        );
        assert.match(erring.degraded?.message ?? "", /on default\/rook: No such key: osd/);
        await patchPoolSpec(stack, "oc", {
          rollout: { preconditions: { objects: objects("object.status ==") } },
        });
        const invalid = await waitConditions(
          stack,
          (c) => c.degraded?.reason === "InvalidSpec",
          "InvalidSpec for the expression",
        );
        assert.match(invalid.degraded?.message ?? "", /preconditions\.objects\[0\]\.expression/);
        assert.equal(stack.tracker.intervals.length, before, "nothing granted meanwhile");
        await patchPoolSpec(stack, "oc", {
          rollout: { preconditions: { objects: objects(HEALTHY) } },
        });
        await waitConverged(stack, "oc", v1.digest, 3, 120_000);
        await assertInvariants(stack, nodes);
      },
    );
  } finally {
    await stopStack(stack);
  }
});
