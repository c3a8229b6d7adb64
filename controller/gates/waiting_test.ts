import assert from "node:assert/strict";
import type { BootcNodePool, Condition } from "../../lib/api/mod.ts";
import { bootcNode, node, pool } from "../testing/fixtures.ts";
import type { Gate } from "./gate.ts";
import { GATES } from "./registry.ts";
import {
  BLOCKED_DEGRADED_REASONS,
  BLOCKED_UP_TO_DATE_REASONS,
  blockedReasons,
  poolBlockedReason,
  waitingCandidates,
} from "./waiting.ts";

/** A pool whose UpToDate condition is False with `reason`. */
function waitingFor(reason: string, name = "p"): BootcNodePool {
  const condition: Condition = {
    type: "UpToDate",
    status: "False",
    reason,
    message: "",
    lastTransitionTime: "2026-03-01T00:00:00Z",
  };
  return pool({ name, status: { conditions: [condition] } });
}

Deno.test("blocked reasons derive from the gates' declarations", () => {
  // What used to be listed by hand in cluster_budget.ts, now read off GATES.
  assert.deepEqual([...BLOCKED_UP_TO_DATE_REASONS].sort(), [
    "AlertsFiring",
    "AlertsUnknown",
    "ApprovalRefused",
    "AwaitingApproval",
    "Blackout",
    "BudgetExhausted",
    "ExternalOrchestrator",
    "OutsideMaintenanceWindow",
    "Paused",
    "PreconditionNotMet",
    "PreconditionUnknown",
    "WaitingForPool",
  ]);
  assert.deepEqual(blockedReasons().upToDate, BLOCKED_UP_TO_DATE_REASONS);
  assert.deepEqual(blockedReasons().degraded, BLOCKED_DEGRADED_REASONS);
  for (const g of GATES) {
    for (const r of g.reasons) {
      assert.equal(BLOCKED_UP_TO_DATE_REASONS.includes(r.reason), r.blocksPool, r.reason);
    }
  }
});

Deno.test("a new gate's blocking reason leaves its pool out of the cluster-budget competition", () => {
  const frozen: Gate = {
    name: "frozen",
    reasons: [{ reason: "Frozen", blocksPool: true }, { reason: "Thawing", blocksPool: false }],
    decide: (input) => ({ admit: input.candidates }),
  };
  const blocked = blockedReasons([...GATES, frozen]);
  assert.ok(blocked.upToDate.includes("Frozen"));
  assert.ok(!blocked.upToDate.includes("Thawing"));
  assert.equal(poolBlockedReason(waitingFor("Frozen"), blocked), "Frozen");
  assert.equal(poolBlockedReason(waitingFor("Thawing"), blocked), undefined);
  // Without the gate in the list the reason means nothing.
  assert.equal(poolBlockedReason(waitingFor("Frozen")), undefined);

  const nodes = new Map([["d1", node("d1")]]);
  const bootcNodes = [bootcNode("d1", { pool: "db", phase: "staged" })];
  const now = new Date("2026-03-01T12:00:00Z");
  const waiting = (blockedBy?: typeof blocked) =>
    waitingCandidates({
      pools: [waitingFor("Frozen", "db")],
      bootcNodes,
      nodes,
      now,
      blocked: blockedBy,
    }).map((w) => w.node);
  assert.deepEqual(waiting(), ["d1"]);
  assert.deepEqual(waiting(blocked), []);
});
