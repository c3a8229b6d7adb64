/**
 * Proves the harness runs a real control plane: garbage collection, PDB-aware
 * eviction, fake node readiness, DaemonSet placement, node-bound tokens checked
 * by a ValidatingAdmissionPolicy, an API server restart, and a clean stop.
 */

import assert from "node:assert/strict";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import {
  isNotFound,
  isTooManyRequests,
  KubeClient,
  type KubeError,
  type KubeObject,
  loadKubeConfig,
  Resources,
} from "../../lib/kube/mod.ts";
import {
  type ControlPlane,
  type DaemonSet,
  FAST_POD_ANNOTATIONS,
  type Node,
  type Pod,
  type PodDisruptionBudget,
  startControlPlane,
  waitFor,
} from "../harness/mod.ts";

type ConfigMap = IConfigMap & KubeObject;

function readyOf(node: Node): string | undefined {
  return node.status?.conditions?.find((c) => c.type === "Ready")?.status;
}

async function withTokenClient<T>(
  cp: ControlPlane,
  token: string,
  fn: (client: KubeClient) => Promise<T>,
): Promise<T> {
  const client = await KubeClient.fromConfig(
    await loadKubeConfig({ path: await cp.kubeconfigForToken(token) }),
  );
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

Deno.test("the control plane harness runs real Kubernetes", async (t) => {
  const cp = await startControlPlane();
  const tempDir = cp.kubeconfigPath.slice(0, cp.kubeconfigPath.lastIndexOf("/"));
  let stopped = false;
  try {
    console.log(`control plane startup: ${cp.startupMs} ms`);
    assert.ok(cp.startupMs > 0);
    const nodes = cp.client.resource<Node>(Resources.nodes);

    // Started first, checked last: by then kwok's heartbeat stage has had time to run.
    const heldNode = await cp.createNode("held-not-ready", { ready: false });
    assert.equal(readyOf(heldNode), "False");
    await cp.createNode("heartbeat-witness");

    await t.step("deleting an owner garbage-collects the owned object", async () => {
      const cms = cp.client.resource<ConfigMap>(Resources.configmaps, "default");
      const owner = await cms.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "gc-owner" },
        data: { a: "1" },
      });
      await cms.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: "gc-owned",
          ownerReferences: [{
            apiVersion: "v1",
            kind: "ConfigMap",
            name: "gc-owner",
            uid: owner.metadata!.uid!,
          }],
        },
      });
      await cms.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "gc-bystander" } });
      await cms.delete("gc-owner");
      await waitFor(() => cms.get("gc-owned").then(() => false, (e) => isNotFound(e)), {
        timeoutMs: 30_000,
        message: "garbage collector to delete gc-owned",
      });
      // Only the dependent went away.
      assert.equal((await cms.get("gc-bystander")).metadata?.name, "gc-bystander");
    });

    await t.step("an eviction blocked by a PDB is refused with 429, then allowed", async () => {
      await cp.createNamespace("evict");
      await cp.createNode("evict-node");
      await cp.createPod("evict", "web-1", { nodeName: "evict-node", labels: { app: "web" } });
      const pdb = await cp.createPdb("evict", "web", {
        selector: { app: "web" },
        minAvailable: 1,
      });
      assert.equal(pdb.status?.disruptionsAllowed, 0);
      const refused = await cp.client.evict("evict", "web-1").then(
        () => assert.fail("eviction should be refused"),
        (e: KubeError) => e,
      );
      assert.ok(isTooManyRequests(refused), `expected 429, got ${refused}`);
      assert.equal(refused.status, 429);
      assert.match(refused.message, /disruption budget/);

      await cp.createPod("evict", "web-2", { nodeName: "evict-node", labels: { app: "web" } });
      const pdbs = cp.client.resource<PodDisruptionBudget>(Resources.poddisruptionbudgets, "evict");
      await waitFor(async () => (await pdbs.get("web")).status?.disruptionsAllowed === 1, {
        timeoutMs: 30_000,
        message: "PDB web to allow one disruption",
      });
      await cp.client.evict("evict", "web-1");
      const pods = cp.client.resource<Pod>(Resources.pods, "evict");
      // kwok (the fake kubelet) finishes the graceful deletion.
      await waitFor(() => pods.get("web-1").then(() => false, (e) => isNotFound(e)), {
        timeoutMs: 30_000,
        message: "evicted pod web-1 to be deleted",
      });
      assert.equal((await pods.get("web-2")).status?.phase, "Running");
    });

    await t.step("a fake node is Ready, can be made NotReady and Ready again", async () => {
      const node = await cp.createNode("flip", { labels: { pool: "a" }, unschedulable: true });
      assert.equal(readyOf(node), "True");
      assert.equal(node.spec?.unschedulable, true);
      assert.equal(node.metadata?.labels?.pool, "a");
      const notReady = await cp.setNodeReady("flip", false);
      assert.equal(readyOf(notReady), "False");
      const ready = await cp.setNodeReady("flip", true);
      assert.equal(readyOf(ready), "True");
      const readyCondition = ready.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(readyCondition?.reason, "KubeletReady");
      await cp.deleteNode("flip");
      await assert.rejects(nodes.get("flip"), (e) => isNotFound(e));
    });

    await t.step("a DaemonSet's pods run only on the nodes it selects", async () => {
      await cp.createNamespace("ds");
      await Promise.all([
        cp.createNode("ds-a", { labels: { role: "agent" } }),
        cp.createNode("ds-b", { labels: { role: "agent" } }),
        cp.createNode("ds-c", { labels: { role: "other" } }),
      ]);
      const daemonSets = cp.client.resource<DaemonSet>(Resources.daemonsets, "ds");
      await daemonSets.create({
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: { name: "agent", namespace: "ds" },
        spec: {
          selector: { matchLabels: { app: "agent" } },
          template: {
            metadata: { labels: { app: "agent" }, annotations: { ...FAST_POD_ANNOTATIONS } },
            spec: {
              nodeSelector: { role: "agent" },
              containers: [{ name: "agent", image: "registry.invalid/agent:1" }],
            },
          },
        },
      });
      const pods = cp.client.resource<Pod>(Resources.pods, "ds");
      let last: Pod[] = [];
      const running = await waitFor(async () => {
        last = (await pods.list({ labelSelector: "app=agent" })).items;
        return last.length === 2 && last.every((p) => p.status?.phase === "Running")
          ? last
          : undefined;
      }, {
        timeoutMs: 60_000,
        message: () =>
          `2 Running agent pods; have ${
            JSON.stringify(last.map((p) => [p.spec?.nodeName, p.status?.phase]))
          }`,
      });
      assert.deepEqual(running.map((p) => p.spec?.nodeName).sort(), ["ds-a", "ds-b"]);
      const ds = await daemonSets.get("agent");
      assert.equal(ds.status?.desiredNumberScheduled, 2);
      for (const pod of running) {
        assert.equal(pod.metadata?.ownerReferences?.[0]?.kind, "DaemonSet");
      }
    });

    await t.step("harness pods: DaemonSet-owned and mirror pods", async () => {
      await cp.createNode("special");
      const dsPod = await cp.createPod("default", "logger-special", {
        nodeName: "special",
        ownerDaemonSet: "logger",
      });
      const ref = dsPod.metadata?.ownerReferences?.find((r) => r.controller);
      assert.equal(ref?.kind, "DaemonSet");
      assert.equal(ref?.name, "logger");
      const mirror = await cp.createPod("default", "static-special", {
        nodeName: "special",
        mirror: true,
      });
      assert.ok(mirror.metadata?.annotations?.["kubernetes.io/config.mirror"]);
      assert.equal(mirror.metadata?.ownerReferences?.[0]?.kind, "Node");
      // The DaemonSet controller adopted our pod rather than adding its own.
      await new Promise((r) => setTimeout(r, 1000));
      const pods = await cp.client.resource<Pod>(Resources.pods, "default").list({
        fieldSelector: "spec.nodeName=special",
      });
      assert.deepEqual(pods.items.map((p) => p.metadata?.name).sort(), [
        "logger-special",
        "static-special",
      ]);
    });

    await t.step(
      "a node-bound token carries the node name an admission policy checks",
      async () => {
        await cp.createNamespace("agents");
        await Promise.all([cp.createNode("token-node-a"), cp.createNode("token-node-b")]);
        await cp.applyYaml(`
apiVersion: v1
kind: ServiceAccount
metadata: { name: agent, namespace: agents }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: agent, namespace: agents }
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [create, get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: agent, namespace: agents }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: agent }
subjects:
  - { kind: ServiceAccount, name: agent, namespace: agents }
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: { name: agent-own-node-only }
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [configmaps]
  matchConditions:
    - name: agent-only
      expression: request.userInfo.username == 'system:serviceaccount:agents:agent'
  validations:
    - expression: >-
        'authentication.kubernetes.io/node-name' in request.userInfo.extra &&
        object.metadata.name == request.userInfo.extra['authentication.kubernetes.io/node-name'][0]
      message: an agent may only write the object named after its own node
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: agent-own-node-only }
spec:
  policyName: agent-own-node-only
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: { kubernetes.io/metadata.name: agents }
`);
        const nodeA = await nodes.get("token-node-a");
        const boundToken = await cp.mintToken({
          namespace: "agents",
          serviceAccount: "agent",
          boundObject: { kind: "Node", name: "token-node-a" },
        });
        const unboundToken = await cp.mintToken({ namespace: "agents", serviceAccount: "agent" });

        await withTokenClient(cp, boundToken, async (agent) => {
          const review = await agent.request({
            method: "POST",
            path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            body: JSON.stringify({
              apiVersion: "authentication.k8s.io/v1",
              kind: "SelfSubjectReview",
            }),
          }) as { status: { userInfo: { username: string; extra?: Record<string, string[]> } } };
          const info = review.status.userInfo;
          assert.equal(info.username, "system:serviceaccount:agents:agent");
          assert.deepEqual(info.extra?.["authentication.kubernetes.io/node-name"], [
            "token-node-a",
          ]);
          assert.deepEqual(info.extra?.["authentication.kubernetes.io/node-uid"], [
            nodeA.metadata!.uid!,
          ]);

          const cms = agent.resource<ConfigMap>(Resources.configmaps, "agents");
          // Policies take effect asynchronously: wait until the foreign write is denied.
          const denied = await waitFor(
            () =>
              cms.create({
                apiVersion: "v1",
                kind: "ConfigMap",
                metadata: { name: "token-node-b" },
              }, { dryRun: true }).then(
                () => undefined,
                (e: KubeError) => e,
              ),
            { timeoutMs: 30_000, message: "the policy to deny a write for another node" },
          );
          assert.match(denied.message, /only write the object named after its own node/);
          const own = await cms.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "token-node-a" },
          });
          assert.equal(own.metadata?.name, "token-node-a");
        });

        await withTokenClient(cp, unboundToken, async (agent) => {
          const cms = agent.resource<ConfigMap>(Resources.configmaps, "agents");
          const error = await cms.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "token-node-a-2" },
          }).then(
            () => assert.fail("an unbound token must be denied"),
            (e: KubeError) => e,
          );
          assert.match(error.message, /only write the object named after its own node/);
        });
      },
    );

    await t.step("a NotReady node stays NotReady across kwok heartbeats", async () => {
      const witness = await nodes.get("heartbeat-witness");
      const beat = (n: Node) =>
        n.status?.conditions?.find((c) => c.type === "Ready")?.lastHeartbeatTime;
      const first = beat(witness);
      // kwok's heartbeat stage runs 20–45 s after the last update.
      await waitFor(async () => beat(await nodes.get("heartbeat-witness")) !== first, {
        timeoutMs: 60_000,
        intervalMs: 500,
        message: "kwok to heartbeat the witness node",
      });
      const held = await nodes.get("held-not-ready");
      assert.equal(readyOf(held), "False");
      assert.equal(beat(held), beat(heldNode), "a NotReady node gets no heartbeats");
    });

    await t.step("clients and controllers survive an API server restart", async () => {
      const before = cp.pids["kube-apiserver"];
      await cp.restartApiServer();
      assert.notEqual(cp.pids["kube-apiserver"], before);
      // The controller manager reconnects: a new namespace gets its default account.
      await cp.createNamespace("after-restart");
      assert.ok((await nodes.list()).items.length >= 5);
      const revision = await cp.compactEtcd();
      assert.ok(revision > 1);
      assert.ok((await cp.compactEtcd()) >= revision);
    });

    await t.step("stop() leaves no process or temp folder behind", async () => {
      const pids = Object.values(cp.pids);
      assert.equal(pids.length, 5);
      stopped = true;
      await cp.stop();
      for (const pid of pids) {
        const alive = await Deno.stat(`/proc/${pid}`).then(() => true, () => false);
        assert.equal(alive, false, `process ${pid} still exists`);
      }
      await assert.rejects(Deno.stat(tempDir), Deno.errors.NotFound);
    });
  } finally {
    if (!stopped) await cp.stop();
  }
});
