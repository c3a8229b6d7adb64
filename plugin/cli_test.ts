import assert from "node:assert/strict";
import { DEFAULT_INTERVAL_MS, parseCommandLine, parseDuration, UsageError } from "./cli.ts";

Deno.test("status: optional pool, --watch/-w, --interval in any position", () => {
  assert.deepEqual(parseCommandLine(["status"]), {
    flags: { kubeconfig: undefined, context: undefined, namespace: undefined, noColor: false },
    command: {
      command: "status",
      pool: undefined,
      watch: false,
      intervalMs: DEFAULT_INTERVAL_MS,
      strict: false,
      output: "text",
    },
  });
  const p = parseCommandLine(["-w", "status", "workers", "--interval=1s", "--strict"]);
  assert.deepEqual(p.command, {
    command: "status",
    pool: "workers",
    watch: true,
    intervalMs: 1000,
    strict: true,
    output: "text",
  });
  assert.equal(
    (parseCommandLine(["status", "workers", "-o", "json"]).command as { output: string }).output,
    "json",
  );
  assert.throws(() => parseCommandLine(["status", "-o", "json", "-w"]), /does not take --watch/);
  assert.throws(() => parseCommandLine(["status", "-o", "yaml"]), /expected text or json/);
  assert.throws(() => parseCommandLine(["why", "n1", "--strict"]), /why does not take --strict/);
});

Deno.test("status --timeout: a duration, more than zero, not with -o json", () => {
  const c = parseCommandLine(["status", "workers", "--timeout", "10m"]).command;
  assert.equal((c as { timeoutMs?: number }).timeoutMs, 600_000);
  const h = parseCommandLine(["status", "--timeout=1h"]).command;
  assert.equal((h as { timeoutMs?: number }).timeoutMs, 3_600_000);
  assert.equal("timeoutMs" in parseCommandLine(["status"]).command, false);
  assert.throws(() => parseCommandLine(["status", "--timeout", "0"]), /more than 0s/);
  assert.throws(() => parseCommandLine(["status", "--timeout", "soon"]), /invalid duration/);
  assert.throws(
    () => parseCommandLine(["status", "-o", "json", "--timeout", "1m"]),
    /does not take --timeout/,
  );
});

Deno.test("kubectl's connection flags, both spellings, anywhere", () => {
  const { flags } = parseCommandLine([
    "why",
    "--kubeconfig",
    "/tmp/k",
    "node-1",
    "--context=prod",
    "-n",
    "kube-system",
    "--no-color",
  ]);
  assert.deepEqual(flags, {
    kubeconfig: "/tmp/k",
    context: "prod",
    namespace: "kube-system",
    noColor: true,
  });
  assert.equal(parseCommandLine(["status", "-nfoo"]).flags.namespace, "foo");
  assert.equal(parseCommandLine(["status", "--namespace=bar"]).flags.namespace, "bar");
  assert.equal(parseCommandLine(["status", "-n=baz"]).flags.namespace, "baz");
});

Deno.test("the other commands take exactly their one argument", () => {
  assert.deepEqual(parseCommandLine(["why", "n1"]).command, { command: "why", node: "n1" });
  assert.deepEqual(parseCommandLine(["pause", "p"]).command, { command: "pause", pool: "p" });
  assert.deepEqual(parseCommandLine(["resume", "p"]).command, { command: "resume", pool: "p" });
  assert.deepEqual(parseCommandLine(["history", "p"]).command, { command: "history", pool: "p" });
  assert.deepEqual(parseCommandLine(["abort", "p"]).command, { command: "abort", pool: "p" });
  assert.deepEqual(parseCommandLine(["retry", "p"]).command, { command: "retry", pool: "p" });
  assert.throws(() => parseCommandLine(["abort"]), /abort takes exactly one POOL/);
  assert.deepEqual(parseCommandLine(["rollback", "p"]).command, {
    command: "rollback",
    pool: "p",
    toRevision: undefined,
  });
  assert.equal(
    parseCommandLine(["rollback", "p", "--to-revision", "3"]).command.command,
    "rollback",
  );
  assert.deepEqual(parseCommandLine(["approve", "p"]).command, {
    command: "approve",
    pool: "p",
    revision: undefined,
  });
  assert.deepEqual(parseCommandLine(["approve", "p", "--revision=3"]).command, {
    command: "approve",
    pool: "p",
    revision: 3,
  });
  for (const argv of [[], ["help"], ["--help"], ["status", "-h"]]) {
    assert.deepEqual(parseCommandLine(argv).command, { command: "help" });
  }
});

