import assert from "node:assert/strict";
import {
  build,
  CONTROLLER_PERMISSIONS,
  ensureBuild,
  launcherScript,
  modeNote,
  readStamp,
  sourceFingerprint,
  TARGETS,
} from "./build.ts";
import { COMMIT_PLACEHOLDER } from "../lib/version.ts";

/**
 * A throwaway repository: three entry points sharing a lib module and an npm import, which
 * falls back to the file beside the bundle as lib/kube/config.ts does (the daemon's bundle
 * leaves `yaml` out and carries lib/kube/yaml_parser.ts beside it).
 */
async function fakeRepo(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "bootc-build-test-" });
  await Deno.mkdir(`${root}/controller`);
  await Deno.mkdir(`${root}/daemon`);
  await Deno.mkdir(`${root}/plugin`);
  await Deno.mkdir(`${root}/lib/kube`, { recursive: true });
  await Deno.writeTextFile(
    `${root}/deno.json`,
    JSON.stringify({ nodeModulesDir: "none", imports: { yaml: "npm:yaml@2.9.1" } }),
  );
  await Deno.writeTextFile(
    `${root}/lib/greet.ts`,
    `const yaml = await import("yaml").catch(() =>\n` +
      `  import(new URL("./yaml_parser.js", import.meta.url).href)\n` +
      `);\n` +
      `export const greet = (who: string, args: string[]) =>\n` +
      `  yaml.stringify({ who, args }).trim();\n`,
  );
  await Deno.writeTextFile(
    `${root}/lib/kube/yaml_parser.ts`,
    `export { stringify } from "yaml";\n`,
  );
  for (const name of ["controller", "daemon", "plugin"]) {
    // The commit placeholder of lib/version.ts, which the build stamps (here: not a checkout).
    await Deno.writeTextFile(
      `${root}/${name}/main.ts`,
      `import { greet } from "../lib/greet.ts";\n` +
        `const commit = ${JSON.stringify(COMMIT_PLACEHOLDER)};\n` +
        `console.log(Deno.args[0] === "--commit" ? commit : greet("${name}", Deno.args));\n`,
    );
  }
  return root;
}

