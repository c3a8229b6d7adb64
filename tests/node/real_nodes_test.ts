/**
 * Real nodes (tests/node/real_node.ts: a kubelet and containerd of the control plane's version)
 * on one control plane, in phases that share it, the test registry, the operator's images and
 * node "localhost" (one control plane and node instead of one per test: CI time):
 *
 * 1. basics (node_basics.ts): pods, the `kubernetes` Service, `nsenter` into the node's host, a
 *    reboot;
 * 2. install as a user on the single node (install_phase.ts): kustomize, rollouts with a
 *    reboot while the leader is killed and while the operator is upgraded, then uninstall;
 * 3. the Helm chart on two nodes (helm_phase.ts): a second node joins as the pool's only member.
 *
 * Then both nodes stop and leave nothing behind. A phase that fails ends the test (the next one
 * would start from a state it does not expect).
 *
 * @module
 */

import { startControlPlane } from "../harness/control_plane.ts";
import { startRegistry } from "../harness/registry.ts";
import { SimulatedHost } from "../bootc_sim/mod.ts";
import { openHelm } from "../helm/helm.ts";
import { startRealNode } from "./real_node.ts";
import { NODE_IP } from "./real_node_config.ts";
import { buildOperatorImages, tagDigests } from "./operator_install.ts";
import { assertNothingLeft, machineSnapshot, nodeBasics } from "./node_basics.ts";
import { installAsUser } from "./install_phase.ts";
import { helmOnTwoNodes } from "./helm_phase.ts";

Deno.test("real nodes: basics, install as a user on a single node, the Helm chart on two nodes", async (t) => {
  const work = await Deno.makeTempDir({ prefix: "bootc-real-nodes-test-" });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const before = await machineSnapshot();
    const [[release, upgrade], cp, registry, helm] = await Promise.all([
      buildOperatorImages(work),
      startControlPlane({ kwok: false }),
      startRegistry(),
      openHelm(),
    ]);
    cleanups.push(() => cp.stop(), () => registry.stop(), () => helm.close());
    const port = Number(new URL(registry.url).port);
    const fromNode = `${NODE_IP}:${port}`; // the registry as pods on the nodes reach it
    const v1 = await registry.pushImage({ repository: "os", tag: "v1", version: "1" });
    const v2 = await registry.pushImage({ repository: "os", tag: "v2", version: "2" });
    const v3 = await registry.pushImage({ repository: "os", tag: "v3", version: "3" });
    /** A node with the release's images and the registry, and a host of its own on v1. */
    const startNode = async (name: string) => {
      const node = await startRealNode({
        controlPlane: cp,
        name,
        images: release.map((i) => i.archive),
      });
      cleanups.unshift(() => node.stop()); // nodes stop before the control plane
      await tagDigests(node, release);
      await node.exposeToNode({ name: "registry", port });
      const host = await SimulatedHost.create({
        image: `${registry.host}/os@${v1.digest}`,
        insecureRegistries: [registry.host, fromNode],
      });
      cleanups.push(() => host.destroy());
      await node.installHost(host);
      return { node, host };
    };
    const { node, host } = await startNode("localhost");

    if (!await t.step("basics", (t) => nodeBasics(t, { cp, node, host }))) return;
    const installed = await t.step("install as a user on the single node", (t) =>
      installAsUser(t, {
        cp,
        node,
        host,
        work,
        fromNode,
        release,
        upgrade,
        os: { v1, v2, v3 },
      }));
    if (!installed) return;
    const { node: member, host: memberHost } = await startNode("127.0.0.2");
    const helmed = await t.step(
      "the Helm chart on two nodes, one outside the pool",
      (t) =>
        helmOnTwoNodes(t, {
          cp,
          helm,
          outside: node,
          member,
          memberHost,
          fromNode,
          release,
          os: { v1, v2 },
        }),
    );
    if (!helmed) return;
    await t.step("stopping the nodes leaves nothing behind", async () => {
      await member.stop();
      await node.stop();
      await assertNothingLeft(cp, [node, member], before);
    });
  } finally {
    for (const c of cleanups) await c().catch((e) => console.error(`cleanup: ${e}`));
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
});
