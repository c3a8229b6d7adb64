import assert from "node:assert/strict";
import { PoolDegradedReason } from "../lib/api/mod.ts";
import { planGatedSlots } from "./gated_slots.ts";
import { RolloutContext } from "./in_flight.ts";
import { classifyMember, type Member } from "./membership.ts";
import { isSlotGrant, PlanBuilder } from "./plan.ts";
import { bootcNode, digest, image, input, node, pool } from "./testing/fixtures.ts";

const TARGET = { image: image("b"), digest: digest("b") };

/** Four staged members; `disrupted` of them already hold slots. */
function scene(opts: { maxUnavailable?: number; paused?: boolean; disrupted?: string[] } = {}) {
  const p = pool({ maxUnavailable: opts.maxUnavailable ?? 2, paused: opts.paused });
  const names = ["n1", "n2", "n3", "n4"];
  const bns = names.map((n) => bootcNode(n, { phase: "staged" }));
  const i = { ...input(p, { nodes: names.map((n) => node(n)), bootcNodes: bns }) };
  i.podsListed = new Set(names);
  const plan = new PlanBuilder("workers", i.now);
  const ctx = new RolloutContext(i, plan, p);
  const members: Member[] = bns.map((bn) => {
    const node = i.nodes.get(bn.metadata.name ?? "")!;
    return {
      node,
      bn,
      ...classifyMember(node, bn),
      disrupted: opts.disrupted?.includes(bn.metadata.name ?? "") ?? false,
    };
  });
  ctx.inUse = opts.disrupted?.length ?? 0;
  const grants = () => plan.actions.filter(isSlotGrant).map((a) => "node" in a ? a.node : "");
  return { ctx, plan, members, grants };
}

Deno.test("planGatedSlots: grants up to the budget, counting the nodes already disrupted", () => {
  const { ctx, members, grants } = scene({ maxUnavailable: 2, disrupted: ["n1"] });
  const gated = planGatedSlots({
    ctx,
    members,
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(), ["n2"]);
  assert.equal(gated.waitReason, undefined, "the budget's own pace is routine, not a reason");
  assert.deepEqual(gated.slots, {
    limit: 2,
    source: "MaxUnavailable",
    name: "maxUnavailable",
    message: "maxUnavailable 2",
    waiting: 2,
  });
  assert.deepEqual(gated.queue, [
    { node: "n3", position: 1, waitingFor: "BudgetExhausted" },
    { node: "n4", position: 2, waitingFor: "BudgetExhausted" },
  ]);
});

Deno.test("planGatedSlots: a node leaving the pool still takes its place in the budget", () => {
  const { ctx, members, grants } = scene({ maxUnavailable: 1 });
  planGatedSlots({
    ctx,
    members,
    releasing: ["gone"],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(), []);
});

Deno.test("planGatedSlots: two unhealthy slots halt; a pause says why; a halted image gets none", () => {
  const halted = scene();
  halted.ctx.unhealthy.push("n1 is NotReady", "n2 drain timed out");
  const h = planGatedSlots({
    ...halted,
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(halted.grants(), []);
  assert.deepEqual(halted.plan.issues.map((i) => i.reason), [PoolDegradedReason.RolloutHalted]);
  assert.deepEqual(h.queue.map((q) => q.waitingFor), Array(4).fill("RolloutHalted"));

  const paused = scene({ paused: true });
  const why = planGatedSlots({
    ...paused,
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(paused.grants(), []);
  assert.equal(why.waitReason, "Paused");
  assert.deepEqual(why.queue.map((q) => `${q.position} ${q.node} ${q.waitingFor}`), [
    "1 n1 Paused",
    "2 n2 Paused",
    "3 n3 Paused",
    "4 n4 Paused",
  ]);

  const stopped = scene();
  const s = planGatedSlots({
    ...stopped,
    releasing: [],
    target: TARGET,
    haltFor: TARGET.image,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(stopped.grants(), []);
  assert.deepEqual(s.queue.map((q) => q.waitingFor), Array(4).fill("RolloutHalted"));
});

Deno.test("planGatedSlots: the queue says what holds each candidate; the limit names a scheduled budget", () => {
  // A budget of 1 during 00:00-02:00 UTC (the fixtures' clock is 01:00).
  const { ctx, members, grants } = scene({ maxUnavailable: 3 });
  ctx.pool.spec.rollout = {
    ...ctx.pool.spec.rollout,
    budgets: [{ maxUnavailable: 1, schedule: "0 0 * * *", duration: "2h" }],
  };
  // n2's pods are not known yet: it waits for the pod list, and n3 after it takes the slot.
  ctx.input.podsListed = new Set(["n1", "n3", "n4"]);
  members[0].disrupted = false;
  const gated = planGatedSlots({
    ctx,
    members: members.slice(1),
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(), ["n3"]);
  assert.deepEqual(gated.slots, {
    limit: 1,
    source: "Budget",
    name: "rollout.budgets[0]",
    until: "2026-01-01T02:00:00Z",
    message: 'rollout.budgets[0] 1 ("0 0 * * *" for 2h)',
    waiting: 2,
  });
  assert.deepEqual(gated.queue, [
    { node: "n2", position: 1, waitingFor: "PodList" },
    { node: "n4", position: 2, waitingFor: "BudgetExhausted" },
  ]);
});
