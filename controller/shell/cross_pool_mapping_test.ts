import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import { ANNOTATION_IN_REBOOT_SLOT } from "../../lib/api/mod.ts";
import { bootcNodeHoldWakes, nodeRecordWakes, poolStatusWakes } from "./cross_pool_mapping.ts";
import { bootcNode, pool } from "../testing/fixtures.ts";

const infra = pool({ name: "infra" });
const workers = pool({ name: "workers" });
workers.spec.rollout.after = ["infra"];
const other = pool({ name: "other" });

function withUpToDate(p: typeof infra, status: "True" | "False") {
  return {
    ...p,
    status: {
      conditions: [{
        type: "UpToDate",
        status,
        reason: status === "True" ? "AllUpdated" : "RolloutInProgress",
        message: "",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  };
}

Deno.test("poolStatusWakes: a pool finishing wakes the pools ordered after it", () => {
  const pools = [infra, workers, other];
  assert.deepEqual(
    poolStatusWakes(withUpToDate(infra, "False"), withUpToDate(infra, "True"), pools, false),
    ["workers"],
  );
  // Its own status echo with no progress change wakes nobody.
  assert.deepEqual(
    poolStatusWakes(withUpToDate(infra, "True"), withUpToDate(infra, "True"), pools, false),
    [],
  );
  // With cluster budgets every pool may now compete differently.
  assert.deepEqual(
    poolStatusWakes(withUpToDate(infra, "False"), withUpToDate(infra, "True"), pools, true).sort(),
    ["infra", "other", "workers"],
  );
});

Deno.test("nodeRecordWakes: a freed place wakes every pool only while budgets exist", () => {
  const held = {
    metadata: { name: "n", annotations: { [ANNOTATION_IN_REBOOT_SLOT]: "x" } },
  } as unknown as INode;
  const free = { metadata: { name: "n", annotations: {} } } as unknown as INode;
  assert.deepEqual(nodeRecordWakes(held, free, [infra, workers], false), []);
  assert.deepEqual(nodeRecordWakes(held, free, [infra, workers], true), ["infra", "workers"]);
  assert.deepEqual(nodeRecordWakes(held, held, [infra, workers], true), []);
  assert.deepEqual(nodeRecordWakes(undefined, held, [infra], true), ["infra"]);
});

Deno.test("bootcNodeHoldWakes: a BootcNode's slot mirror or Rebooting changing wakes every pool under budgets", () => {
  const pools = [infra, workers, other];
  const inSlot = bootcNode("n1", {
    pool: "infra",
    phase: "rebooting",
    slotAt: "2026-01-01T00:00:00Z",
  });
  const rebooting = bootcNode("n1", { pool: "infra", phase: "rebooting" });
  const idle = bootcNode("n1", { pool: "infra", phase: "idle" });
  // The owner lets go of it: deleted, or its mirror removed.
  assert.deepEqual(bootcNodeHoldWakes(inSlot, undefined, pools, true), [
    "infra",
    "workers",
    "other",
  ]);
  assert.equal(bootcNodeHoldWakes(inSlot, rebooting, pools, true).length, 3);
  // Its daemon no longer says Rebooting.
  assert.equal(bootcNodeHoldWakes(rebooting, idle, pools, true).length, 3);
  // Nothing that counts changed, or no budgets.
  assert.deepEqual(bootcNodeHoldWakes(idle, { ...idle }, pools, true), []);
  assert.deepEqual(bootcNodeHoldWakes(inSlot, undefined, pools, false), []);
});
