/**
 * The install manifests grant exactly what the design needs, and the workloads run with the
 * security settings the design promises. (tests/security/cluster_test.ts checks the same
 * manifests against a real API server.)
 */
import assert from "node:assert/strict";
import {
  CONTROLLER_SA,
  DAEMON_SA,
  find,
  flattenRules,
  type ManifestObject,
  manifestPath,
  OPERATOR_NAMESPACE,
  parseManifests,
  type PolicyRule,
  readInstall,
} from "./manifests.ts";
import { MANIFEST_SOURCES } from "../../tools/gen.ts";
import { LABEL_MANAGED } from "../../lib/api/mod.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("install.yaml holds the namespace, CRDs, RBAC, policy and workloads, in order", async () => {
  const objects = await readInstall();
  assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`), [
    "Namespace/bootc-operator",
    "CustomResourceDefinition/bootcnodepools.node.bootc.dev",
    "CustomResourceDefinition/bootcnodes.node.bootc.dev",
    "CustomResourceDefinition/bootcdisruptionbudgets.node.bootc.dev",
    "ServiceAccount/bootc-operator-controller",
    "ClusterRole/bootc-operator-controller",
    "ClusterRoleBinding/bootc-operator-controller",
    "Role/bootc-operator-controller-leader-election",
    "RoleBinding/bootc-operator-controller-leader-election",
    "Role/bootc-operator-controller-pull-secrets",
    "RoleBinding/bootc-operator-controller-pull-secrets",
    "ServiceAccount/bootc-operator-daemon",
    "ClusterRole/bootc-operator-daemon",
    "ClusterRoleBinding/bootc-operator-daemon",
    "Role/bootc-operator-daemon-pull-secrets",
    "RoleBinding/bootc-operator-daemon-pull-secrets",
    "Role/bootc-operator-daemon-events",
    "RoleBinding/bootc-operator-daemon-events",
    "ValidatingAdmissionPolicy/bootc-operator-daemon-own-node",
    "ValidatingAdmissionPolicyBinding/bootc-operator-daemon-own-node",
    "Deployment/bootc-operator-controller",
    "DaemonSet/bootc-operator-daemon",
  ]);
  const namespaced = ["ServiceAccount", "Role", "RoleBinding", "Deployment", "DaemonSet"];
  for (const o of objects.filter((o) => namespaced.includes(o.kind))) {
    // Events about cluster-scoped objects live in "default": the daemon may write them there.
    const want = o.metadata.name === "bootc-operator-daemon-events"
      ? "default"
      : OPERATOR_NAMESPACE;
    assert.equal(o.metadata.namespace, want, `${o.kind}/${o.metadata.name}`);
  }
  // Every source is in install.yaml (a new source file must be added to MANIFEST_SOURCES).
  const listed = new Set<string>(["namespace.yaml", "kustomization.yaml", "install.yaml"]);
  for (const name of MANIFEST_SOURCES) listed.add(name);
  for await (const entry of Deno.readDir(manifestPath(""))) {
    if (entry.isFile && entry.name.endsWith(".yaml")) {
      assert.ok(listed.has(entry.name), `${entry.name} is not rendered into install.yaml`);
    }
  }
});

Deno.test("the namespace admits the privileged daemon", async () => {
  const ns = find(await readInstall(), "Namespace", OPERATOR_NAMESPACE);
  assert.equal(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"], "privileged");
});

Deno.test("the controller's roles grant exactly the verbs it uses", async () => {
  const objects = await readInstall();
  const cluster = find(objects, "ClusterRole", CONTROLLER_SA) as Any;
  assert.deepEqual(flattenRules(cluster.rules as PolicyRule[]), [
    "core/events:create",
    "core/events:patch",
    "core/nodes:get",
    "core/nodes:list",
    "core/nodes:patch",
    "core/nodes:watch",
    "core/persistentvolumes:get",
    "core/pods/eviction:create",
    "core/pods:delete",
    "core/pods:list",
    "core/pods:watch",
    "node.bootc.dev/bootcdisruptionbudgets/status:patch",
    "node.bootc.dev/bootcdisruptionbudgets:get",
    "node.bootc.dev/bootcdisruptionbudgets:list",
    "node.bootc.dev/bootcdisruptionbudgets:watch",
    "node.bootc.dev/bootcnodepools/finalizers:update",
    "node.bootc.dev/bootcnodepools/status:patch",
    "node.bootc.dev/bootcnodepools/status:update",
    "node.bootc.dev/bootcnodepools:get",
    "node.bootc.dev/bootcnodepools:list",
    "node.bootc.dev/bootcnodepools:patch",
    "node.bootc.dev/bootcnodepools:watch",
    "node.bootc.dev/bootcnodes/status:patch",
    "node.bootc.dev/bootcnodes/status:update",
    "node.bootc.dev/bootcnodes:create",
    "node.bootc.dev/bootcnodes:delete",
    "node.bootc.dev/bootcnodes:get",
    "node.bootc.dev/bootcnodes:list",
    "node.bootc.dev/bootcnodes:patch",
    "node.bootc.dev/bootcnodes:update",
    "node.bootc.dev/bootcnodes:watch",
    "policy/poddisruptionbudgets:get",
    "policy/poddisruptionbudgets:list",
    "policy/poddisruptionbudgets:watch",
    "storage.k8s.io/volumeattachments:list",
  ]);
  const lease = find(objects, "Role", "bootc-operator-controller-leader-election") as Any;
  assert.deepEqual(flattenRules(lease.rules), [
    "coordination.k8s.io/leases:create",
    "coordination.k8s.io/leases:get",
    "coordination.k8s.io/leases:update",
  ]);
  // Secrets: only in the operator namespace; the one Role it writes is the daemon's.
  const pullSecrets = find(objects, "Role", "bootc-operator-controller-pull-secrets") as Any;
  assert.deepEqual(flattenRules(pullSecrets.rules), [
    "core/secrets:get",
    "core/secrets:list",
    "core/secrets:watch",
    "rbac.authorization.k8s.io/roles:get[bootc-operator-daemon-pull-secrets]",
    "rbac.authorization.k8s.io/roles:update[bootc-operator-daemon-pull-secrets]",
  ]);
  assertBoundTo(objects, "ClusterRoleBinding", CONTROLLER_SA, CONTROLLER_SA);
  assertBoundTo(objects, "RoleBinding", "bootc-operator-controller-leader-election", CONTROLLER_SA);
  assertBoundTo(objects, "RoleBinding", "bootc-operator-controller-pull-secrets", CONTROLLER_SA);
});

Deno.test("the daemon's roles: BootcNodes, their status, Nodes by name, events; no Secret", async () => {
  const objects = await readInstall();
  const cluster = find(objects, "ClusterRole", DAEMON_SA) as Any;
  assert.deepEqual(flattenRules(cluster.rules), [
    "core/nodes:get",
    "node.bootc.dev/bootcnodes/status:patch",
    "node.bootc.dev/bootcnodes/status:update",
    "node.bootc.dev/bootcnodes:get",
    "node.bootc.dev/bootcnodes:list",
    "node.bootc.dev/bootcnodes:watch",
  ]);
  // The pull-secret Role ships without rules: the controller fills in the Secrets pools name
  // (and re-applying the manifest server-side leaves them alone).
  const secrets = find(objects, "Role", "bootc-operator-daemon-pull-secrets") as Any;
  assert.equal(secrets.rules, undefined);
  const events = find(objects, "Role", "bootc-operator-daemon-events") as Any;
  assert.equal(events.metadata.namespace, "default");
  assert.deepEqual(flattenRules(events.rules), ["core/events:create", "core/events:patch"]);
  assertBoundTo(objects, "ClusterRoleBinding", DAEMON_SA, DAEMON_SA);
  assertBoundTo(objects, "RoleBinding", "bootc-operator-daemon-pull-secrets", DAEMON_SA);
  assertBoundTo(objects, "RoleBinding", "bootc-operator-daemon-events", DAEMON_SA);
});

Deno.test("the admission policy applies to the daemon's writes of BootcNodes and denies", async () => {
  const objects = await readInstall();
  const policy = find(
    objects,
    "ValidatingAdmissionPolicy",
    "bootc-operator-daemon-own-node",
  ) as Any;
  assert.equal(policy.spec.failurePolicy, "Fail");
  const [rule] = policy.spec.matchConstraints.resourceRules;
  assert.deepEqual(rule.apiGroups, ["node.bootc.dev"]);
  assert.deepEqual(rule.resources, ["bootcnodes", "bootcnodes/status"]);
  assert.deepEqual(rule.operations, ["CREATE", "UPDATE", "DELETE"]);
  assert.match(
    policy.spec.matchConditions[0].expression,
    new RegExp(`'system:serviceaccount:${OPERATOR_NAMESPACE}:${DAEMON_SA}'`),
  );
  const binding = find(
    objects,
    "ValidatingAdmissionPolicyBinding",
    "bootc-operator-daemon-own-node",
  ) as Any;
  assert.equal(binding.spec.policyName, policy.metadata.name);
  assert.deepEqual(binding.spec.validationActions, ["Deny"]);
});

Deno.test("the controller Deployment: two replicas, probes, requests, locked-down container", async () => {
  const deployment = find(await readInstall(), "Deployment", CONTROLLER_SA) as Any;
  assert.equal(deployment.spec.replicas, 2);
  const pod = deployment.spec.template.spec;
  assert.equal(pod.serviceAccountName, CONTROLLER_SA);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(pod.hostPID, undefined);
  const [container] = pod.containers;
  assert.ok(container.args.includes("--leader-elect=true"));
  assert.ok(container.args.includes("--metrics-addr=:8080"));
  const port = container.ports.find((p: Any) => p.name === container.livenessProbe.httpGet.port);
  assert.equal(port.containerPort, 8080);
  assert.equal(container.livenessProbe.httpGet.path, "/healthz");
  assert.equal(container.readinessProbe.httpGet.path, "/readyz");
  assert.ok(container.resources.requests.cpu && container.resources.requests.memory);
  assert.deepEqual(container.securityContext, {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ["ALL"] },
  });
});

Deno.test("the daemon DaemonSet: managed nodes only, hostPID, privileged, node name, tolerant", async () => {
  const daemonSet = find(await readInstall(), "DaemonSet", DAEMON_SA) as Any;
  const pod = daemonSet.spec.template.spec;
  assert.deepEqual(pod.nodeSelector, { [LABEL_MANAGED]: "" });
  assert.equal(pod.hostPID, true);
  assert.equal(pod.serviceAccountName, DAEMON_SA);
  assert.equal(pod.priorityClassName, "system-node-critical");
  assert.deepEqual(pod.tolerations, [{ operator: "Exists" }]);
  assert.equal(pod.volumes, undefined, "no host filesystem mount");
  const [container] = pod.containers;
  assert.deepEqual(container.args, ["run"]);
  assert.equal(container.securityContext.privileged, true);
  const nodeName = container.env.find((e: Any) => e.name === "NODE_NAME");
  assert.deepEqual(nodeName.valueFrom, {
    fieldRef: { apiVersion: "v1", fieldPath: "spec.nodeName" },
  });
});

Deno.test("the sample pool is a BootcNodePool", async () => {
  const [pool] = parseManifests(await Deno.readTextFile(manifestPath("samples/pool.yaml")));
  assert.equal(pool.apiVersion, "node.bootc.dev/v1alpha1");
  assert.equal(pool.kind, "BootcNodePool");
});

function assertBoundTo(
  objects: ManifestObject[],
  kind: "ClusterRoleBinding" | "RoleBinding",
  name: string,
  serviceAccount: string,
): void {
  const binding = find(objects, kind, name) as Any;
  assert.equal(binding.roleRef.name, name);
  assert.deepEqual(binding.subjects, [
    { kind: "ServiceAccount", name: serviceAccount, namespace: OPERATOR_NAMESPACE },
  ]);
}
