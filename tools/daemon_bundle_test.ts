/**
 * What the daemon's bundle loads at start-up: the daemon sits idle on every
 * node, and each module or npm package it evaluates at start stays resident
 * (see tools/measure_daemon_idle.ts for the figures).
 */
import assert from "node:assert/strict";
import { YAML_PARSER_BUNDLE } from "../lib/kube/config.ts";
import { build } from "./build.ts";
import { bundleModules } from "./measure_daemon_idle.ts";

Deno.test("the daemon bundle loads no schema compiler, no controller code and no Node compatibility layer at start-up", async () => {
  const outDir = await Deno.makeTempDir({ prefix: "bootc-daemon-bundle-" });
  try {
    const result = await build({ outDir, only: ["daemon"], mode: "bundle", log: () => {} });
    const bundle = await Deno.readTextFile(result.targets[0].bundle);
    // A static node: import (e.g. the `node:module` a CommonJS package needs) loads Deno's
    // Node compatibility layer before the first line of the daemon runs.
    assert.deepEqual(
      [...bundle.matchAll(/^import .* from "(node:[^"]+)";?$/gm)].map((m) => m[1]),
      [],
    );
    const { own, npm } = bundleModules(bundle);
    // No npm package: the YAML parser (only for a kubeconfig file) is bundled beside it.
    assert.deepEqual([...npm.keys()], []);
    assert.ok(!bundle.includes("yaml/2.9.1/"), "no YAML parser in the daemon's bundle");
    assert.ok(own.includes("daemon/agent.ts"), own.join());
    const unwanted = own.filter((m) =>
      m.startsWith("controller/") || m.startsWith("plugin/") || m.startsWith("tests/") ||
      ["lib/api/schema.ts", "lib/api/crd.ts", "lib/api/validation.ts", "lib/api/mod.ts"].includes(m)
    );
    assert.deepEqual(unwanted, []);
    // Deno's module loader reads every module a literal import names at start-up, dynamic
    // ones too: the only literal one of a YAML parser is `yaml`'s, which a bundle cannot
    // resolve (lib/kube/config.ts then loads the file beside it, by a computed specifier).
    assert.deepEqual(
      [...bundle.matchAll(/import\(\s*["'`]([^"'`]+)["'`]\s*\)/g)].map((m) => m[1]),
      ["yaml"],
    );
    // The parser beside it: yaml's ES module (browser) build, not the CommonJS one.
    assert.equal(result.targets[0].beside.length, 1);
    const parser = await Deno.readTextFile(result.targets[0].beside[0]);
    assert.ok(result.targets[0].beside[0].endsWith(`/${YAML_PARSER_BUNDLE}`));
    assert.ok(parser.includes("yaml/2.9.1/browser/dist/"), "yaml's ES module build");
    assert.ok(!parser.includes("yaml/2.9.1/dist/"), "not yaml's CommonJS build");
    // And the daemon as built still reads a YAML kubeconfig (out of cluster): it gets as far
    // as the request, which Deno refuses at once (port 1).
    const kubeconfig = `${outDir}/kubeconfig.yaml`;
    await Deno.writeTextFile(
      kubeconfig,
      "current-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n" +
        "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n" +
        "users:\n- name: u\n  user:\n    token: t\n",
    );
    const ran = await new Deno.Command(result.targets[0].executable, {
      args: ["status", "--kubeconfig", kubeconfig, "--node-name", "n"],
      env: { DENO: Deno.execPath() },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(ran.stderr);
    assert.equal(ran.code, 1, stderr);
    assert.match(stderr, /"status failed".*port 1/, stderr);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});
