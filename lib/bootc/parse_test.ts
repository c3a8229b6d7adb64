import assert from "node:assert/strict";
import { BootcParseError, parseHost } from "./parse.ts";

const fixture = (name: string) =>
  Deno.readTextFileSync(new URL(`./testdata/${name}.json`, import.meta.url));

const A = "sha256:" + "a".repeat(64);
const B = "sha256:" + "b".repeat(64);
const C = "sha256:" + "c".repeat(64);

Deno.test("parseHost reads booted and a locked staged entry", () => {
  const host = parseHost(fixture("staged_locked"));
  assert.equal(host.kind, "BootcHost");
  assert.equal(host.spec.image?.image, `quay.io/example/os@${B}`);
  assert.equal(host.spec.bootOrder, "default");
  const { booted, staged, rollback } = host.status;
  assert.equal(booted?.image?.imageDigest, A);
  assert.equal(booted?.image?.version, "9.4");
  assert.equal(booted?.image?.architecture, "amd64");
  assert.equal(booted?.downloadOnly, false);
  assert.equal(staged?.downloadOnly, true);
  assert.equal(staged?.softRebootCapable, true);
  // The pullspec keeps the index digest; imageDigest is the per-arch manifest.
  assert.equal(staged?.image?.image.image, `quay.io/example/os@${B}`);
  assert.equal(staged?.image?.imageDigest, C);
  assert.equal(staged?.ostree?.checksum, "2222");
  assert.equal(rollback, null);
  assert.equal(host.status.type, "bootcHost");
  assert.deepEqual(host.status.otherDeployments, []);
});

Deno.test("parseHost returns the empty host of a non-bootc system as booted: null", () => {
  const host = parseHost(fixture("not_bootc"));
  assert.equal(host.status.booted, null);
  assert.equal(host.status.staged, null);
  assert.equal(host.status.type, null);
  assert.equal(host.spec.image, null);
});

Deno.test("parseHost tolerates an older host (no architecture, downloadOnly, stateroot)", () => {
  const host = parseHost(fixture("old_host"));
  const booted = host.status.booted!;
  assert.equal(booted.image?.architecture, undefined);
  assert.equal(booted.image?.version, undefined);
  assert.equal(booted.downloadOnly, undefined);
  assert.equal(booted.softRebootCapable, false);
  assert.equal(booted.ostree?.stateroot, undefined);
  const rollback = host.status.rollback!;
  assert.equal(rollback.incompatible, true);
  assert.equal(rollback.image, null);
});

Deno.test("parseHost accepts a document without status (empty host)", () => {
  const host = parseHost(
    JSON.stringify({ apiVersion: "org.containers.bootc/v1", kind: "BootcHost" }),
  );
  assert.equal(host.status.booted, null);
});

Deno.test("parseHost reads v1alpha1 from bootc 0.1.x (2023): no architecture, type, bootOrder", () => {
  const host = parseHost(fixture("v1alpha1_2023"));
  assert.equal(host.apiVersion, "org.containers.bootc/v1alpha1");
  assert.equal(host.spec.image?.image, "quay.io/example/os:latest");
  assert.equal(host.spec.image?.signature, "insecure");
  assert.equal(host.spec.bootOrder, undefined);
  const { booted, staged, rollback } = host.status;
  assert.equal(booted?.image?.imageDigest, "sha256:" + "1".repeat(64));
  assert.equal(booted?.image?.version, "nightly");
  assert.equal(booted?.image?.architecture, undefined);
  assert.equal(booted?.cachedUpdate, null);
  assert.equal(booted?.downloadOnly, undefined);
  assert.equal(booted?.softRebootCapable, false);
  assert.equal(staged?.image?.imageDigest, "sha256:" + "2".repeat(64));
  assert.equal(staged?.image?.timestamp, "2023-10-14T19:22:15.42Z");
  assert.equal(staged?.ostree?.deploySerial, 0);
  assert.equal(rollback, null);
  // `isContainer` is not kept; `type` did not exist yet.
  assert.equal(host.status.type, null);
  assert.equal(host.status.rollbackQueued, false);
});

