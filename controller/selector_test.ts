import assert from "node:assert/strict";
import { matchesSelector, selectorError } from "./selector.ts";

Deno.test("matchesSelector: matchLabels and every operator", () => {
  const labels = { role: "worker", zone: "a" };
  assert.ok(matchesSelector({}, labels));
  assert.ok(matchesSelector(undefined, labels));
  assert.ok(matchesSelector({ matchLabels: { role: "worker" } }, labels));
  assert.ok(!matchesSelector({ matchLabels: { role: "infra" } }, labels));
  const expr = (operator: string, values?: string[]) => ({
    matchExpressions: [{ key: "zone", operator, values }],
  });
  assert.ok(matchesSelector(expr("In", ["a", "b"]), labels));
  assert.ok(!matchesSelector(expr("In", ["b"]), labels));
  assert.ok(matchesSelector(expr("NotIn", ["b"]), labels));
  assert.ok(!matchesSelector(expr("NotIn", ["a"]), labels));
  assert.ok(matchesSelector(expr("NotIn", ["a"]), { role: "worker" }));
  assert.ok(matchesSelector(expr("Exists"), labels));
  assert.ok(!matchesSelector(expr("DoesNotExist"), labels));
  assert.ok(!matchesSelector(expr("Bogus"), labels));
});

Deno.test("selectorError: operator/values combinations the CRD cannot check", () => {
  assert.equal(selectorError({ matchLabels: { a: "b" } }), undefined);
  assert.match(
    selectorError({ matchExpressions: [{ key: "z", operator: "In", values: [] }] }) ?? "",
    /operator In requires at least one value/,
  );
  assert.match(
    selectorError({ matchExpressions: [{ key: "z", operator: "Exists", values: ["x"] }] }) ?? "",
    /must not have values/,
  );
});
