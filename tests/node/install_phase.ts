/**
 * The real-node test's install phase (tests/node/real_nodes_test.ts): installing the operator as
 * a user does, on one real node, in the single-node layout (the controller runs on the node it
 * updates, as on MicroShift):
 *
 * 1. `deno task build`'s images (built by the test into a temp folder from the bundles), imported
 *    into the node's containerd with `ctr images import`. Imported rather than pushed: the node's
 *    containerd would need the test registry as an insecure mirror in its config, a setting
 *    that is about the test node, not the operator; the controller still resolves the OS images
 *    from a registry.
 * 2. `kubectl apply --server-side -k` of an overlay over manifests/ that pins both images by
 *    digest with kustomize `images:` (as manifests/README.md says) and adds the controller's
 *    `--insecure-registry` for the test registry, which serves plain HTTP.
 * 3. Both controller replicas and the daemon pod become Ready; one replica holds the Lease.
 * 4. A pool moves the node from v1 to v2: staged, cordoned, a real pod evicted, rebooted (the
 *    node's processes and pods end and come back), verified, uncordoned; the controller's own
 *    pods are left out of the drain and resume after the reboot. The leading controller is
 *    SIGKILLed while the node holds its slot.
 * 5. The daemon pod's own token may write its BootcNode's status and no other BootcNode's.
 * 6. v3 rolls out while the operator itself is upgraded to new images.
 * 7. Uninstall as docs/install.md says: the pools first, then `kubectl delete -k`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Resources } from "../../lib/kube/mod.ts";
import type { BootcNode, BootcNodePool } from "../../lib/api/schema.ts";
import type { ControlPlane, Node, Pod } from "../harness/control_plane.ts";
import type { PushedImage } from "../harness/registry.ts";
import { waitFor } from "../harness/wait.ts";
import type { SimulatedHost } from "../bootc_sim/mod.ts";
import { BUSYBOX_IMAGE, type RealNode } from "./real_node.ts";
import {
  createPool,
  daemonPods,
  diagnose,
  type Image,
  leaseHolder,
  NAMESPACE,
  overlay,
  patchStatusFromPod,
  rebootOnRequest,
  runningPods,
  tagDigests,
  waitControllersReady,
} from "./operator_install.ts";
import { ANNOTATION_IN_REBOOT_SLOT } from "../../lib/api/constants.ts";
import { formatPeaks, samplePodMemory } from "./pod_memory.ts";

/** What {@linkcode installAsUser} runs on. */
export interface InstallPhaseOptions {
  cp: ControlPlane;
  /** The only node of the cluster, with both releases' images imported. */
  node: RealNode;
  /** The simulated host installed in `node`, booted on `os.v1`. */
  host: SimulatedHost;
  /** A folder of the test's own (overlays are written there). */
  work: string;
  /** The test registry as pods on the node reach it (`NODE_IP:port`). */
  fromNode: string;
  /** The operator's images: the release installed first and the upgrade. */
  release: Image[];
  upgrade: Image[];
  /** The OS images, tagged v1, v2, v3 in repository "os". */
  os: { v1: PushedImage; v2: PushedImage; v3: PushedImage };
}

/** The phase's shared state: its options and the failure diagnostics. */
interface Phase extends InstallPhaseOptions {
  fail: (e: unknown) => Promise<never>;
}

/**
 * Runs the install phase's steps; when they end, nothing of the operator is left in the
 * cluster (the last step uninstalls it), so a later phase can install it again.
 */
