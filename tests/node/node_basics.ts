/**
 * The real-node test's first phase (tests/node/real_nodes_test.ts): a real node
 * (tests/node/real_node.ts) runs a pod to completion with a projected service-account volume and
 * serves its logs through the API server, reaches the API server through the `kubernetes`
 * Service, gives a hostPID pod's `nsenter` its own host (the simulated bootc), and reboots: its
 * processes end and the kubelet brings its pods back. Afterwards, {@linkcode machineSnapshot} and
 * {@linkcode assertNodeGone} check that stopping the nodes left nothing behind.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Resources } from "../../lib/kube/mod.ts";
import type { ControlPlane, Pod } from "../harness/control_plane.ts";
import { waitFor } from "../harness/wait.ts";
import type { SimulatedHost } from "../bootc_sim/mod.ts";
import { HOST_BIN_DIR } from "./host_namespace.ts";
import { POD_SUBNET, SERVICE_IP } from "./real_node_config.ts";
import { cgroupHierarchies, mountsBelow, nodeProcesses } from "./host_sweep.ts";
import { BUSYBOX_IMAGE, KUBELET_KERNEL_SETTINGS, type RealNode } from "./real_node.ts";

/** What the machine looked like before any node started: put back when the last one stops. */
export interface MachineSnapshot {
  kernelSettings: Record<string, string>;
  cniCache: boolean;
}

async function kernelSettings(): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const key of KUBELET_KERNEL_SETTINGS) {
    values[key] = (await Deno.readTextFile(`/proc/sys/${key}`)).trim();
  }
  return values;
}

/** Reads the machine-wide state a node changes (kernel settings, CNI's cache folder). */
export async function machineSnapshot(): Promise<MachineSnapshot> {
  return { kernelSettings: await kernelSettings(), cniCache: await exists("/var/lib/cni") };
}

/** Creates a pod on the node and waits until it Succeeded; returns its logs. */
async function runPod(
  cp: ControlPlane,
  node: RealNode,
  name: string,
  spec: Partial<NonNullable<Pod["spec"]>> & { script: string },
): Promise<string> {
  const pods = cp.client.resource<Pod>(Resources.pods, "default");
  const { script, ...rest } = spec;
  await pods.create({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
      ...rest,
      containers: [{
        name,
        image: BUSYBOX_IMAGE,
        imagePullPolicy: "Never",
        command: ["sh", "-c", script],
        ...rest.containers?.[0],
      }],
    },
  });
  let last: Pod | undefined;
  try {
    await waitFor(async () => {
      last = await pods.get(name);
      return last.status?.phase === "Succeeded" || last.status?.phase === "Failed";
    }, {
      timeoutMs: 90_000,
      intervalMs: 250,
      message: () =>
        `pod ${name} on ${node.name} to finish; status ${JSON.stringify(last?.status)}`,
    });
  } catch (e) {
    const events = await cp.kubectl(["get", "events", "-n", "default", "-o", "wide"]);
    throw new Error(`${e}\nevents:\n${events.stdout}\nkubelet:\n${await node.logTail("kubelet")}`);
  }
  const logs = await cp.kubectl(["logs", "-n", "default", name]);
  assert.equal(logs.code, 0, logs.stderr);
  assert.equal(last?.spec?.nodeName, node.name);
  assert.equal(last?.status?.phase, "Succeeded", `pod ${name} failed; logs:\n${logs.stdout}`);
  if (!spec.hostNetwork) {
    const prefix = POD_SUBNET.split(".").slice(0, 3).join(".") + ".";
    assert.ok(
      last?.status?.podIP?.startsWith(prefix),
      `pod IP ${last?.status?.podIP} from the bridge`,
    );
  }
  return logs.stdout;
}

