/**
 * The real-node test's Helm phase (tests/node/real_nodes_test.ts): the chart on two real nodes,
 * the layout where the pool is not the whole cluster: node "localhost" is outside the pool,
 * node "127.0.0.2" is its only member. `helm install` with the images pinned by digest (values
 * `*.image.repository/digest`) and the controller's `--insecure-registry`
 * (`controller.extraArgs`); the daemon runs on the member only; a pool rolls the member from v1
 * to v2 while a real pod is evicted, and the other node is never cordoned nor rebooted.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Resources } from "../../lib/kube/mod.ts";
import type { BootcNodePool } from "../../lib/api/schema.ts";
import type { ControlPlane, Node } from "../harness/control_plane.ts";
import type { PushedImage } from "../harness/registry.ts";
import { waitFor } from "../harness/wait.ts";
import type { SimulatedHost } from "../bootc_sim/mod.ts";
import type { Helm } from "../helm/helm.ts";
import { BUSYBOX_IMAGE, type RealNode } from "./real_node.ts";
import {
  createPool,
  daemonPods,
  diagnose,
  type Image,
  leaseHolder,
  rebootOnRequest,
  ROOT,
  runningPods,
  waitControllersReady,
} from "./operator_install.ts";

const CHART = `${ROOT}/charts/bootc-operator`;

/** What {@linkcode helmOnTwoNodes} runs on. */
export interface HelmPhaseOptions {
  cp: ControlPlane;
  helm: Helm;
  /** A node outside the pool (the controller may run there). */
  outside: RealNode;
  /** The pool's only member, with `release` imported. */
  member: RealNode;
  /** The simulated host installed in `member`, booted on `os.v1`. */
  memberHost: SimulatedHost;
  /** The test registry as pods on the nodes reach it (`NODE_IP:port`). */
  fromNode: string;
  /** The operator's images. */
  release: Image[];
  /** The OS images, tagged v1 and v2 in repository "os". */
  os: { v1: PushedImage; v2: PushedImage };
}

/** Runs the Helm phase's steps (the operator must not be installed yet). */
export async function helmOnTwoNodes(
  t: Deno.TestContext,
  options: HelmPhaseOptions,
): Promise<void> {
  const { cp, outside, member } = options;
  const fail = async (e: unknown): Promise<never> => {
    throw new Error(`${e}\n${await diagnose(cp, outside, member)}`);
  };
  await t.step("helm install with the images pinned: both controllers Ready", async () => {
    const set = options.release.flatMap((i) => [
      "--set",
      `${i.name}.image.repository=${i.reference.replace(/:[^:/]+$/, "")}`,
      "--set",
      `${i.name}.image.digest=${i.digest}`,
    ]);
    await options.helm.ok([
      "install",
      "bootc-operator",
      CHART,
      "--kubeconfig",
      cp.kubeconfigPath,
      "--namespace",
      "default",
      ...set,
      "--set",
      `controller.extraArgs[0]=--insecure-registry=${options.fromNode}`,
    ]);
    await waitControllersReady(cp, fail);
  });
  const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
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
    await createPool(cp, member.name, `${options.fromNode}/os:v1`);
    await waitFor(async () => {
      const pool = await pools.get("edge");
      return pool.status?.state === "AllUpdated" && pool.status?.nodeCount === 1;
    }, { timeoutMs: 120_000, intervalMs: 500, message: "pool AllUpdated on v1" }).catch(fail);
    assert.equal(await daemonPods(cp, "{.items[*].spec.nodeName}"), member.name);
  });
  await t.step("v2: the member is drained (its pod evicted), rebooted and updated", async () => {
    await memberUpdates(options, fail);
  });
}

/**
 * Moves the pool to v2 and waits until the member runs it, uncordoned; watches the node
 * outside the pool through the whole rollout (never cordoned nor marked).
 */
async function memberUpdates(
  options: HelmPhaseOptions,
  fail: (e: unknown) => Promise<never>,
): Promise<void> {
  const { cp, outside, member, memberHost: host, os } = options;
  const nodes = cp.client.resource<Node>(Resources.nodes);
  const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  const rebootsBefore = member.reboots;
  const rebooter = rebootOnRequest({
    host,
    node: member,
    observe: async () => {
      const m = await nodes.get(member.name);
      const remaining = await runningPods(cp, member.name);
      const leaderPod = (await leaseHolder(cp)).replace(/-[0-9a-f]{8}$/, "");
      return {
        memberCordoned: m.spec?.unschedulable === true,
        // Drained: nothing but DaemonSet pods and, if it runs there, the leader's own pod.
        drained: remaining.every((name) => name === leaderPod),
      };
    },
  });
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
    await pools.patch("edge", { spec: { image: { ref: `${options.fromNode}/os:v2` } } }, {
      type: "merge",
    });
    await Promise.race([
      waitFor(async () => {
        const pool = await pools.get("edge");
        const m = await nodes.get(member.name);
        return pool.status?.deployedDigest === os.v2.digest &&
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
  assert.equal(member.reboots, rebootsBefore + 1);
  const web = await cp.kubectl(["get", "pod", "web", "-o", "name"]);
  assert.match(web.stderr, /NotFound/, "the bare pod was evicted");
  const bootcNodes = await cp.kubectl(["get", "bootcnodes", "-o", "name"]);
  assert.equal(bootcNodes.stdout.trim(), `bootcnode.node.bootc.dev/${member.name}`);
  assert.match(JSON.stringify(await host.status()), new RegExp(os.v2.digest));
  const view = await cp.kubectl(["get", "bnp,bn", "-o", "wide"]);
  console.log(view.stdout);
  assert.match(view.stdout, /edge\s+v2 /);
}