export async function installAsUser(
  t: Deno.TestContext,
  options: InstallPhaseOptions,
): Promise<void> {
  const { cp, node } = options;
  const phase: Phase = {
    ...options,
    fail: async (e: unknown) => {
      throw new Error(`${e}\n${await diagnose(cp, node)}`);
    },
  };
  await t.step("install.yaml with the images pinned: controllers and Lease", async () => {
    await applyOverlay(phase, "overlay", options.release);
    await waitControllersReady(cp, phase.fail);
    assert.match(await leaseHolder(cp), /^bootc-operator-controller-/, "a replica holds the Lease");
  });
  await createWorkload(cp);
  await t.step("a pool on v1: the daemon runs and reports the host", async () => {
    await createPool(cp, node.name, `${options.fromNode}/os:v1`);
    await waitFor(async () => {
      const ready = await kubectlValue(cp, [
        "get",
        "daemonset",
        "-n",
        NAMESPACE,
        "bootc-operator-daemon",
        "-o",
        "jsonpath={.status.numberReady}",
      ]);
      return ready === "1" && (await pools(cp).get("edge")).status?.state === "AllUpdated";
    }, { timeoutMs: 120_000, intervalMs: 500, message: "daemon Ready, pool AllUpdated on v1" })
      .catch(phase.fail);
  });
  await t.step(
    "inside the daemon pod, its own token writes its BootcNode's status, no other",
    () => ownTokenWrites(phase),
  );
  await t.step(
    "v2 rolls out; the leading controller is SIGKILLed while the node holds its slot",
    async () => {
      // The pods' working set as the kubelet reports it, over the whole rollout.
      const memory = samplePodMemory(cp, node, NAMESPACE);
      try {
        await rollTo(phase, "v2", options.os.v2.digest, () => killLeader(phase));
      } finally {
        const { samples, failures, lastError } = await memory.stop();
        console.log(
          `kubelet working set peaks during the rollout (${samples} samples, ${failures} ` +
            `failed reads${failures ? `, the last: ${lastError}` : ""}): ${
              formatPeaks(memory.peaks)
            }`,
        );
      }
      await withinLimits(phase, memory.peaks);
      const view = await cp.kubectl(["get", "bnp,bn", "-o", "wide"]);
      console.log(view.stdout);
      assert.match(view.stdout, /edge\s+v2 /);
    },
  );
  await t.step("v3 rolls out while the operator itself is upgraded (new images)", async () => {
    for (const image of options.upgrade) await node.importImage(image.archive);
    await tagDigests(node, options.upgrade);
    await rollTo(phase, "v3", options.os.v3.digest, () => upgradeOperator(phase));
    await onlyUpgradedPods(phase);
  });
  await t.step("uninstall: the pools, then kubectl delete -k; nothing is left", async () => {
    await uninstall(phase);
  });
}

const pools = (cp: ControlPlane) => cp.client.resource<BootcNodePool>(Resources.bootcNodePools);

/**
 * The kubelet reported a working set for the daemon and a controller, and every operator pod
 * stayed under its container's memory limit (a pod killed by its limit would restart, not fail
 * the rollout).
 */
async function withinLimits(phase: Phase, peaks: Map<string, number>): Promise<void> {
  const names = [...peaks.keys()];
  assert.ok(names.some((n) => n.startsWith("bootc-operator-daemon-")), names.join());
  assert.ok(names.some((n) => n.startsWith("bootc-operator-controller-")), names.join());
  const pods = await phase.cp.client.resource<Pod>(Resources.pods, NAMESPACE).list();
  for (const pod of pods.items) {
    const peak = peaks.get(pod.metadata!.name!);
    const limit = pod.spec?.containers[0].resources?.limits?.memory;
    const mib = /^(\d+)Mi$/.exec(String(limit ?? ""));
    if (peak === undefined || !mib) continue;
    assert.ok(
      peak < Number(mib[1]) * (1 << 20),
      `${pod.metadata!.name}: ${peak} B, limit ${limit}`,
    );
  }
}

async function kubectlValue(cp: ControlPlane, args: string[]): Promise<string> {
  return (await cp.kubectl(args)).stdout.trim();
}

