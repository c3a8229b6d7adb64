import assert from "node:assert/strict";
import type { ObjectPrecondition } from "../../lib/api/mod.ts";
import { checkSubject, compileCheck, judgeObjects } from "./object_check.ts";

const check = (expression: string, extra: Partial<ObjectPrecondition> = {}) => ({
  apiVersion: "ceph.rook.io/v1",
  kind: "CephCluster",
  namespace: "rook-ceph",
  expression,
  ...extra,
});

const cluster = (name: string, health: string, replicas = 3) => ({
  metadata: { name, namespace: "rook-ceph" },
  spec: { mon: { count: replicas } },
  status: { ceph: { health } },
});

Deno.test("judgeObjects: every selected object must pass; none selected holds", () => {
  const ok = check('object.status.ceph.health == "HEALTH_OK"');
  assert.deepEqual(judgeObjects(ok, [cluster("a", "HEALTH_OK")]), { state: "passed" });
  assert.deepEqual(judgeObjects(ok, [cluster("a", "HEALTH_OK"), cluster("b", "HEALTH_WARN")]), {
    state: "failed",
    message: 'CephCluster rook-ceph/*: "object.status.ceph.health == \\"HEALTH_OK\\"" is false ' +
      "for rook-ceph/b",
  });
  assert.deepEqual(judgeObjects(check("true", { name: "rook" }), []), {
    state: "failed",
    message: "CephCluster rook-ceph/rook: no such object",
  });
});

Deno.test("judgeObjects: JSON integers are CEL ints; errors and non-bools are errors", () => {
  const ints = check("object.spec.mon.count + 1 == 4 && object.spec.mon.count > 2");
  assert.deepEqual(judgeObjects(ints, [cluster("a", "x")]), { state: "passed" });
  const missing = judgeObjects(check("object.status.nope.x == 1"), [cluster("a", "x")]);
  assert.equal(missing.state, "error");
  assert.match(missing.state === "error" ? missing.message : "", /on rook-ceph\/a: No such key/);
  const notBool = judgeObjects(check("object.spec.mon.count"), [cluster("a", "x")]);
  assert.match(notBool.state === "error" ? notBool.message : "", /returned bigint, not a bool/);
});

Deno.test("compileCheck: a syntax error is a message, not a throw", () => {
  assert.equal(typeof compileCheck("object.x =="), "string");
  assert.equal(typeof compileCheck("object.x == 1"), "function");
  assert.equal(
    checkSubject(check("true", { matchLabels: { b: "2", a: "1" } })),
    "CephCluster rook-ceph/{a=1,b=2}",
  );
});
