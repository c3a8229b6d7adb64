/**
 * A real node (tests/node/real_node.ts) joins a test control plane, becomes Ready, runs a pod to
 * completion with a projected service-account volume, serves its logs through the API server, and
 * leaves nothing behind on the machine when stopped.
 */

import assert from "node:assert/strict";
import { Resources } from "../../lib/kube/mod.ts";
import { type ControlPlane, type Pod, startControlPlane } from "../harness/control_plane.ts";
import { waitFor } from "../harness/wait.ts";
import { startRegistry } from "../harness/registry.ts";
import { SimulatedHost } from "../bootc_sim/mod.ts";
import { HOST_BIN_DIR } from "./host_namespace.ts";
import { POD_SUBNET, SERVICE_IP } from "./real_node_config.ts";
import { cgroupHierarchies, mountsBelow, nodeProcesses } from "./host_sweep.ts";
import {
  BUSYBOX_IMAGE,
  KUBELET_KERNEL_SETTINGS,
  type RealNode,
  startRealNode,
} from "./real_node.ts";

async function kernelSettings(): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const key of KUBELET_KERNEL_SETTINGS) {
    values[key] = (await Deno.readTextFile(`/proc/sys/${key}`)).trim();
  }
  return values;
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

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

Deno.test("a real kubelet + containerd node runs a pod and cleans up", async (t) => {
  const cp = await startControlPlane({ kwok: false });
  const settingsBefore = await kernelSettings();
  const cniCacheBefore = await exists("/var/lib/cni");
  let dir = "";
  let cgroupRoot = "";
  try {
    const node = await startRealNode({ controlPlane: cp });
    dir = node.dir;
    cgroupRoot = `/${dir.split("/").at(-1)}`;
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
          const registry = await startRegistry();
          const image = `${registry.host}/os:v1`;
          let host: SimulatedHost | undefined;
          try {
            await registry.pushImage({ repository: "os", tag: "v1", version: "1" });
            host = await SimulatedHost.create({ image });
            await node.installHost(host);
            assert.ok(
              !await exists(`${HOST_BIN_DIR}/bootc`),
              "this machine's namespace has no bootc",
            );
            const logs = await runPod(cp, node, "host-probe", {
              hostPID: true,
              hostNetwork: true,
              containers: [{ name: "host-probe", securityContext: { privileged: true } }],
              // PID 1 of a hostPID pod is the node's init, as for the daemon.
              script: `test ! -e ${HOST_BIN_DIR}/bootc && ` +
                `nsenter --mount=/proc/1/ns/mnt -- ${HOST_BIN_DIR}/bootc status --format=json`,
            });
            const status = JSON.parse(logs);
            assert.equal(status.status?.booted?.image?.image?.image, image);
          } finally {
            await host?.destroy();
            await registry.stop();
          }
        },
      );

      await t.step(
        "a reboot ends the node's processes; the kubelet brings its pods back",
        async () => {
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
          await node.reboot();
          assert.notEqual(node.initPid, initBefore, "a new init");
          assert.equal(node.reboots, 1);
          const gone = await node.runInHost(["cat", "/run/bootc-test-marker"]);
          assert.notEqual(gone.code, 0, "/run is empty after the reboot");
          const after = await running(before);
          assert.notEqual(after, before, "the container was started again");
        },
      );
    } finally {
      await node.stop();
    }
    await t.step(
      "stop() left no process, mount, cgroup, folder or kernel setting behind",
      async () => {
        assert.deepEqual(await nodeProcesses({ dir, cgroupRoot }), []);
        assert.deepEqual(mountsBelow(await Deno.readTextFile("/proc/self/mountinfo"), dir), []);
        for (const h of await cgroupHierarchies()) assert.ok(!await exists(`${h}${cgroupRoot}`), h);
        assert.ok(!await exists(dir), dir);
        assert.equal(await exists("/var/lib/cni"), cniCacheBefore, "/var/lib/cni as it was");
        const nodes = await cp.kubectl(["get", "nodes", "-o", "name"]);
        assert.equal(nodes.code, 0, nodes.stderr);
        assert.equal(nodes.stdout.trim(), "", "stop() deletes the Node");
        assert.deepEqual(
          await kernelSettings(),
          settingsBefore,
          "the kernel settings are put back",
        );
      },
    );
  } finally {
    await cp.stop();
  }
});
