/**
 * What the daemon's bundle loads at start-up: the daemon sits idle on every
 * node, and each module or npm package it evaluates at start stays resident
 * (see tools/measure_daemon_idle.ts for the figures).
 */
import assert from "node:assert/strict";
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
    // Only yaml, for a kubeconfig file; its ES module (browser) build, evaluated lazily.
    assert.deepEqual([...npm.keys()], ["yaml"]);
    assert.ok(bundle.includes("yaml/2.9.1/browser/dist/"), "yaml's ES module build");
    assert.ok(!bundle.includes("yaml/2.9.1/dist/"), "not yaml's CommonJS build");
    assert.ok(own.includes("daemon/agent.ts") && own.includes("lib/memory_trim.ts"), own.join());
    const unwanted = own.filter((m) =>
      m.startsWith("controller/") || m.startsWith("plugin/") || m.startsWith("tests/") ||
      ["lib/api/schema.ts", "lib/api/crd.ts", "lib/api/validation.ts", "lib/api/mod.ts"].includes(m)
    );
    assert.deepEqual(unwanted, []);
    // The YAML parser is evaluated only when a kubeconfig file is parsed: its modules are
    // lazily initialized (esbuild's `__esm` wrappers), called from the dynamic import alone.
    assert.match(bundle, /var init_browser = __esm\(/);
    const calls = [...bundle.matchAll(/^.*\binit_browser\(\).*$/gm)].map((m) => m[0]);
    assert.equal(calls.length, 1, calls.join("\n"));
    assert.match(calls[0], /await Promise\.resolve\(\)\.then\(\(\) => \(init_browser\(\), /);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});
