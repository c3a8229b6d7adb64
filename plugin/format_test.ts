import assert from "node:assert/strict";
import {
  ago,
  clock,
  errorText,
  formatDuration,
  ordinal,
  shortDigest,
  shortenDigests,
  shortImage,
  truncate,
  wrap,
} from "./format.ts";
import * as display from "../lib/api/display.ts";

const DIGEST = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

Deno.test("durations keep two units and round down", () => {
  assert.equal(formatDuration(-5), "0s");
  assert.equal(formatDuration(999), "0s");
  assert.equal(formatDuration(45_900), "45s");
  assert.equal(formatDuration(125_000), "2m05s");
  assert.equal(formatDuration(3_720_000), "1h02m");
  assert.equal(formatDuration((3 * 24 + 4) * 3_600_000 + 59_000), "3d04h");
  const now = new Date("2026-01-01T00:01:00Z");
  assert.equal(ago(new Date("2026-01-01T00:00:15Z"), now), "45s ago");
  assert.equal(ago(undefined, now), "");
  assert.equal(clock(now), "00:01:00");
});

Deno.test("digests and image references are shortened to 12 hex digits", () => {
  assert.equal(shortDigest(DIGEST), "0123456789ab");
  assert.equal(shortDigest(undefined), "-");
  assert.equal(shortImage(`127.0.0.1:5000/os@${DIGEST}`), "127.0.0.1:5000/os@sha256:0123456789ab");
  assert.equal(shortImage("quay.io/os:v2"), "quay.io/os:v2");
  // One rule: the plugin's short forms are lib/api/display.ts's.
  assert.equal(shortDigest, display.shortDigest);
  assert.equal(shortImage, display.shortReference);
  assert.equal(
    shortenDigests(`rolling out r.io/os@${DIGEST}; ${DIGEST} failed`),
    "rolling out r.io/os@sha256:0123456789ab; sha256:0123456789ab failed",
  );
});

Deno.test("ordinals and truncation", () => {
  assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(ordinal), [
    "1st",
    "2nd",
    "3rd",
    "4th",
    "11th",
    "12th",
    "13th",
    "21st",
    "22nd",
    "101st",
  ]);
  assert.equal(truncate("abcdef", 4), "abc…");
  assert.equal(truncate("abc", 4), "abc");
});

Deno.test("error text follows the cause chain", () => {
  const cause = new Error("error sending request for url (https://10.0.0.1:6443/api): refused");
  assert.equal(
    errorText(new TypeError("fetch failed", { cause })),
    "fetch failed: error sending request for url (https://10.0.0.1:6443/api): refused",
  );
  assert.equal(errorText("plain"), "plain");
  assert.equal(errorText(new Error("same", { cause: new Error("same") })), "same");
});

Deno.test("wrap keeps every word up to its last line, then cuts the end", () => {
  assert.deepEqual(wrap("short", 10, 3), ["short"]);
  assert.deepEqual(wrap("one two three four", 9, 3), ["one two", "three", "four"]);
  assert.deepEqual(wrap("one two three four five six", 9, 2), ["one two", "three fo…"]);
  assert.deepEqual(wrap("abcdefghijkl mn", 5, 3), ["abcde", "fghij", "kl mn"]);
  assert.deepEqual(wrap("anything", Infinity, 1), ["anything"]);
});