/** `status.booted.image.image.image` of a `bootc status --format=json` answer. */
function bootedImage(status: unknown): string | undefined {
  type Status = { status?: { booted?: { image?: { image?: { image?: string } } } } };
  return (status as Status).status?.booted?.image?.image?.image;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** What {@linkcode nodeBasics} runs on. */
export interface NodeBasicsOptions {
  cp: ControlPlane;
  node: RealNode;
  /** The simulated host installed in `node` (RealNode.installHost). */
  host: SimulatedHost;
}

/** The pods {@linkcode nodeBasics} creates in namespace default (deleted when it ends). */
const BASICS_PODS = ["hello", "service-probe", "host-probe", "sleeper"];

/**
 * Runs the first phase's steps on `options.node`; deletes the pods it created, so the phases
 * after it find the node running nothing of its own.
 */
export async function nodeBasics(t: Deno.TestContext, options: NodeBasicsOptions): Promise<void> {
  const { cp, node, host } = options;
  try {
    await t.step("a scheduled pod runs to completion; its logs are served", async () => {
      const logs = await runPod(cp, node, "hello", {
        script:
          "echo hello from a real node; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace",
      });
      assert.equal(logs, "hello from a real node\ndefault");
    });

    await t.step("a pod reaches the API server through the kubernetes Service", async () => {
      // Plain HTTP to the TLS port: the API server's TLS stack answers in plain HTTP.
      const logs = await runPod(cp, node, "service-probe", {
        script: `echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; ` +
          `printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' | nc "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT"`,
      });
      const [address, ...reply] = logs.split("\n");
      assert.equal(address, `${SERVICE_IP}:443`);
      assert.match(reply.join("\n"), /Client sent an HTTP request to an HTTPS server/);
    });

    await t.step(
      "a hostPID pod's nsenter reaches the node's own host (simulated bootc)",
      async () => {
        assert.ok(!await exists(`${HOST_BIN_DIR}/bootc`), "this machine's namespace has no bootc");
        const logs = await runPod(cp, node, "host-probe", {
          hostPID: true,
          hostNetwork: true,
          containers: [{ name: "host-probe", securityContext: { privileged: true } }],
          // PID 1 of a hostPID pod is the node's init, as for the daemon.
          script: `test ! -e ${HOST_BIN_DIR}/bootc && ` +
            `nsenter --mount=/proc/1/ns/mnt -- ${HOST_BIN_DIR}/bootc status --format=json`,
        });
        const booted = bootedImage(JSON.parse(logs));
        assert.ok(booted, `a booted image in ${logs}`);
        assert.equal(booted, bootedImage(await host.status()));
      },
    );

    await t.step(
      "a reboot ends the node's processes; the kubelet brings its pods back",
      async () => {
        await rebootBringsPodsBack(cp, node);
      },
    );
  } finally {
    const pods = cp.client.resource<Pod>(Resources.pods, "default");
    await Promise.all(BASICS_PODS.map((name) => pods.delete(name).catch(() => {})));
    await waitFor(async () => {
      const left = await pods.list();
      return !left.items.some((p) => BASICS_PODS.includes(p.metadata?.name ?? ""));
    }, { timeoutMs: 60_000, intervalMs: 250, message: "the basics' pods deleted" });
  }
}

/** A long-running pod survives a node reboot as a new container; `/run` starts empty. */
async function rebootBringsPodsBack(cp: ControlPlane, node: RealNode): Promise<void> {
  const pods = cp.client.resource<Pod>(Resources.pods, "default");
  await pods.create({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "sleeper", namespace: "default" },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "sleeper",
        image: BUSYBOX_IMAGE,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
      }],
    },
  });
  const running = async (other?: string) => {
    let last: Pod | undefined;
    await waitFor(async () => {
      last = await pods.get("sleeper");
      const id = last.status?.containerStatuses?.[0]?.containerID;
      return last.status?.containerStatuses?.[0]?.ready === true && id !== other;
    }, {
      timeoutMs: 90_000,
      intervalMs: 250,
      message: () => `sleeper running; status ${JSON.stringify(last?.status)}`,
    });
    return last!.status!.containerStatuses![0].containerID!;
  };
  const before = await running();
  const marker = await node.runInHost(["sh", "-c", "echo up > /run/bootc-test-marker"]);
  assert.equal(marker.code, 0, marker.stderr);
  const initBefore = node.initPid;
  const rebootsBefore = node.reboots;
  await node.reboot();
  assert.notEqual(node.initPid, initBefore, "a new init");
  assert.equal(node.reboots, rebootsBefore + 1);
  const gone = await node.runInHost(["cat", "/run/bootc-test-marker"]);
  assert.notEqual(gone.code, 0, "/run is empty after the reboot");
  const after = await running(before);
  assert.notEqual(after, before, "the container was started again");
}

/**
 * After every node stopped: none left a process, mount, cgroup or folder behind, their Node
 * objects are gone, and the machine's kernel settings and CNI cache folder are as `before`.
 */
export async function assertNothingLeft(
  cp: ControlPlane,
  nodes: { dir: string }[],
  before: MachineSnapshot,
): Promise<void> {
  for (const { dir } of nodes) {
    const cgroupRoot = `/${dir.split("/").at(-1)}`;
    assert.deepEqual(await nodeProcesses({ dir, cgroupRoot }), []);
    assert.deepEqual(mountsBelow(await Deno.readTextFile("/proc/self/mountinfo"), dir), []);
    for (const h of await cgroupHierarchies()) assert.ok(!await exists(`${h}${cgroupRoot}`), h);
    assert.ok(!await exists(dir), dir);
  }
  const nodeNames = await cp.kubectl(["get", "nodes", "-o", "name"]);
  assert.equal(nodeNames.code, 0, nodeNames.stderr);
  assert.equal(nodeNames.stdout.trim(), "", "stop() deletes the Node");
  assert.deepEqual(
    await machineSnapshot(),
    before,
    "kernel settings and /var/lib/cni as they were",
  );
}
