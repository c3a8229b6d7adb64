import assert from "node:assert/strict";
import { type BootcNodePool, type BootcNodePoolStatus, PoolState } from "../../lib/api/mod.ts";
import { bootcNode, digest, image, input, node, pool } from "../testing/fixtures.ts";
import { deletionEnd, finishingOutcome, finishingPool } from "./deletion_end.ts";
import { type Action, type Plan, planPool } from "./planner.ts";

const NOW = new Date("2026-01-01T01:00:00Z");

/** A pool deleted mid-rollout from image a (rolled out before) to b, under `mode`. */
function deleted(
  deletionPolicy?: BootcNodePool["spec"]["deletionPolicy"],
  status: Partial<BootcNodePoolStatus> = {},
): BootcNodePool {
  const p = pool({
    status: {
      targetImage: image("b"),
      targetDigest: digest("b"),
      history: [
        {
          revision: 1,
          image: image("a"),
          digest: digest("a"),
          startedAt: "2025-12-31T00:00:00Z",
          outcome: "Succeeded",
        },
        {
          revision: 2,
          image: image("b"),
          digest: digest("b"),
          startedAt: "2026-01-01T00:00:00Z",
          outcome: "Progressing",
        },
      ],
      ...status,
    },
  });
  p.metadata.deletionTimestamp = "2026-01-01T00:59:00Z";
  if (deletionPolicy) p.spec.deletionPolicy = deletionPolicy;
  return p;
}

/** Three nodes, `onB` of them booted on b. */
function fleet(onB: number) {
  return [0, 1, 2].map((i) => bootcNode(`n${i}`, { booted: image(i < onB ? "b" : "a") }));
}

function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}

Deno.test("deletionEnd: Release and no policy hand back where they stand", () => {
  assert.equal(deletionEnd(deleted(), fleet(1), NOW), undefined);
  assert.equal(deletionEnd(deleted({ mode: "Release" }), fleet(1), NOW), undefined);
  const live = deleted({ mode: "RollForward" });
  delete live.metadata.deletionTimestamp;
  assert.equal(deletionEnd(live, fleet(1), NOW), undefined, "a live pool does not finish");
});

Deno.test("deletionEnd: RollForward to the target, RollBack to the image rolled out before", () => {
  const forward = deletionEnd(deleted({ mode: "RollForward" }), fleet(1), NOW);
  assert.deepEqual(forward, {
    direction: "Forward",
    image: image("b"),
    digest: digest("b"),
    decidedAt: "2026-01-01T01:00:00Z",
  });
  const back = deletionEnd(deleted({ mode: "RollBack" }), fleet(2), NOW);
  assert.equal(back?.direction, "Back");
  assert.equal(back?.image, image("a"));
  // The first rollout has nothing to go back to: handed back where they stand.
  assert.equal(
    deletionEnd(deleted({ mode: "RollBack" }, { history: [] }), fleet(1), NOW),
    undefined,
  );
});

Deno.test("deletionEnd: Threshold rolls forward from its share of nodes on the target", () => {
  const at = (threshold: string | undefined, onB: number) =>
    deletionEnd(deleted({ mode: "Threshold", threshold }), fleet(onB), NOW)?.direction;
  assert.equal(at(undefined, 2), "Forward", "2 of 3 is over the default 50%");
  assert.equal(at(undefined, 1), "Back");
  assert.equal(at("34%", 1), "Back", "1 of 3 is 33%");
  assert.equal(at("33%", 1), "Forward");
  assert.equal(at("100%", 2), "Back");
  assert.equal(at("0%", 0), "Forward");
  // Nothing to go back to: forward, the only image the fleet ran whole.
  const first = deleted({ mode: "Threshold" }, { history: [] });
  assert.equal(deletionEnd(first, fleet(0), NOW)?.direction, "Forward");
});

Deno.test("deletionEnd: the choice recorded in status stands while nodes finish", () => {
  const recorded = {
    direction: "Back" as const,
    image: image("a"),
    digest: digest("a"),
    decidedAt: "2026-01-01T00:59:10Z",
  };
  const p = deleted({ mode: "Threshold" }, { deletion: recorded });
  assert.deepEqual(deletionEnd(p, fleet(3), NOW), recorded);
});

Deno.test("finishingPool: live, pinned to the end image, its channel dropped", () => {
  const p = deleted({ mode: "RollBack" });
  const end = deletionEnd(p, fleet(1), NOW)!;
  const view = finishingPool(p, end);
  assert.equal(view.metadata.deletionTimestamp, undefined);
  assert.equal(view.spec.image.ref, image("a"));
  assert.equal(view.spec.image.channel, undefined);
  assert.deepEqual(view.status?.deletion, end);
  assert.equal(p.metadata.deletionTimestamp, "2026-01-01T00:59:00Z", "the pool is not changed");
});

