import assert from "node:assert/strict";
import { labelIndex, objectKey, OWNER_UID_INDEX, ownerUidIndex, Store } from "./store.ts";
import type { KubeObject } from "./types.ts";

const o = (
  name: string,
  rv: string,
  extra: { ns?: string; pool?: string; owners?: string[] } = {},
): KubeObject => ({
  metadata: {
    name,
    namespace: extra.ns,
    resourceVersion: rv,
    labels: extra.pool ? { pool: extra.pool } : {},
    ownerReferences: (extra.owners ?? []).map((uid) => ({
      apiVersion: "v1",
      kind: "X",
      name: uid,
      uid,
    })),
  },
});

Deno.test("objectKey is namespace/name or name", () => {
  assert.equal(objectKey(o("a", "1", { ns: "ns" })), "ns/a");
  assert.equal(objectKey(o("n1", "1")), "n1");
});

Deno.test("store indexes follow upserts and deletes", () => {
  const s = new Store<KubeObject>({
    indexers: { pool: labelIndex("pool"), [OWNER_UID_INDEX]: ownerUidIndex },
  });
  s.upsert(o("a", "1", { ns: "x", pool: "p1", owners: ["u1"] }));
  s.upsert(o("b", "1", { ns: "x", pool: "p1", owners: ["u1", "u2"] }));
  assert.deepEqual(s.byIndex("pool", "p1").map(objectKey).sort(), ["x/a", "x/b"]);
  assert.deepEqual(s.byIndex(OWNER_UID_INDEX, "u2").map(objectKey), ["x/b"]);
  const old = s.upsert(o("a", "2", { ns: "x", pool: "p2" }));
  assert.equal(old?.metadata?.resourceVersion, "1");
  assert.deepEqual(s.byIndex("pool", "p1").map(objectKey), ["x/b"]);
  assert.deepEqual(s.byIndex(OWNER_UID_INDEX, "u1").map(objectKey), ["x/b"]);
  s.delete("x/b");
  assert.deepEqual(s.byIndex("pool", "p1"), []);
  assert.equal(s.getByName("a", "x")?.metadata?.resourceVersion, "2");
  assert.throws(() => s.byIndex("nope", "v"), /unknown index/);
  s.addIndexer("rv", (x) => [x.metadata!.resourceVersion!]);
  assert.deepEqual(s.byIndex("rv", "2").map(objectKey), ["x/a"]);
});

Deno.test("replace reports added, changed and vanished objects", () => {
  const s = new Store<KubeObject>({ indexers: { pool: labelIndex("pool") } });
  s.replace([o("a", "1"), o("b", "1", { pool: "p" }), o("c", "1")]);
  const diff = s.replace([o("a", "1"), o("b", "2"), o("d", "1")]);
  assert.deepEqual(diff.added.map(objectKey), ["d"]);
  assert.deepEqual(
    diff.updated.map(([x, y]) => `${x.metadata?.resourceVersion}->${y.metadata?.resourceVersion}`),
    ["1->2"],
  );
  assert.deepEqual(diff.deleted.map(objectKey), ["c"]);
  assert.deepEqual(s.keys().sort(), ["a", "b", "d"]);
  assert.deepEqual(s.byIndex("pool", "p"), []);
  assert.equal(s.size, 3);
});
