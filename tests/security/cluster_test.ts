/**
 * The install manifests on a real API server: they apply (dry run and for real), and the
 * service accounts they create can do what the operator needs and are refused the rest.
 * The daemon's node scoping (RBAC + ValidatingAdmissionPolicy) is exercised with node-bound
 * and pod-bound tokens, the way the API server issues them to DaemonSet pods.
 */
import assert from "node:assert/strict";
import {
  isForbidden,
  isNotFound,
  KubeClient,
  type KubeObject,
  loadKubeConfig,
  Resources,
} from "../../lib/kube/mod.ts";
import { type ControlPlane, startControlPlane } from "../harness/control_plane.ts";
import { waitFor } from "../harness/wait.ts";
import type { BootcNode as BootcNodeType } from "../../lib/api/mod.ts";
import { LABEL_MANAGED } from "../../lib/api/mod.ts";
import {
  CONTROLLER_SA,
  DAEMON_SA,
  manifestPath,
  OPERATOR_NAMESPACE,
  type PolicyRule,
  readInstall,
} from "./manifests.ts";
import { DAEMON_PULL_SECRETS_ROLE } from "../../controller/model/daemon_access.ts";
import { DaemonAccessSync } from "../../controller/shell/daemon_access_sync.ts";

/** A BootcNode as the kube client handles it. */
type BootcNode = BootcNodeType & KubeObject;
type Node = KubeObject & { spec?: { unschedulable?: boolean } };
type Secret = KubeObject & { type?: string; data?: Record<string, string> };
type Pod = KubeObject & { spec?: { nodeName?: string; serviceAccountName?: string } };
type Role = KubeObject & { rules?: PolicyRule[] };
type CoreEvent = KubeObject & { count?: number };

/** A pull Secret a pool names (the controller grants it to the daemons). */
const NAMED = "pull-secret";
/** A Secret in the operator namespace that no pool names. */
const UNNAMED = "not-named";

const DIGEST = "sha256:" + "a".repeat(64);

/** A client that authenticates with a token minted for one of the operator's accounts. */
async function clientFor(
  cp: ControlPlane,
  serviceAccount: string,
  boundObject?: { kind: "Node" | "Pod"; name: string; namespace?: string },
): Promise<KubeClient> {
  const token = await cp.mintToken({ namespace: OPERATOR_NAMESPACE, serviceAccount, boundObject });
  const path = await cp.kubeconfigForToken(token);
  return await KubeClient.fromConfig(await loadKubeConfig({ path }));
}

/** Asserts the promise fails with 403, and (when given) that the message matches. */
async function refused(promise: Promise<unknown>, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(isForbidden(e), `expected 403 Forbidden, got ${e}`);
    if (message) assert.match((e as Error).message, message);
    return true;
  });
}

function bootcNode(name: string): BootcNode {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNode",
    metadata: { name },
    spec: {
      desiredImage: `quay.io/example/os@${DIGEST}`,
      desiredImageState: "Staged",
      rebootPolicy: "RebootOnly",
    },
  };
}

/** Resolves true once the stream yields its first event (the request was allowed). */
async function first(stream: AsyncIterable<unknown>): Promise<true> {
  for await (const _ of stream) return true;
  throw new Error("the stream ended without an event");
}

/** A core/v1 Event about BootcNode node-a (a cluster-scoped object). */
function event(namespace: string, name: string): CoreEvent {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name, namespace },
    involvedObject: {
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNode",
      name: "node-a",
    },
    reason: "SecurityTest",
    message: "written by the daemon's token",
    type: "Normal",
  } as CoreEvent;
}

/** The policy's denial message for a daemon writing another node's BootcNode. */
const NOT_OWN_NODE = /may only write BootcNode node-a, not node-b/;
/** The policy's denial message for daemon credentials without a node. */
const NO_NODE_CLAIM = /must be bound to a node/;

