import assert from "node:assert/strict";
import {
  ANNOTATION_NODE_STATE,
  ANNOTATION_STATE_DETAIL,
  ANNOTATION_STATE_SINCE,
  ANNOTATION_TARGET_SHORT,
  type BootcNode,
} from "../../lib/api/mod.ts";
import {
  BOOTC_NODE_DISPLAY_WHY,
  desiredShort,
  foldBootcNodeDisplay,
} from "./bootc_node_display.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, digest, image, input, node, pool, REPO } from "../testing/fixtures.ts";
import { A, B, settledWorld } from "../testing/health_world.ts";

const NOW = "2026-01-01T01:00:00Z";
const EARLIER = "2026-01-01T00:59:00Z";
const B12 = "b".repeat(12);

/** `bn` carrying the display annotations of `state` (desired image("b")). */
function shown(bn: BootcNode, state: string): BootcNode {
  bn.metadata.annotations = {
    ...bn.metadata.annotations,
    [ANNOTATION_NODE_STATE]: state,
    [ANNOTATION_STATE_SINCE]: "2026-01-01T00:00:00Z",
    [ANNOTATION_TARGET_SHORT]: B12,
  };
  return bn;
}

/** The plan's writes as the shell applies them. */
function applied(plan: Plan): Action[] {
  return foldBootcNodeDisplay(plan.actions, plan.bootcNodeDisplay);
}

function bnPatches(actions: readonly Action[], name: string) {
  return actions.filter((a): a is Extract<Action, { kind: "patchBootcNode" }> =>
    a.kind === "patchBootcNode" && a.node === name
  );
}

function annotationsOf(a: { patch: Record<string, unknown> }): Record<string, string> {
  return (a.patch.metadata as { annotations: Record<string, string> }).annotations;
}

Deno.test("desiredShort: the pool's tag and 12 hex digits for the target, else the digest's", () => {
  const target = { image: image("b"), digest: digest("b") };
  assert.equal(desiredShort(image("b"), target, { tag: "v2", version: "2.0" }), `v2 ${B12}`);
  assert.equal(desiredShort(image("a"), target, { tag: "v2" }), "a".repeat(12));
});

Deno.test("display: a new member's BootcNode is created saying Pending, no write of its own", () => {
  const plan = planPool(input(pool({ ref: `${REPO}:v2` }), {
    nodes: [node("a")],
    resolution: { generation: 1, at: new Date(NOW), result: { ok: true, digest: digest("b") } },
  }));
  const created = applied(plan).find((a) => a.kind === "createBootcNode");
  assert.ok(created?.kind === "createBootcNode");
  assert.deepEqual(created.object.metadata.annotations, {
    ...created.object.metadata.annotations,
    [ANNOTATION_NODE_STATE]: "Pending",
    [ANNOTATION_STATE_SINCE]: NOW,
    [ANNOTATION_TARGET_SHORT]: `v2 ${B12}`,
  });
  assert.deepEqual(bnPatches(applied(plan), "a"), []);
});

/** `a` staged (its BootcNode showing `state`) while `x` holds the pool's one slot. */
function stagedBehind(state: string, o: { paused?: boolean } = {}) {
  return planPool(input(pool({ maxUnavailable: 1, paused: o.paused ?? false }), {
    nodes: [node("x", { unschedulable: true }), node("a")],
    bootcNodes: [
      shown(
        bootcNode("x", { phase: "rebooting", slotAt: EARLIER, drainedAt: EARLIER }),
        "Rebooting",
      ),
      shown(bootcNode("a", { phase: "staged" }), state),
    ],
  }));
}

Deno.test("display: the daemon's Staged after Pending, slots handed out: no write of its own", () => {
  const plan = stagedBehind("Pending");
  assert.equal(plan.bootcNodeDisplay?.get("a"), undefined);
  assert.deepEqual(bnPatches(applied(plan), "a"), []);
});

Deno.test("display: Staged is written at once when no grant is coming, after Staging, or from worse", () => {
  for (
    const [state, paused] of [["Pending", true], ["Staging", false], ["Failed", false]] as const
  ) {
    const plan = stagedBehind(state, { paused });
    assert.deepEqual(plan.bootcNodeDisplay?.get("a"), {
      [ANNOTATION_NODE_STATE]: "Staged",
      [ANNOTATION_STATE_DETAIL]: "",
      [ANNOTATION_STATE_SINCE]: NOW,
    }, `${state}, paused ${paused}`);
    const writes = bnPatches(applied(plan), "a");
    assert.deepEqual(writes.map((w) => [w.why, w.intent]), [[BOOTC_NODE_DISPLAY_WHY, "annotate"]]);
  }
  const again = stagedBehind("Staged", { paused: true });
  assert.equal(again.bootcNodeDisplay?.get("a"), undefined);
  assert.deepEqual(bnPatches(applied(again), "a"), []);
});

