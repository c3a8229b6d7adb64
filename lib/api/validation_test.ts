import assert from "node:assert/strict";
import {
  dns1123LabelError,
  dns1123SubdomainError,
  LABEL_KEY_PATTERN,
  LABEL_KEY_PREFIX_LENGTH_PATTERN,
  LABEL_VALUE_PATTERN,
  labelKeyError,
  labelValueError,
  poolNameError,
} from "./validation.ts";

const prefix253 = `${"a".repeat(63)}.`.repeat(3) + "a".repeat(61);
const validKeys = [
  "zone",
  "z",
  "Zone_1.a-b",
  "example.com/role",
  "node-role.kubernetes.io/worker",
  "kubernetes.io/hostname",
  "n".repeat(63),
  `${prefix253}/${"n".repeat(63)}`,
];
const invalidKeys = [
  "",
  "bad key",
  "a//b",
  "a/b/c",
  "/name",
  "prefix/",
  "-zone",
  "zone-",
  "n".repeat(64),
  `${prefix253}a/name`,
  "Example.com/role",
  "exa_mple.com/role",
  "zone\n",
];
const validValues = ["", "a", "worker", "A-b_c.9", "v".repeat(63)];
const invalidValues = ["bad value", "-a", "a-", "v".repeat(64), "a/b", "é", "a\n"];

Deno.test("labelKeyError accepts Kubernetes qualified names and says why others fail", () => {
  for (const key of validKeys) assert.equal(labelKeyError(key), undefined, key);
  for (const key of invalidKeys) assert.ok(labelKeyError(key), JSON.stringify(key));
  assert.match(labelKeyError("a//b")!, /at most one '\/'/);
  assert.match(labelKeyError("bad key")!, /name part must consist of letters/);
  assert.match(labelKeyError("n".repeat(64))!, /at most 63 characters \(it has 64\)/);
  assert.match(labelKeyError(`${prefix253}a/x`)!, /prefix must be at most 253/);
  assert.match(labelKeyError("Example.com/x")!, /prefix must be a DNS subdomain/);
});

Deno.test("labelValueError: empty or up to 63 of [A-Za-z0-9-_.] with alphanumeric ends", () => {
  for (const value of validValues) assert.equal(labelValueError(value), undefined, value);
  for (const value of invalidValues) assert.ok(labelValueError(value), JSON.stringify(value));
  assert.match(labelValueError("v".repeat(64))!, /at most 63 characters \(it has 64\)/);
});

Deno.test("the CEL patterns agree with the checks the controller runs", () => {
  // The CRD runs these patterns with RE2; ECMAScript gives the same answers for them
  // (no backreferences or lookarounds), so testing here covers admission too.
  const key = (k: string) =>
    new RegExp(LABEL_KEY_PATTERN).test(k) && new RegExp(LABEL_KEY_PREFIX_LENGTH_PATTERN).test(k);
  for (const k of [...validKeys, ...invalidKeys]) {
    assert.equal(key(k), labelKeyError(k) === undefined, JSON.stringify(k));
  }
  const value = (v: string) => new RegExp(LABEL_VALUE_PATTERN).test(v);
  for (const v of [...validValues, ...invalidValues]) {
    assert.equal(value(v), labelValueError(v) === undefined, JSON.stringify(v));
  }
});

Deno.test("DNS names for Secret references", () => {
  assert.equal(dns1123SubdomainError("pull.secret-1"), undefined);
  assert.ok(dns1123SubdomainError("Pull_Secret"));
  assert.ok(dns1123SubdomainError("a/../b"));
  assert.ok(dns1123SubdomainError("a".repeat(254)));
  assert.equal(dns1123LabelError("bootc-operator"), undefined);
  assert.ok(dns1123LabelError("bootc.operator"));
  assert.ok(dns1123LabelError("a".repeat(64)));
});

Deno.test("poolNameError: at most 63 characters, because it is a label value", () => {
  assert.equal(poolNameError("p".repeat(63)), undefined);
  assert.match(poolNameError("p".repeat(64))!, /at most 63 characters.*bootc\.dev\/pool label/);
});
