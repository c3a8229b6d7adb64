import assert from "node:assert/strict";
import { diffObjects, firstDifference, objectsByKey } from "./objects.ts";

const A = `
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: ns}
data: {k: "1"}
---
# only a comment: an empty document
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
`;

Deno.test("objectsByKey: keyed by apiVersion, kind, namespace and name; empty documents dropped", () => {
  assert.deepEqual([...objectsByKey(A).keys()], ["v1 ConfigMap ns/a", "v1 Namespace ns"]);
  assert.throws(() => objectsByKey(A + "---\n" + A), /appears twice/);
});

Deno.test("diffObjects: missing, unexpected and differing objects, with the first differing path", () => {
  const expected = objectsByKey(A);
  assert.deepEqual(diffObjects(objectsByKey(A), expected), []);
  const changed = objectsByKey(A.replace('k: "1"', "k: 1").replace("name: ns}", "name: other}"));
  assert.deepEqual(diffObjects(changed, expected), [
    "missing: v1 Namespace ns",
    'differs: v1 ConfigMap ns/a at .data.k: 1 != "1"',
    "unexpected: v1 Namespace other",
  ]);
  assert.equal(firstDifference({ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] }), ".a.1.b: 2 != 3");
});
