import assert from "node:assert/strict";
import { parseDuration, parseFlags, startControllerMemoryTrim, USAGE, wantsHelp } from "./main.ts";
import { createLogger } from "../lib/log.ts";

Deno.test("parseFlags: defaults", () => {
  const f = parseFlags([]);
  assert.equal(f.namespace, "bootc-operator");
  assert.equal(f.metricsAddr, ":8080");
  assert.equal(f.registryPollIntervalMs, 300_000);
  assert.equal(f.registryTimeoutMs, 10_000);
  assert.deepEqual(f.insecureRegistries, []);
  assert.equal(f.leaderElect, true);
  assert.equal(f.leaderElectionId, "bootc-operator-controller");
});

Deno.test("parseFlags: every flag, repeatable --insecure-registry, --leader-elect=false", () => {
  const f = parseFlags([
    "--kubeconfig",
    "/k",
    "--namespace=ops",
    "--metrics-addr",
    "127.0.0.1:9090",
    "--registry-poll-interval",
    "90s",
    "--registry-timeout=3s",
    "--insecure-registry",
    "a:5000",
    "--insecure-registry=b:5000",
    "--registry-ca-file",
    "/ca.pem",
    "--leader-elect=false",
    "--leader-election-id",
    "x",
  ]);
  assert.deepEqual(f, {
    kubeconfig: "/k",
    namespace: "ops",
    metricsAddr: "127.0.0.1:9090",
    registryPollIntervalMs: 90_000,
    registryTimeoutMs: 3_000,
    insecureRegistries: ["a:5000", "b:5000"],
    registryCaFile: "/ca.pem",
    leaderElect: false,
    leaderElectionId: "x",
  });
  assert.equal(parseFlags(["--leader-elect"]).leaderElect, true);
  assert.throws(() => parseFlags(["--leader-elect=maybe"]), /true or false/);
  assert.throws(() => parseFlags(["--bogus"]), /bogus/);
});

Deno.test("parseDuration", () => {
  assert.equal(parseDuration("5m"), 300_000);
  assert.equal(parseDuration("1h30m"), 5_400_000);
  assert.equal(parseDuration("250ms"), 250);
  assert.equal(parseDuration("45"), 45_000);
  assert.throws(() => parseDuration("5 minutes"), /invalid duration/);
});

Deno.test("controller --help prints every flag and exits 0; a bad flag exits 2 pointing at it", async () => {
  assert.ok(wantsHelp(["--help"]) && wantsHelp(["-h"]) && !wantsHelp(["--namespace", "x"]));
  const flags = [
    "kubeconfig",
    "namespace",
    "metrics-addr",
    "registry-poll-interval",
    "registry-timeout",
    "insecure-registry",
    "registry-ca-file",
    "leader-elect",
    "leader-election-id",
  ];
  for (const flag of flags) assert.match(USAGE, new RegExp(`--${flag}[ =]`), flag);
  const run = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", new URL("./main.ts", import.meta.url).pathname, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  assert.equal(new TextDecoder().decode(help.stdout).trim(), USAGE);
  const bad = await run(["--no-such-flag"]);
  assert.equal(bad.code, 2);
  assert.match(new TextDecoder().decode(bad.stderr), /controller --help/);
});

Deno.test("startControllerMemoryTrim: without FFI it says so once and the controller runs on", () => {
  const lines: { level: string; msg: string; error?: string }[] = [];
  const logger = createLogger({ level: "debug", write: (l) => lines.push(JSON.parse(l)) });
  const started = startControllerMemoryTrim({
    logger,
    access: () => {
      throw new Error('NotCapable: Requires ffi access to "/lib/x86_64-linux-gnu/libc.so.6"');
    },
  }, new AbortController().signal);
  assert.equal(started, false);
  assert.equal(lines.length, 1);
  assert.equal(lines[0].msg, "resident memory trimming unavailable");
  assert.match(lines[0].error!, /ffi/);
});

Deno.test("startControllerMemoryTrim: no start-up trims; samples at its interval until aborted", async () => {
  const ac = new AbortController();
  let reads = 0;
  const started = startControllerMemoryTrim({
    logger: createLogger({ write: () => {} }),
    access: () => ({
      read: () => (reads++, { rss: 10 << 20, anon: 5 << 20, file: 5 << 20 }),
      pageOut: () => 0,
    }),
  }, ac.signal);
  assert.equal(started, true);
  // No start-up phase (it would sample every 50 ms while the initial lists load): the first
  // sample waits for CONTROLLER_TRIM.intervalMs.
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(reads, 0, "no start-up sampling");
  ac.abort();
  const after = reads;
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(reads, after, "no samples after abort");
});
