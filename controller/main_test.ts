import assert from "node:assert/strict";
import { parseDuration, parseFlags, USAGE, wantsHelp } from "./main.ts";

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
    logFormat: "json",
  });
  assert.equal(parseFlags(["--leader-elect"]).leaderElect, true);
  assert.throws(() => parseFlags(["--leader-elect=maybe"]), /true or false/);
  assert.throws(() => parseFlags(["--bogus"]), /bogus/);
});

Deno.test("parseFlags: --log-level and --log-format through lib/log.ts", () => {
  assert.equal(parseFlags([]).logLevel, undefined, "LOG_LEVEL or info");
  assert.equal(parseFlags([]).logFormat, "json");
  const f = parseFlags(["--log-level=debug", "--log-format", "text"]);
  assert.equal(f.logLevel, "debug");
  assert.equal(f.logFormat, "text");
  assert.throws(
    () => parseFlags(["--log-level", "trace"]),
    /^LogFlagError: --log-level: expected debug, info, warn or error, not "trace"$/,
  );
  assert.throws(() => parseFlags(["--log-format=xml"]), /--log-format: expected text or json/);
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
    "log-level",
    "log-format",
    "version",
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
  const level = await run(["--log-level=loud"]);
  assert.equal(level.code, 2);
  assert.equal(
    new TextDecoder().decode(level.stderr).split("\n")[0],
    'controller: --log-level: expected debug, info, warn or error, not "loud"',
  );
});
