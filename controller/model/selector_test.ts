import assert from "node:assert/strict";
import { matchesSelector, selectorError, selectorsCanOverlap } from "./selector.ts";

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

Deno.test("selectorError: operator/values combinations, as the CRD refuses them", () => {
  assert.equal(selectorError({ matchLabels: { a: "b" } }), undefined);
  const expr = (operator: string, values?: string[]) => ({
    matchExpressions: [{ key: "z", operator, values }],
  });
  assert.match(selectorError(expr("In", [])) ?? "", /operator In requires at least one value/);
  assert.match(selectorError(expr("NotIn")) ?? "", /operator NotIn requires at least one value/);
  assert.match(selectorError(expr("Exists", ["x"])) ?? "", /Exists must not have values/);
  assert.match(selectorError(expr("DoesNotExist", ["x"])) ?? "", /must not have values/);
  assert.match(selectorError(expr("Bogus")) ?? "", /unknown operator "Bogus"/);
  assert.equal(selectorError(expr("Exists")), undefined);
  assert.equal(selectorError(expr("In", ["a", ""])), undefined);
});

Deno.test("selectorError: label keys and values that could never match a node", () => {
  assert.equal(
    selectorError({
      matchLabels: { "example.com/role": "worker", zone: "" },
      matchExpressions: [{ key: "node-role.kubernetes.io/worker", operator: "Exists" }],
    }),
    undefined,
  );
  assert.match(
    selectorError({ matchLabels: { "bad key": "x" } }) ?? "",
    /matchLabels: key "bad key" name part must consist of letters/,
  );
  assert.match(
    selectorError({ matchLabels: { "a//b": "x" } }) ?? "",
    /matchLabels: key "a\/\/b" must contain at most one '\/'/,
  );
  assert.match(
    selectorError({ matchLabels: { zone: "not ok" } }) ?? "",
    /matchLabels\[zone\]: value "not ok" must consist of/,
  );
  assert.match(
    selectorError({ matchLabels: { zone: "v".repeat(64) } }) ?? "",
    /must be at most 63 characters/,
  );
  assert.match(
    selectorError({ matchExpressions: [{ key: "a b", operator: "Exists" }] }) ?? "",
    /matchExpressions\[0\]\.key: "a b"/,
  );
  assert.match(
    selectorError({ matchExpressions: [{ key: "z", operator: "In", values: ["ok", "no!"] }] }) ??
      "",
    /matchExpressions\[0\]\.values\[1\]: "no!" must consist of/,
  );
});

Deno.test("selectorsCanOverlap: false only when one rules out a label the other requires", () => {
  const infra = { matchLabels: { role: "infra" } };
  assert.equal(selectorsCanOverlap(infra, { matchLabels: { role: "gpu" } }), false);
  assert.equal(selectorsCanOverlap(infra, { matchLabels: { role: "infra", zone: "a" } }), true);
  assert.equal(selectorsCanOverlap(infra, undefined), true);
  assert.equal(selectorsCanOverlap(undefined, infra), true);
  const expr = (operator: string, values?: string[]) => ({
    matchExpressions: [{ key: "role", operator, ...(values ? { values } : {}) }],
  });
  assert.equal(selectorsCanOverlap(infra, expr("In", ["gpu", "db"])), false);
  assert.equal(selectorsCanOverlap(infra, expr("In", ["gpu", "infra"])), true);
  assert.equal(selectorsCanOverlap(expr("NotIn", ["infra"]), infra), false);
  assert.equal(selectorsCanOverlap(infra, expr("DoesNotExist")), false);
  assert.equal(selectorsCanOverlap(infra, expr("Exists")), true);
  // Expressions against expressions are not compared: they may overlap.
  assert.equal(selectorsCanOverlap(expr("In", ["a"]), expr("In", ["b"])), true);
});
