/**
 * `rollout.minNodeReadySeconds` end to end: nodes that have just become Ready get no
 * reboot slot until they have been Ready that long; the pool says why in its queue, then
 * rolls out.
 */
import assert from "node:assert/strict";
import { startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  nodesByName,
  poolSpec,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

Deno.test("minNodeReadySeconds: a node gets a slot only once Ready that long", async () => {
  const stack = await startStack({ limits: { fresh: { maxUnavailable: 1 } } });
  const { v2, repository } = stack.images;
  try {
    const nodes = await addNodes(stack, "fresh", 2);
    /** Each node's Ready time, once both are Ready. */
    const readySince = async () => {
      const objs = await nodesByName(stack);
      const times = new Map(nodes.map((n) => {
        const ready = objs.get(n)?.status?.conditions?.find((c) =>
          c.type === "Ready" && c.status === "True"
        );
        return [n, Date.parse(String(ready?.lastTransitionTime))];
      }));
      return [...times.values()].every(Number.isFinite) ? times : undefined;
    };
    const minSeconds = 30;
    await stack.createPool(
      "fresh",
      poolSpec("fresh", `${repository}@${v2.digest}`, {
        maxUnavailable: 1,
        minNodeReadySeconds: minSeconds,
      }),
    );
    const held = await waitPool(
      stack,
      "fresh",
      async () => {
        const queue = (await getPool(stack, "fresh")).status?.queue ?? [];
        return queue.some((q) => q.waitingFor === "NodeNotReadyLongEnough") ? queue : undefined;
      },
      "the pool's queue names NodeNotReadyLongEnough",
    );
    assert.ok(held.length > 0);
    const ready = await waitPool(stack, "fresh", readySince, "both nodes Ready");
    assert.equal(stack.tracker.intervals.length, 0, "no slot while the nodes are fresh");
    await waitConverged(stack, "fresh", v2.digest, 2, 180_000);
    for (const n of nodes) {
      const first = Math.min(
        ...stack.tracker.intervals.filter((i) => i.node === n).map((i) => i.start),
      );
      const after = (first - ready.get(n)!) / 1000;
      // Seconds on the Node's condition: one second early is its rounding, not a slot.
      assert.ok(after >= minSeconds - 1, `${n}'s slot ${after.toFixed(1)} s after it was Ready`);
    }
    await assertInvariants(stack, nodes);
  } finally {
    await stopStack(stack);
  }
});
