import assert from "node:assert/strict";
import { PoolDegradedReason } from "../../lib/api/mod.ts";
import { resolutionNeed } from "./resolution.ts";
import { specErrors } from "./spec_check.ts";
import { input, pool } from "../testing/fixtures.ts";

function errorsOf(p: ReturnType<typeof pool>, extra: Partial<ReturnType<typeof input>> = {}) {
  const i = { ...input(p), ...extra };
  return specErrors(i, resolutionNeed(p, i.now, undefined));
}

Deno.test("specErrors: a sound pool has none", () => {
  assert.deepEqual(errorsOf(pool()), []);
});

Deno.test("specErrors: each error names what is wrong, all of them at once", () => {
  const p = pool({ maxUnavailable: "150%", ref: "not a ref!" });
  p.spec.nodeSelector = { matchLabels: { "bad key!": "x" } };
  const errors = errorsOf(p);
  assert.equal(errors.length, 3, errors.join("\n"));
  assert.match(errors.join("\n"), /maxUnavailable/);
  assert.match(errors.join("\n"), /not a ref!/);
  assert.match(errors.join("\n"), /bad key!/);
});

Deno.test("specErrors: an invalid pull Secret reference is a spec error; other pull issues are not", () => {
  const invalid = {
    reason: PoolDegradedReason.InvalidSpec,
    message: "pullSecret: name is invalid",
  };
  assert.deepEqual(errorsOf(pool(), { pullSecretIssue: invalid }), [invalid.message]);
  const missing = { reason: PoolDegradedReason.PullSecretInvalid, message: "secret not found" };
  assert.deepEqual(errorsOf(pool(), { pullSecretIssue: missing }), []);
});
