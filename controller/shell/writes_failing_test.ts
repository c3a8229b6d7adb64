import assert from "node:assert/strict";
import { type BootcNodePoolStatus, findCondition } from "../../lib/api/mod.ts";
import { writesFailingStatus } from "./writes_failing.ts";

const since = new Date("2026-01-01T00:00:00Z");
const stored: BootcNodePoolStatus = {
  state: "RollingOut",
  updatedCount: 2,
  conditions: [{
    type: "Degraded",
    status: "False",
    reason: "Healthy",
    message: "",
    lastTransitionTime: "2025-12-31T00:00:00Z",
  }],
};

Deno.test("writesFailingStatus: nothing before the bound, then Degraded on the stored status", () => {
  const failure = { since, error: "admission denied: no cordons", nodes: ["n2", "n1"] };
  const early = writesFailingStatus(stored, failure, new Date("2026-01-01T00:09:59Z"), 600_000);
  assert.equal(early, undefined);
  const late = writesFailingStatus(stored, failure, new Date("2026-01-01T00:10:00Z"), 600_000)!;
  assert.equal(late.state, "WritesFailing");
  assert.equal(late.updatedCount, 2, "the rest is the status as last written");
  const degraded = findCondition(late.conditions, "Degraded")!;
  assert.equal(degraded.status, "True");
  assert.equal(degraded.reason, "WritesFailing");
  assert.equal(degraded.lastTransitionTime, "2026-01-01T00:10:00Z");
  assert.equal(
    degraded.message,
    "the controller's writes for this pool have failed since 2026-01-01T00:00:00Z " +
      "(nodes left as they were: n1, n2): admission denied: no cordons",
  );
  // Later in the same streak: the same status, so no new write.
  const later = writesFailingStatus(late, failure, new Date("2026-01-01T00:20:00Z"), 600_000)!;
  assert.deepEqual(later, late);
});

Deno.test("writesFailingStatus: another Degraded reason keeps its reason and headline", () => {
  const halted: BootcNodePoolStatus = {
    state: "Halted",
    conditions: [{
      type: "Degraded",
      status: "True",
      reason: "RolloutHalted",
      message: "2 nodes unhealthy",
      lastTransitionTime: "2025-12-31T00:00:00Z",
    }],
  };
  const failure = { since, error: "forbidden", nodes: ["n1"] };
  const out = writesFailingStatus(halted, failure, new Date("2026-01-01T00:10:00Z"), 600_000)!;
  assert.equal(out.state, "Halted", "what gates and other pools act on stays");
  const degraded = findCondition(out.conditions, "Degraded")!;
  assert.equal(degraded.reason, "RolloutHalted");
  assert.equal(degraded.lastTransitionTime, "2025-12-31T00:00:00Z");
  assert.equal(
    degraded.message,
    "2 nodes unhealthy; the controller's writes for this pool have failed since " +
      "2026-01-01T00:00:00Z (nodes left as they were: n1): forbidden",
  );
  assert.equal(out.writesFailingSince, "2026-01-01T00:00:00Z");
  // Said again on that status: the note is not repeated, whatever the error is now (the
  // status says it already: status.writesFailingSince; no message is searched for it).
  const again = writesFailingStatus(out, failure, new Date("2026-01-01T00:20:00Z"), 600_000)!;
  assert.deepEqual(again, out);
  const worse = { ...failure, error: "the API server is gone" };
  const later = writesFailingStatus(out, worse, new Date("2026-01-01T00:30:00Z"), 600_000)!;
  assert.equal(findCondition(later.conditions, "Degraded")!.message, degraded.message);
});

Deno.test("writesFailingStatus: failed pod lists name the nodes as waiting, not left as they were", () => {
  const failure = {
    since,
    error: "listing the pods of node n1 failed: forbidden",
    nodes: ["n1"],
    read: true,
  };
  const out = writesFailingStatus(stored, failure, new Date("2026-01-01T00:10:00Z"), 600_000)!;
  assert.match(
    findCondition(out.conditions, "Degraded")!.message,
    /\(nodes waiting, their pods unknown: n1\): listing the pods of node n1 failed/,
  );
});

Deno.test("writesFailingStatus: on a plan's status, the stored transition time stands", () => {
  const failure = { since, error: "forbidden", nodes: ["n1"] };
  const first = writesFailingStatus(stored, failure, new Date("2026-01-01T00:10:00Z"), 600_000)!;
  // The next plan computed Degraded False at its own time; the streak goes on.
  const plan: BootcNodePoolStatus = {
    ...stored,
    conditions: [{ ...stored.conditions![0], lastTransitionTime: "2026-01-01T00:10:05Z" }],
  };
  const next = writesFailingStatus(
    plan,
    failure,
    new Date("2026-01-01T00:10:05Z"),
    600_000,
    first,
  )!;
  assert.deepEqual(next, first, "no change: no new write");
});
