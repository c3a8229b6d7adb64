import assert from "node:assert/strict";
import { freePort, PORT_RANGE, startProcess, tailFile } from "./process.ts";

Deno.test("startProcess logs output and stop() escalates to SIGKILL", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-process-" });
  try {
    const logPath = `${dir}/p.log`;
    // Ignores SIGTERM, so stop() must escalate.
    const p = startProcess({
      name: "stubborn",
      command: "/bin/sh",
      args: [
        "-c",
        "trap '' TERM; echo hello out; echo hello err >&2; while :; do sleep 0.05; done",
      ],
      logPath,
    });
    assert.ok(p.running);
    const start = performance.now();
    for (let i = 0; i < 50 && !(await tailFile(logPath)).includes("hello err"); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const status = await p.stop({ graceMs: 200 });
    assert.equal(status.signal, "SIGKILL");
    assert.ok(performance.now() - start < 3000);
    assert.equal(p.running, false);
    const log = await Deno.readTextFile(logPath);
    assert.match(log, /hello out/);
    assert.match(log, /hello err/);
    // A second stop is a no-op returning the same status.
    assert.equal((await p.stop()).signal, "SIGKILL");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startProcess: the pid is the program itself, which SIGTERM ends", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-process-" });
  try {
    const p = startProcess({ name: "sleep", command: "sleep", args: ["30"], logPath: `${dir}/l` });
    const comm = await waitForComm(p.pid, "sleep");
    assert.equal(comm, "sleep");
    const status = await p.stop();
    assert.equal(status.signal, "SIGTERM");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("children die with the test process (parent-death signal)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-process-" });
  try {
    // A separate Deno process starts a child and prints its pid, then we SIGKILL that Deno.
    const script = `${dir}/parent.ts`;
    await Deno.writeTextFile(
      script,
      `import { startProcess } from ${
        JSON.stringify(new URL("./process.ts", import.meta.url).href)
      };
const p = startProcess({ name: "s", command: "sleep", args: ["60"], logPath: ${
        JSON.stringify(`${dir}/s.log`)
      } });
console.log(p.pid);
await new Promise(() => {});`,
    );
    const parent = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", script],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = parent.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const { value } = await reader.read();
    const childPid = Number(value?.trim());
    assert.ok(childPid > 0, `child pid from parent: ${value}`);
    assert.equal(await waitForComm(childPid, "sleep"), "sleep");
    parent.kill("SIGKILL");
    await parent.status;
    await reader.cancel();
    let alive = true;
    for (let i = 0; i < 100 && alive; i++) {
      alive = await processState(childPid).then((s) => s !== undefined && s !== "Z");
      if (alive) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(alive, false, `child ${childPid} outlived its parent`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("freePort returns distinct usable ports below the ephemeral range", () => {
  const ports = Array.from({ length: 50 }, () => freePort());
  assert.equal(new Set(ports).size, ports.length, "never the same port twice");
  for (const port of ports) {
    assert.ok(port >= PORT_RANGE.low && port < PORT_RANGE.high, `${port}`);
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: ports[0] });
  listener.close();
});

async function processState(pid: number): Promise<string | undefined> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

async function waitForComm(pid: number, want: string): Promise<string | undefined> {
  let comm: string | undefined;
  for (let i = 0; i < 100; i++) {
    comm = await Deno.readTextFile(`/proc/${pid}/comm`).then((t) => t.trim(), () => undefined);
    if (comm === want) return comm;
    await new Promise((r) => setTimeout(r, 10));
  }
  return comm;
}
