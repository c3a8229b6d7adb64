import assert from "node:assert/strict";
import { DEFAULT_SETTINGS, type Deployment, type HostState, initialState } from "./model.ts";
import { buildHost, canonicalJson, humanStatus, type Json } from "./status.ts";

function dep(name: string, extra: Partial<Deployment> = {}): Deployment {
  return {
    pullspec: `quay.io/example/someimage:${name}`,
    transport: "registry",
    image: {
      imageDigest: `sha256:${name.padEnd(64, "1")}`,
      version: "nightly",
      timestamp: "2023-10-14T19:22:15.420Z",
      architecture: "arm64",
    },
    cachedUpdate: null,
    incompatible: false,
    pinned: false,
    softRebootCapable: false,
    downloadOnly: false,
    softRebootPrepared: false,
    checksum: name.padEnd(64, "c"),
    deploySerial: 0,
    stateroot: "default",
    ...extra,
  };
}

const state = (parts: Partial<HostState>): HostState => ({
  ...initialState(dep("booted"), "b"),
  ...parts,
});

type Obj = { [key: string]: Json };
const get = (o: Json, ...path: string[]): Json =>
  path.reduce<Json>((v, k) => (v as Obj | null)?.[k] ?? null, o);

Deno.test("BootcHost has the bootc v1 envelope and every BootEntry field", () => {
  const host = buildHost({ state: state({ staged: dep("staged") }), settings: DEFAULT_SETTINGS });
  assert.equal(host.apiVersion, "org.containers.bootc/v1");
  assert.equal(host.kind, "BootcHost");
  assert.deepEqual(host.metadata, { name: "host" });
  const staged = get(host, "status", "staged") as Obj;
  assert.deepEqual(Object.keys(staged).sort(), [
    "cachedUpdate",
    "composefs",
    "downloadOnly",
    "image",
    "incompatible",
    "ostree",
    "pinned",
    "softRebootCapable",
    "store",
  ]);
  assert.deepEqual(staged.image, {
    image: { image: "quay.io/example/someimage:staged", transport: "registry" },
    version: "nightly",
    timestamp: "2023-10-14T19:22:15.420Z",
    imageDigest: `sha256:${"staged".padEnd(64, "1")}`,
    architecture: "arm64",
  });
  assert.equal(staged.store, "ostreeContainer");
  assert.deepEqual(staged.ostree, {
    checksum: "staged".padEnd(64, "c"),
    deploySerial: 0,
    stateroot: "default",
  });
  assert.equal(staged.composefs, null);
  assert.equal(get(host, "status", "type"), "bootcHost");
  assert.equal(get(host, "status", "rollbackQueued"), false);
  assert.equal("otherDeployments" in (host.status as Obj), false, "omitted when empty");
});

Deno.test("spec.image comes from the staged deployment when there is one, else the booted one", () => {
  const withStaged = buildHost({
    state: state({ staged: dep("next") }),
    settings: DEFAULT_SETTINGS,
  });
  assert.deepEqual(get(withStaged, "spec", "image"), {
    image: "quay.io/example/someimage:next",
    transport: "registry",
  });
  const bootedOnly = buildHost({ state: state({}), settings: DEFAULT_SETTINGS });
  assert.equal(get(bootedOnly, "spec", "image", "image"), "quay.io/example/someimage:booted");
});

Deno.test("bootOrder is rollback while a rollback is queued", () => {
  const host = buildHost({
    state: state({ rollback: dep("old"), rollbackQueued: true }),
    settings: DEFAULT_SETTINGS,
  });
  assert.equal(get(host, "spec", "bootOrder"), "rollback");
  assert.equal(get(host, "status", "rollbackQueued"), true);
});

Deno.test("downloadOnly is true only for a locked staged entry, and absent before bootc 1.12", () => {
  const s = state({ staged: dep("next", { downloadOnly: true }) });
  const host = buildHost({ state: s, settings: DEFAULT_SETTINGS });
  assert.equal(get(host, "status", "staged", "downloadOnly"), true);
  assert.equal(get(host, "status", "booted", "downloadOnly"), false);
  const old = buildHost({ state: s, settings: { ...DEFAULT_SETTINGS, bootcVersion: "1.10" } });
  assert.equal("downloadOnly" in (get(old, "status", "staged") as Obj), false);
});

Deno.test("--booted nulls the staged and rollback entries", () => {
  const host = buildHost({
    state: state({ staged: dep("next"), rollback: dep("old") }),
    settings: DEFAULT_SETTINGS,
    bootedOnly: true,
  });
  assert.equal(get(host, "status", "staged"), null);
  assert.equal(get(host, "status", "rollback"), null);
  assert.notEqual(get(host, "status", "booted"), null);
});

Deno.test("in a container or on a non-bootc host, status is the empty host", () => {
  for (
    const settings of [
      { ...DEFAULT_SETTINGS, inContainer: true },
      { ...DEFAULT_SETTINGS, notBootc: true },
    ]
  ) {
    const host = buildHost({ state: state({ staged: dep("x") }), settings });
    assert.equal(get(host, "status", "booted"), null);
    assert.equal(get(host, "status", "staged"), null);
    assert.equal(get(host, "status", "type"), null);
    assert.equal(get(host, "spec", "image"), null);
  }
});

Deno.test("an incompatible entry has a null image and no spec", () => {
  const host = buildHost({
    state: state({ booted: dep("layered", { incompatible: true }) }),
    settings: DEFAULT_SETTINGS,
  });
  assert.equal(get(host, "status", "booted", "image"), null);
  assert.equal(get(host, "status", "booted", "incompatible"), true);
  assert.equal(get(host, "spec", "image"), null);
  assert.equal(get(host, "status", "type"), null);
});

Deno.test("composefs entries have no ostree part and a composefs part", () => {
  const host = buildHost({ state: state({}), settings: { ...DEFAULT_SETTINGS, composefs: true } });
  assert.equal(get(host, "status", "booted", "ostree"), null);
  assert.equal(typeof get(host, "status", "booted", "composefs", "verity"), "string");
});

Deno.test("canonical JSON sorts keys at every level and has no whitespace", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [true, null, "x y"], c: "é" } }),
    '{"a":{"c":"é","d":[true,null,"x y"]},"b":1}',
  );
});

Deno.test("human status matches bootc's layout", () => {
  const host = buildHost({ state: state({ staged: dep("next") }), settings: DEFAULT_SETTINGS });
  assert.equal(
    humanStatus(host),
    [
      "  Staged image: quay.io/example/someimage:next",
      `        Digest: sha256:${"next".padEnd(64, "1")} (arm64)`,
      "       Version: nightly (2023-10-14T19:22:15Z)",
      "",
      "● Booted image: quay.io/example/someimage:booted",
      `        Digest: sha256:${"booted".padEnd(64, "1")} (arm64)`,
      "       Version: nightly (2023-10-14T19:22:15Z)",
      "",
    ].join("\n"),
  );
  const verbose = humanStatus(host, true);
  assert.match(verbose, /Download-only: no/);
  assert.match(verbose, /Soft-reboot: no/);
  assert.equal(
    humanStatus(buildHost({ state: state({}), settings: { ...DEFAULT_SETTINGS, notBootc: true } })),
    "System is not deployed via bootc.\n",
  );
});
