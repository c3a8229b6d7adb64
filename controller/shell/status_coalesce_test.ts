import assert from "node:assert/strict";
import type { BootcNodePoolStatus } from "../../lib/api/mod.ts";
import { classifyStatusChange, statusWriteDecision } from "./status_coalesce.ts";

const T0 = Date.parse("2026-11-23T10:00:00Z");

function status(overrides: Partial<BootcNodePoolStatus> = {}): BootcNodePoolStatus {
  return {
    observedGeneration: 2,
    targetDigest: "sha256:aa",
    targetImage: "r/os@sha256:aa",
    updateAvailable: true,
    lastResolvedTime: "2026-11-23T10:00:00Z",
    nodeCount: 6,
    updatedCount: 1,
    updatingCount: 5,
    degradedCount: 0,
    slotsInUse: 1,
    conditions: [
      {
        type: "UpToDate",
        status: "False",
        reason: "RolloutInProgress",
        message: "1/6 updated; 5 staged",
        lastTransitionTime: "2026-11-23T09:59:00Z",
        observedGeneration: 2,
      },
      {
        type: "Degraded",
        status: "False",
        reason: "Healthy",
        message: "No issues",
        lastTransitionTime: "2026-11-23T09:00:00Z",
        observedGeneration: 2,
      },
    ],
    ...overrides,
  };
}

function withUpToDate(
  s: BootcNodePoolStatus,
  change: Partial<NonNullable<BootcNodePoolStatus["conditions"]>[number]>,
): BootcNodePoolStatus {
  return {
    ...s,
    conditions: s.conditions!.map((c) => c.type === "UpToDate" ? { ...c, ...change } : c),
  };
}

Deno.test("classify: counts, slots and condition messages are progress", () => {
  const stored = status();
  assert.equal(classifyStatusChange(stored, status()), "none");
  assert.equal(classifyStatusChange(stored, status({ slotsInUse: 0 })), "progress");
  // The published slots and queue are for views: a new order or limit is progress too.
  const slots = {
    limit: 1,
    inUse: 1,
    waiting: 1,
    source: "MaxUnavailable" as const,
    name: "maxUnavailable",
    message: "maxUnavailable 1",
  };
  const queued = status({ slots, queue: [{ node: "a", position: 1, waitingFor: "Paused" }] });
  assert.equal(classifyStatusChange(stored, queued), "progress");
  assert.equal(
    classifyStatusChange(queued, status({ slots: { ...slots, limit: 0, waiting: 0 } })),
    "progress",
  );
  assert.equal(
    classifyStatusChange(
      stored,
      withUpToDate(status({ updatedCount: 2, updatingCount: 4 }), {
        message: "2/6 updated; 4 staged",
      }),
    ),
    "progress",
  );
  // A progress change carries a newer lastResolvedTime along.
  assert.equal(
    classifyStatusChange(
      stored,
      status({ slotsInUse: 0, lastResolvedTime: "2026-11-23T10:00:02Z" }),
    ),
    "progress",
  );
});

Deno.test("classify: only lastResolvedTime moving is a heartbeat", () => {
  assert.equal(
    classifyStatusChange(status(), status({ lastResolvedTime: "2026-11-23T10:00:02Z" })),
    "heartbeat",
  );
});

Deno.test("classify: what other pools and the planner act on is significant", () => {
  const stored = status();
  const cases: BootcNodePoolStatus[] = [
    status({ targetDigest: "sha256:bb", targetImage: "r/os@sha256:bb" }),
    status({ observedGeneration: 3 }),
    status({ deployedDigest: "sha256:aa" }),
    status({ failedDigests: ["sha256:aa"] }),
    status({ consecutiveFailures: 1 }),
    withUpToDate(stored, { reason: "WaitingForPool" }),
    withUpToDate(stored, {
      status: "True",
      reason: "AllUpdated",
      lastTransitionTime: "2026-11-23T10:00:05Z",
    }),
  ];
  for (const next of cases) assert.equal(classifyStatusChange(stored, next), "significant");
  assert.equal(classifyStatusChange(undefined, stored), "significant");
});

