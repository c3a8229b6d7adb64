import assert from "node:assert/strict";
import { imageSummary, referenceTag, shortDigest, shortReference, summaryTag } from "./display.ts";

const D = "sha256:3f2a9c1d4e5b" + "0".repeat(52);

Deno.test("shortDigest: 12 hex digits, '-' for none", () => {
  assert.equal(shortDigest(D), "3f2a9c1d4e5b");
  assert.equal(shortDigest(undefined), "-");
});

Deno.test("referenceTag: a tag after the last slash only (a registry port is no tag)", () => {
  assert.equal(referenceTag("quay.io/org/os:v2"), "v2");
  assert.equal(referenceTag(`quay.io/org/os:v2@${D}`), "v2");
  assert.equal(referenceTag(`localhost:5000/org/os@${D}`), undefined);
  assert.equal(referenceTag("localhost:5000/org/os"), undefined);
});

Deno.test("imageSummary: tag, version when it says more, short digest", () => {
  assert.equal(imageSummary({ ref: `r.io/os:v2@${D}`, version: "2.0" }), "v2 (2.0) 3f2a9c1d4e5b");
  assert.equal(imageSummary({ ref: `r.io/os:v2@${D}`, version: "2" }), "v2 3f2a9c1d4e5b");
  assert.equal(imageSummary({ ref: `r.io/os@${D}` }), "3f2a9c1d4e5b");
  assert.equal(imageSummary({ ref: "r.io/os", tag: "1.0.3", digest: D }), "1.0.3 3f2a9c1d4e5b");
  assert.equal(imageSummary({}), "-");
});

Deno.test("shortReference keeps the name and 12 digest digits", () => {
  assert.equal(shortReference(`r.io/os:v2@${D}`), "r.io/os:v2@sha256:3f2a9c1d4e5b");
});

Deno.test("summaryTag reads back the tag of a summary of the same digest only", () => {
  assert.equal(summaryTag("v2 (2.0) 3f2a9c1d4e5b", D), "v2");
  assert.equal(summaryTag("v2 3f2a9c1d4e5b", D), "v2");
  assert.equal(summaryTag("(2.0) 3f2a9c1d4e5b", D), undefined);
  assert.equal(summaryTag("3f2a9c1d4e5b", D), undefined);
  assert.equal(summaryTag("v2 (2.0) 0123456789ab", D), undefined, "another digest");
  assert.equal(summaryTag(undefined, D), undefined);
});
