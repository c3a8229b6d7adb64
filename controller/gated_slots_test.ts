import assert from "node:assert/strict";
import { PoolDegradedReason } from "../lib/api/mod.ts";
import { EffectiveState } from "./effective_state.ts";
import { planGatedSlots } from "./gated_slots.ts";
import { RolloutContext } from "./in_flight.ts";
import type { Member } from "./membership.ts";
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
  const members: Member[] = bns.map((bn) => ({
    node: i.nodes.get(bn.metadata.name ?? "")!,
    bn,
    state: EffectiveState.Staged,
    disrupted: opts.disrupted?.includes(bn.metadata.name ?? "") ?? false,
  }));
  ctx.inUse = opts.disrupted?.length ?? 0;
  const grants = () => plan.actions.filter(isSlotGrant).map((a) => "node" in a ? a.node : "");
  return { ctx, plan, members, grants };
}

Deno.test("planGatedSlots: grants up to the budget, counting the nodes already disrupted", () => {
  const { ctx, members, grants } = scene({ maxUnavailable: 2, disrupted: ["n1"] });
  const reason = planGatedSlots({
    ctx,
    members,
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(grants(), ["n2"]);
  assert.equal(reason, undefined, "the budget's own pace is routine, not a reason");
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
  planGatedSlots({ ...halted, releasing: [], target: TARGET, updated: 0, canary: undefined });
  assert.deepEqual(halted.grants(), []);
  assert.deepEqual(halted.plan.issues.map((i) => i.reason), [PoolDegradedReason.RolloutHalted]);

  const paused = scene({ paused: true });
  const why = planGatedSlots({
    ...paused,
    releasing: [],
    target: TARGET,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(paused.grants(), []);
  assert.equal(why, "Paused");

  const stopped = scene();
  planGatedSlots({
    ...stopped,
    releasing: [],
    target: TARGET,
    haltFor: TARGET.image,
    updated: 0,
    canary: undefined,
  });
  assert.deepEqual(stopped.grants(), []);
});
