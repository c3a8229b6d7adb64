import assert from "node:assert/strict";
import { renderVersion, versionReport } from "./version.ts";

const PLUGIN = { version: "1.2.3", commit: "abc1234" };
const IMAGE = `quay.io/bootc-operator/controller@sha256:${"c".repeat(64)}`;

Deno.test("version: the controller's from its Deployment's annotation, with its image", () => {
  const report = versionReport(PLUGIN, "ops", {
    deployment: {
      metadata: { annotations: { "bootc.dev/version": "1.2.0" } },
      spec: {
        template: {
          spec: {
            containers: [{ name: "sidecar", image: "x" }, { name: "controller", image: IMAGE }],
          },
        },
      },
    },
  });
  assert.deepEqual(report, {
    plugin: PLUGIN,
    controller: {
      namespace: "ops",
      deployment: "bootc-operator-controller",
      version: "1.2.0",
      image: IMAGE,
      error: null,
    },
  });
  assert.equal(
    renderVersion(report),
    "plugin      1.2.3 (commit abc1234)\n" +
      `controller  1.2.0 (ops/bootc-operator-controller, image ${IMAGE})\n`,
  );
});

Deno.test("version: unknown says why, in the same shape", () => {
  const keys = (r: ReturnType<typeof versionReport>) => Object.keys(r.controller).sort();
  const missing = versionReport(PLUGIN, "bootc-operator", { missing: true });
  const failed = versionReport(PLUGIN, "bootc-operator", { error: "connection refused" });
  const bare = versionReport(PLUGIN, "bootc-operator", { deployment: {} });
  for (const r of [missing, failed, bare]) {
    assert.equal(r.controller.version, null);
    assert.deepEqual(keys(r), ["deployment", "error", "image", "namespace", "version"]);
    assert.deepEqual(r.plugin, PLUGIN);
  }
  assert.match(missing.controller.error!, /bootc-operator\/bootc-operator-controller not found/);
  assert.match(failed.controller.error!, /^cannot read .*: connection refused$/);
  assert.match(bare.controller.error!, /has no bootc\.dev\/version annotation/);
  assert.equal(
    renderVersion(failed).split("\n")[1],
    "controller  unknown: cannot read Deployment bootc-operator/bootc-operator-controller: " +
      "connection refused",
  );
});
