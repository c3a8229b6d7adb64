import assert from "node:assert/strict";
import type { ObjectPrecondition } from "../../lib/api/mod.ts";
import type { ObjectVerdict } from "../model/object_check.ts";
import { gateInput, policyPool } from "./_testing.ts";
import { objectsGate, ObjectsReason } from "./objects.ts";

const CHECK: ObjectPrecondition = {
  apiVersion: "ceph.rook.io/v1",
  kind: "CephCluster",
  namespace: "rook-ceph",
  name: "rook",
  expression: 'object.status.ceph.health == "HEALTH_OK"',
};

function decide(checks: ObjectPrecondition[], objects?: (ObjectVerdict | undefined)[]) {
  const input = gateInput({ now: "2026-12-01T10:00:00Z", candidates: 2 });
  input.pool.spec.rollout = { ...input.pool.spec.rollout, preconditions: { objects: checks } };
  return objectsGate.decide({ ...input, ...(objects ? { objects } : {}) });
}

Deno.test("objects: every check passing admits every candidate", () => {
  const d = decide([CHECK, CHECK], [{ state: "passed" }, { state: "passed" }]);
  assert.deepEqual(d.admit.map((c) => c.name), ["n-0", "n-1"]);
  assert.equal(d.wait, undefined);
  assert.equal(decide([]).wait, undefined);
});

Deno.test("objects: a false check holds; one unread or in error holds as unknown", () => {
  const notMet = decide([CHECK, CHECK], [{ state: "passed" }, {
    state: "failed",
    message: "CephCluster rook-ceph/rook: … is false for rook-ceph/rook",
  }]);
  assert.deepEqual(notMet.admit, []);
  assert.equal(notMet.wait?.reason, ObjectsReason.PreconditionNotMet);
  assert.match(notMet.wait?.message ?? "", /is false for rook-ceph\/rook/);
  const unread = decide([CHECK, CHECK], [{ state: "passed" }]);
  assert.equal(unread.wait?.reason, ObjectsReason.PreconditionUnknown);
  assert.match(unread.wait?.message ?? "", /objects\[1\]: not read yet/);
  const error = decide([CHECK], [{ state: "error", message: "may not get cephclusters" }]);
  assert.deepEqual(error.admit, []);
  assert.equal(error.wait?.reason, ObjectsReason.PreconditionUnknown);
});

Deno.test("objects: an expression that does not compile names its field", () => {
  const pool = policyPool();
  pool.spec.rollout.preconditions = { objects: [CHECK, { ...CHECK, expression: "object.x ==" }] };
  const errors = objectsGate.validate!({ pool, pools: [pool] });
  assert.equal(errors.length, 1);
  assert.match(errors[0], /^spec\.rollout\.preconditions\.objects\[1\]\.expression: /);
});
