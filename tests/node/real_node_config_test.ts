import assert from "node:assert/strict";
import { inCgroup, mountsBelow } from "./host_sweep.ts";
import { acquireMachineState, MACHINE_LOCK_PATH, releaseMachineState } from "./real_node.ts";
import {
  containerdConfig,
  kubeletArgs,
  kubeletConfig,
  type NodeLayout,
} from "./real_node_config.ts";

const layout: NodeLayout = {
  dir: "/tmp/bootc-real-node-x1",
  name: "localhost",
  binDir: "/cache/node",
  cgroupRoot: "/bootc-real-node-x1",
  kubeletPort: 40100,
  sandboxImage: "bootc-test.local/pause:1",
};

/** Absolute paths in a rendered config. */
function paths(text: string): string[] {
  return [...text.matchAll(/"(\/[^"]*)"/g)].map((m) => m[1]);
}

Deno.test("containerd and kubelet configs keep every path in the node's folder", () => {
  const rendered = [
    containerdConfig(layout),
    kubeletConfig(layout),
    kubeletArgs(layout).join("\n"),
  ];
  const all = [
    ...paths(rendered[0]),
    ...paths(rendered[1]),
    ...kubeletArgs(layout).map((a) => a.split("=")[1]).filter((v) => v?.startsWith("/")),
  ];
  assert.ok(all.length > 10);
  for (const p of all) {
    assert.ok(
      p.startsWith(`${layout.dir}/`) || p.startsWith(`${layout.binDir}/`) ||
        p === layout.cgroupRoot,
      p,
    );
  }
  const kubelet = JSON.parse(rendered[1]);
  assert.equal(kubelet.failCgroupV1, false);
  assert.equal(kubelet.cgroupDriver, "cgroupfs");
  assert.equal(kubelet.address, "127.0.0.1");
  assert.match(rendered[0], /SystemdCgroup = false/);
});

Deno.test("mountsBelow lists only the folder's mounts, deepest first, unescaped", () => {
  const info = [
    "22 1 254:0 / / rw - ext4 /dev/vda rw",
    "90 22 0:50 / /tmp/bootc-real-node-x1/kubelet rw shared:1 - ext4 /dev/vda rw",
    "91 90 0:51 / /tmp/bootc-real-node-x1/kubelet/pods/u/volumes/kube-api-access rw - tmpfs tmpfs rw",
    "92 22 0:52 / /tmp/bootc-real-node-x10/other rw - tmpfs tmpfs rw",
    "93 22 0:53 / /tmp/bootc-real-node-x1/a\\040b rw - overlay overlay rw",
  ].join("\n");
  assert.deepEqual(mountsBelow(info, layout.dir), [
    "/tmp/bootc-real-node-x1/kubelet/pods/u/volumes/kube-api-access",
    "/tmp/bootc-real-node-x1/kubelet",
    "/tmp/bootc-real-node-x1/a b",
  ]);
});

Deno.test("inCgroup matches the root and below, in any hierarchy, not a sibling prefix", () => {
  assert.ok(inCgroup("4:memory:/bootc-real-node-x1/kubepods/pod1/c\n", layout.cgroupRoot));
  assert.ok(inCgroup("1:name=systemd:/bootc-real-node-x1\n", layout.cgroupRoot));
  assert.ok(!inCgroup("4:memory:/bootc-real-node-x10/kubepods\n", layout.cgroupRoot));
  assert.ok(!inCgroup("0::/\n", layout.cgroupRoot));
});

Deno.test("real nodes of two test files take turns on the machine lock", async () => {
  // Another file's nodes hold the machine (a second descriptor conflicts like another process).
  const other = await Deno.open(MACHINE_LOCK_PATH, { create: true, write: true });
  await other.lock(true);
  let acquired = false;
  const first = acquireMachineState().then(() => acquired = true);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(acquired, false, "a node started while another file's nodes run");
  other.close();
  await first;
  await acquireMachineState(); // a second node of this file: no wait
  await releaseMachineState();
  // Still held by this file's remaining node.
  const probe = await Deno.open(MACHINE_LOCK_PATH, { write: true });
  let probed = false;
  const probing = probe.lock(true).then(() => probed = true);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(probed, false, "the lock was released while a node still runs");
  await releaseMachineState();
  await probing;
  probe.close();
});
