/**
 * `--version` of the controller and the daemon as they are shipped: their entry points run as
 * subprocesses with the Deno permissions and V8 flags of their launchers (tools/build.ts
 * TARGETS), and the built executables report the commit the build stamped into them.
 */
import assert from "node:assert/strict";
import { ensureBuild, gitCommit, stampCommit, TARGETS } from "./build.ts";
import { COMMIT_PLACEHOLDER, VERSION } from "../lib/version.ts";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const decoder = new TextDecoder();

async function runEntry(name: "controller" | "daemon", args: string[]) {
  const target = TARGETS.find((t) => t.name === name)!;
  const v8 = target.v8Flags.length ? [`--v8-flags=${target.v8Flags.join(",")}`] : [];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", ...v8, ...target.permissions, `${root}/${target.entry}`, ...args],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

const line = (component: string, commit: string) =>
  `${component} ${VERSION} (commit ${commit}, deno ${Deno.version.deno})\n`;

Deno.test("controller --version and daemon --version / version print the version, exit 0", async () => {
  const runs = await Promise.all([
    runEntry("controller", ["--version"]),
    runEntry("controller", ["--namespace", "x", "--version"]),
    runEntry("daemon", ["--version"]),
    runEntry("daemon", ["version"]),
  ]);
  for (const [i, r] of runs.entries()) {
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, line(i < 2 ? "controller" : "daemon", "dev"));
    assert.equal(r.stderr, "", "no log line before the version");
  }
});

Deno.test("a bad --log-level or --log-format is one line on stderr and exit 2", async () => {
  const [controller, daemon] = await Promise.all([
    runEntry("controller", ["--log-format=yaml"]),
    runEntry("daemon", ["status", "--log-level", "loud"]),
  ]);
  assert.equal(controller.code, 2);
  assert.equal(
    controller.stderr.split("\n")[0],
    'controller: --log-format: expected text or json, not "yaml"',
  );
  assert.equal(daemon.code, 2);
  assert.equal(
    daemon.stderr.split("\n")[0],
    'daemon: --log-level: expected debug, info, warn or error, not "loud"',
  );
  assert.equal(controller.stdout + daemon.stdout, "");
});

Deno.test("the first log line carries version and commit, in the format asked for", async () => {
  // Unreachable: the controller logs its version, then fails to connect.
  const kubeconfig = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(kubeconfig, "{}\n");
    const r = await runEntry("controller", ["--kubeconfig", kubeconfig, "--log-format=text"]);
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr.split("\n")[0],
      new RegExp(
        `^\\S+Z INFO  bootc-operator ${VERSION} component=controller version=${
          VERSION.replaceAll(".", "\\.")
        } commit=dev$`,
      ),
    );
  } finally {
    await Deno.remove(kubeconfig);
  }
  const d = await runEntry("daemon", ["status", "--bootc-command", "false", "--host-root", "/"]);
  const first = JSON.parse(d.stderr.split("\n")[0]);
  assert.equal(first.component, "daemon");
  assert.equal(first.version, VERSION);
  assert.equal(first.commit, "dev");
});

Deno.test("stampCommit replaces the one placeholder, and refuses any other count", () => {
  const literal = JSON.stringify(COMMIT_PLACEHOLDER);
  assert.equal(stampCommit(`var C = ${literal};`, "abc1234"), 'var C = "abc1234";');
  assert.throws(() => stampCommit("var C = 1;", "abc1234"), /found 0/);
  assert.throws(() => stampCommit(`${literal}${literal}`, "abc1234"), /found 2/);
});

Deno.test("built executables report the commit they were built from", async () => {
  const commit = await gitCommit(root);
  assert.match(commit, /^[0-9a-f]{4,40}$/, "a git checkout");
  const exe = await ensureBuild();
  for (const [name, argv] of [["controller", exe.controller], ["daemon", exe.daemon]] as const) {
    const out = await new Deno.Command(argv[0], {
      args: [...argv.slice(1), "--version"],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, decoder.decode(out.stderr));
    assert.equal(decoder.decode(out.stdout), line(name, commit));
  }
});
