import assert from "node:assert/strict";
import { parseCommandLine, parseDuration, UsageError } from "./cli.ts";

Deno.test("cli: run defaults leave host access to detection (pod or standalone)", () => {
  const cmd = parseCommandLine(["run"], (n) => ({ NODE_NAME: "w1" } as Record<string, string>)[n]);
  assert.equal(cmd.command, "run");
  if (cmd.command !== "run") return;
  assert.equal(cmd.nodeName, "w1");
  // Detected at start-up (lib/bootc/host_namespace.ts): no namespace flags needed anywhere.
  assert.equal(cmd.hostRoot, undefined);
  assert.equal(cmd.hostExecPrefix, undefined);
  assert.equal(cmd.hostPid, 1);
  assert.deepEqual(cmd.bootcCommand, ["bootc"]);
  assert.deepEqual(cmd.systemctlCommand, ["systemctl"]);
  assert.equal(cmd.pollIntervalMs, 300_000);
  assert.equal(cmd.transientUnits, false);
});

Deno.test("cli: standalone flags split commands on whitespace; empty prefix allowed", () => {
  const cmd = parseCommandLine([
    "run",
    "--node-name=n",
    "--kubeconfig",
    "/k",
    "--host-root",
    "/",
    "--host-exec-prefix",
    "",
    "--bootc-command",
    "deno run -A sim.ts --sim-root /r",
    "--systemctl-command=deno run -A sim.ts --sim-root /r systemctl",
    "--poll-interval",
    "30s",
    "--transient-units",
  ]);
  assert.equal(cmd.command, "run");
  if (cmd.command !== "run") return;
  assert.deepEqual(cmd.hostExecPrefix, []);
  assert.deepEqual(cmd.bootcCommand, ["deno", "run", "-A", "sim.ts", "--sim-root", "/r"]);
  assert.deepEqual(cmd.systemctlCommand.at(-1), "systemctl");
  assert.equal(cmd.kubeconfig, "/k");
  assert.equal(cmd.pollIntervalMs, 30_000);
  assert.equal(cmd.transientUnits, true);
});

Deno.test("cli: environment fallbacks", () => {
  const env: Record<string, string> = {
    NODE_NAME: "n",
    HOST_ROOT: "/",
    BOOTC_COMMAND: "/usr/bin/bootc",
    HOST_EXEC_PREFIX: "",
    SYSTEMCTL_COMMAND: "/usr/bin/systemctl",
    POLL_INTERVAL: "1m",
  };
  const cmd = parseCommandLine(["run"], (n) => env[n]);
  if (cmd.command !== "run") throw new Error("run expected");
  assert.equal(cmd.hostRoot, "/");
  assert.deepEqual(cmd.hostExecPrefix, []);
  assert.deepEqual(cmd.bootcCommand, ["/usr/bin/bootc"]);
  assert.equal(cmd.pollIntervalMs, 60_000);
});

Deno.test("cli: status evaluates offline or against the API", () => {
  const offline = parseCommandLine([
    "status",
    "--desired-image",
    "r/os@sha256:x",
    "--desired-image-state=Booted",
  ]);
  assert.equal(offline.command, "status");
  if (offline.command !== "status") return;
  assert.equal(offline.desiredImage, "r/os@sha256:x");
  assert.equal(offline.desiredImageState, "Booted");
  assert.equal(offline.nodeName, undefined);
  const api = parseCommandLine(["status", "--kubeconfig", "/k", "--node-name", "n"]);
  if (api.command !== "status") throw new Error("status expected");
  assert.equal(api.nodeName, "n");
});

Deno.test("cli: usage errors", () => {
  const bad: string[][] = [
    ["run"],
    ["frobnicate"],
    ["run", "--node-name", "n", "--nope"],
    ["run", "--node-name", "n", "--desired-image", "x"],
    ["status", "--poll-interval", "5m"],
    ["status", "--desired-image-state", "Up"],
    ["status", "--kubeconfig", "/k"],
    ["run", "--node-name", "n", "--bootc-command", " "],
    ["run", "--node-name", "n", "--poll-interval", "soon"],
    ["run", "--node-name"],
  ];
  for (const args of bad) {
    assert.throws(() => parseCommandLine(args), UsageError, args.join(" "));
  }
  assert.deepEqual(parseCommandLine([]), { command: "help" });
});

