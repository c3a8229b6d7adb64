/**
 * A BootcDisruptionBudget created while a rollout is under way holds from then on: two
 * pools of three nodes, each allowed two reboot slots, roll out; once two nodes are
 * disrupted a budget of one over both pools is created, and from a second later no node
 * gets a slot while any other node is disrupted.
 */
import assert from "node:assert/strict";
import type { BootcDisruptionBudget } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import type { DisruptionInterval } from "../harness/invariants.ts";
import { startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import { addNodes, assertInvariants, poolSpec, stopStack, waitConverged } from "./scenario.ts";

/** Intervals open at `at` (started before it, not ended by it), `self` aside. */
function openAt(intervals: readonly DisruptionInterval[], at: number, self: DisruptionInterval) {
  return intervals.filter((i) => i !== self && i.start < at && (i.end ?? Infinity) > at);
}

Deno.test("cluster budget created mid-rollout holds within a second", async () => {
  // Reboots long enough that the rollout is mid-flight when the budget lands.
  const stack = await startStack({
    rebootDelayMs: 2_500,
    limits: { east: { maxUnavailable: 2 }, west: { maxUnavailable: 2 } },
  });
  const { v2, repository } = stack.images;
  const ref2 = `${repository}@${v2.digest}`;
  try {
    const east = await addNodes(stack, "east", 3);
    const west = await addNodes(stack, "west", 3);
    await stack.createPool("east", poolSpec("east", ref2, { maxUnavailable: 2 }));
    await stack.createPool("west", poolSpec("west", ref2, { maxUnavailable: 2 }));
    const open = () => stack.tracker.intervals.filter((i) => i.end === undefined);
    await waitFor(() => open().length >= 2, {
      timeoutMs: 120_000,
      message: "two nodes disrupted",
    });
    await stack.cp.client.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets)
      .create({
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcDisruptionBudget",
        metadata: { name: "both" },
        spec: {
          nodeSelector: {
            matchExpressions: [{ key: "pool", operator: "In", values: ["east", "west"] }],
          },
          maxUnavailable: 1,
        },
      });
    const from = Date.now() + 1_000;
    await waitConverged(stack, "east", v2.digest, 3, 240_000);
    await waitConverged(stack, "west", v2.digest, 3, 240_000);
    const late = stack.tracker.intervals.filter((i) => i.start >= from);
    assert.ok(late.length > 0, "some node was granted a slot after the budget");
    for (const i of late) {
      const beside = openAt(stack.tracker.intervals, i.start, i).map((o) => o.node);
      assert.deepEqual(beside, [], `${i.node} got a slot while ${beside.join(", ")} disrupted`);
    }
    await assertInvariants(stack, [...east, ...west]);
  } finally {
    await stopStack(stack);
  }
});
