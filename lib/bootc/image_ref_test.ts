import assert from "node:assert/strict";
import { entryProvides, referenceDigest, referenceName } from "./image_ref.ts";
import type { BootEntry } from "./types.ts";

const X = "sha256:" + "1".repeat(64);
const Y = "sha256:" + "2".repeat(64);
const Z = "sha256:" + "3".repeat(64);

function entry(pullspec: string, imageDigest: string): BootEntry {
  return {
    image: { image: { image: pullspec, transport: "registry" }, imageDigest },
    cachedUpdate: null,
    incompatible: false,
    pinned: false,
    softRebootCapable: false,
    ostree: null,
    composefs: null,
  };
}

Deno.test("referenceDigest and referenceName split a pinned reference", () => {
  assert.equal(referenceDigest(`quay.io/a/os@${X}`), X);
  assert.equal(referenceDigest("quay.io/a/os:latest"), undefined);
  assert.equal(referenceDigest("localhost:5000/os:v1@" + X), X);
  assert.equal(referenceName(`quay.io/a/os@${X}`), "quay.io/a/os");
});

Deno.test("entryProvides: pullspec digest (multi-arch index) or imageDigest (per-arch)", () => {
  // Staged from an index digest: pullspec keeps X, imageDigest is the amd64 manifest Y.
  assert.equal(entryProvides(entry(`quay.io/a/os@${X}`, Y), `quay.io/a/os@${X}`), true);
  // Pinned to the per-arch digest directly, staged from a tag.
  assert.equal(entryProvides(entry("quay.io/a/os:v2", Y), `quay.io/a/os@${Y}`), true);
  // Neither matches.
  assert.equal(entryProvides(entry(`quay.io/a/os@${X}`, Y), `quay.io/a/os@${Z}`), false);
  assert.equal(entryProvides(entry("quay.io/a/os:v2", Y), `quay.io/a/os@${Z}`), false);
});

Deno.test("entryProvides is false for null entries and entries without an image", () => {
  assert.equal(entryProvides(null, `q/os@${X}`), false);
  assert.equal(entryProvides(undefined, `q/os@${X}`), false);
  assert.equal(entryProvides({ ...entry("q/os", X), image: null }, `q/os@${X}`), false);
});

Deno.test("entryProvides compares tag-only references as strings", () => {
  assert.equal(entryProvides(entry("q/os:v1", X), "q/os:v1"), true);
  assert.equal(entryProvides(entry("q/os:v1", X), "q/os:v2"), false);
});