Deno.test("cli: durations", () => {
  assert.equal(parseDuration("500ms", "f"), 500);
  assert.equal(parseDuration("2m", "f"), 120_000);
  assert.equal(parseDuration("1h", "f"), 3_600_000);
  assert.equal(parseDuration("90", "f"), 90_000);
  assert.throws(() => parseDuration("-1s", "f"), UsageError);
});

Deno.test("cli: --host-pid names the host's process; bad values are usage errors", () => {
  const cmd = parseCommandLine(["status", "--host-pid", "4242"]);
  if (cmd.command !== "status") throw new Error("status expected");
  assert.equal(cmd.hostPid, 4242);
  const env = parseCommandLine(["status"], (n) => n === "HOST_PID" ? "7" : undefined);
  if (env.command !== "status") throw new Error("status expected");
  assert.equal(env.hostPid, 7);
  assert.throws(() => parseCommandLine(["status", "--host-pid", "0"]), UsageError);
  assert.throws(
    () => parseCommandLine(["status", "--host-pid=x"]),
    /--host-pid: expected a process id/,
  );
  assert.throws(
    () => parseCommandLine(["status", "--host-root", ""]),
    /--host-root must not be empty/,
  );
});

Deno.test("cli: health check intervals (run only)", () => {
  const defaults = parseCommandLine(["run", "--node-name", "n"]);
  assert.equal(defaults.command, "run");
  if (defaults.command !== "run") return;
  assert.equal(defaults.healthIntervalMs, 15_000);
  assert.equal(defaults.healthIntervalSettledMs, 60_000);
  const set = parseCommandLine([
    "run",
    "--node-name",
    "n",
    "--health-interval",
    "1s",
    "--health-interval-settled=2m",
  ]);
  if (set.command !== "run") throw new Error("run expected");
  assert.equal(set.healthIntervalMs, 1_000);
  assert.equal(set.healthIntervalSettledMs, 120_000);
  assert.throws(
    () => parseCommandLine(["run", "--node-name", "n", "--health-interval", "0s"]),
    /--health-interval: must be more than 0/,
  );
  assert.throws(
    () => parseCommandLine(["status", "--health-interval", "1s"]),
    /applies to run only/,
  );
});

Deno.test("cli: version and --version, before anything else is checked", () => {
  assert.deepEqual(parseCommandLine(["version"]), { command: "version" });
  assert.deepEqual(parseCommandLine(["--version"]), { command: "version" });
  assert.deepEqual(parseCommandLine(["run", "--version"]), { command: "version" });
  assert.deepEqual(parseCommandLine(["status", "--nope", "--version"]), { command: "version" });
});

Deno.test("cli: --log-level and --log-format (run and status), flag over environment", () => {
  const run = parseCommandLine([
    "run",
    "--node-name",
    "n",
    "--log-level=debug",
    "--log-format",
    "text",
  ]);
  if (run.command !== "run") throw new Error("run expected");
  assert.equal(run.logLevel, "debug");
  assert.equal(run.logFormat, "text");
  const defaults = parseCommandLine(["status"]);
  if (defaults.command !== "status") throw new Error("status expected");
  assert.equal(defaults.logLevel, undefined);
  assert.equal(defaults.logFormat, undefined);
  const env = (n: string) =>
    ({ LOG_LEVEL: "warn", LOG_FORMAT: "json" } as Record<string, string>)[n];
  const fromEnv = parseCommandLine(["status"], env);
  if (fromEnv.command !== "status") throw new Error("status expected");
  assert.equal(fromEnv.logLevel, "warn");
  assert.equal(fromEnv.logFormat, "json");
  const flagWins = parseCommandLine(["status", "--log-format=text"], env);
  if (flagWins.command !== "status") throw new Error("status expected");
  assert.equal(flagWins.logFormat, "text");
  assert.throws(
    () => parseCommandLine(["status", "--log-level", "loud"]),
    (e: unknown) =>
      e instanceof UsageError &&
      e.message === '--log-level: expected debug, info, warn or error, not "loud"',
  );
  assert.throws(
    () => parseCommandLine(["run", "--node-name", "n", "--log-format=yaml"]),
    (e: unknown) =>
      e instanceof UsageError && e.message === '--log-format: expected text or json, not "yaml"',
  );
});
