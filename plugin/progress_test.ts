import assert from "node:assert/strict";
import { nodeBucket, poolBlockers, poolMembers, poolProgress, rolloutStart } from "./progress.ts";
import { bootcNode, cond, NEW, node, OLD, pool, REPO, secondsAgo } from "./testing.ts";

const main = pool();

Deno.test("each node lands in one bucket", () => {
  const cases: [string, ReturnType<typeof nodeBucket>, ReturnType<typeof bootcNode>, object?][] = [
    ["booted on target", "updated", bootcNode("a", { booted: NEW, idle: ["True", "Idle"] })],
    ["idle on the old image", "pending", bootcNode("a", { idle: ["True", "Idle"] })],
    ["no status yet", "pending", { ...bootcNode("a"), status: undefined }],
    ["downloading", "staging", bootcNode("a", { idle: ["False", "Staging"] })],
    ["staged target", "staged", bootcNode("a", { idle: ["False", "Staged"], staged: NEW })],
    // The daemon still reports the previous target staged: not progress.
    ["staged another", "pending", bootcNode("a", { idle: ["False", "Staged"], staged: OLD })],
    // Queued behind the staging limit: the BootcNode still wants the old image.
    [
      "queued",
      "pending",
      bootcNode("a", { desired: OLD, idle: ["False", "Staged"], staged: OLD }),
    ],
    ["reboot reported", "rebooting", bootcNode("a", { idle: ["False", "Rebooting"] })],
    ["holds a slot", "rebooting", bootcNode("a", { idle: ["False", "Staged"], staged: NEW }), {
      slot: 5,
    }],
    // Back on the target but not released yet: still counted as in flight.
    ["back, not released", "rebooting", bootcNode("a", { booted: NEW, idle: ["True", "Idle"] }), {
      slot: 40,
      drained: 30,
    }],
    ["only the mirror", "rebooting", bootcNode("a", { idle: ["True", "Idle"], mirror: "false" })],
    [
      "degraded",
      "failed",
      bootcNode("a", { conditions: [cond("Degraded", "True", "Error", "pull failed")] }),
    ],
    [
      "stalled",
      "failed",
      bootcNode("a", { conditions: [cond("Stalled", "True", "StagingTimeout", "")] }),
    ],
    // Failed its verification (onFailure Halt): it holds its slot, it is not rebooting.
    [
      "failed verification",
      "failed",
      bootcNode("a", {
        booted: NEW,
        idle: ["True", "Idle"],
        conditions: [
          cond("Verified", "False", "CheckFailed", "node a failed health checks: Pods (x)"),
        ],
      }),
      { slot: 40, drained: 30 },
    ],
    // The target is the host's rollback deployment: ready for a slot, nothing to stage.
    ["rollback route", "staged", rollbackRoute()],
  ];
  for (const [what, want, bn, n] of cases) {
    assert.equal(nodeBucket(bn, n ? node("a", n) : node("a"), main), want, what);
  }
});

Deno.test("an index target matches the per-architecture digest the host reports", () => {
  const perArch = `sha256:${"c".repeat(64)}`;
  const bn = bootcNode("a", { idle: ["True", "Idle"] });
  bn.status!.booted = {
    image: "registry.example/os:v2",
    imageDigest: perArch,
    architecture: "amd64",
  };
  const index = pool();
  index.status!.targetPlatforms = [{ os: "linux", digest: perArch, architecture: "amd64" }];
  assert.equal(nodeBucket(bn, node("a"), index), "updated");
  assert.equal(nodeBucket(bn, node("a"), main), "pending");
});

Deno.test("pool progress counts members only and collects this rollout's completions", () => {
  const p = pool(); // UpToDate turned False 600 s ago
  const bns = [
    bootcNode("n3", { booted: NEW, idle: ["True", "Idle", 100] }),
    bootcNode("n1", { booted: NEW, idle: ["True", "Idle", 300] }),
    // Already on NEW before the rollout began: updated, but measures nothing.
    bootcNode("n2", { booted: NEW, idle: ["True", "Idle", 4000] }),
    bootcNode("n4", { idle: ["False", "Staged"], staged: NEW }),
    bootcNode("n5", { idle: ["False", "Staged"], staged: NEW }),
    bootcNode("other", { pool: "other", idle: ["False", "Staging"] }),
  ];
  const nodes = new Map([["n5", node("n5", { slot: 10 })]]);
  const progress = poolProgress(p, bns, nodes);
  assert.equal(progress.total, 5);
  assert.deepEqual(progress.counts, {
    updated: 3,
    rebooting: 1,
    staged: 1,
    staging: 0,
    pending: 0,
    failed: 0,
  });
  assert.deepEqual(progress.completions.map((d) => d.toISOString()), [
    new Date(secondsAgo(300)).toISOString(),
    new Date(secondsAgo(100)).toISOString(),
  ]);
  assert.deepEqual(poolMembers("main", bns).map((bn) => bn.metadata.name), [
    "n1",
    "n2",
    "n3",
    "n4",
    "n5",
  ]);
});