Deno.test("install manifests on a real control plane", async (t) => {
  const cp = await startControlPlane({ quiet: true });
  const clients: KubeClient[] = [];
  try {
    await t.step("kubectl apply --dry-run=server accepts every object", async () => {
      // Namespaced objects need their namespace to exist even in a dry run.
      await cp.applyYaml(manifestPath("namespace.yaml"));
      const expected = (await readInstall()).length;
      for (const source of [["-f", manifestPath("install.yaml")], ["-k", manifestPath("")]]) {
        const out = await cp.kubectl(["apply", "--server-side", "--dry-run=server", ...source]);
        assert.equal(out.code, 0, out.stderr);
        const lines = out.stdout.trim().split("\n").filter((l) => /\(server dry run\)$/.test(l));
        assert.equal(lines.length, expected, out.stdout);
      }
    });

    await t.step("the real install succeeds and the sample pool validates", async () => {
      await cp.applyYaml(manifestPath("install.yaml"));
      const established = await cp.kubectl([
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/bootcnodepools.node.bootc.dev",
        "crd/bootcnodes.node.bootc.dev",
      ]);
      assert.equal(established.code, 0, established.stderr);
      const pool = await cp.kubectl([
        "apply",
        "--server-side",
        "--dry-run=server",
        "-f",
        manifestPath("samples/pool.yaml"),
      ]);
      assert.equal(pool.code, 0, pool.stderr);
    });

    await t.step(
      "GitOps: a second field manager re-applies install.yaml; diff is then empty",
      async () => {
        // As Argo CD and Flux do: the same manifest under another manager. Atomic structs (the
        // admission policy's matchConstraints) conflict unless the manifest spells out every
        // default the server would add.
        const manager = ["--server-side", "--field-manager=gitops-controller"];
        const again = await cp.kubectl(["apply", ...manager, "-f", manifestPath("install.yaml")]);
        assert.equal(again.code, 0, again.stderr);
        const diff = await cp.kubectl(["diff", ...manager, "-f", manifestPath("install.yaml")]);
        assert.equal(diff.code, 0, `kubectl diff after apply:\n${diff.stdout}${diff.stderr}`);
      },
    );

    await cp.createNode("node-a");
    await cp.createNode("node-b");
    const bootcNodes = cp.client.resource<BootcNode>(Resources.bootcNodes);
    await bootcNodes.create(bootcNode("node-a"));
    await bootcNodes.create(bootcNode("node-b"));
    const operatorSecrets = cp.client.resource<Secret>(Resources.secrets, OPERATOR_NAMESPACE);
    for (const name of [NAMED, UNNAMED]) {
      await operatorSecrets.create({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name, namespace: OPERATOR_NAMESPACE },
        type: "kubernetes.io/dockerconfigjson",
        data: { ".dockerconfigjson": btoa('{"auths":{}}') },
      });
    }
    await cp.client.resource<Secret>(Resources.secrets, "default").create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "elsewhere", namespace: "default" },
      data: { token: btoa("x") },
    });
    const daemon = await clientFor(cp, DAEMON_SA, { kind: "Node", name: "node-a" });
    clients.push(daemon);
    const controller = await clientFor(cp, CONTROLLER_SA);
    clients.push(controller);
    const daemonSecrets = daemon.resource<Secret>(Resources.secrets, OPERATOR_NAMESPACE);
    const daemonRole = () =>
      cp.client.resource<Role>(Resources.roles, OPERATOR_NAMESPACE).get(DAEMON_PULL_SECRETS_ROLE);
    /** The controller's own Role sync, run with the controller's token. */
    let named: string[] = [];
    const access = new DaemonAccessSync({
      client: controller,
      namespace: OPERATOR_NAMESPACE,
      desiredNames: () => named,
    });

    await t.step("as installed, a daemon token reads no Secret at all", async () => {
      assert.deepEqual((await daemonRole()).rules ?? [], []);
      await refused(daemonSecrets.get(NAMED));
      await refused(daemonSecrets.get(UNNAMED));
    });

    await t.step("the controller's token names the pull Secrets in the daemon's Role", async () => {
      // Allowed, although the controller holds no `escalate`: it may get these Secrets itself.
      named = [NAMED];
      await access.ensure();
      assert.deepEqual((await daemonRole()).rules, [
        { apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: [NAMED] },
      ]);
      // Re-applying the install (server-side, as documented) leaves the controller's grant.
      await cp.applyYaml(manifestPath("install.yaml"));
      assert.deepEqual((await daemonRole()).rules?.[0].resourceNames, [NAMED]);
      // The daemon can now read exactly that one (RBAC caches follow within moments).
      await waitFor(() => daemonSecrets.get(NAMED).then(() => true, () => false), {
        timeoutMs: 30_000,
        message: "the daemon reads the named pull Secret",
      });
    });

    await t.step("a daemon token bound to node A: what it can read", async () => {
      // Its own BootcNode, through the field-selected list/watch the agent uses...
      const nodes = daemon.resource<BootcNode>(Resources.bootcNodes);
      const listed = await nodes.list({ fieldSelector: "metadata.name=node-a" });
      assert.deepEqual(listed.items.map((n) => n.metadata.name), ["node-a"]);
      assert.equal((await nodes.get("node-a")).metadata.name, "node-a");
      // ...but RBAC cannot narrow a list by field: every BootcNode is readable (documented).
      const all = await nodes.list();
      assert.deepEqual(all.items.map((n) => n.metadata.name).sort(), ["node-a", "node-b"]);
      assert.equal(await first(nodes.watch({ fieldSelector: "metadata.name=node-a" })), true);

      // Nodes: get by name (its own, and, as RBAC cannot say "own", any other); never list.
      const k8sNodes = daemon.resource<Node>(Resources.nodes);
      assert.equal((await k8sNodes.get("node-a")).metadata?.name, "node-a");
      assert.equal((await k8sNodes.get("node-b")).metadata?.name, "node-b");
      await refused(k8sNodes.list());
      await refused(first(k8sNodes.watch()));

      // Secrets: the named pull Secret only.
      assert.equal((await daemonSecrets.get(NAMED)).metadata?.name, NAMED);
      await refused(daemonSecrets.get(UNNAMED));
      await refused(daemonSecrets.list());
      await refused(first(daemonSecrets.watch()));
      await refused(daemon.resource<Secret>(Resources.secrets).list());
      await refused(daemon.resource<Secret>(Resources.secrets, "default").get("elsewhere"));
      await refused(daemon.resource<Secret>(Resources.secrets, "kube-system").list());

      // Nothing else.
      await refused(daemon.resource(Resources.bootcNodePools).list());
      await refused(daemon.resource(Resources.pods).list());
      await refused(daemon.resource(Resources.configmaps, OPERATOR_NAMESPACE).list());
      await refused(
        daemon.resource<Role>(Resources.roles, OPERATOR_NAMESPACE).get(
          DAEMON_PULL_SECRETS_ROLE,
        ),
      );
    });

    await t.step("a daemon token bound to node A: what it can write", async () => {
      const nodes = daemon.resource<BootcNode>(Resources.bootcNodes);
      // Its own BootcNode's status, by update and by patch.
      const own = await nodes.get("node-a");
      own.status = { bootcVersion: "1.4.0", booted: { imageDigest: DIGEST } };
      const updated = await nodes.updateStatus(own);
      assert.equal(updated.status?.bootcVersion, "1.4.0");
      const patched = await nodes.patch("node-a", { status: { bootcVersion: "1.5.0" } }, {
        type: "merge",
        subresource: "status",
      });
      assert.equal(patched.status?.bootcVersion, "1.5.0");

      // Another node's BootcNode: RBAC allows status writes cluster-wide; the policy refuses.
      const other = await nodes.get("node-b");
      other.status = { bootcVersion: "9.9.9" };
      await refused(nodes.updateStatus(other), NOT_OWN_NODE);
      await refused(
        nodes.patch("node-b", { status: { bootcVersion: "9.9.9" } }, {
          type: "merge",
          subresource: "status",
        }),
        NOT_OWN_NODE,
      );
      assert.equal((await bootcNodes.get("node-b")).status?.bootcVersion, undefined);

      // The spec is the controller's: even its own BootcNode's spec is not writable.
      await refused(
        nodes.patch("node-a", { spec: { desiredImageState: "Booted" } }, { type: "merge" }),
      );
      await refused(nodes.delete("node-a"));
      await refused(nodes.create(bootcNode("node-c")));

      // Nodes are not the daemon's to write.
      const k8sNodes = daemon.resource<Node>(Resources.nodes);
      await refused(
        k8sNodes.patch("node-a", { metadata: { labels: { stolen: "true" } } }, { type: "merge" }),
      );
      await refused(k8sNodes.patch("node-a", { spec: { unschedulable: true } }, { type: "merge" }));

      // Secrets and Roles are not writable, not even the named Secret or its own Role.
      await refused(daemonSecrets.patch(NAMED, { data: { x: btoa("y") } }, { type: "merge" }));
      await refused(daemonSecrets.delete(NAMED));
      await refused(
        daemon.resource<Role>(Resources.roles, OPERATOR_NAMESPACE).patch(
          DAEMON_PULL_SECRETS_ROLE,
          { rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get", "list"] }] },
          { type: "merge" },
        ),
      );

      // Events: created and patched in "default" (where events about BootcNodes go) only.
      const events = daemon.resource<CoreEvent>(Resources.events, "default");
      const created = await events.create(event("default", "daemon-test"));
      assert.equal(created.metadata?.name, "daemon-test");
      await events.patch("daemon-test", { count: 2 }, { type: "merge" });
      await refused(events.delete("daemon-test"));
      await refused(events.list());
      await refused(
        daemon.resource<CoreEvent>(Resources.events, OPERATOR_NAMESPACE).create(
          event(OPERATOR_NAMESPACE, "daemon-test"),
        ),
      );
      await refused(
        daemon.resource<CoreEvent>(Resources.events, "kube-system").create(
          event("kube-system", "daemon-test"),
        ),
      );
    });

    await t.step("with no pull Secret named, the daemon's Role grants nothing again", async () => {
      // An empty resourceNames would grant every Secret: the controller removes the rule.
      named = [];
      await access.ensure();
      assert.deepEqual((await daemonRole()).rules ?? [], []);
      await waitFor(() => daemonSecrets.get(NAMED).then(() => false, (e) => isForbidden(e)), {
        timeoutMs: 30_000,
        message: "the daemon is refused the formerly named Secret",
      });
      await refused(daemonSecrets.get(UNNAMED));
    });

    await t.step(
      "daemon credentials without a node binding cannot write any BootcNode",
      async () => {
        const unbound = await clientFor(cp, DAEMON_SA);
        clients.push(unbound);
        const nodes = unbound.resource<BootcNode>(Resources.bootcNodes);
        assert.equal((await nodes.get("node-a")).metadata.name, "node-a");
        await refused(
          nodes.patch("node-a", { status: { bootcVersion: "1.0.0" } }, {
            type: "merge",
            subresource: "status",
          }),
          NO_NODE_CLAIM,
        );
      },
    );

    await t.step("the DaemonSet pod's own (pod-bound) token carries its node", async () => {
      // The controller labels managed nodes; the DaemonSet then places a daemon pod there.
      await cp.client.resource<Node>(Resources.nodes).patch(
        "node-a",
        { metadata: { labels: { [LABEL_MANAGED]: "" } } },
        { type: "merge" },
      );
      const pods = cp.client.resource<Pod>(Resources.pods, OPERATOR_NAMESPACE);
      const pod = await waitFor(async () => {
        const list = await pods.list({
          labelSelector: "app.kubernetes.io/name=bootc-operator-daemon",
        });
        return list.items.find((p) => p.spec?.nodeName === "node-a");
      }, { timeoutMs: 60_000, message: "a daemon pod on node-a (DaemonSet controller)" });
      assert.equal(pod.spec?.serviceAccountName, DAEMON_SA);

      const daemon = await clientFor(cp, DAEMON_SA, {
        kind: "Pod",
        name: pod.metadata!.name!,
        namespace: OPERATOR_NAMESPACE,
      });
      clients.push(daemon);
      const nodes = daemon.resource<BootcNode>(Resources.bootcNodes);
      const status = { type: "merge" as const, subresource: "status" };
      const own = await nodes.patch("node-a", { status: { bootcVersion: "2.0.0" } }, status);
      assert.equal(own.status?.bootcVersion, "2.0.0");
      await refused(
        nodes.patch("node-b", { status: { bootcVersion: "2.0.0" } }, status),
        NOT_OWN_NODE,
      );
    });

    await t.step("the controller's account does its job and nothing more", async () => {
      // Allowed: what the reconciler does.
      const nodes = controller.resource<Node>(Resources.nodes);
      assert.ok((await nodes.list()).items.length >= 2);
      await nodes.patch("node-b", { spec: { unschedulable: true } }, { type: "merge" });
      await nodes.patch("node-b", { spec: { unschedulable: false } }, { type: "merge" });
      const bootcNodes = controller.resource<BootcNode>(Resources.bootcNodes);
      await bootcNodes.create(bootcNode("node-c"));
      await bootcNodes.patch(
        "node-c",
        { spec: { desiredImageState: "Booted" } },
        { type: "merge" },
      );
      await bootcNodes.delete("node-c");
      // Its one status write on BootcNodes: the Stalled condition.
      await bootcNodes.patch(
        "node-a",
        { status: { conditions: [] } },
        { type: "merge", subresource: "status" },
      );
      await controller.resource(Resources.bootcNodePools).list();
      // Secrets: in the operator namespace only (pull secrets live there).
      const secrets = controller.resource<Secret>(Resources.secrets, OPERATOR_NAMESPACE);
      assert.deepEqual(
        (await secrets.list()).items.map((s) => s.metadata?.name).sort(),
        [NAMED, UNNAMED].sort(),
      );
      assert.equal(await first(secrets.watch()), true);
      await controller.resource(Resources.pods).list();
      await controller.resource(Resources.poddisruptionbudgets).list();
      await controller.resource(Resources.leases, OPERATOR_NAMESPACE).create({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "security-test", namespace: OPERATOR_NAMESPACE },
      });

      // Refused: what it has no business doing.
      await refused(nodes.delete("node-b"));
      await refused(controller.resource(Resources.configmaps, "default").list());
      await refused(controller.resource(Resources.configmaps, OPERATOR_NAMESPACE).get("x"));
      await refused(
        controller.resource<Pod>(Resources.pods, "default").create({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "intruder", namespace: "default" },
          spec: { containers: [{ name: "x", image: "x" }] },
        } as Pod),
      );
      // Deleting pods is allowed since issue 26 (`spec.rollout.drain.onTimeout: Force` deletes
      // what evictions could not remove): a missing pod is NotFound, not Forbidden.
      await assert.rejects(
        controller.resource(Resources.pods, "default").delete("anything"),
        (e: unknown) => isNotFound(e),
      );
      await refused(controller.resource<Secret>(Resources.secrets, "default").get("elsewhere"));
      await refused(controller.resource<Secret>(Resources.secrets).list());
      await refused(controller.resource<Secret>(Resources.secrets, "default").delete("elsewhere"));
      await refused(secrets.patch(NAMED, { data: { x: btoa("y") } }, { type: "merge" }));
      // Roles: the daemon's pull-secret Role only, get and update only.
      const roles = controller.resource<Role>(Resources.roles, OPERATOR_NAMESPACE);
      await refused(roles.list());
      await refused(roles.get("bootc-operator-controller-leader-election"));
      await refused(
        roles.patch("bootc-operator-controller-leader-election", {
          rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }],
        }, { type: "merge" }),
      );
      await refused(
        roles.create({
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: "more", namespace: OPERATOR_NAMESPACE },
        } as Role),
      );
      await refused(roles.delete(DAEMON_PULL_SECRETS_ROLE));
      // Nor can it grant the daemons more than it holds itself (RBAC's escalation check).
      const daemonRoleNow = await roles.get(DAEMON_PULL_SECRETS_ROLE);
      await refused(
        roles.update({
          ...daemonRoleNow,
          rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
        }),
      );
      await refused(
        controller.resource(Resources.bootcNodePools).create({
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcNodePool",
          metadata: { name: "not-yours" },
        }),
      );
      await refused(controller.resource(Resources.leases, "kube-system").list());
      await refused(controller.resource(Resources.clusterroles).list());
    });
  } finally {
    for (const client of clients) client.close();
    await cp.stop();
  }
});