async function runArgv(argv: string[], args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(argv[0], {
    args: [...argv.slice(1), ...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout).trim(),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

const quiet = () => {};

Deno.test("launcher execs deno run --cached-only on its bundle with the target's permissions", () => {
  const controller = TARGETS.find((t) => t.name === "controller")!;
  const script = launcherScript(controller);
  assert.ok(script.startsWith("#!/bin/sh\n"));
  assert.ok(
    script.includes(
      `exec "\${DENO:-deno}" run --cached-only --no-config --no-lock --no-prompt ` +
        `${CONTROLLER_PERMISSIONS.join(" ")} "$here/controller.js" "$@"`,
    ),
    script,
  );
  // The controller needs neither subprocesses nor writes, and loads no native code.
  assert.doesNotMatch(script, /--allow-all|--allow-run|--allow-write|--allow-ffi|-A\b/);
  // The kubectl plugin writes nothing; it may run the kubeconfig's exec credential plugins.
  const plugin = launcherScript(TARGETS.find((t) => t.name === "plugin")!);
  assert.match(plugin, /--allow-net --allow-env --allow-read --allow-run "\$here\/plugin\.js"/);
  assert.doesNotMatch(plugin, /--allow-all|--allow-write/);
});

Deno.test("a launcher without $DENO or deno on PATH runs this Deno through npx", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const plugin = TARGETS.find((t) => t.name === "plugin")!;
    await Deno.writeTextFile(`${dir}/kubectl-bootc`, launcherScript(plugin), { mode: 0o755 });
    // A stand-in npx on a PATH without deno prints what it was asked to run.
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeTextFile(`${dir}/bin/npx`, '#!/bin/sh\necho "npx $*"\n', { mode: 0o755 });
    const out = await new Deno.Command(`${dir}/kubectl-bootc`, {
      args: ["status", "--watch"],
      env: { PATH: `${dir}/bin:/usr/bin:/bin` },
      clearEnv: true,
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.equal(
      new TextDecoder().decode(out.stdout).trim(),
      `npx -y deno@${Deno.version.deno} run --cached-only --no-config --no-lock --no-prompt ` +
        `--allow-net --allow-env --allow-read --allow-run ${dir}/plugin.js status --watch`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bundle mode: self-contained bundles run behind the launchers", async () => {
  const root = await fakeRepo();
  try {
    const result = await build({ root, mode: "bundle", log: quiet });
    assert.equal(result.mode, "bundle");
    assert.deepEqual(result.targets.map((t) => t.name), ["controller", "daemon", "plugin"]);
    for (const target of result.targets) {
      const inlined = target.name === "daemon"
        ? (await Deno.stat(target.beside[0])).size
        : target.bundleBytes;
      assert.ok(inlined > 10_000, "the npm dependency is inlined in the bundle (or beside it)");
      // An empty DENO_DIR proves the bundle needs nothing from the module cache.
      const denoDir = await Deno.makeTempDir();
      try {
        const ran = await runArgv([target.executable], ["--flag", "x"], {
          DENO: Deno.execPath(),
          DENO_DIR: denoDir,
        });
        assert.equal(ran.code, 0, ran.stderr);
        assert.equal(ran.stdout, `who: ${target.name}\nargs:\n  - --flag\n  - x`);
        const commit = await runArgv([target.executable], ["--commit"], { DENO: Deno.execPath() });
        assert.equal(commit.stdout, "unknown", "stamped: a temp folder is no git checkout");
      } finally {
        await Deno.remove(denoDir, { recursive: true });
      }
    }
    const stamp = await readStamp(`${root}/dist`);
    assert.equal(stamp?.fingerprint, await sourceFingerprint(root));
    // No temporary build folders are left behind.
    const left = [];
    for await (const entry of Deno.readDir(`${root}/dist`)) left.push(entry.name);
    assert.deepEqual(left.sort(), [
      "bootc-operator-controller",
      "bootc-operator-daemon",
      "build.json",
      "controller.js",
      "daemon.js",
      "kubectl-bootc",
      "plugin.js",
      "yaml_parser.js",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ensureBuild reuses fresh outputs and rebuilds after a source changes", async () => {
  const root = await fakeRepo();
  try {
    const first = await ensureBuild({ root, mode: "bundle", log: quiet });
    const stampTime = (await Deno.stat(`${root}/dist/build.json`)).mtime!.getTime();
    const [a, b] = await Promise.all([
      ensureBuild({ root, mode: "bundle", log: quiet }),
      ensureBuild({ root, mode: "bundle", log: quiet }),
    ]);
    assert.deepEqual(a, first);
    assert.deepEqual(b, first);
    assert.equal((await Deno.stat(`${root}/dist/build.json`)).mtime!.getTime(), stampTime);

    await Deno.writeTextFile(
      `${root}/lib/greet.ts`,
      `export const greet = (who: string, _args: string[]) => "changed " + who;\n`,
    );
    const second = await ensureBuild({ root, mode: "bundle", log: quiet });
    const ran = await runArgv(second.daemon, ["status"], { DENO: Deno.execPath() });
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stdout, "changed daemon");
    const plugin = await runArgv(second.plugin, ["status"], { DENO: Deno.execPath() });
    assert.equal(plugin.stdout, "changed plugin");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("auto mode falls back to bundles when denort is not a real denort", async () => {
  const root = await fakeRepo();
  // A plain deno as the base binary compiles "successfully" but runs Deno's own CLI.
  try {
    const result = await build({
      root,
      mode: "auto",
      only: ["daemon"],
      log: quiet,
      denortBin: Deno.execPath(),
    });
    assert.equal(result.mode, "bundle");
    assert.match(result.modeReason, /did not run the program/);
    assert.equal(result.targets.length, 1);
    const head = await Deno.readTextFile(result.targets[0].executable);
    assert.ok(head.startsWith("#!/bin/sh"), "a launcher, not a binary");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an unreachable dl.deno.land is one calm line, not the raw network error", () => {
  // What the probe reports when denort cannot be downloaded (the raw text stays in build.json).
  const reason = "deno compile failed (download): error sending request for url " +
    "(https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip): client error " +
    "(Connect): dns error: failed to lookup address information: Name or service not known";
  const note = modeNote("bundle", reason);
  assert.equal(
    note,
    "[build] deno compile needs to download the runtime; not reachable here — building " +
      "launchers that run with deno instead",
  );
  assert.doesNotMatch(note, /error|dns|https?:/i);
  // Other reasons are still said, as they are worth reading.
  assert.match(
    modeNote("bundle", "compiled probe did not run the program (DENORT_BIN=/x)"),
    /not usable here \(compiled probe did not run the program \(DENORT_BIN=\/x\)\) — building launchers/,
  );
  assert.equal(modeNote("bundle", "requested"), "[build] mode: bundle (requested)");
  assert.equal(
    modeNote("compile", "denort via download"),
    "[build] mode: compile (denort via download)",
  );
});
