/**
 * The planner reads every node through the one classification
 * (`lib/api/node_state.ts`): the defects of issue 22 that came from facts derived
 * twice, each as a plan on plain inputs.
 */
import assert from "node:assert/strict";
import {
  type BootcNode,
  type BootEntryStatus,
  findCondition,
  setCondition,
} from "../../lib/api/mod.ts";
import { type Plan, planPool } from "./planner.ts";
import { bootcNode, digest, image, input, node, pool } from "../testing/fixtures.ts";

const EARLIER = "2026-01-01T00:59:00Z";

function withWhy(plan: Plan, why: string): string[] {
  return plan.actions.flatMap((a) =>
    (a.kind === "patchBootcNode" || a.kind === "patchNode") && a.why === why ? [a.node] : []
  );
}

function entry(seed: string, downloadOnly = true): BootEntryStatus {
  return { image: image(seed), imageDigest: digest(seed), architecture: "amd64", downloadOnly };
}

Deno.test("retarget to the booted image while a node reboots: it keeps its slot, nobody else gets one", () => {
  // n1 holds the only slot for c, drained, and its daemon applies c (booted a). The pool
  // is retargeted to a, n1's booted image, while the machine is down.
  const p = pool({ ref: image("a"), maxUnavailable: 1 });
  const n1 = bootcNode("n1", {
    desired: image("c"),
    booted: image("a"),
    phase: "rebooting",
    state: "Booted",
    slotAt: EARLIER,
    drainedAt: EARLIER,
  });
  // n2 waits with a staged: it would take the slot if n1 were released.
  const n2 = bootcNode("n2", { desired: image("a"), booted: image("d"), phase: "staged" });
  const n1Node = node("n1", { unschedulable: true });
  const plan = planPool(input(p, { nodes: [n1Node, node("n2")], bootcNodes: [n1, n2] }));
  assert.deepEqual(withWhy(plan, "release slot"), [], "n1's slot is not released");
  assert.deepEqual(withWhy(plan, "assign slot"), [], "no second node is disrupted");
  assert.equal(plan.status?.slotsInUse, 1);
  assert.equal(plan.counts.Rebooting, 1, "n1 counts as rebooting");
  assert.equal(plan.counts.UpToDate, 0);
});

Deno.test("back from that reboot on the old target: still in its slot, redone through the rollback", () => {
  // n1 came back on c (the old target); a, the target, is its rollback deployment.
  const p = pool({ ref: image("a"), maxUnavailable: 1 });
  const n1 = rollbackRouteNode("n1", { booted: "c", target: "a", slotAt: EARLIER });
  const plan = planPool(
    input(p, { nodes: [node("n1", { unschedulable: true })], bootcNodes: [n1] }),
  );
  assert.deepEqual(withWhy(plan, "release slot"), []);
  assert.deepEqual(withWhy(plan, "record drain"), ["n1"]);
  assert.deepEqual(withWhy(plan, "request reboot"), ["n1"]);
});

/**
 * A node whose daemon reports `target` as its rollback deployment: nothing to stage
 * (`staged` is another image, a copy of the booted one, or nothing).
 */
function rollbackRouteNode(
  name: string,
  o: { booted: string; target: string; staged?: string; slotAt?: string },
): BootcNode {
  const bn = bootcNode(name, {
    desired: image(o.target),
    booted: image(o.booted),
    phase: "staged",
    rollback: image(o.target),
    slotAt: o.slotAt,
  });
  const status = bn.status!;
  status.staged = o.staged ? entry(o.staged) : undefined;
  status.rollback = entry(o.target);
  const at = new Date("2026-01-01T00:00:00Z");
  status.conditions = setCondition(status.conditions, {
    type: "Idle",
    status: "False",
    reason: "Staged",
    message: `${image(o.target)} is the rollback deployment: nothing to stage; ` +
      "awaiting desiredImageState: Booted",
  }, at);
  status.conditions = setCondition(status.conditions, {
    type: "ImageStaged",
    status: "True",
    reason: "RollbackDeployment",
    message: `${image(o.target)} is the rollback deployment: nothing to download`,
  }, at);
  return bn;
}

