/**
 * The Helm chart on two real nodes (tests/node/real_node.ts), the layout where the pool is not
 * the whole cluster: node "localhost" is outside the pool, node "127.0.0.2" is its only member.
 * `helm install` with the images pinned by digest (values `*.image.repository/digest`) and the
 * controller's `--insecure-registry` (`controller.extraArgs`); the daemon runs on the member
 * only; a pool rolls the member from v1 to v2 while a real pod is evicted to the other node,
 * which is never cordoned nor rebooted.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Resources } from "../../lib/kube/mod.ts";
import type { BootcNodePool } from "../../lib/api/schema.ts";
import { type Node, type Pod, startControlPlane } from "../harness/control_plane.ts";
import { startRegistry } from "../harness/registry.ts";
import { waitFor } from "../harness/wait.ts";
import { SimulatedHost } from "../bootc_sim/mod.ts";
import { openHelm } from "../helm/helm.ts";
import { BUSYBOX_IMAGE, type RealNode, startRealNode } from "./real_node.ts";
import { NODE_IP } from "./real_node_config.ts";
import {
  buildRelease,
  createPool,
  daemonPods,
  diagnose,
  leaseHolder,
  rebootOnRequest,
  ROOT,
  tagDigests,
  waitControllersReady,
} from "./operator_install.ts";
import { ensureBuild } from "../../tools/build.ts";

const CHART = `${ROOT}/charts/bootc-operator`;

Deno.test("helm chart on two real nodes: the pool's member updates, the other node is left alone", async (t) => {
  const work = await Deno.makeTempDir({ prefix: "bootc-helm-nodes-test-" });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const [images, cp, registry, helm] = await Promise.all([
      ensureBuild().then(() => buildRelease(work, "release", "")),
      startControlPlane({ kwok: false }),
      startRegistry(),
      openHelm(),
    ]);
    cleanups.push(() => cp.stop(), () => registry.stop(), () => helm.close());
    const port = Number(new URL(registry.url).port);
    const fromNode = `${NODE_IP}:${port}`;
    const v1 = await registry.pushImage({ repository: "os", tag: "v1", version: "1" });
    const v2 = await registry.pushImage({ repository: "os", tag: "v2", version: "2" });
    const host = await SimulatedHost.create({
      image: `${registry.host}/os@${v1.digest}`,
      insecureRegistries: [registry.host, fromNode],
    });
    cleanups.push(() => host.destroy());
    const started: RealNode[] = [];
    for (const name of ["localhost", "127.0.0.2"]) {
      const n = await startRealNode({
        controlPlane: cp,
        name,
        images: images.map((i) => i.archive),
      });
      // Nodes stop before the control plane.
      cleanups.unshift(() => n.stop());
      started.push(n);
      await tagDigests(n, images);
      await n.exposeToNode({ name: "registry", port });
    }
    const [outside, member] = started;
    await member.installHost(host);
    const fail = async (e: unknown) => {
      throw new Error(`${e}\n${await diagnose(cp, outside, member)}`);
    };

    await t.step("helm install with the images pinned: both controllers Ready", async () => {
      const set = images.flatMap((i) => [
        "--set",
        `${i.name}.image.repository=${i.reference.replace(/:[^:/]+$/, "")}`,
        "--set",
        `${i.name}.image.digest=${i.digest}`,
      ]);
      await helm.ok([
        "install",
        "bootc-operator",
        CHART,
        "--kubeconfig",
        cp.kubeconfigPath,
        "--namespace",
        "default",
        ...set,
        "--set",
        `controller.extraArgs[0]=--insecure-registry=${fromNode}`,
      ]);
      await waitControllersReady(cp, fail);
    });

    const nodes = cp.client.resource<Node>(Resources.nodes);
    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    const allPods = cp.client.resource<Pod>(Resources.pods);
    await t.step("a pool of one member: the daemon runs there only", async () => {
      const web = await cp.kubectl(["apply", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "web", namespace: "default" },
          spec: {
            nodeName: member.name,
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: "web",
              image: BUSYBOX_IMAGE,
              imagePullPolicy: "Never",
              command: ["sleep", "3600"],
            }],
          },
        }),
      });
      assert.equal(web.code, 0, web.stderr);
      await createPool(cp, member.name, `${fromNode}/os:v1`);
      await waitFor(async () => {
        const pool = await pools.get("edge");
        return pool.status?.state === "AllUpdated" && pool.status?.nodeCount === 1;
      }, { timeoutMs: 120_000, intervalMs: 500, message: "pool AllUpdated on v1" }).catch(fail);
      assert.equal(await daemonPods(cp, "{.items[*].spec.nodeName}"), member.name);
    });

    await t.step("v2: the member is drained (its pod evicted), rebooted and updated", async () => {
      const rebooter = rebootOnRequest({
        host,
        node: member,
        observe: async () => {
          const m = await nodes.get(member.name);
          const remaining = (await allPods.list({ fieldSelector: `spec.nodeName=${member.name}` }))
            .items.filter((p) =>
              p.status?.phase === "Running" && !p.metadata?.deletionTimestamp &&
              !(p.metadata?.ownerReferences ?? []).some((o) => o.kind === "DaemonSet")
            ).map((p) => p.metadata!.name!);
          const leaderPod = (await leaseHolder(cp)).replace(/-[0-9a-f]{8}$/, "");
          return {
            memberCordoned: m.spec?.unschedulable === true,
            // Drained: nothing but DaemonSet pods and, if it runs there, the leader's own pod.
            drained: remaining.every((name) => name === leaderPod),
          };
        },
      });
      // The node outside the pool is never touched: watched through the whole rollout.
      let outsideTouched = "";
      let watching = true;
      const watchOutside = (async () => {
        while (watching) {
          const o = await nodes.get(outside.name);
          const marks = Object.keys(o.metadata?.annotations ?? {}).filter((k) =>
            k.startsWith("bootc.dev/")
          );
          if (o.spec?.unschedulable || marks.length > 0) {
            outsideTouched ||= `unschedulable=${o.spec?.unschedulable} ${marks.join(",")}`;
          }
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      let reboots: unknown[] = [];
      try {
        await pools.patch("edge", { spec: { image: { ref: `${fromNode}/os:v2` } } }, {
          type: "merge",
        });
        await Promise.race([
          waitFor(async () => {
            const pool = await pools.get("edge");
            const m = await nodes.get(member.name);
            return pool.status?.deployedDigest === v2.digest &&
              pool.status?.state === "AllUpdated" && m.spec?.unschedulable !== true;
          }, {
            timeoutMs: 240_000,
            intervalMs: 500,
            message: "pool AllUpdated on v2, member uncordoned",
          }),
          rebooter.failed,
        ]).catch(fail);
      } finally {
        reboots = await rebooter.done();
        watching = false;
        await watchOutside;
      }
      assert.deepEqual(reboots, [{ memberCordoned: true, drained: true }]);
      assert.equal(outsideTouched, "", "the node outside the pool is never cordoned nor marked");
      assert.equal(member.reboots, 1);
      const web = await cp.kubectl(["get", "pod", "web", "-o", "name"]);
      assert.match(web.stderr, /NotFound/, "the bare pod was evicted");
      const bootcNodes = await cp.kubectl(["get", "bootcnodes", "-o", "name"]);
      assert.equal(bootcNodes.stdout.trim(), `bootcnode.node.bootc.dev/${member.name}`);
      assert.match(JSON.stringify(await host.status()), new RegExp(v2.digest));
      const view = await cp.kubectl(["get", "bnp,bn", "-o", "wide"]);
      console.log(view.stdout);
      assert.match(view.stdout, /edge\s+v2 /);
    });
  } finally {
    for (const c of cleanups) await c().catch((e) => console.error(`cleanup: ${e}`));
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
});
