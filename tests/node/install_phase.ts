/**
 * Installing the operator as a user does, on a real node (tests/node/real_node.ts), in the
 * single-node layout (the controller runs on the node it updates, as on MicroShift):
 *
 * 1. `deno task build`'s images (built here into a temp folder from the bundles), imported into
 *    the node's containerd with `ctr images import`. Imported rather than pushed: the node's
 *    containerd would need the test registry as an insecure mirror in its config, a setting
 *    that is about the test node, not the operator; the controller still resolves the OS images
 *    from a registry.
 * 2. `kubectl apply --server-side -k` of an overlay over manifests/ that pins both images by
 *    digest with kustomize `images:` (as manifests/README.md says) and adds the controller's
 *    `--insecure-registry` for the test registry, which serves plain HTTP.
 * 3. Both controller replicas and the daemon pod become Ready; one replica holds the Lease.
 * 4. A pool moves the node from v1 to v2: staged, cordoned, a real pod evicted, rebooted (the
 *    node's processes and pods end and come back), verified, uncordoned; the controller's own
 *    pods are left out of the drain and resume after the reboot.
 * 5. The daemon pod's own token may write its BootcNode's status and no other BootcNode's.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Resources } from "../../lib/kube/mod.ts";
import type { BootcNode, BootcNodePool } from "../../lib/api/schema.ts";
import { type Node, type Pod, startControlPlane } from "../harness/control_plane.ts";
import { startRegistry } from "../harness/registry.ts";
import { waitFor } from "../harness/wait.ts";
import { SimulatedHost } from "../bootc_sim/mod.ts";
import { BUSYBOX_IMAGE, startRealNode } from "./real_node.ts";
import {
  buildOperatorImages,
  createPool,
  daemonPods,
  diagnose,
  leaseHolder,
  NAMESPACE,
  overlay,
  patchStatusFromPod,
  rebootOnRequest,
  tagDigests,
  waitControllersReady,
} from "./operator_install.ts";
import { NODE_IP } from "./real_node_config.ts";
import { ANNOTATION_IN_REBOOT_SLOT } from "../../lib/api/constants.ts";

Deno.test("install as a user on a real single node: images, kustomize, a rollout with a reboot", async (t) => {
  const work = await Deno.makeTempDir({ prefix: "bootc-install-test-" });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const [[images, upgrade], cp, registry] = await Promise.all([
      buildOperatorImages(work),
      startControlPlane({ kwok: false }),
      startRegistry(),
    ]);
    cleanups.push(() => cp.stop(), () => registry.stop());
    const port = Number(new URL(registry.url).port);
    const fromNode = `${NODE_IP}:${port}`; // the registry as pods on the node reach it
    const v1 = await registry.pushImage({ repository: "os", tag: "v1", version: "1" });
    const v2 = await registry.pushImage({ repository: "os", tag: "v2", version: "2" });
    const v3 = await registry.pushImage({ repository: "os", tag: "v3", version: "3" });
    const host = await SimulatedHost.create({
      image: `${registry.host}/os@${v1.digest}`,
      insecureRegistries: [registry.host, fromNode],
    });
    cleanups.push(() => host.destroy());
    const node = await startRealNode({
      controlPlane: cp,
      images: images.map((i) => i.archive),
    });
    cleanups.unshift(() => node.stop());
    await tagDigests(node, images);
    await node.exposeToNode({ name: "registry", port });
    await node.installHost(host);
    const fail = async (e: unknown) => {
      throw new Error(`${e}\n${await diagnose(cp, node)}`);
    };

    await t.step("install.yaml with the images pinned: controllers and Lease", async () => {
      const dir = `${work}/overlay`;
      await Deno.mkdir(dir);
      await Deno.writeTextFile(`${dir}/kustomization.yaml`, overlay(images, fromNode, dir));
      const applied = await cp.kubectl(["apply", "--server-side", "-k", dir]);
      assert.equal(applied.code, 0, applied.stderr);
      await waitControllersReady(cp, fail);
      assert.match(
        await leaseHolder(cp),
        /^bootc-operator-controller-/,
        "a replica holds the Lease",
      );
    });

    // A workload the drain must evict, and which comes back after the update. It ignores
    // SIGTERM with a long grace period, so an evicted pod stays Terminating (the drain waits
    // for it) until the test deletes it: that holds each rollout between slot and reboot.
    const workload = await cp.kubectl([
      "create",
      "deployment",
      "web",
      `--image=${BUSYBOX_IMAGE}`,
      "--",
      "sh",
      "-c",
      "trap '' TERM; while true; do sleep 1; done",
    ]);
    assert.equal(workload.code, 0, workload.stderr);
    await cp.kubectl([
      "patch",
      "deployment",
      "web",
      "--type=json",
      "-p",
      JSON.stringify([
        { op: "add", path: "/spec/template/spec/containers/0/imagePullPolicy", value: "Never" },
        { op: "add", path: "/spec/template/spec/terminationGracePeriodSeconds", value: 600 },
      ]),
    ]);

    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    await t.step("a pool on v1: the daemon runs and reports the host", async () => {
      await createPool(cp, node.name, `${fromNode}/os:v1`);
      await waitFor(async () => {
        const ds = await cp.kubectl([
          "get",
          "daemonset",
          "-n",
          NAMESPACE,
          "bootc-operator-daemon",
          "-o",
          "jsonpath={.status.numberReady}",
        ]);
        const pool = await pools.get("edge");
        return ds.stdout.trim() === "1" && pool.status?.state === "AllUpdated";
      }, { timeoutMs: 120_000, intervalMs: 500, message: "daemon Ready, pool AllUpdated on v1" })
        .catch(fail);
    });

    await t.step(
      "inside the daemon pod, its own token writes its BootcNode's status, no other",
      async () => {
        const bootcNodes = cp.client.resource<BootcNode>(Resources.bootcNodes);
        const other = await bootcNodes.create({
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcNode",
          metadata: { name: "some-other-node" },
          spec: {
            desiredImage: `${fromNode}/os@${v1.digest}`,
            desiredImageState: "Booted",
            rebootPolicy: "RebootOnly",
          },
        } as unknown as BootcNode).catch(fail);
        const pod = await daemonPods(cp, "{.items[0].metadata.name}");
        const writes = await patchStatusFromPod(cp, pod, [node.name, other.metadata.name!]);
        const own = writes[node.name];
        assert.equal(own.status, 200, own.body);
        const refused = writes[other.metadata.name!];
        assert.equal(refused.status, 403, refused.body);
        assert.match(refused.body, /bootc-operator-daemon-own-node|denied/);
        await bootcNodes.delete(other.metadata.name!);
      },
    );

    const nodes = cp.client.resource<Node>(Resources.nodes);
    const kubectlValue = async (args: string[]) => (await cp.kubectl(args)).stdout.trim();
    const allPods = cp.client.resource<Pod>(Resources.pods);
    /** What the node looked like when its host asked for the reboot. */
    interface RebootSeen {
      cordoned: boolean;
      inSlot: boolean;
      /** Pods still running on the node, but for DaemonSet pods. */
      remaining: string[];
      /** The pod of the controller holding the Lease. */
      leaderPod: string;
    }
    const inSlot = async () => {
      const n = await nodes.get(node.name);
      return Object.hasOwn(n.metadata?.annotations ?? {}, ANNOTATION_IN_REBOOT_SLOT);
    };
    /**
     * Moves the pool to `tag`, runs `midway` while the node holds its reboot slot (the evicted
     * workload pod, Terminating for up to 600 s, holds the drain meanwhile, so nothing reboots
     * during `midway`), then lets the drain finish (deletes that pod) and waits until the pool is AllUpdated on `digest` with the node
     * uncordoned, rebooting the node when its host asks.
     */
    const rollTo = async (tag: string, digest: string, midway: () => Promise<void>) => {
      const rebooter = rebootOnRequest({
        host,
        node,
        observe: async (): Promise<RebootSeen> => {
          const n = await nodes.get(node.name);
          const remaining = (await allPods.list({ fieldSelector: `spec.nodeName=${node.name}` }))
            .items.filter((p) =>
              p.status?.phase === "Running" && !p.metadata?.deletionTimestamp &&
              !(p.metadata?.ownerReferences ?? []).some((o) => o.kind === "DaemonSet")
            ).map((p) => p.metadata!.name!);
          return {
            cordoned: n.spec?.unschedulable === true,
            inSlot: Object.hasOwn(n.metadata?.annotations ?? {}, ANNOTATION_IN_REBOOT_SLOT),
            remaining,
            leaderPod: (await leaseHolder(cp)).replace(/-[0-9a-f]{8}$/, ""),
          };
        },
      });
      let reboots: RebootSeen[] = [];
      const orFail = <T>(p: Promise<T>) => Promise.race([p, rebooter.failed]);
      try {
        await pools.patch("edge", { spec: { image: { ref: `${fromNode}/os:${tag}` } } }, {
          type: "merge",
        });
        await orFail(
          waitFor(inSlot, {
            timeoutMs: 120_000,
            intervalMs: 100,
            message: "the node in a reboot slot",
          }),
        )
          .catch(fail);
        await orFail(waitFor(async () => {
          const web = await cp.client.resource<Pod>(Resources.pods, "default").list({
            labelSelector: "app=web",
          });
          return web.items.some((p) => p.metadata?.deletionTimestamp);
        }, { timeoutMs: 60_000, intervalMs: 100, message: "the drain evicting the workload" }))
          .catch(fail);
        await orFail(midway());
        assert.ok(await inSlot(), "the node still holds its slot after the midway step");
        assert.equal(
          await host.rebootRequested(),
          false,
          "no reboot asked for during the midway step",
        );
        const released = await cp.kubectl([
          "delete",
          "pods",
          "-l",
          "app=web",
          "--grace-period=0",
          "--force",
        ]);
        assert.equal(released.code, 0, released.stderr);
        await orFail(waitFor(async () => {
          const pool = await pools.get("edge");
          const n = await nodes.get(node.name);
          return pool.status?.deployedDigest === digest && pool.status?.state === "AllUpdated" &&
            n.spec?.unschedulable !== true;
        }, {
          timeoutMs: 240_000,
          intervalMs: 500,
          message: `pool AllUpdated on ${tag}, node uncordoned`,
        })).catch(fail);
      } finally {
        reboots = await rebooter.done();
      }
      // One reboot, with the node cordoned, in its slot, and drained: nothing but DaemonSet
      // pods and the acting controller's own pod left running on it.
      assert.equal(reboots.length, 1, JSON.stringify(reboots));
      const [seen] = reboots;
      assert.deepEqual(seen, {
        cordoned: true,
        inSlot: true,
        remaining: [seen.leaderPod],
        leaderPod: seen.leaderPod,
      });
      assert.match(JSON.stringify(await host.status()), new RegExp(digest));
      // The workload is back on the node, and both controllers run again after the reboot.
      await waitFor(async () => {
        const web = await kubectlValue([
          "get",
          "deployment",
          "web",
          "-o",
          "jsonpath={.status.readyReplicas}",
        ]);
        const ctl = await kubectlValue([
          "get",
          "deployment",
          "-n",
          NAMESPACE,
          "bootc-operator-controller",
          "-o",
          "jsonpath={.status.updatedReplicas} {.status.readyReplicas}",
        ]);
        return web === "1" && ctl === "2 2";
      }, { timeoutMs: 120_000, intervalMs: 500, message: "workload and controllers back" })
        .catch(fail);
    };

    await t.step(
      "v2 rolls out; the leading controller is SIGKILLed while the node holds its slot",
      async () => {
        await rollTo("v2", v2.digest, async () => {
          // The holder is the pod's hostname (its name) and a random suffix.
          const holder = await leaseHolder(cp);
          const id = await kubectlValue([
            "get",
            "pod",
            "-n",
            NAMESPACE,
            holder.replace(/-[0-9a-f]{8}$/, ""),
            "-o",
            "jsonpath={.status.containerStatuses[0].containerID}",
          ]);
          const kill = await node.ctr([
            "tasks",
            "kill",
            "--signal",
            "SIGKILL",
            id.replace(/^containerd:\/\//, ""),
          ]);
          assert.equal(kill.code, 0, kill.stderr);
          // Another controller process (the standby, or the restarted container) takes over.
          await waitFor(async () => {
            const now = await leaseHolder(cp);
            return now !== "" && now !== holder;
          }, { timeoutMs: 90_000, intervalMs: 250, message: "another Lease holder" }).catch(fail);
        });
        const view = await cp.kubectl(["get", "bnp,bn", "-o", "wide"]);
        console.log(view.stdout);
        assert.match(view.stdout, /edge\s+v2 /);
      },
    );

    await t.step("v3 rolls out while the operator itself is upgraded (new images)", async () => {
      for (const image of upgrade) await node.importImage(image.archive);
      await tagDigests(node, upgrade);
      await rollTo("v3", v3.digest, async () => {
        const dir = `${work}/overlay-upgrade`;
        await Deno.mkdir(dir);
        await Deno.writeTextFile(`${dir}/kustomization.yaml`, overlay(upgrade, fromNode, dir));
        const applied = await cp.kubectl(["apply", "--server-side", "-k", dir]);
        assert.equal(applied.code, 0, applied.stderr);
        // The DaemonSet replaces the daemon pod while the node holds its slot.
        await waitFor(async () => {
          const images = await daemonPods(cp, "{.items[*].status.containerStatuses[0].imageID}");
          return images.includes(upgrade.find((i) => i.name === "daemon")!.digest);
        }, { timeoutMs: 120_000, intervalMs: 250, message: "the new daemon pod running" })
          .catch(fail);
      });
      // Every operator pod runs the upgrade once the Deployment's old replicas are gone.
      const pinned = upgrade.map((i) => `${i.reference.replace(/:[^:/]+$/, "")}@${i.digest}`);
      let running: string[] = [];
      await waitFor(async () => {
        running = (await kubectlValue([
          "get",
          "pods",
          "-n",
          NAMESPACE,
          "-o",
          'jsonpath={range .items[*]}{.spec.containers[0].image}{"\\n"}{end}',
        ])).split("\n");
        return running.length === 3 && running.every((image) => pinned.includes(image));
      }, {
        timeoutMs: 120_000,
        intervalMs: 500,
        message: () => `only upgraded operator pods; running ${running.join(", ")}`,
      }).catch(fail);
    });
  } finally {
    for (const c of cleanups) await c().catch((e) => console.error(`cleanup: ${e}`));
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
});