Deno.test("usage errors name the problem", () => {
  const cases: [string[], RegExp][] = [
    [["why"], /why takes exactly one NODE/],
    [["pause", "a", "b"], /pause takes exactly one POOL/],
    [["status", "a", "b"], /at most one POOL/],
    [["status", "--bogus"], /unknown flag --bogus/],
    [["status", "--kubeconfig"], /--kubeconfig needs a value/],
    [["why", "n", "--watch"], /why does not take --watch/],
    [["status", "--interval", "soon"], /--interval: invalid duration "soon"/],
    [["status", "--interval", "10ms"], /at least 200ms/],
    [["rollback", "p", "--to-revision", "x"], /not a revision number/],
    [["approve", "p", "--revision", "three"], /--revision: not a revision number: three/],
    [["approve", "p", "--to-revision", "3"], /approve does not take --to-revision/],
    [["approve"], /approve takes exactly one POOL/],
    [["explode"], /unknown command explode/],
  ];
  for (const [argv, message] of cases) {
    assert.throws(() => parseCommandLine(argv), (e) => {
      assert.ok(e instanceof UsageError, String(e));
      assert.match(e.message, message);
      return true;
    });
  }
});

Deno.test("durations", () => {
  assert.equal(parseDuration("500ms", "--x"), 500);
  assert.equal(parseDuration("2", "--x"), 2000);
  assert.equal(parseDuration("1.5s", "--x"), 1500);
  assert.equal(parseDuration("1m", "--x"), 60_000);
});

Deno.test("version: -o text|json in kubectl's spellings; no arguments, no other flags", () => {
  assert.deepEqual(parseCommandLine(["version"]).command, { command: "version", output: "text" });
  for (
    const args of [["version", "-o", "json"], ["version", "-ojson"], ["--output=json", "version"]]
  ) {
    assert.deepEqual(parseCommandLine(args).command, { command: "version", output: "json" });
  }
  assert.equal(parseCommandLine(["version", "-n", "ops"]).flags.namespace, "ops");
  assert.throws(
    () => parseCommandLine(["version", "-o", "yaml"]),
    /--output: expected text or json/,
  );
  assert.throws(() => parseCommandLine(["version", "x"]), /version takes no arguments/);
  assert.throws(() => parseCommandLine(["version", "--watch"]), /version does not take --watch/);
});

Deno.test("kubectl bootc version: the plugin's build even when the cluster is out of reach", async () => {
  const { VERSION } = await import("../lib/version.ts");
  const dir = await Deno.makeTempDir();
  try {
    // A kubeconfig whose server refuses connections: the plugin's version still prints.
    await Deno.writeTextFile(
      `${dir}/config`,
      [
        "apiVersion: v1",
        "kind: Config",
        "current-context: c",
        "contexts: [{name: c, context: {cluster: k, user: u}}]",
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]",
        "users: [{name: u, user: {token: t}}]",
        "",
      ].join("\n"),
    );
    const run = (args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-net",
          "--allow-env",
          "--allow-read",
          "--allow-run",
          new URL("./main.ts", import.meta.url).pathname,
          "--kubeconfig",
          `${dir}/config`,
          ...args,
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
    const [json, text] = await Promise.all([run(["version", "-o", "json"]), run(["version"])]);
    assert.equal(json.code, 3, "the API failed");
    const report = JSON.parse(new TextDecoder().decode(json.stdout));
    assert.deepEqual(report.plugin, { version: VERSION, commit: "dev" });
    assert.equal(report.controller.version, null);
    assert.equal(report.controller.namespace, "bootc-operator");
    assert.match(report.controller.error, /^cannot read Deployment bootc-operator\//);
    assert.equal(text.code, 3);
    const lines = new TextDecoder().decode(text.stdout).split("\n");
    assert.equal(lines[0], `plugin      ${VERSION} (commit dev)`);
    assert.match(lines[1], /^controller {2}unknown: cannot read Deployment/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