Deno.test("the rollout starts at the current revision when the target changed mid-rollout", () => {
  // UpToDate turned False 600 s ago, for an older target; the current one started 120 s ago.
  const p = pool();
  p.status!.history = [
    {
      revision: 1,
      image: `${REPO}@${OLD}`,
      digest: OLD,
      startedAt: secondsAgo(900),
      outcome: "Superseded",
    },
    {
      revision: 2,
      image: `${REPO}@${NEW}`,
      digest: NEW,
      startedAt: secondsAgo(120),
      outcome: "Progressing",
    },
  ];
  assert.equal(rolloutStart(p)?.toISOString(), new Date(secondsAgo(120)).toISOString());
  // A node updated at 300 s ago was updated in the older rollout's time: not measured.
  const bns = [
    bootcNode("n1", { booted: NEW, idle: ["True", "Idle", 300] }),
    bootcNode("n2", { booted: NEW, idle: ["True", "Idle", 60] }),
  ];
  const progress = poolProgress(p, bns, new Map());
  assert.deepEqual(progress.completions.map((d) => d.toISOString()), [
    new Date(secondsAgo(60)).toISOString(),
  ]);
  // A revision older than the condition's transition (a rollout resumed): the condition.
  p.status!.history[1].startedAt = secondsAgo(3000);
  assert.equal(rolloutStart(p)?.toISOString(), new Date(secondsAgo(600)).toISOString());
  // Up to date: no rollout.
  assert.equal(rolloutStart(pool({ upToDate: cond("UpToDate", "True", "AllUpdated") })), undefined);
});

Deno.test("blockers: the gate's reason and message, Degraded, stale generation, pause", () => {
  const windowWait = pool({
    upToDate: cond(
      "UpToDate",
      "False",
      "OutsideMaintenanceWindow",
      "1/3 updated; 2 staged; outside the maintenance windows; next opens 2026-03-07T22:00:00Z",
    ),
    notes: ["outside the maintenance windows; next opens 2026-03-07T22:00:00Z"],
  });
  assert.deepEqual(poolBlockers(windowWait), [{
    kind: "wait",
    reason: "OutsideMaintenanceWindow",
    message: "outside the maintenance windows; next opens 2026-03-07T22:00:00Z",
  }]);
  // From a controller that publishes no notes: the stock explanation, not the message.
  const older = pool({ upToDate: windowWait.status!.conditions![0] });
  assert.match(poolBlockers(older)[0].message, /window/);
  assert.doesNotMatch(poolBlockers(older)[0].message, /2026-03-07/);
  // A gate whose message is only the breakdown gets the stock explanation.
  const budget = pool({ upToDate: cond("UpToDate", "False", "BudgetExhausted", "0/3 updated") });
  assert.match(poolBlockers(budget)[0].message, /maxUnavailable/);
  const halted = pool({
    degraded: cond("Degraded", "True", "RolloutHalted", "rollout halted: 2 nodes … (a; b)"),
    generation: 3,
    observedGeneration: 2,
  });
  assert.deepEqual(poolBlockers(halted).map((b) => [b.kind, b.reason]), [
    ["info", ""],
    ["degraded", "RolloutHalted"],
  ]);
  assert.match(poolBlockers(halted)[0].message, /generation 3, observed 2/);
  // The text is the pool's notes, not the message taken apart.
  const gatePaused = pool({
    paused: true,
    upToDate: cond("UpToDate", "False", "Paused", "0/3 updated; 3 staged; no new slots"),
    notes: ["no new reboot slots while paused"],
  });
  assert.deepEqual(poolBlockers(gatePaused), [{
    kind: "wait",
    reason: "Paused",
    message: "no new reboot slots while paused",
  }]);
  // Paused in the spec before the controller reacted.
  assert.deepEqual(poolBlockers(pool({ paused: true })).map((b) => b.reason), ["Paused"]);
  // Not reported yet.
  const fresh = pool();
  fresh.status = undefined;
  assert.equal(poolBlockers(fresh)[0].kind, "info");
  // A rollout in progress with a note (e.g. a PDB wait) shows the note.
  const pdb = pool({
    upToDate: cond(
      "UpToDate",
      "False",
      "RolloutInProgress",
      "2/5 updated; 1 staged, 1 rebooting; waiting on disruption budgets: n4 (PodDisruptionBudget default/web)",
    ),
    notes: ["waiting on disruption budgets: n4 (PodDisruptionBudget default/web)"],
  });
  assert.deepEqual(poolBlockers(pdb), [{
    kind: "info",
    reason: "",
    message: "waiting on disruption budgets: n4 (PodDisruptionBudget default/web)",
  }]);
});

Deno.test("blockers: an UpToDate problem is a problem, not a wait, and is said once", () => {
  // A newer controller turns UpToDate False for a spec it cannot realise.
  const typo = pool({
    upToDate: cond("UpToDate", "False", "ImageResolutionFailed", "4/4 updated; tag not found"),
    notes: ["tag not found"],
    degraded: cond("Degraded", "True", "ImageResolutionFailed", "resolving os:nosuch: not found"),
  });
  assert.deepEqual(poolBlockers(typo), [
    {
      kind: "degraded",
      reason: "ImageResolutionFailed",
      message: "resolving os:nosuch: not found",
    },
  ]);
  // A problem only UpToDate names (the failure record holds the spec's image back).
  const failedBefore = pool({
    upToDate: cond("UpToDate", "False", "ImageFailedBefore", "3/3 updated; os:v3 failed before"),
    notes: ["os:v3 failed before"],
  });
  assert.deepEqual(poolBlockers(failedBefore), [
    { kind: "degraded", reason: "ImageFailedBefore", message: "os:v3 failed before" },
  ]);
});

/** A node whose daemon reports NEW as the rollback deployment, a copy of OLD staged. */
function rollbackRoute() {
  const bn = bootcNode("a", {
    idle: ["False", "Staged"],
    staged: OLD,
    conditions: [
      cond("ImageStaged", "True", "RollbackDeployment", `${REPO}@${NEW} is the rollback`),
    ],
  });
  bn.status!.rollback = { image: `${REPO}@${NEW}`, imageDigest: NEW };
  return bn;
}
