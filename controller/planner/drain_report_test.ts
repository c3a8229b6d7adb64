import assert from "node:assert/strict";
import { type Condition, findCondition } from "../../lib/api/mod.ts";
import { drainBlockedBy, planDrainPass } from "../model/drain.ts";
import { drainConditions } from "./drain_report.ts";
import { type Action, planPool } from "./planner.ts";
import { bootcNode, image, input, node, pdb, pod, pool } from "../testing/fixtures.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const SLOT = "2026-01-01T00:59:00Z";

Deno.test("drainBlockedBy: names the budgets that allow no disruption, nothing else", () => {
  const pass = planDrainPass([pod("a", "n1"), pod("b", "n1", { labels: { app: "db" } })]);
  assert.equal(
    drainBlockedBy(pass, [pdb("web", "web", 0), pdb("db", "db", 1)]),
    "PodDisruptionBudget default/web allows no disruption now",
  );
  assert.equal(drainBlockedBy(pass, [pdb("web", "web", 1)]), undefined);
  assert.match(
    drainBlockedBy(pass, [pdb("web", "web", 0), pdb("db", "db", 0)]) ?? "",
    /default\/db, default\/web allow no/,
  );
});

Deno.test("drainConditions: Cordoned True at the slot time, Drained False naming the block; once", () => {
  const waiting: Condition[] = [{
    type: "Cordoned",
    status: "False",
    reason: "Waiting",
    message: `Waiting for a reboot slot and cordon for ${image("b")}`,
    lastTransitionTime: "2026-01-01T00:00:00Z",
  }];
  const blockedBy = "PodDisruptionBudget default/web allows no disruption now";
  const out = drainConditions(waiting, { image: image("b"), slotAt: SLOT, blockedBy }, NOW);
  const cordoned = findCondition(out, "Cordoned");
  assert.equal(`${cordoned?.status}/${cordoned?.reason}`, "True/Cordoned");
  assert.equal(cordoned?.lastTransitionTime, SLOT);
  const drained = findCondition(out, "Drained");
  assert.equal(`${drained?.status}/${drained?.reason}`, "False/DrainBlocked");
  assert.match(drained?.message ?? "", /default\/web/);
  assert.equal(
    drainConditions(out, { image: image("b"), slotAt: SLOT, blockedBy }, NOW),
    undefined,
  );
  const unblocked = drainConditions(out, { image: image("b"), slotAt: SLOT }, NOW);
  assert.equal(findCondition(unblocked, "Drained")?.reason, "Draining");
});

Deno.test("a PDB-blocked drain is named in the node's conditions and the pool's message at once", () => {
  const bn = bootcNode("n1", { phase: "staged", slotAt: SLOT, wasCordoned: false });
  bn.metadata.resourceVersion = "12";
  const plan = planPool(input(pool(), {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [bn],
    pods: [pod("web-1", "n1")],
    pdbs: [pdb("web", "web", 0)],
  }));
  const write = plan.actions.find((a): a is Extract<Action, { kind: "patchBootcNodeStatus" }> =>
    a.kind === "patchBootcNodeStatus" && a.node === "n1"
  );
  const conditions = (write?.patch.status as { conditions: Condition[] } | undefined)?.conditions;
  assert.equal(findCondition(conditions, "Cordoned")?.status, "True");
  assert.match(
    findCondition(conditions, "Drained")?.message ?? "",
    /PodDisruptionBudget default\/web/,
  );
  assert.deepEqual(write?.patch.metadata, { resourceVersion: "12" });
  const upToDate = findCondition(plan.status?.conditions, "UpToDate");
  assert.match(upToDate?.message ?? "", /drain of n1 blocked by PodDisruptionBudget default\/web/);
  // The Node's story says so too, once: not again while the condition already says it.
  const blocked = plan.events.filter((e) => e.reason === "DrainBlocked");
  assert.deepEqual(blocked.map((e) => [e.regarding.kind, e.regarding.name, e.type]), [[
    "Node",
    "n1",
    "Warning",
  ]]);
  assert.match(blocked[0].message, /drain of node n1 blocked by PodDisruptionBudget default\/web/);
  const reported = { ...bn, status: { ...bn.status, conditions } };
  const again = planPool(input(pool(), {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [reported],
    pods: [pod("web-1", "n1")],
    pdbs: [pdb("web", "web", 0)],
  }));
  assert.deepEqual(again.events.filter((e) => e.reason === "DrainBlocked"), []);
});

Deno.test("a drain is reported once it runs a poll interval, not on the grant's first pass", () => {
  const statusWrites = (slotAt: string) => {
    const plan = planPool(input(pool(), {
      nodes: [node("n1", { unschedulable: true })],
      bootcNodes: [bootcNode("n1", { phase: "staged", slotAt, wasCordoned: false })],
      pods: [pod("web-1", "n1")],
    }));
    assert.ok(plan.actions.some((a) => a.kind === "evict" && a.node === "n1"), "evicting");
    return plan.actions.filter((a): a is Extract<Action, { kind: "patchBootcNodeStatus" }> =>
      a.kind === "patchBootcNodeStatus" && a.node === "n1"
    );
  };
  // Granted a second ago (default drainPollMs 5 s): a quick drain needs no report.
  assert.deepEqual(statusWrites("2026-01-01T00:59:59Z"), []);
  // Still draining a minute on: Cordoned True, Drained False Draining.
  const [write] = statusWrites(SLOT);
  const conditions = (write?.patch.status as { conditions: Condition[] } | undefined)?.conditions;
  assert.equal(findCondition(conditions, "Cordoned")?.status, "True");
  assert.equal(findCondition(conditions, "Drained")?.reason, "Draining");
});
