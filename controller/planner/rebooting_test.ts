/**
 * A node whose daemon says it is rebooting is disrupted, whatever the target says
 * now (issue 22): a retarget mid-reboot neither frees its slot nor leaves the wait
 * unbounded, a retarget to the host's rollback image is no "fall-back", and a stale
 * Rebooting report is never verified and released.
 */
import assert from "node:assert/strict";
import { type Condition, findCondition } from "../../lib/api/mod.ts";
import { classifyNode, NodeState } from "../../lib/api/node_state.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";
import { planPool } from "./planner.ts";

function cond(type: string, status: "True" | "False", reason: string, message: string): Condition {
  return { type, status, reason, message, lastTransitionTime: "2026-01-01T00:40:00Z" };
}

function entry(name: string) {
  return { image: image(name), imageDigest: image(name).split("@")[1], architecture: "amd64" };
}

/** n1 was rebooting into b when the pool was retargeted to its booted image a. */
function retargetedToBooted() {
  const bn = bootcNode("n1", {
    booted: image("a"),
    desired: image("a"),
    phase: "rebooting", // since 00:00 (the fixture's time)
    slotAt: "2026-01-01T00:00:00Z",
  });
  bn.metadata.generation = 3;
  bn.status!.observedGeneration = 3;
  bn.status!.staged = entry("b");
  bn.status!.conditions!.push(cond("ImageStaged", "True", "Staged", `Staged ${image("b")}`));
  return bn;
}

for (
  const [now, stalled] of [["2026-01-01T00:20:00Z", false], ["2026-01-03T05:00:00Z", true]] as const
) {
  Deno.test(`retargeted mid-reboot and never back: holds its slot; stalled=${stalled}`, () => {
    const n1 = node("n1", { unschedulable: true, ready: false, readySince: undefined });
    const n2 = bootcNode("n2", {
      booted: image("b"),
      desired: image("a"),
      phase: "staged",
      rollback: image("a"),
    });
    const plan = planPool(
      input(pool({ ref: image("a") }), {
        nodes: [n1, node("n2")],
        bootcNodes: [retargetedToBooted(), n2],
        now,
      }),
    );
    assert.equal(plan.status?.slots?.inUse, 1, "n1 keeps its slot");
    assert.ok(
      !plan.actions.some((a) => a.kind === "patchNode" && a.intent === "grant"),
      "no grant",
    );
    const degraded = findCondition(plan.status?.conditions, "Degraded");
    if (stalled) {
      assert.equal(degraded?.status, "True");
      assert.match(degraded!.message, /n1 is still rebooting/);
      assert.ok(plan.events.some((e) => e.reason === "RebootTimedOut"));
    } else {
      assert.equal(degraded?.status, "False");
      assert.ok(plan.requeueAfterMs !== undefined, "a wake-up at the reboot deadline");
    }
  });
}

/** Rebooting into b; the pool now targets c, the host's rollback deployment. */
function retargetedToRollback() {
  const bn = bootcNode("n1", {
    booted: image("a"),
    desired: image("c"),
    phase: "rebooting",
    rollback: image("c"),
    slotAt: "2026-01-01T00:30:00Z",
  });
  bn.status!.staged = entry("b");
  bn.status!.conditions!.push(cond("ImageStaged", "True", "Staged", `Staged ${image("b")}`));
  bn.status!.conditions!.push(
    cond("Rebooted", "False", "Rebooting", `Rebooting into ${image("b")}`),
  );
  return bn;
}

Deno.test("retargeted to the rollback image mid-reboot: rebooting, not fallen back", () => {
  const cls = classifyNode({
    bootcNode: retargetedToRollback(),
    node: { annotations: {}, unschedulable: true, ready: false },
    poolTarget: { image: image("c") },
    member: true,
  });
  assert.equal(cls.state, NodeState.Rebooting);
  assert.equal(cls.disrupted, true);
});

Deno.test("retargeted to the rollback image mid-reboot, spec then invalid: not undone", () => {
  const p = pool({ ref: image("c"), maxUnavailable: "150%" });
  const n2 = bootcNode("n2", { booted: image("a"), desired: image("c"), phase: "staged" });
  const plan = planPool(
    input(p, {
      nodes: [node("n1", { unschedulable: true, ready: true }), node("n2")],
      bootcNodes: [retargetedToRollback(), n2],
    }),
  );
  assert.equal(plan.status?.slots?.inUse, 1);
  assert.ok(!plan.events.some((e) => e.reason === "UpdateUndone"), "not released mid-reboot");
});

Deno.test("a stale Rebooting report on the target is never verified and released", () => {
  const bn = bootcNode("n1", {
    booted: image("b"),
    desired: image("b"),
    phase: "rebooting",
    slotAt: "2026-01-01T00:30:00Z",
    drainedAt: "2026-01-01T00:35:00Z",
    state: "Booted",
  });
  bn.status!.staged = undefined;
  const n1 = node("n1", { unschedulable: true, ready: true, readySince: "2026-01-01T00:50:00Z" });
  const plan = planPool(
    input(pool(), {
      nodes: [n1, node("n2")],
      bootcNodes: [bn, bootcNode("n2", { phase: "staged" })],
      now: "2026-01-01T01:00:00Z",
    }),
  );
  assert.equal(plan.status?.slots?.inUse, 1, "still in its slot");
  assert.ok(!plan.actions.some((a) => "why" in a && a.why === "release slot"), "not released");
});
