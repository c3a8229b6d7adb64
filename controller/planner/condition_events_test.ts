import assert from "node:assert/strict";
import type { Condition } from "../../lib/api/mod.ts";
import { conditionEvents, STAGING_LIMIT, WAIT_REASONS, waitEvents } from "./condition_events.ts";
import { input, pool } from "../testing/fixtures.ts";

function upToDate(status: "True" | "False", reason: string, message = ""): Condition {
  return { type: "UpToDate", status, reason, message, lastTransitionTime: "2026-01-01T00:00:00Z" };
}

const WINDOW = {
  reason: "OutsideMaintenanceWindow",
  message:
    "outside maintenance windows; next window opens Sat 2026-11-28 22:00 CET (Europe/Berlin)",
};

Deno.test("wait reasons: every gate's, and the staging limit", () => {
  for (
    const r of [
      "Paused",
      "Blackout",
      "OutsideMaintenanceWindow",
      "BudgetExhausted",
      "WaitingForPool",
      "ClusterBudgetExhausted",
      "CanaryInProgress",
      "CanarySoak",
      "CanaryFailed",
      STAGING_LIMIT,
    ]
  ) assert.ok(WAIT_REASONS.has(r), r);
  assert.ok(!WAIT_REASONS.has("RolloutInProgress"));
  assert.ok(!WAIT_REASONS.has("InvalidSpec"));
});

Deno.test("waitEvents: from the previous and the new UpToDate reason only", () => {
  const cases: [string, Condition | undefined, Condition, string[]][] = [
    [
      "starts waiting: names the gate and until when",
      upToDate("False", "RolloutInProgress"),
      upToDate("False", WINDOW.reason, "0/2 updated; …"),
      [`Waiting: waiting on OutsideMaintenanceWindow: ${WINDOW.message}`],
    ],
    [
      "a new pool that waits at once",
      undefined,
      upToDate("False", WINDOW.reason),
      [`Waiting: waiting on OutsideMaintenanceWindow: ${WINDOW.message}`],
    ],
    [
      "the same wait again: nothing",
      upToDate("False", WINDOW.reason),
      upToDate("False", WINDOW.reason),
      [],
    ],
    [
      "one gate to another: one Waiting naming both",
      upToDate("False", "Paused"),
      upToDate("False", WINDOW.reason),
      [`Waiting: waiting on OutsideMaintenanceWindow (was Paused): ${WINDOW.message}`],
    ],
    [
      "the wait ends in progress",
      upToDate("False", WINDOW.reason),
      upToDate("False", "RolloutInProgress"),
      ["WaitingCleared: no longer waiting on OutsideMaintenanceWindow (now RollingOut)"],
    ],
    [
      "the wait ends in a problem",
      upToDate("False", "Paused"),
      upToDate("False", "InvalidSpec"),
      ["WaitingCleared: no longer waiting on Paused (now RollingOut)"],
    ],
    [
      "no wait before or after",
      upToDate("False", "RolloutInProgress"),
      upToDate("True", "AllUpdated"),
      [],
    ],
  ];
  for (const [name, before, after, want] of cases) {
    const events = waitEvents({
      pool: "workers",
      before,
      after,
      wait: WINDOW,
      state: "RollingOut",
    });
    assert.deepEqual(events.map((e) => `${e.reason}: ${e.message}`), want, name);
    for (const e of events) {
      assert.deepEqual([e.type, e.regarding], ["Normal", {
        kind: "BootcNodePool",
        name: "workers",
      }]);
    }
  }
});

Deno.test("waitEvents: without the gate's wait the condition's message is named", () => {
  const events = waitEvents({
    pool: "workers",
    before: upToDate("False", "RolloutInProgress"),
    after: upToDate(
      "False",
      STAGING_LIMIT,
      "0/6 updated; staging limit: 2/2 downloading, 4 queued",
    ),
  });
  assert.deepEqual(events.map((e) => e.message), [
    "waiting on StagingLimit: 0/6 updated; staging limit: 2/2 downloading, 4 queued",
  ]);
});

Deno.test("conditionEvents: what tells of the status turning is marked as such", () => {
  const p = pool();
  p.status = {
    conditions: [{
      type: "Degraded",
      status: "True",
      reason: "WritesFailing",
      message: "refused",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    }],
  };
  const out = conditionEvents(input(p), {
    conditions: [{
      type: "Degraded",
      status: "False",
      reason: "Healthy",
      message: "",
      lastTransitionTime: "2026-01-01T00:01:00Z",
    }],
  });
  assert.deepEqual(out.events.map((e) => [e.reason, e.ofStatus]), [["Recovered", "Degraded"]]);
});
