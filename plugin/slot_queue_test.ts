import assert from "node:assert/strict";
import {
  limitText,
  NOT_PUBLISHED,
  placeText,
  publishedQueue,
  publishedSlots,
  queuePlace,
  slotHolders,
  slotsText,
} from "./slot_queue.ts";
import { node, pool } from "./testing.ts";

Deno.test("slot holders: the Nodes whose record names the pool, sorted", () => {
  const nodes = [
    node("n3", { slot: 5 }),
    node("n1", { slot: 9 }),
    node("n2"),
    node("o1", {
      slot: 1,
      slotPool: "other",
    }),
  ];
  assert.deepEqual(slotHolders("main", nodes), ["n1", "n3"]);
  assert.deepEqual(slotHolders("other", nodes), ["o1"]);
});

Deno.test("the published queue: each node's place, as the controller ordered it", () => {
  const p = pool({ queue: ["n4", "n2"], slotsInUse: 1 });
  assert.deepEqual(publishedQueue(p)?.map((e) => e.node), ["n4", "n2"], "not re-sorted");
  assert.equal(placeText(queuePlace(p, "n2")), "2nd of 2 in the slot queue");
  assert.equal(placeText(queuePlace(p, "n9")), "not in the slot queue");
  assert.equal(slotsText(p, ["n1"]), "1/1 slot(s) in use (n1)");
  // More wait than the status lists: a node past the list knows only that.
  const long = pool({ queue: ["a", "b"], slots: { waiting: 40 } });
  assert.deepEqual(queuePlace(long, "a"), {
    kind: "queued",
    entry: { node: "a", position: 1, waitingFor: "BudgetExhausted" },
    of: 40,
  });
  assert.equal(placeText(queuePlace(long, "z")), "after the first 2 of 40 in the slot queue");
  // Nobody waits: the status leaves the queue out.
  assert.deepEqual(publishedQueue(pool()), []);
});

Deno.test("the limit and what sets it are read, never computed", () => {
  const scheduled = pool({
    maxUnavailable: "50%",
    slots: {
      limit: 0,
      source: "Budget",
      name: "rollout.budgets[0]",
      until: "2026-03-01T17:00:00Z",
      message: 'rollout.budgets[0] 0 ("0 9 * * 1-5" for 8h)',
    },
  });
  assert.equal(publishedSlots(scheduled)?.limit, 0);
  assert.equal(
    limitText(publishedSlots(scheduled)!),
    '0 (rollout.budgets[0] 0 ("0 9 * * 1-5" for 8h) until 2026-03-01T17:00:00Z)',
  );
  assert.equal(slotsText(scheduled, []), "0/0 slot(s) in use");
});

Deno.test("an older controller publishes neither: the views say so instead of guessing", () => {
  const old = pool({ slots: null, queue: ["n1"] });
  assert.equal(publishedSlots(old), undefined);
  assert.equal(publishedQueue(old), undefined);
  assert.deepEqual(queuePlace(old, "n1"), { kind: "unknown" });
  assert.equal(placeText(queuePlace(old, "n1")), `place in the slot queue ${NOT_PUBLISHED}`);
  assert.equal(slotsText(old, ["n2"]), `1 slot(s) in use (n2); the limit is ${NOT_PUBLISHED}`);
});