for (
  const [what, staged] of [
    ["nothing staged", undefined],
    ["another image staged", "c"],
    ["a copy of the booted image staged", "b"],
  ] as const
) {
  Deno.test(`target = the hosts' rollback deployment (${what}): a slot is granted`, () => {
    // Every host booted b with a as its rollback deployment; the pool goes back to a.
    const p = pool({ ref: image("a"), maxUnavailable: 1 });
    const names = ["n1", "n2", "n3"];
    const bns = names.map((n) => rollbackRouteNode(n, { booted: "b", target: "a", staged }));
    const plan = planPool(input(p, { nodes: names.map((n) => node(n)), bootcNodes: bns }));
    assert.deepEqual(withWhy(plan, "assign slot"), ["n1"]);
    // n1 holds a slot once the plan is applied (counted rebooting); the others wait staged.
    assert.equal(plan.counts.Staged, 2, JSON.stringify(plan.counts));
    assert.equal(plan.counts.Rebooting, 1, JSON.stringify(plan.counts));
    assert.equal(plan.counts.Pending, 0);
  });
}

for (const how of ["maxStaging", "stageOutsideWindows"] as const) {
  Deno.test(`nodes held back by ${how} count as pending, never as degraded`, () => {
    const p = pool();
    if (how === "maxStaging") p.spec.rollout!.maxStaging = 1;
    else {
      // A window that is closed now (01:00 UTC), staging only inside it.
      p.spec.maintenance = {
        windows: [{ schedule: "0 12 * * *", duration: "1h" }],
        stageOutsideWindows: false,
      };
    }
    const names = ["n1", "n2", "n3", "n4"];
    const bns = names.map((n) => bootcNode(n, { desired: image("a"), phase: "idle" }));
    const plan = planPool(input(p, { nodes: names.map((n) => node(n)), bootcNodes: bns }));
    assert.equal(plan.counts.Degraded, 0, JSON.stringify(plan.counts));
    assert.equal(plan.status?.degradedCount, 0);
    assert.equal(plan.counts.Pending, 4, JSON.stringify(plan.counts));
    assert.equal(findCondition(plan.status?.conditions, "Degraded")?.status, "False");
    assert.doesNotMatch(
      findCondition(plan.status?.conditions, "UpToDate")?.message ?? "",
      /degraded/,
    );
  });
}

Deno.test("a node rolled back by RollbackNode still counts as degraded", () => {
  const p = pool({
    status: {
      targetImage: image("b"),
      targetDigest: digest("b"),
      history: [
        {
          revision: 1,
          image: image("a"),
          digest: digest("a"),
          outcome: "Succeeded",
          startedAt: "2026-01-01T00:00:00Z",
        },
        {
          revision: 2,
          image: image("b"),
          digest: digest("b"),
          outcome: "Progressing",
          startedAt: "2026-01-01T00:00:00Z",
        },
      ],
    },
  });
  p.spec.rollout!.onFailure = "RollbackNode";
  const bn = bootcNode("n1", { desired: image("a"), booted: image("a"), phase: "idle" });
  bn.metadata.annotations = { ...bn.metadata.annotations, "bootc.dev/failed-image": image("b") };
  const plan = planPool(input(p, { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(plan.counts.Degraded, 1, JSON.stringify(plan.counts));
});

Deno.test("target = the rollback deployment with another image staged: no StagingTimeout", () => {
  // Desired for an hour (past the 30-minute staging timeout), v3 staged: nothing to stage.
  const p = pool({ ref: image("a"), maxUnavailable: 1 });
  const bn = rollbackRouteNode("n1", { booted: "b", target: "a", staged: "c" });
  bn.metadata.annotations = {
    ...bn.metadata.annotations,
    "bootc.dev/desired-since": "2026-01-01T00:00:00Z",
  };
  bn.metadata.generation = 1;
  bn.status!.observedGeneration = 1;
  const plan = planPool(input(p, { nodes: [node("n1")], bootcNodes: [bn] }));
  const stalled = plan.actions.filter((a) =>
    a.kind === "patchBootcNodeStatus" && /stalled/.test(a.why ?? "")
  );
  assert.deepEqual(stalled, [], "not stalled: it is ready for a slot");
  assert.deepEqual(withWhy(plan, "assign slot"), ["n1"]);
});