Deno.test("display: the daemon's Staging costs no write of its own", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("a")],
    bootcNodes: [shown(bootcNode("a", { phase: "staging" }), "Pending")],
  }));
  assert.equal(plan.bootcNodeDisplay, undefined);
  assert.deepEqual(bnPatches(applied(plan), "a"), []);
  const recovered = planPool(input(pool(), {
    nodes: [node("a")],
    bootcNodes: [shown(bootcNode("a", { phase: "staging" }), "Degraded")],
  }));
  assert.equal(recovered.bootcNodeDisplay?.get("a")?.[ANNOTATION_NODE_STATE], "Staging");
  assert.equal(bnPatches(applied(recovered), "a").length, 1);
});

Deno.test("display: a grant says Draining in the grant's own BootcNode write", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("a")],
    bootcNodes: [shown(bootcNode("a", { phase: "staged" }), "Staged")],
  }));
  const writes = bnPatches(applied(plan), "a");
  assert.deepEqual(writes.map((w) => w.why), ["mirror prior cordon state"]);
  assert.equal(annotationsOf(writes[0])[ANNOTATION_NODE_STATE], "Draining");
});

Deno.test("display: a reboot request says Rebooting, a release Updated, in their own writes", () => {
  const drained = planPool(input(pool(), {
    nodes: [node("a", { unschedulable: true })],
    bootcNodes: [shown(bootcNode("a", { phase: "staged", slotAt: EARLIER }), "Draining")],
  }));
  const request = bnPatches(applied(drained), "a");
  assert.deepEqual(request.map((w) => w.why), ["request reboot"]);
  assert.equal(annotationsOf(request[0])[ANNOTATION_NODE_STATE], "Rebooting");

  const released = planPool(input(pool(), {
    nodes: [node("n1", { unschedulable: true, readySince: "2026-01-01T00:00:00Z" })],
    bootcNodes: [shown(
      bootcNode("n1", {
        booted: image("b"),
        slotAt: "2026-01-01T00:50:00Z",
        drainedAt: EARLIER,
        state: "Booted",
      }),
      "Verifying",
    )],
  }));
  const release = bnPatches(applied(released), "n1");
  assert.deepEqual(release.map((w) => w.why), ["release slot"]);
  assert.equal(annotationsOf(release[0])[ANNOTATION_NODE_STATE], "Updated");
});

Deno.test("display: the annotations are never read back (same plan with or without them)", () => {
  const bare = input(pool(), {
    nodes: [node("a"), node("b")],
    bootcNodes: [bootcNode("a", { phase: "staged" }), bootcNode("b", { phase: "staging" })],
  });
  const marked = input(pool(), {
    nodes: [node("a"), node("b")],
    bootcNodes: [
      shown(bootcNode("a", { phase: "staged" }), "Failed"),
      shown(bootcNode("b", { phase: "staging" }), "Updated"),
    ],
  });
  const [p1, p2] = [planPool(bare), planPool(marked)];
  assert.deepEqual(p1.actions, p2.actions);
  assert.deepEqual(p1.status, p2.status);
});

Deno.test("display: a failed node shows Failed and the check it failed; the detail empties after", () => {
  const w = settledWorld({ onFailure: "Halt", maxUnavailable: 1 });
  w.bad.set(B, "unit");
  w.edit((p) => p.spec.image.ref = B);
  // The shell folds the display into the plan's writes; the world applies those.
  const tick = () => {
    const plan = w.plan();
    w.apply({ ...plan, actions: applied(plan) });
    w.daemon();
    w.now = new Date(w.now.getTime() + 1_000);
    return plan;
  };
  let failed: string | undefined;
  for (let i = 0; i < 30 && !failed; i++) {
    tick();
    failed = [...w.bns.values()].find((bn) =>
      bn.metadata.annotations?.[ANNOTATION_NODE_STATE] === "Failed"
    )?.metadata.name;
  }
  assert.ok(failed, "a node shows Failed");
  const annotations = w.bns.get(failed)!.metadata.annotations ?? {};
  assert.equal(annotations[ANNOTATION_STATE_DETAIL], "HostHealthy");
  assert.ok(annotations[ANNOTATION_TARGET_SHORT]);
  for (const [name, bn] of w.bns) {
    if (name === failed) continue;
    assert.equal(bn.metadata.annotations?.[ANNOTATION_STATE_DETAIL], "", name);
  }
  // Sent back to the good image, it is no longer Failed: the detail is removed.
  w.edit((p) => p.spec.image.ref = A);
  for (let i = 0; i < 30; i++) tick();
  const after = w.bns.get(failed)!.metadata.annotations ?? {};
  assert.notEqual(after[ANNOTATION_NODE_STATE], "Failed");
  assert.equal(after[ANNOTATION_STATE_DETAIL], "");
});
