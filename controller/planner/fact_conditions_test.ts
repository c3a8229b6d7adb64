import assert from "node:assert/strict";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  type BootcNode,
  type Condition,
  findCondition,
  setCondition,
} from "../../lib/api/mod.ts";
import { FACT_CONDITIONS_WHY, withFactConditions } from "./fact_conditions.ts";
import { type Action, planPool } from "./planner.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const SLOT = "2026-01-01T00:50:00Z";

/** `bn` with Cordoned and Drained True, as written while it was in its slot for image("b"). */
function cordonedAndDrained(bn: BootcNode): BootcNode {
  let conditions: Condition[] = bn.status?.conditions ?? [];
  for (const type of ["Cordoned", "Drained"]) {
    conditions = setCondition(conditions, {
      type,
      status: "True",
      reason: type,
      message: `${type} for ${image("b")}`,
    }, new Date(SLOT));
  }
  bn.metadata.resourceVersion = "7";
  return { ...bn, status: { ...bn.status!, conditions } };
}

function statusWrites(actions: readonly Action[], name: string) {
  return actions.filter((a): a is Extract<Action, { kind: "patchBootcNodeStatus" }> =>
    a.kind === "patchBootcNodeStatus" && a.node === name
  );
}

function conditionsOf(a: { patch: Record<string, unknown> }): Condition[] {
  return (a.patch.status as { conditions: Condition[] }).conditions;
}

Deno.test("an updated, uncordoned node's Cordoned and Drained True are set False", () => {
  const bn = cordonedAndDrained(bootcNode("n1", { booted: image("b"), desired: image("b") }));
  const plan = planPool(
    input(pool(), { nodes: [node("n1")], bootcNodes: [bn], now: NOW.toISOString() }),
  );
  const [write] = statusWrites(plan.actions, "n1");
  assert.equal(write?.why, FACT_CONDITIONS_WHY);
  assert.deepEqual(write.patch.metadata, { resourceVersion: "7" });
  for (const type of ["Cordoned", "Drained"]) {
    const c = findCondition(conditionsOf(write), type);
    assert.deepEqual([c?.status, c?.reason], ["False", "NotInSlot"], type);
  }
  // Every other condition as it was.
  assert.deepEqual(
    findCondition(conditionsOf(write), "Idle"),
    findCondition(bn.status?.conditions, "Idle"),
  );
  // Written once: the next plan sees False and writes nothing.
  const next = { ...bn, status: { ...bn.status!, conditions: conditionsOf(write) } };
  const again = planPool(
    input(pool(), { nodes: [node("n1")], bootcNodes: [next], now: NOW.toISOString() }),
  );
  assert.deepEqual(statusWrites(again.actions, "n1"), []);
});

Deno.test("Cordoned and Drained stay True while the node is in its slot, cordoned and drained", () => {
  const bn = cordonedAndDrained(
    bootcNode("n1", { booted: image("b"), slotAt: SLOT, drainedAt: SLOT, state: "Booted" }),
  );
  const n = node("n1", { unschedulable: true, readySince: SLOT });
  const actions = withFactConditions(
    [],
    [{ node: { ...n, annotations: planned(bn) }, bn }],
    NOW,
  );
  assert.deepEqual(actions, []);
  // Uncordoned by someone while it holds the slot: no longer cordoned in it.
  const uncordoned = withFactConditions(
    [],
    [{ node: { ...n, unschedulable: false, annotations: planned(bn) }, bn }],
    NOW,
  );
  const c = conditionsOf(statusWrites(uncordoned, "n1")[0]);
  assert.equal(findCondition(c, "Cordoned")?.status, "False");
  assert.equal(findCondition(c, "Drained")?.status, "True");
});

Deno.test("the correction rides in the plan's own status write for that BootcNode", () => {
  const bn = cordonedAndDrained(bootcNode("n1", { booted: image("b") }));
  const own: Action = {
    kind: "patchBootcNodeStatus",
    node: "n1",
    patch: {
      metadata: { resourceVersion: "7" },
      status: {
        conditions: setCondition(bn.status?.conditions, {
          type: "Stalled",
          status: "False",
          reason: "Progressing",
          message: "",
        }, NOW),
      },
    },
    why: "no longer stalled",
  };
  const actions = withFactConditions([own], [{ node: node("n1"), bn }], NOW);
  assert.equal(actions.length, 1);
  const [write] = statusWrites(actions, "n1");
  const c = conditionsOf(write);
  assert.equal(write.why, "no longer stalled");
  assert.deepEqual(
    ["Stalled", "Cordoned", "Drained"].map((t) => findCondition(c, t)?.status),
    ["False", "False", "False"],
  );
});

/** The Node annotations of `bn`'s slot (the fixture keeps them on the BootcNode). */
function planned(bn: BootcNode): Record<string, string> {
  return {
    [ANNOTATION_IN_REBOOT_SLOT]: SLOT,
    [ANNOTATION_DRAINED_AT]: SLOT,
    [ANNOTATION_DRAINED_FOR]: bn.spec.desiredImage,
  };
}
