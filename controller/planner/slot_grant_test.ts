import assert from "node:assert/strict";
import { planPool } from "./planner.ts";
import { classifyMember, type Member } from "./membership.ts";
import { isSlotGrant, type Plan } from "./plan.ts";
import { grantSlots, QueueWait } from "./slot_grant.ts";
import { bootcNode, input, node, pdb, pod, pool } from "../testing/fixtures.ts";

const EARLIER = "2026-01-01T00:59:00Z";

function granted(plan: Plan): string[] {
  return plan.actions.filter(isSlotGrant).map((a) => "node" in a ? a.node : "");
}

/** Staged candidates n1..n4; `listed` have their pods known, `failed` had their list fail. */
function candidates(listed: string[], failed: string[]) {
  const names = ["n1", "n2", "n3", "n4"];
  const bns = names.map((n) => bootcNode(n, { phase: "staged" }));
  const i = input(pool({ maxUnavailable: 4 }), {
    nodes: names.map((n) => node(n)),
    bootcNodes: bns,
  });
  i.podsListed = new Set(listed);
  i.podsFailed = new Map(failed.map((n) => [n, `listing the pods of node ${n} failed: forbidden`]));
  const members: Member[] = bns.map((bn) => {
    const n = i.nodes.get(bn.metadata.name ?? "")!;
    return { node: n, bn, ...classifyMember(n, bn), disrupted: false };
  });
  return { input: i, members };
}

const NO_DRAINS = { inUse: 0, drainingNodes: 0, drainingDemand: new Map(), drainingUnknown: 0 };

Deno.test("grantSlots: a candidate whose pod list failed is asked for again without holding back the ones after it", () => {
  const { input, members } = candidates(["n3", "n4"], ["n1"]);
  const outcome = grantSlots(members, input, NO_DRAINS, () => undefined, 1);
  assert.equal(outcome.held.get("n1"), QueueWait.PodList);
  assert.equal(outcome.held.get("n2"), QueueWait.PodList, "n2 takes the one list of the budget");
  assert.deepEqual(outcome.out.needPods, ["n1", "n2"]);
  assert.deepEqual(outcome.granted, ["n3", "n4"]);
});

Deno.test("grantSlots: without a failure the budget of lists stops the walk (the rule above is only for failures)", () => {
  const { input, members } = candidates(["n3", "n4"], []);
  const outcome = grantSlots(members, input, NO_DRAINS, () => undefined, 1);
  assert.deepEqual(outcome.out.needPods, ["n1"]);
  assert.deepEqual(outcome.granted, []);
  assert.equal(outcome.held.has("n3"), false, "not reached");
});

Deno.test("grantSlots: while a drain's pods are unknown, a candidate whose drain needs a PodDisruptionBudget waits", () => {
  const { input, members } = candidates(["n1", "n2", "n3", "n4"], []);
  input.pdbs = [pdb("web", "web", 5)];
  input.podsByNode = new Map([["n1", [pod("web-1", "n1")]]]);
  const unknownDrain = {
    inUse: 1,
    drainingNodes: 1,
    drainingDemand: new Map(),
    drainingUnknown: 1,
  };
  const held = grantSlots(members, input, unknownDrain, () => undefined, 4);
  assert.equal(held.held.get("n1"), QueueWait.PodDisruptionBudget);
  assert.deepEqual(held.granted, ["n2", "n3", "n4"], "pods under no PDB go on");
  const known = grantSlots(
    members,
    input,
    { ...unknownDrain, drainingUnknown: 0 },
    () => undefined,
    4,
  );
  assert.deepEqual(known.granted, ["n1", "n2", "n3", "n4"], "a known drain leaves the PDB room");
});

Deno.test("planPool: a draining node whose pod list failed counts as needing every PodDisruptionBudget", () => {
  const p = pool({ maxUnavailable: 2 });
  const plan = planPool({
    ...input(p, {
      nodes: [node("n1", { unschedulable: true }), node("n2")],
      bootcNodes: [
        bootcNode("n1", { phase: "staged", slotAt: EARLIER, wasCordoned: false }),
        bootcNode("n2", { phase: "staged" }),
      ],
      pods: [pod("web-2", "n2")],
      pdbs: [pdb("web", "web", 5)],
    }),
    podsListed: new Set(["n2"]),
    podsFailed: new Map([["n1", "listing the pods of node n1 failed: forbidden"]]),
  });
  assert.deepEqual(granted(plan), []);
  assert.equal(
    plan.status?.queue?.find((q) => q.node === "n2")?.waitingFor,
    QueueWait.PodDisruptionBudget,
  );
  assert.ok(plan.needPods.includes("n1"), "n1's pods are asked for again");
});