Deno.test("finishingOutcome: done on the image, abandoned when the rollout cannot go on", () => {
  const end = {
    direction: "Forward" as const,
    image: image("b"),
    digest: digest("b"),
    decidedAt: "x",
  };
  const cond = (status: "True" | "False") => [{
    type: "UpToDate",
    status,
    reason: status === "True" ? "AllUpdated" : "RolloutInProgress",
    message: "",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  }];
  const done = finishingOutcome({ targetDigest: digest("b"), conditions: cond("True") }, end);
  assert.deepEqual([done.done, done.abandoned, done.reason], [true, false, "DeletionFinished"]);
  const going = finishingOutcome({ targetDigest: digest("b"), conditions: cond("False") }, end);
  assert.deepEqual([going.done, going.reason], [false, "DeletionFinishing"]);
  assert.match(going.message, /rolling every node forward to .*before handing the nodes back/);
  const halted = finishingOutcome({ state: PoolState.Halted, conditions: cond("False") }, end);
  assert.deepEqual([halted.done, halted.abandoned], [true, true]);
  assert.match(halted.message, /cannot go on \(Halted\)/);
});

Deno.test("planPool: a deleted RollBack pool stages the image before, keeps its finalizer", () => {
  const p = deleted({ mode: "RollBack" });
  const bns = fleet(1).map((bn) => ({ ...bn, spec: { ...bn.spec, desiredImage: image("b") } }));
  const plan = planPool(
    input(p, { nodes: bns.map((b) => node(b.metadata.name!)), bootcNodes: bns }),
  );
  assert.deepEqual(ofKind(plan, "removeFinalizer"), []);
  assert.deepEqual(ofKind(plan, "deleteBootcNode"), []);
  const specs = ofKind(plan, "patchBootcNode")
    .filter((a) => (a.patch.spec as { desiredImage?: string } | undefined)?.desiredImage);
  assert.deepEqual(
    specs.map((a) => [a.node, (a.patch.spec as { desiredImage: string }).desiredImage]),
    [["n0", image("a")], ["n1", image("a")], ["n2", image("a")]],
  );
  assert.equal(plan.status?.deletion?.direction, "Back");
  assert.ok(plan.events.some((e) => e.reason === "DeletionFinishing"));
});

Deno.test("planPool: a finishing pool whose nodes all run the end image is handed back", () => {
  const end = {
    direction: "Back" as const,
    image: image("a"),
    digest: digest("a"),
    decidedAt: "2026-01-01T00:59:10Z",
  };
  const p = deleted({ mode: "RollBack" }, {
    deletion: end,
    targetImage: image("a"),
    targetDigest: digest("a"),
  });
  const bns = fleet(0).map((bn) => ({ ...bn, spec: { ...bn.spec, desiredImage: image("a") } }));
  const plan = planPool(
    input(p, { nodes: bns.map((b) => node(b.metadata.name!)), bootcNodes: bns }),
  );
  assert.deepEqual(ofKind(plan, "deleteBootcNode").map((a) => a.node), ["n0", "n1", "n2"]);
  assert.ok(plan.events.some((e) => e.reason === "DeletionFinished"));
});

Deno.test("planPool: a finishing pool takes no new node, so its release is final", () => {
  const end = {
    direction: "Forward" as const,
    image: image("b"),
    digest: digest("b"),
    decidedAt: "2026-01-01T00:59:10Z",
  };
  const p = deleted({ mode: "RollForward" }, { deletion: end });
  // n0 still its own and on b; n1 already handed back (no BootcNode), n2 matches only now.
  const own = bootcNode("n0", { booted: image("b") });
  const plan = planPool(
    input(p, { nodes: ["n0", "n1", "n2"].map((n) => node(n)), bootcNodes: [own] }),
  );
  assert.deepEqual(ofKind(plan, "createBootcNode"), []);
  assert.deepEqual(ofKind(plan, "deleteBootcNode").map((a) => a.node), ["n0"]);
  const last = planPool(input(p, { nodes: ["n0", "n1", "n2"].map((n) => node(n)) }));
  assert.deepEqual(last.actions.map((a) => a.kind), ["removeFinalizer"]);
});

Deno.test("planPool: a finishing rollout that halts hands the nodes back where they stand", () => {
  const end = {
    direction: "Forward" as const,
    image: image("b"),
    digest: digest("b"),
    decidedAt: "2026-01-01T00:59:10Z",
  };
  const p = deleted({ mode: "RollForward" }, { deletion: end });
  p.spec.rollout = { ...p.spec.rollout, maxUnavailable: 3 };
  const earlier = "2026-01-01T00:58:00Z";
  const plan = planPool(input(p, {
    nodes: [node("a", { unschedulable: true }), node("b", { unschedulable: true }), node("c")],
    bootcNodes: [
      bootcNode("a", { phase: "degraded", slotAt: earlier, drainedAt: earlier, state: "Booted" }),
      bootcNode("b", { phase: "degraded", slotAt: earlier, drainedAt: earlier, state: "Booted" }),
      bootcNode("c", { phase: "staged" }),
    ],
  }));
  const abandoned = plan.events.find((e) => e.reason === "DeletionFinishAbandoned");
  assert.equal(abandoned?.type, "Warning");
  assert.match(abandoned?.message ?? "", /cannot go on \(Halted\)/);
  assert.ok(ofKind(plan, "deleteBootcNode").some((a) => a.node === "c"), "c handed back");
  assert.equal(plan.status, undefined, "planned as a deleted pool, no rollout status");
});
