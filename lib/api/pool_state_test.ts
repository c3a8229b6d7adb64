import assert from "node:assert/strict";
import {
  DEGRADED_ORDER,
  PoolFact,
  poolState,
  type PoolStateFacts,
  poolStateKind,
  PROBLEM_PRECEDENCE,
} from "./pool_state.ts";

const ALL_UPDATED = { resolved: true, nodes: 6, updated: 6, underway: 0 };
const HALFWAY = { resolved: true, nodes: 6, updated: 3, underway: 2 };

function verdict(facts: string[], more: Partial<PoolStateFacts> = {}) {
  return poolState({ facts, paused: false, progress: ALL_UPDATED, ...more });
}

Deno.test("precedence: each problem wins over every one below it", () => {
  for (let i = 0; i < PROBLEM_PRECEDENCE.length; i++) {
    const below = PROBLEM_PRECEDENCE.slice(i).map((r) => r.fact).reverse();
    const v = verdict(below, { waitReason: "OutsideMaintenanceWindow", progress: HALFWAY });
    assert.equal(v.state, PROBLEM_PRECEDENCE[i].state, `row ${i}: ${below.join(",")}`);
    assert.equal(v.kind, "problem");
    assert.equal(v.upToDate, false);
  }
});

Deno.test("precedence table: the headline and the UpToDate verdict", () => {
  const table: [string, string[], Partial<PoolStateFacts>, string, boolean, string][] = [
    // [case, facts, more, state, upToDate, UpToDate reason]
    [
      "typo'd tag, nodes on the old target",
      ["ImageResolutionFailed"],
      {},
      "ImageResolutionFailed",
      false,
      "ImageResolutionFailed",
    ],
    [
      "invalid spec, nodes on the old target",
      ["InvalidSpec"],
      {},
      "InvalidSpec",
      false,
      "InvalidSpec",
    ],
    [
      "invalid spec beats a failed resolution",
      ["ImageResolutionFailed", "InvalidSpec"],
      {},
      "InvalidSpec",
      false,
      "InvalidSpec",
    ],
    [
      "two unhealthy slots",
      ["RolloutHalted", "NodeDegraded"],
      { progress: HALFWAY },
      "Halted",
      false,
      "RolloutHalted",
    ],
    [
      "halted beats a gate",
      [PoolFact.Halted],
      { waitReason: "Paused", progress: HALFWAY },
      "Halted",
      false,
      "RolloutHalted",
    ],
    [
      "rolled back, every node on the good image",
      ["RolledBack"],
      {},
      "RolledBack",
      false,
      "RolledBack",
    ],
    [
      "rolled back with the circuit open",
      ["CircuitOpen", "RolledBack"],
      {},
      "RolledBack",
      false,
      "RolledBack",
    ],
    [
      "circuit open holding a moved tag",
      [PoolFact.CircuitOpen, PoolFact.CircuitHoldsTarget],
      {},
      "CircuitOpen",
      false,
      "CircuitOpen",
    ],
    ["circuit open, spec realised", [PoolFact.CircuitOpen], {}, "CircuitOpen", true, "AllUpdated"],
    [
      "tag back on a failed digest",
      [PoolFact.ImageFailedBefore],
      {},
      "ImageFailedBefore",
      false,
      "ImageFailedBefore",
    ],
    [
      "a pull Secret malformed: shown, the spec's image still runs",
      ["PullSecretInvalid"],
      {},
      "PullSecretInvalid",
      true,
      "AllUpdated",
    ],
    // A matching node another pool owns or contests does not run the target.
    ["node conflict, members updated", ["NodeConflict"], {}, "NodeConflict", false, "NodeConflict"],
    [
      "node conflict, no members",
      ["NodeConflict"],
      { progress: { resolved: true, nodes: 0, updated: 0, underway: 0 } },
      "NodeConflict",
      false,
      "NodeConflict",
    ],
    [
      "a stalled node under a closed window",
      ["NodeStalled"],
      { waitReason: "OutsideMaintenanceWindow", progress: HALFWAY },
      "NodeStalled",
      false,
      "OutsideMaintenanceWindow",
    ],
    [
      "a closed window",
      [],
      { waitReason: "OutsideMaintenanceWindow", progress: HALFWAY },
      "OutsideMaintenanceWindow",
      false,
      "OutsideMaintenanceWindow",
    ],
    [
      "a cluster budget",
      [],
      { waitReason: "ClusterBudgetExhausted", progress: HALFWAY },
      "ClusterBudgetExhausted",
      false,
      "ClusterBudgetExhausted",
    ],
    [
      "paused with nothing staged yet",
      [],
      { paused: true, progress: { ...HALFWAY, underway: 0 } },
      "Paused",
      false,
      "Paused",
    ],
    [
      "not resolved yet",
      [],
      { progress: { resolved: false, nodes: 6, updated: 0, underway: 0 } },
      "Resolving",
      false,
      "RolloutInProgress",
    ],
    [
      "downloading",
      [],
      { progress: { ...HALFWAY, underway: 0 } },
      "Staging",
      false,
      "RolloutInProgress",
    ],
    ["rebooting", [], { progress: HALFWAY }, "RollingOut", false, "RolloutInProgress"],
    ["done", [], {}, "AllUpdated", true, "AllUpdated"],
    ["done while paused", [], { paused: true }, "AllUpdated", true, "AllUpdated"],
    [
      "an empty pool",
      [],
      { progress: { resolved: true, nodes: 0, updated: 0, underway: 0 } },
      "AllUpdated",
      true,
      "AllUpdated",
    ],
  ];
  for (const [name, facts, more, state, upToDate, reason] of table) {
    const v = verdict(facts, more);
    assert.deepEqual([v.state, v.upToDate, v.reason], [state, upToDate, reason], name);
    assert.equal(poolStateKind(v.state), v.kind, name);
  }
});

Deno.test("the Degraded condition ranks its issues by the same table", () => {
  assert.deepEqual(DEGRADED_ORDER, [
    "InvalidSpec",
    "PullSecretInvalid",
    "ImageResolutionFailed",
    "SignatureInvalid",
    "RolloutHalted",
    "RolledBack",
    "HealthCheckFailed",
    "NodeConflict",
    "NodeStalled",
    "NodeDegraded",
    "ApprovalWebhookFailing",
    "PreconditionFailing",
    "WritesFailing",
  ]);
});

Deno.test("poolStateKind: problems, waits, progress, done", () => {
  assert.equal(poolStateKind("Halted"), "problem");
  assert.equal(poolStateKind("NodeStalled"), "problem");
  assert.equal(poolStateKind("WritesFailing"), "problem");
  assert.equal(poolStateKind("BudgetExhausted"), "waiting");
  assert.equal(poolStateKind("CanarySoak"), "waiting");
  assert.equal(poolStateKind("RollingOut"), "progress");
  assert.equal(poolStateKind("AllUpdated"), "done");
  assert.equal(poolStateKind(undefined), undefined);
});
