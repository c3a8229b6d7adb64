import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import {
  buildInfo,
  COMMIT,
  COMMIT_PLACEHOLDER,
  logVersion,
  VERSION,
  VERSION_ANNOTATION,
  versionLine,
  wantsVersion,
} from "./version.ts";
import { createLogger } from "./log.ts";

const root = new URL("../", import.meta.url);

Deno.test("run from source the commit reads dev; the version is semver", () => {
  assert.equal(COMMIT, "dev");
  assert.ok(COMMIT_PLACEHOLDER.startsWith("@@"));
  assert.match(VERSION, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  assert.deepEqual(buildInfo(), { version: VERSION, commit: "dev" });
});

Deno.test("versionLine names the component, version, commit and runtime", () => {
  assert.equal(
    versionLine("daemon", { version: "1.2.3", commit: "abc1234" }, "2.9.6"),
    "daemon 1.2.3 (commit abc1234, deno 2.9.6)",
  );
  assert.equal(
    versionLine("controller"),
    `controller ${VERSION} (commit dev, deno ${Deno.version.deno})`,
  );
});

Deno.test("wantsVersion: --version anywhere, nothing else", () => {
  assert.ok(wantsVersion(["--version"]));
  assert.ok(wantsVersion(["run", "--node-name", "n", "--version"]));
  assert.ok(!wantsVersion(["version"]));
  assert.ok(!wantsVersion(["--version-x", "-v"]));
});

Deno.test("logVersion writes version and commit as fields", () => {
  const lines: string[] = [];
  logVersion(createLogger({ level: "info", write: (l) => lines.push(l) }));
  assert.equal(lines.length, 1);
  const record = JSON.parse(lines[0]);
  assert.equal(record.level, "info");
  assert.equal(record.version, VERSION);
  assert.equal(record.commit, COMMIT);
});

Deno.test("the chart and the controller Deployment carry this version", async () => {
  const chart = parse(await Deno.readTextFile(new URL("charts/bootc-operator/Chart.yaml", root)));
  assert.equal(chart.version, VERSION, "Chart.yaml version");
  for (const file of ["manifests/controller.yaml", "manifests/install.yaml"]) {
    const docs = parseAllDocuments(await Deno.readTextFile(new URL(file, root)))
      .map((d) => d.toJS());
    const deployment = docs.find((d) =>
      d?.kind === "Deployment" && d.metadata?.name === "bootc-operator-controller"
    );
    assert.ok(deployment, `${file} has the controller Deployment`);
    assert.equal(deployment.metadata.annotations?.[VERSION_ANNOTATION], VERSION, file);
  }
  const template = await Deno.readTextFile(
    new URL("charts/bootc-operator/templates/controller.yaml", root),
  );
  assert.match(template, new RegExp(`^    ${VERSION_ANNOTATION}: "${VERSION}"$`, "m"));
});