Deno.test("parseHost reads v1alpha1 from bootc 0.1.1x (2024): store, rollbackQueued, type", () => {
  const host = parseHost(fixture("v1alpha1_2024"));
  assert.equal(host.spec.bootOrder, "default");
  assert.deepEqual(host.spec.image?.signature, { ostreeRemote: "example" });
  const { booted, rollback, staged } = host.status;
  assert.equal(booted?.store, "ostreeContainer");
  assert.equal(booted?.image?.timestamp, undefined);
  assert.equal(booted?.image?.version, "stream9.20240807.0");
  assert.equal(staged, null);
  assert.equal(rollback?.incompatible, true);
  assert.equal(rollback?.image, null);
  assert.equal(rollback?.store, undefined);
  assert.equal(host.status.type, "bootcHost");
  const empty = parseHost(fixture("v1alpha1_not_bootc"));
  assert.equal(empty.status.booted, null);
  assert.equal(empty.spec.image, null);
});

Deno.test("parseHost names the missing field of a v1alpha1 document", () => {
  const doc = JSON.parse(fixture("v1alpha1_2023"));
  delete doc.status.booted.image.imageDigest;
  assert.throws(() => parseHost(JSON.stringify(doc)), (e: unknown) => {
    assert.ok(e instanceof BootcParseError);
    assert.equal(
      e.message,
      "bootc status: status.booted.image.imageDigest: expected a string, got nothing " +
        "(the field is missing)",
    );
    return true;
  });
  const doc2 = JSON.parse(fixture("v1alpha1_2024"));
  doc2.status.booted.ostree.deploySerial = "0";
  assert.throws(
    () => parseHost(JSON.stringify(doc2)),
    /bootc status: status\.booted\.ostree\.deploySerial: expected an integer, got string$/,
  );
});

Deno.test("parseHost names the offending field", () => {
  const doc = JSON.parse(fixture("staged_locked"));
  doc.status.staged.image.imageDigest = 42;
  assert.throws(() => parseHost(JSON.stringify(doc)), (e: unknown) => {
    assert.ok(e instanceof BootcParseError);
    assert.equal(e.path, "status.staged.image.imageDigest");
    assert.match(e.message, /expected a string, got number/);
    return true;
  });
  const doc2 = JSON.parse(fixture("staged_locked"));
  doc2.status.booted.downloadOnly = "yes";
  assert.throws(() => parseHost(JSON.stringify(doc2)), /status\.booted\.downloadOnly/);
  const doc3 = JSON.parse(fixture("staged_locked"));
  doc3.status.otherDeployments = {};
  assert.throws(() => parseHost(JSON.stringify(doc3)), /otherDeployments: expected an array/);
});

Deno.test("parseHost rejects non-JSON, foreign documents and wrong kinds", () => {
  assert.throws(() => parseHost("No deployments found\n"), /not JSON.*No deployments found/);
  assert.throws(() => parseHost("[]"), /expected an object, got an array/);
  assert.throws(
    () => parseHost(JSON.stringify({ apiVersion: "v1", kind: "Pod" })),
    (e: unknown) => {
      assert.ok(e instanceof BootcParseError);
      assert.equal(e.path, "apiVersion");
      assert.equal(
        e.message,
        'bootc status: apiVersion: unsupported "v1" (this daemon reads ' +
          "org.containers.bootc/v1 and org.containers.bootc/v1alpha1)",
      );
      return true;
    },
  );
  assert.throws(
    () => parseHost(JSON.stringify({ apiVersion: "org.containers.bootc/v2", kind: "BootcHost" })),
    /apiVersion: unsupported "org.containers.bootc\/v2"/,
  );
  assert.throws(
    () => parseHost(JSON.stringify({ apiVersion: "org.containers.bootc/v1", kind: "Other" })),
    /bootc status: kind: unexpected "Other"/,
  );
  assert.throws(
    () => parseHost(JSON.stringify({ apiVersion: 1 })),
    /apiVersion: expected a string/,
  );
});

Deno.test("parseHost keeps otherDeployments and ignores unknown fields", () => {
  const doc = JSON.parse(fixture("staged_locked"));
  doc.status.otherDeployments = [doc.status.booted];
  doc.status.futureField = { x: 1 };
  doc.status.booted.somethingNew = true;
  const host = parseHost(JSON.stringify(doc));
  assert.equal(host.status.otherDeployments.length, 1);
  assert.equal(host.status.otherDeployments[0].image?.imageDigest, A);
});
