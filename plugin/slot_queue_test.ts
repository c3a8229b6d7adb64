import assert from "node:assert/strict";
import { resolveMaxUnavailable, slotHolders, slotQueue } from "./slot_queue.ts";
import { bootcNode, cond, NEW, node, OLD, pool } from "./testing.ts";

Deno.test("the queue: staged, Ready, undisrupted, healthy members sorted by name", () => {
  const staged = (name: string, extra = {}) =>
    bootcNode(name, { idle: ["False", "Staged"], staged: NEW, ...extra });
  const bns = [
    staged("n4"),
    staged("n2"),
    staged("n3"), // holds a slot
    staged("n5"), // NotReady
    staged("n6", { conditions: [cond("Degraded", "True", "Error", "disk full")] }),
    staged("n7", { desired: OLD, staged: OLD }), // queued behind the staging limit
    bootcNode("n1", { idle: ["False", "Staging"] }),
    staged("n0", { pool: "other" }),
    staged("n8"), // no Node object
  ];
  const nodes = new Map([
    ["n2", node("n2")],
    ["n3", node("n3", { slot: 5 })],
    ["n4", node("n4")],
    ["n5", node("n5", { ready: false })],
    ["n6", node("n6")],
    ["n7", node("n7")],
    ["n0", node("n0")],
  ]);
  assert.deepEqual(slotQueue(pool(), bns, nodes), ["n2", "n4"]);
  assert.deepEqual(slotHolders("main", nodes.values()), ["n3"]);
  assert.deepEqual(slotHolders("other", nodes.values()), []);
});

Deno.test("maxUnavailable: integers and percentages rounded up", () => {
  assert.equal(resolveMaxUnavailable(undefined, 10), 1);
  assert.equal(resolveMaxUnavailable(2, 10), 2);
  assert.equal(resolveMaxUnavailable("25%", 10), 3);
  assert.equal(resolveMaxUnavailable("3", 10), 3);
  assert.equal(resolveMaxUnavailable("lots", 10), undefined);
});
