import assert from "node:assert/strict";
import { PoolDegradedReason } from "../../lib/api/mod.ts";
import { type GatedSlots, planGatedSlots } from "./gated_slots.ts";
import { classifyMember, type Member } from "./membership.ts";
import { isSlotGrant } from "./plan.ts";
import { bootcNode, digest, image, input, node, pool } from "../testing/fixtures.ts";

const TARGET = { image: image("b"), digest: digest("b") };

/** Four staged members; `disrupted` of them already hold slots. */
function scene(opts: { maxUnavailable?: number; paused?: boolean; disrupted?: string[] } = {}) {
  const p = pool({ maxUnavailable: opts.maxUnavailable ?? 2, paused: opts.paused });
  const names = ["n1", "n2", "n3", "n4"];
  const bns = names.map((n) => bootcNode(n, { phase: "staged" }));
  const i = { ...input(p, { nodes: names.map((n) => node(n)), bootcNodes: bns }) };
  i.podsListed = new Set(names);
  const members: Member[] = bns.map((bn) => {
    const node = i.nodes.get(bn.metadata.name ?? "")!;
    return {
      node,
      bn,
      ...classifyMember(node, bn),
      disrupted: opts.disrupted?.includes(bn.metadata.name ?? "") ?? false,
    };
  });
  // Step 3's result as the slot step reads it.
  const inFlight = {
    inUse: opts.disrupted?.length ?? 0,
    unhealthy: [] as string[],
    drainingNodes: 0,
    drainingDemand: new Map<string, number>(),
    drainingUnknown: 0,
    released: [] as string[],
  };
  return { input: i, inFlight, members };
}

/** The nodes a slot step's result granted, read off its writes (the marked grants). */
function grants(gated: GatedSlots): string[] {
  return gated.out.actions.filter(isSlotGrant).map((a) => "node" in a ? a.node : "");
}

Deno.test("planGatedSlots: grants up to the budget, counting the nodes already disrupted", () => {
  const gated = planGatedSlots({
    ...scene({ maxUnavailable: 2, disrupted: ["n1"] }),
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(gated), ["n2"]);
  assert.deepEqual(gated.granted, ["n2"]);
  assert.equal(gated.inUse, 2);
  assert.equal(gated.waitReason, undefined, "the budget's own pace is routine, not a reason");
  assert.deepEqual(gated.slots, {
    limit: 2,
    source: "MaxUnavailable",
    name: "maxUnavailable",
    message: "maxUnavailable 2",
    maxUnhealthy: 2,
    waiting: 2,
  });
  assert.deepEqual(gated.queue, [
    { node: "n3", position: 1, waitingFor: "BudgetExhausted" },
    { node: "n4", position: 2, waitingFor: "BudgetExhausted" },
  ]);
});

Deno.test("planGatedSlots: a node leaving the pool still takes its place in the budget", () => {
  const gated = planGatedSlots({
    ...scene({ maxUnavailable: 1 }),
    releasing: ["gone"],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(gated), []);
  assert.equal(gated.inUse, 1, "the node leaving counts");
});

Deno.test("planGatedSlots: two unhealthy slots halt; a pause says why; a halted image gets none", () => {
  const halted = scene();
  halted.inFlight.unhealthy.push("n1 is NotReady", "n2 drain timed out");
  const h = planGatedSlots({
    ...halted,
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(h), []);
  assert.deepEqual(h.out.issues.map((i) => i.reason), [PoolDegradedReason.RolloutHalted]);
  assert.deepEqual(h.queue.map((q) => q.waitingFor), Array(4).fill("RolloutHalted"));

  const paused = scene({ paused: true });
  const why = planGatedSlots({
    ...paused,
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(why), []);
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
  assert.deepEqual(grants(s), []);
  assert.deepEqual(s.queue.map((q) => q.waitingFor), Array(4).fill("RolloutHalted"));
});

Deno.test("planGatedSlots: spec.rollout.maxUnhealthy sets how many unhealthy slots halt", () => {
  const run = (maxUnhealthy: number | string | undefined, unhealthy: string[]) => {
    const s = scene({ maxUnavailable: 3, disrupted: ["n1", "n2"] });
    if (maxUnhealthy !== undefined) s.input.pool.spec.rollout!.maxUnhealthy = maxUnhealthy;
    s.inFlight.unhealthy.push(...unhealthy);
    return planGatedSlots({ ...s, releasing: [], target: TARGET, updated: 0, canary: undefined });
  };
  // 1: a single unhealthy slot node halts; the message names the setting.
  const one = run(1, ["n1 drain timed out"]);
  assert.deepEqual(grants(one), []);
  assert.match(one.out.issues[0]?.message ?? "", /maxUnhealthy allows 0/);
  assert.equal(one.slots.maxUnhealthy, 1);
  // 75% of 4 nodes is 3: two unhealthy ones do not halt it, where the default would.
  assert.deepEqual(grants(run("75%", ["n1 drain timed out", "n2 is not Ready"])), ["n3"]);
  assert.deepEqual(grants(run(undefined, ["n1 drain timed out", "n2 is not Ready"])), []);
  assert.deepEqual(grants(run(undefined, ["n1 drain timed out"])), ["n3"]);
});

Deno.test("planGatedSlots: the queue says what holds each candidate; the limit names a scheduled budget", () => {
  // A budget of 1 during 00:00-02:00 UTC (the fixtures' clock is 01:00).
  const { input, inFlight, members } = scene({ maxUnavailable: 3 });
  input.pool.spec.rollout = {
    ...input.pool.spec.rollout,
    budgets: [{ maxUnavailable: 1, schedule: "0 0 * * *", duration: "2h" }],
  };
  // n2's pods are not known yet: it waits for the pod list, and n3 after it takes the slot.
  input.podsListed = new Set(["n1", "n3", "n4"]);
  const gated = planGatedSlots({
    input,
    inFlight,
    members: members.slice(1),
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(gated), ["n3"]);
  assert.deepEqual(gated.out.needPods, ["n2"]);
  assert.deepEqual(gated.slots, {
    limit: 1,
    source: "Budget",
    name: "rollout.budgets[0]",
    until: "2026-01-01T02:00:00Z",
    message: 'rollout.budgets[0] 1 ("0 0 * * *" for 2h)',
    maxUnhealthy: 2,
    waiting: 2,
  });
  assert.deepEqual(gated.queue, [
    { node: "n2", position: 1, waitingFor: "PodList" },
    { node: "n4", position: 2, waitingFor: "BudgetExhausted" },
  ]);
});
