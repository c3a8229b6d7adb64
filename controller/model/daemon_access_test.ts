import assert from "node:assert/strict";
import { daemonSecretNames, daemonSecretRules, rulesEqual } from "./daemon_access.ts";

const NS = "bootc-operator";
const pool = (name?: string, namespace = NS) => ({
  pullSecretRef: name ? { name, namespace } : undefined,
});

Deno.test("daemonSecretNames: referenced, in the namespace, usable; sorted, unique", () => {
  const usable = (n: string) => n !== "opaque";
  assert.deepEqual(
    daemonSecretNames(
      [pool("b"), pool(), pool("a"), pool("b"), pool("c", "default"), pool("opaque")],
      NS,
      usable,
    ),
    ["a", "b"],
  );
  assert.deepEqual(daemonSecretNames([], NS, usable), []);
});

Deno.test("daemonSecretRules: one get rule naming the Secrets, or no rule at all", () => {
  assert.deepEqual(daemonSecretRules(["b", "a"]), [
    { apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["a", "b"] },
  ]);
  // An empty resourceNames would grant every Secret: with none to grant there is no rule.
  assert.deepEqual(daemonSecretRules([]), []);
});

Deno.test("rulesEqual ignores order and absent lists, not content", () => {
  const rules = daemonSecretRules(["a", "b"]);
  assert.ok(rulesEqual(rules, [{ ...rules[0], resourceNames: ["b", "a"] }]));
  assert.ok(rulesEqual(undefined, []));
  assert.ok(!rulesEqual(rules, []));
  assert.ok(!rulesEqual(rules, daemonSecretRules(["a"])));
  // The manifest's old unrestricted rule is not the same grant.
  assert.ok(
    !rulesEqual(rules, [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }]),
  );
  assert.ok(!rulesEqual(rules, [{ ...rules[0], verbs: ["get", "list"] }]));
});
