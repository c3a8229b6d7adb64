import assert from "node:assert/strict";
import { resolveBinDir, startControlPlane } from "./control_plane.ts";

Deno.test("a failed start reports the API server's log and cleans up", async () => {
  const realBinDir = await resolveBinDir();
  const binDir = await Deno.makeTempDir({ prefix: "harness-bin-" });
  // A private temp folder, so other control planes on this machine do not count (an option,
  // not TMPDIR: test files running in parallel share the environment).
  const tmp = await Deno.makeTempDir({ prefix: "harness-tmp-" });
  try {
    await Deno.symlink(`${realBinDir}/etcd`, `${binDir}/etcd`);
    await Deno.writeTextFile(
      `${binDir}/kube-apiserver`,
      "#!/bin/sh\necho 'E0000 broken apiserver for the test' >&2\nexit 1\n",
      { mode: 0o755 },
    );
    const started = performance.now();
    const error = await startControlPlane({
      binDir,
      quiet: true,
      startTimeoutMs: 30_000,
      tmpDir: tmp,
    }).then(
      () => assert.fail("start should fail"),
      (e: Error) => e,
    );
    assert.match(error.message, /kube-apiserver exited \(code 1\); log: .*kube-apiserver\.log/);
    assert.ok(error.message.includes(`${tmp}/bootc-control-plane-`), "used the private folder");
    // It noticed the exit instead of waiting for the timeout.
    assert.ok(performance.now() - started < 15_000);
    // The temp folder is gone and etcd was stopped.
    assert.deepEqual([...Deno.readDirSync(tmp)], []);
    const etcdAlive = await etcdProcesses(binDir);
    assert.deepEqual(etcdAlive, []);
  } finally {
    await Deno.remove(binDir, { recursive: true });
    await Deno.remove(tmp, { recursive: true });
  }
});

async function etcdProcesses(binDir: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${e.name}/cmdline`).catch(() => "");
    if (cmdline.startsWith(`${binDir}/etcd`)) pids.push(Number(e.name));
  }
  return pids;
}
