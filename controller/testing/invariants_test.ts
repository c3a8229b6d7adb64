import assert from "node:assert/strict";
import { RolloutInvariants } from "./invariants.ts";
import { bootcNode } from "./fixtures.ts";
import type { Node } from "../reconciler.ts";

const cordon = (name: string, unschedulable: boolean): Node => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name },
  spec: { unschedulable },
});

Deno.test("RolloutInvariants flags a third slot or cordon with maxUnavailable 2, not pre-cordoned nodes", () => {
  const inv = new RolloutInvariants({
    maxUnavailable: { workers: 2 },
    nodePools: { a: "workers", b: "workers", c: "workers", d: "workers" },
    preCordoned: ["d"],
  });
  const at = "2026-01-01T00:00:00Z";
  inv.onBootcNode(bootcNode("a", { slotAt: at }));
  inv.onBootcNode(bootcNode("b", { slotAt: at }));
  inv.onNode(cordon("a", true));
  inv.onNode(cordon("b", true));
  inv.onNode(cordon("d", true));
  assert.deepEqual(inv.violations, []);
  inv.onBootcNode(bootcNode("a")); // released
  inv.onBootcNode(bootcNode("c", { slotAt: at }));
  assert.deepEqual(inv.violations, []);
  inv.onNode(cordon("c", true)); // a is still cordoned: three cordoned by us
  assert.equal(inv.violations.length, 1);
  assert.match(inv.violations[0], /3 nodes cordoned/);
  inv.onBootcNode(bootcNode("d", { slotAt: at }));
  assert.match(inv.violations[1], /3 nodes in reboot slots/);
  assert.equal(inv.maxSlots.workers, 3);
});
