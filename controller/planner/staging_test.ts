import assert from "node:assert/strict";
import { ANNOTATION_DESIRED_SINCE, findCondition } from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";

function retargeted(plan: Plan): string[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: "patchBootcNode" }> =>
    a.kind === "patchBootcNode" &&
    (a.patch.spec as { desiredImage?: string } | undefined)?.desiredImage === image("b")
  ).map((a) => a.node);
}

/** Nodes idle on image a; the pool targets image b. */
function idleFleet(n: number) {
  const names = Array.from({ length: n }, (_, i) => `n${i}`);
  return {
    nodes: names.map((x) => node(x)),
    bootcNodes: names.map((x) => bootcNode(x, { desired: image("a"), phase: "idle" })),
  };
}

Deno.test("staging: without maxStaging every node gets the new image at once", () => {
  const plan = planPool(input(pool(), idleFleet(4)));
  assert.equal(retargeted(plan).length, 4);
});

Deno.test("staging: maxStaging bounds downloads; the rest queue with StagingLimit", () => {
  const p = pool();
  p.spec.rollout.maxStaging = 2;
  const plan = planPool(input(p, idleFleet(5)));
  assert.deepEqual(retargeted(plan), ["n0", "n1"]);
  const up = findCondition(plan.status?.conditions, "UpToDate");
  assert.equal(up?.reason, "StagingLimit");
  assert.match(up?.message ?? "", /staging limit: 2\/2 downloading, 3 queued/);
  // The same facts as fields, for views (the plugin) that must not read the message.
  assert.deepEqual(plan.status?.staging, { limit: 2, downloading: 2, queued: 3 });
  // The message after its node counts, part by part, for views that must not split it.
  assert.deepEqual(plan.status?.notes, ["staging limit: 2/2 downloading, 3 queued"]);
  assert.ok(up?.message.endsWith(`; ${plan.status?.notes?.join("; ")}`));
  // Without maxStaging nothing is held back: no staging field.
  assert.equal(planPool(input(pool(), idleFleet(5))).status?.staging, undefined);
});

Deno.test("staging: a place frees when a node staged; a failed or timed-out download holds none", () => {
  const p = pool();
  p.spec.rollout.maxStaging = "40%"; // of 5: 2
  const fleet = idleFleet(5);
  fleet.bootcNodes[0] = bootcNode("n0", { phase: "staged" });
  fleet.bootcNodes[1] = bootcNode("n1", { phase: "degraded" });
  fleet.bootcNodes[2] = bootcNode("n2", { phase: "staging" });
  fleet.bootcNodes[2].metadata.annotations = { [ANNOTATION_DESIRED_SINCE]: "2025-12-31T00:00:00Z" };
  const plan = planPool(input(p, fleet));
  // n0 staged, n1 failed, n2 past its staging deadline: two places for n3 and n4.
  assert.deepEqual(retargeted(plan), ["n3", "n4"]);
});

Deno.test("staging: a node in flight follows a new target whatever the queue", () => {
  const p = pool();
  p.spec.rollout.maxStaging = 1;
  const fleet = idleFleet(2);
  fleet.bootcNodes[0] = bootcNode("n0", { phase: "staging" });
  fleet.bootcNodes[1] = bootcNode("n1", {
    desired: image("a"),
    phase: "staged",
    slotAt: "2026-01-01T00:59:00Z",
  });
  fleet.nodes[1].unschedulable = true;
  const plan = planPool(input(p, fleet));
  assert.deepEqual(retargeted(plan), ["n1"]);
});