/** Writes the overlay a user writes for `images` into `work/name` and applies it server-side. */
async function applyOverlay(phase: Phase, name: string, images: Image[]): Promise<void> {
  const dir = `${phase.work}/${name}`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/kustomization.yaml`, overlay(images, phase.fromNode, dir));
  const applied = await phase.cp.kubectl(["apply", "--server-side", "-k", dir]);
  assert.equal(applied.code, 0, applied.stderr);
}

/**
 * A workload the drain must evict, and which comes back after the update. It ignores SIGTERM
 * with a long grace period, so an evicted pod stays Terminating (the drain waits for it) until
 * the test deletes it: that holds each rollout between slot and reboot.
 */
async function createWorkload(cp: ControlPlane): Promise<void> {
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
  const patched = await cp.kubectl([
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
  assert.equal(patched.code, 0, patched.stderr);
}

/** From inside the daemon pod: its token writes its own BootcNode's status, not another's. */
async function ownTokenWrites(phase: Phase): Promise<void> {
  const { cp, node } = phase;
  const bootcNodes = cp.client.resource<BootcNode>(Resources.bootcNodes);
  const other = await bootcNodes.create({
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNode",
    metadata: { name: "some-other-node" },
    spec: {
      desiredImage: `${phase.fromNode}/os@${phase.os.v1.digest}`,
      desiredImageState: "Booted",
      rebootPolicy: "RebootOnly",
    },
  } as unknown as BootcNode).catch(phase.fail);
  const pod = await daemonPods(cp, "{.items[0].metadata.name}");
  const writes = await patchStatusFromPod(cp, pod, [node.name, other.metadata.name!]);
  const own = writes[node.name];
  assert.equal(own.status, 200, own.body);
  const refused = writes[other.metadata.name!];
  assert.equal(refused.status, 403, refused.body);
  assert.match(refused.body, /bootc-operator-daemon-own-node|denied/);
  await bootcNodes.delete(other.metadata.name!);
}

/** What the node looked like when its host asked for the reboot. */
interface RebootSeen {
  cordoned: boolean;
  inSlot: boolean;
  /** Pods still running on the node, but for DaemonSet pods. */
  remaining: string[];
  /** The pod of the controller holding the Lease. */
  leaderPod: string;
}

async function inSlot(phase: Phase): Promise<boolean> {
  const n = await phase.cp.client.resource<Node>(Resources.nodes).get(phase.node.name);
  return Object.hasOwn(n.metadata?.annotations ?? {}, ANNOTATION_IN_REBOOT_SLOT);
}

async function observeReboot(phase: Phase): Promise<RebootSeen> {
  const n = await phase.cp.client.resource<Node>(Resources.nodes).get(phase.node.name);
  return {
    cordoned: n.spec?.unschedulable === true,
    inSlot: Object.hasOwn(n.metadata?.annotations ?? {}, ANNOTATION_IN_REBOOT_SLOT),
    remaining: await runningPods(phase.cp, phase.node.name),
    leaderPod: (await leaseHolder(phase.cp)).replace(/-[0-9a-f]{8}$/, ""),
  };
}

/**
 * Moves the pool to `tag`, runs `midway` while the node holds its reboot slot (the evicted
 * workload pod, Terminating for up to 600 s, holds the drain meanwhile, so nothing reboots
 * during `midway`), then lets the drain finish (deletes that pod) and waits until the pool is
 * AllUpdated on `digest` with the node uncordoned, rebooting the node when its host asks.
 */
async function rollTo(
  phase: Phase,
  tag: string,
  digest: string,
  midway: () => Promise<void>,
): Promise<void> {
  const { cp, host, node, fail } = phase;
  const rebooter = rebootOnRequest({ host, node, observe: () => observeReboot(phase) });
  let reboots: RebootSeen[] = [];
  const orFail = <T>(p: Promise<T>) => Promise.race([p, rebooter.failed]).catch(fail);
  try {
    await pools(cp).patch("edge", { spec: { image: { ref: `${phase.fromNode}/os:${tag}` } } }, {
      type: "merge",
    });
    await orFail(waitFor(() => inSlot(phase), {
      timeoutMs: 120_000,
      intervalMs: 100,
      message: "the node in a reboot slot",
    }));
    await orFail(waitFor(async () => {
      const web = await cp.client.resource<Pod>(Resources.pods, "default").list({
        labelSelector: "app=web",
      });
      return web.items.some((p) => p.metadata?.deletionTimestamp);
    }, { timeoutMs: 60_000, intervalMs: 100, message: "the drain evicting the workload" }));
    await orFail(midway());
    assert.ok(await inSlot(phase), "the node still holds its slot after the midway step");
    assert.equal(await host.rebootRequested(), false, "no reboot asked for during the midway step");
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
      const pool = await pools(cp).get("edge");
      const n = await cp.client.resource<Node>(Resources.nodes).get(node.name);
      return pool.status?.deployedDigest === digest && pool.status?.state === "AllUpdated" &&
        n.spec?.unschedulable !== true;
    }, {
      timeoutMs: 240_000,
      intervalMs: 500,
      message: `pool AllUpdated on ${tag}, node uncordoned`,
    }));
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
  await workloadAndControllersBack(phase);
}

/** The workload is back on the node, and both controllers run again after the reboot. */
async function workloadAndControllersBack(phase: Phase): Promise<void> {
  const { cp } = phase;
  await waitFor(async () => {
    const web = await kubectlValue(cp, [
      "get",
      "deployment",
      "web",
      "-o",
      "jsonpath={.status.readyReplicas}",
    ]);
    const ctl = await kubectlValue(cp, [
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
    .catch(phase.fail);
}

/** SIGKILLs the leading controller's container; waits until another process holds the Lease. */
async function killLeader(phase: Phase): Promise<void> {
  const { cp } = phase;
  // The holder is the pod's hostname (its name) and a random suffix.
  const holder = await leaseHolder(cp);
  const id = await kubectlValue(cp, [
    "get",
    "pod",
    "-n",
    NAMESPACE,
    holder.replace(/-[0-9a-f]{8}$/, ""),
    "-o",
    "jsonpath={.status.containerStatuses[0].containerID}",
  ]);
  const kill = await phase.node.ctr([
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
  }, { timeoutMs: 90_000, intervalMs: 250, message: "another Lease holder" }).catch(phase.fail);
}

/** Applies the upgrade's overlay; waits until the DaemonSet replaced the daemon pod. */
async function upgradeOperator(phase: Phase): Promise<void> {
  await applyOverlay(phase, "overlay-upgrade", phase.upgrade);
  // The DaemonSet replaces the daemon pod while the node holds its slot.
  const daemon = phase.upgrade.find((i) => i.name === "daemon")!.digest;
  await waitFor(async () => {
    const images = await daemonPods(phase.cp, "{.items[*].status.containerStatuses[0].imageID}");
    return images.includes(daemon);
  }, { timeoutMs: 120_000, intervalMs: 250, message: "the new daemon pod running" })
    .catch(phase.fail);
}

/** Every operator pod runs the upgrade once the Deployment's old replicas are gone. */
async function onlyUpgradedPods(phase: Phase): Promise<void> {
  const pinned = phase.upgrade.map((i) => `${i.reference.replace(/:[^:/]+$/, "")}@${i.digest}`);
  let running: string[] = [];
  await waitFor(async () => {
    running = (await kubectlValue(phase.cp, [
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
  }).catch(phase.fail);
}

/**
 * Uninstalls as docs/install.md says: deletes the pools (the controller lets go of every node and
 * removes its finalizer), then `kubectl delete -k` of the overlay. Afterwards the node is
 * schedulable and carries none of the operator's marks, and none of its objects are left.
 */
async function uninstall(phase: Phase): Promise<void> {
  const { cp, node } = phase;
  const web = await cp.kubectl(["delete", "deployment", "web", "--wait=false"]);
  assert.equal(web.code, 0, web.stderr);
  const pool = await cp.kubectl(["delete", "bootcnodepools", "--all", "--timeout=120s"]);
  assert.equal(pool.code, 0, `${pool.stderr}\n${await diagnose(cp, node)}`);
  const deleted = await cp.kubectl([
    "delete",
    "-k",
    `${phase.work}/overlay-upgrade`,
    "--timeout=180s",
  ]);
  assert.equal(deleted.code, 0, `${deleted.stderr}\n${await diagnose(cp, node)}`);
  const n = await cp.client.resource<Node>(Resources.nodes).get(node.name);
  assert.notEqual(n.spec?.unschedulable, true, "the node is schedulable");
  const marks = Object.keys({ ...n.metadata?.annotations, ...n.metadata?.labels })
    .filter((k) => k.includes("bootc.dev/"));
  assert.deepEqual(marks, [], "no annotation or label of the operator left on the node");
  const left = await cp.kubectl([
    "get",
    "crd,clusterrole,clusterrolebinding,validatingadmissionpolicy,namespace",
    "-o",
    "name",
  ]);
  assert.equal(left.code, 0, left.stderr);
  // The test nodes' own bindings (bootc-test-node-*) are the harness's, not the operator's.
  const operators = left.stdout.split("\n").filter((line) =>
    /bootc/.test(line) && !/\/bootc-test-node-/.test(line)
  );
  assert.deepEqual(operators, [], "nothing of the operator is left");
}
