import assert from "node:assert/strict";
import {
  extractErrorLine,
  hostEnvironment,
  runCommand,
  splitCommand,
  startCommand,
} from "./command.ts";

Deno.test("runCommand captures output and exit code", async () => {
  const r = await runCommand(["bash", "-c", "echo out; echo err >&2; exit 3"], {
    timeoutMs: 10_000,
  });
  assert.equal(r.code, 3);
  assert.equal(r.stdout, "out\n");
  assert.equal(r.stderr, "err\n");
  assert.equal(r.timedOut, false);
});

Deno.test("runCommand drops `container` from the environment", async () => {
  const env = hostEnvironment({ container: "oci", KEEP: "1" });
  assert.deepEqual(env, { KEEP: "1" });
  const r = await runCommand(["bash", "-c", 'echo "c=${container-unset} k=$KEEP"'], {
    timeoutMs: 10_000,
    env,
  });
  assert.equal(r.stdout.trim(), "c=unset k=1");
});

Deno.test("runCommand terminates a command that exceeds its timeout", async () => {
  const t0 = Date.now();
  const r = await runCommand(["sleep", "30"], { timeoutMs: 200 });
  assert.equal(r.timedOut, true);
  assert.equal(r.signal, "SIGTERM");
  assert.ok(Date.now() - t0 < 5_000);
});

Deno.test("runCommand escalates to SIGKILL when SIGTERM is ignored", async () => {
  const r = await runCommand(
    ["bash", "-c", "trap '' TERM; echo ready; while true; do sleep 0.05; done"],
    { timeoutMs: 300, killGraceMs: 300 },
  );
  assert.equal(r.timedOut, true);
  assert.equal(r.signal, "SIGKILL");
  assert.equal(r.stdout, "ready\n");
});

Deno.test("runCommand does not hang on a forked helper that holds the pipes", async () => {
  const t0 = Date.now();
  const r = await runCommand(["bash", "-c", "sleep 30 & echo started"], { timeoutMs: 10_000 });
  assert.equal(r.code, 0);
  assert.equal(r.stdout, "started\n");
  assert.ok(Date.now() - t0 < 5_000, "the helper was killed with the group");
});

Deno.test("startCommand aborts through a signal", async () => {
  const controller = new AbortController();
  const running = startCommand(["sleep", "30"], { signal: controller.signal });
  setTimeout(() => controller.abort(), 100);
  const r = await running.result;
  assert.equal(r.timedOut, true);
});

Deno.test("runCommand throws when the program does not exist", async () => {
  await assert.rejects(() => runCommand(["/nonexistent/bootc"], { timeoutMs: 1000 }));
});

Deno.test("extractErrorLine prefers bootc's error: line", () => {
  assert.equal(
    extractErrorLine(
      "Fetching image...\nerror: Switching: Pulling: Creating importer: failed to invoke method OpenImage: manifest unknown\n",
    ),
    "error: Switching: Pulling: Creating importer: failed to invoke method OpenImage: manifest unknown",
  );
  assert.equal(extractErrorLine("warning\nsomething broke\n\n"), "something broke");
  // A host that enforces its signature policy refuses an unsigned image in these words.
  const refusal = "ERROR Upgrading: Creating importer: failed to invoke method OpenImage: " +
    "failed to invoke method OpenImage: A signature was required, but no signature exists";
  assert.match(extractErrorLine(`${refusal}\n`) ?? "", /A signature was required/);
  assert.equal(extractErrorLine(""), undefined);
});

Deno.test("splitCommand splits a flag on whitespace", () => {
  assert.deepEqual(splitCommand("nsenter -m/proc/1/ns/mnt --"), [
    "nsenter",
    "-m/proc/1/ns/mnt",
    "--",
  ]);
  assert.deepEqual(splitCommand("  "), []);
  assert.deepEqual(splitCommand("deno run -A  sim.ts --sim-root /x"), [
    "deno",
    "run",
    "-A",
    "sim.ts",
    "--sim-root",
    "/x",
  ]);
});
