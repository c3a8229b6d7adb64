import assert from "node:assert/strict";
import { nextRequeue, type RequeueInput } from "./requeue.ts";

const base: RequeueInput = { draining: false, refused: 0, streak: 0, baseMs: 5_000, maxMs: 60_000 };

const cases: { name: string; input: Partial<RequeueInput>; out: ReturnType<typeof nextRequeue> }[] =
  [
    { name: "nothing asked, nothing refused", input: {}, out: { delayMs: undefined, streak: 0 } },
    { name: "the plan's own request", input: { planned: 700 }, out: { delayMs: 700, streak: 0 } },
    {
      name: "first refused pass backs off by the base",
      input: { refused: 1, draining: true },
      out: { delayMs: 5_000, streak: 1 },
    },
    {
      name: "refusals in a row double the back-off",
      input: { refused: 2, draining: true, streak: 2, poll: 5_000 },
      out: { delayMs: 20_000, streak: 3 },
    },
    {
      name: "capped at the longest back-off",
      input: { refused: 1, draining: true, streak: 10 },
      out: { delayMs: 60_000, streak: 11 },
    },
    {
      name: "a poll backs off never sooner than the plan polls",
      input: { refused: 1, draining: true, poll: 30_000 },
      out: { delayMs: 30_000, streak: 1 },
    },
    {
      name: "a deadline never waits for the back-off",
      input: { refused: 1, draining: true, streak: 4, poll: 5_000, planned: 2_000 },
      out: { delayMs: 2_000, streak: 5 },
    },
    {
      name: "a deadline later than the back-off waits for the poll",
      input: { refused: 1, draining: true, streak: 1, poll: 5_000, planned: 40_000 },
      out: { delayMs: 10_000, streak: 2 },
    },
    {
      name: "without refusals the earlier of poll and deadline",
      input: { draining: true, poll: 5_000, planned: 1_200 },
      out: { delayMs: 1_200, streak: 0 },
    },
    {
      name: "a pass without refusals keeps the streak while the drain lasts",
      input: { draining: true, streak: 3, poll: 5_000 },
      out: { delayMs: 5_000, streak: 3 },
    },
    {
      name: "the drain over, the streak is forgotten",
      input: { streak: 3 },
      out: { delayMs: undefined, streak: 0 },
    },
  ];

for (const c of cases) {
  Deno.test(`nextRequeue: ${c.name}`, () => {
    assert.deepEqual(nextRequeue({ ...base, ...c.input }), c.out);
  });
}