Deno.test("decision: significant changes are written at once, even right after a write", () => {
  const d = statusWriteDecision({
    stored: status(),
    next: status({ observedGeneration: 3 }),
    now: T0,
    lastWriteAt: T0 - 10,
  });
  assert.deepEqual(d, { kind: "write", change: "significant" });
  assert.equal(
    statusWriteDecision({ stored: status(), next: status(), now: T0 }).kind,
    "skip",
  );
});

Deno.test("decision: a progress burst settles, then writes are a window apart", () => {
  const next = status({ slotsInUse: 0 });
  // First sight after a quiet period: wait for the burst to settle.
  assert.deepEqual(
    statusWriteDecision({ stored: status(), next, now: T0, lastWriteAt: T0 - 60_000 }),
    { kind: "defer", change: "progress", at: T0 + 250 },
  );
  // Settled (pending since T0), the last write long ago: write.
  assert.equal(
    statusWriteDecision({
      stored: status(),
      next,
      now: T0 + 250,
      pendingSince: T0,
      lastWriteAt: T0 - 60_000,
    }).kind,
    "write",
  );
  // Settled but the last write was 400 ms ago: wait for the window.
  assert.deepEqual(
    statusWriteDecision({
      stored: status(),
      next,
      now: T0 + 300,
      pendingSince: T0,
      lastWriteAt: T0 - 100,
    }),
    { kind: "defer", change: "progress", at: T0 + 900 },
  );
  // Custom tunables.
  assert.deepEqual(
    statusWriteDecision({
      stored: status(),
      next,
      now: T0,
      options: { settleMs: 0, windowMs: 5_000 },
      lastWriteAt: T0 - 1_000,
    }),
    { kind: "defer", change: "progress", at: T0 + 4_000 },
  );
});

Deno.test("decision: a heartbeat is written only once the stored time is old", () => {
  const young = statusWriteDecision({
    stored: status(),
    next: status({ lastResolvedTime: "2026-11-23T10:00:30Z" }),
    now: T0 + 30_000,
  });
  assert.deepEqual(young, { kind: "skip", change: "heartbeat" });
  const old = statusWriteDecision({
    stored: status(),
    next: status({ lastResolvedTime: "2026-11-23T10:01:00Z" }),
    now: T0 + 60_000,
  });
  assert.deepEqual(old, { kind: "write", change: "heartbeat" });
  // A stored time that cannot be read is replaced.
  assert.equal(
    statusWriteDecision({
      stored: status({ lastResolvedTime: undefined }),
      next: status({ lastResolvedTime: "2026-11-23T10:00:02Z" }),
      now: T0,
    }).kind,
    "write",
  );
});

Deno.test("nextTagResolutionTime rides with lastResolvedTime: a heartbeat, written once behind", () => {
  const next = "2026-11-23T10:05:00Z";
  // Only the next poll time moving (a retry after a failure) is a heartbeat too.
  assert.equal(
    classifyStatusChange(status(), status({ nextTagResolutionTime: next })),
    "heartbeat",
  );
  const soon = statusWriteDecision({
    stored: status({ nextTagResolutionTime: "2026-11-23T10:05:00Z" }),
    next: status({ nextTagResolutionTime: "2026-11-23T10:05:30Z" }),
    now: T0,
  });
  assert.deepEqual(soon, { kind: "skip", change: "heartbeat" });
  const later = statusWriteDecision({
    stored: status({ nextTagResolutionTime: "2026-11-23T10:05:00Z" }),
    next: status({ nextTagResolutionTime: "2026-11-23T10:10:00Z" }),
    now: T0,
  });
  assert.deepEqual(later, { kind: "write", change: "heartbeat" });
  // Alongside a significant change it is simply written.
  assert.equal(
    classifyStatusChange(status(), status({ nextTagResolutionTime: next, state: "Staging" })),
    "significant",
  );
});
