import assert from "node:assert/strict";
import { estimateTimeLeft } from "./estimate.ts";

const T0 = new Date("2026-03-01T10:00:00Z");
const at = (s: number) => new Date(T0.getTime() + s * 1000);

Deno.test("no estimate before the first completion; done; paused", () => {
  const base = { total: 5, updated: 0, start: T0, completions: [], paused: false, now: at(30) };
  assert.deepEqual(estimateTimeLeft(base), {
    kind: "unknown",
    why: "estimated once the first node is updated",
  });
  assert.deepEqual(estimateTimeLeft({ ...base, start: undefined }), {
    kind: "unknown",
    why: "the rollout has not started",
  });
  assert.deepEqual(estimateTimeLeft({ ...base, updated: 5 }), { kind: "done" });
  assert.deepEqual(estimateTimeLeft({ ...base, paused: true }), { kind: "paused" });
});

Deno.test("the observed cycle paces the rest and counts down between completions", () => {
  // Two of six nodes finished at +20 s and +40 s: one node every 20 s, four to go.
  const input = {
    total: 6,
    updated: 2,
    start: T0,
    completions: [at(40), at(20)],
    paused: false,
    now: at(40),
  };
  const right = estimateTimeLeft(input);
  assert.equal(right.kind, "estimate");
  if (right.kind !== "estimate") return;
  assert.equal(right.cycleMs, 20_000);
  assert.equal(right.remaining, 4);
  assert.equal(right.leftMs, 80_000);
  // Ten seconds on, nothing finished: ten seconds less.
  const later = estimateTimeLeft({ ...input, now: at(50) });
  assert.equal(later.kind === "estimate" && later.leftMs, 70_000);
});

Deno.test("a node slower than the cycle makes the estimate grow instead of reaching zero", () => {
  const input = {
    total: 3,
    updated: 1,
    start: T0,
    completions: [at(10)],
    paused: false,
    now: at(10),
  };
  const first = estimateTimeLeft(input);
  assert.equal(first.kind === "estimate" && first.leftMs, 20_000);
  // 100 s later the next node is still not done: the countdown is far below zero, the
  // floor assumes the next completes now (2 in 110 s) and one more follows at that pace.
  const stuck = estimateTimeLeft({ ...input, now: at(110) });
  assert.equal(stuck.kind === "estimate" && stuck.leftMs, 55_000);
  const stuckLonger = estimateTimeLeft({ ...input, now: at(210) });
  assert.ok(stuckLonger.kind === "estimate" && stuckLonger.leftMs > 55_000);
});

Deno.test("completions before the rollout began are not counted", () => {
  const estimate = estimateTimeLeft({
    total: 4,
    updated: 2,
    start: T0,
    completions: [at(-300), at(30)],
    paused: false,
    now: at(30),
  });
  assert.equal(estimate.kind === "estimate" && estimate.measured, 1);
  assert.equal(estimate.kind === "estimate" && estimate.leftMs, 60_000);
});
