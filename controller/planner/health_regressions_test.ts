/**
 * Regressions of health-gated rollouts at the planner's level, each a defect
 * that once slipped through (every test here failed before its fix). They run
 * on the world of `testing/health_world.ts`, shared with
 * `health_policy_test.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type BootcNodePoolStatus, findCondition, setCondition } from "../../lib/api/mod.ts";
import { planPool } from "./planner.ts";
import { bootcNode, digest, input, node, pool } from "../testing/fixtures.ts";
import {
  A,
  allOn,
  B,
  BACK,
  cond,
  DRAINED,
  events,
  healthPool,
  NOW,
  outcomes,
  rebootedInto,
  rev,
  type Rollout,
  settledWorld,
  withWhy,
  type World,
} from "../testing/health_world.ts";

Deno.test("a node still under its health checks does not make the pool UpToDate", () => {
  const p = healthPool({}, {
    status: {
      conditions: [{
        type: "UpToDate",
        status: "False",
        reason: "RolloutInProgress",
        message: "",
        lastTransitionTime: "2025-12-01T00:00:00Z",
      }],
    },
  });
  const plan = planPool(input(p, {
    nodes: [node("n1", { unschedulable: true, readySince: BACK })],
    bootcNodes: [rebootedInto("Starting")],
    now: NOW,
  }));
  assert.equal(plan.status?.slotsInUse, 1);
  assert.equal(cond(plan.status, "UpToDate")?.status, "False");
  assert.equal(events(plan, "RolloutComplete").length, 0);
  assert.notEqual(plan.status?.deployedDigest, digest("b"));
});

Deno.test("RollbackNode on a canary that fails during its soak: it gets a slot to go back", () => {
  const w = settledWorld({
    onFailure: "RollbackNode",
    maxUnavailable: 2,
    canary: { nodes: 1, soakSeconds: 600 },
  });
  w.edit((p) => p.spec.image.ref = B);
  w.until((p) => p.status?.canary?.phase === "Soaking");
  const canaryNode = w.reboots[0].node;
  w.bad.set(B, "unit");
  w.daemon();
  for (let i = 0; i < 30; i++) w.tick();
  assert.equal(w.desired()[canaryNode], "a");
  assert.equal(w.booted()[canaryNode], "a", "the failed canary is rolled back");
});

Deno.test("a canary node that falls back by itself during its soak fails the canary", () => {
  const w = settledWorld({
    onFailure: "RollbackPool",
    maxUnavailable: 2,
    canary: { nodes: 1, soakSeconds: 600 },
  });
  w.edit((p) => p.spec.image.ref = B);
  w.until((p) => p.status?.canary?.phase === "Soaking");
  const c = w.reboots[0].node;
  const bn = w.bns.get(c)!;
  bn.status!.rollback = bn.status!.booted;
  bn.status!.booted = { image: A, imageDigest: digest("a"), architecture: "amd64" };
  bn.status!.conditions = setCondition(bn.status!.conditions, {
    type: "Degraded",
    status: "True",
    reason: "Error",
    message: "fell back",
  }, w.now);
  bn.status!.conditions = setCondition(bn.status!.conditions, {
    type: "Idle",
    status: "False",
    reason: "Rebooting",
    message: "",
  }, w.now);
  w.apply(w.plan());
  w.now = new Date(w.now.getTime() + 601_000);
  const p2 = w.plan();
  assert.deepEqual(withWhy(p2, "assign slot"), [], "nobody else gets a slot for b");
  assert.equal(p2.status?.rollbackHold?.failedImage, B);
});

Deno.test("a node failing on the automatic rollback image is named in the pool's Degraded message", () => {
  const p = healthPool({ onFailure: "RollbackPool" }, {
    status: {
      targetImage: A,
      targetDigest: digest("a"),
      rollbackHold: { ref: B, failedImage: B, image: A, at: DRAINED },
      failedDigests: [digest("b")],
      consecutiveFailures: 1,
    },
    history: [rev(1, A, "Succeeded"), rev(2, B, "RolledBack"), rev(3, A, "Progressing")],
  });
  const bn = bootcNode("n1", {
    booted: A,
    desired: A,
    rollback: B,
    host: "Unhealthy",
    state: "Booted",
    slotAt: DRAINED,
    drainedAt: DRAINED,
  });
  const plan = planPool(
    input(p, {
      nodes: [node("n1", { unschedulable: true, readySince: BACK })],
      bootcNodes: [bn],
      now: NOW,
    }),
  );
  assert.match(cond(plan.status, "Degraded")?.message ?? "", /node n1 failed health checks/);
});

Deno.test("RollbackNode: the halt holds when a node's failed-image mark is edited away (history remembers)", () => {
  const p = pool({
    ref: B,
    maxUnavailable: 1,
    status: {
      targetDigest: digest("b"),
      targetImage: B,
      failedDigests: [digest("b")],
      consecutiveFailures: 1,
      history: [
        { revision: 1, image: A, digest: digest("a"), startedAt: "t1", outcome: "Succeeded" },
        { revision: 2, image: B, digest: digest("b"), startedAt: "t2", outcome: "Failed" },
      ],
    } as BootcNodePoolStatus,
  });
  p.spec.rollout.onFailure = "RollbackNode";
  // n1 was rolled back to a and released; its mark is gone, so it is bound for b again. n2
  // never tried b. Neither may take a slot for b.
  const plan = planPool(input(p, {
    nodes: [node("n1"), node("n2")],
    bootcNodes: [
      bootcNode("n1", { booted: A, desired: B, phase: "staged" }),
      bootcNode("n2", { booted: A, desired: B, phase: "staged" }),
    ],
    now: NOW,
  }));
  assert.deepEqual(withWhy(plan, "assign slot"), []);
  const degraded = findCondition(plan.status?.conditions, "Degraded");
  assert.equal(degraded?.reason, "HealthCheckFailed");
  assert.match(degraded?.message ?? "", /halted until spec\.image\.ref changes/);
});

Deno.test("RollbackPool: a lost rollbackHold is rebuilt from the history; the failed pinned digest stays out", () => {
  const p = pool({
    ref: B,
    status: {
      targetDigest: digest("a"),
      targetImage: A,
      failedDigests: [digest("b")],
      consecutiveFailures: 1,
      history: [
        { revision: 1, image: A, digest: digest("a"), startedAt: "t1", outcome: "Succeeded" },
        { revision: 2, image: B, digest: digest("b"), startedAt: "t2", outcome: "RolledBack" },
        {
          revision: 3,
          image: A,
          digest: digest("a"),
          startedAt: "t3",
          outcome: "Succeeded",
          message: `automatic rollback after ${B} failed`,
        },
      ],
    } as BootcNodePoolStatus,
  });
  p.spec.rollout.onFailure = "RollbackPool";
  const plan = planPool(input(p, {
    nodes: [node("n1"), node("n2")],
    bootcNodes: [
      bootcNode("n1", { booted: A, desired: A }),
      bootcNode("n2", { booted: A, desired: A }),
    ],
    now: NOW,
  }));
  assert.equal(plan.status?.targetImage, A);
  assert.equal(plan.status?.rollbackHold?.failedImage, B);
  assert.deepEqual(withWhy(plan, "sync spec"), []);
  assert.deepEqual(withWhy(plan, "assign slot"), []);
});

// ---------------------------------------------------------------------------
// A NotReady canary during its soak (it used to pass a soak shorter than a fixed 60 s grace,
// and under Halt a failed soak let the rest of the pool roll out)

/** The Node goes (or comes back) Ready at the world's clock. */
function setReady(w: World, name: string, ready: boolean): void {
  const n = w.nodes.get(name)!;
  n.ready = ready;
  n.readySince = w.now.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A pool of three on image("a") rolling out image("b") whose canary (one node) now soaks. */
function soakingWorld(rollout: Partial<Rollout>): { w: World; canary: string; until: Date } {
  const w = settledWorld({ maxUnavailable: 2, ...rollout });
  w.edit((p) => p.spec.image.ref = B);
  const plan = w.until((p) => p.status?.canary?.phase === "Soaking");
  return { w, canary: w.reboots[0].node, until: new Date(plan.status!.canary!.soakUntil!) };
}

Deno.test("a canary NotReady during a 20 s soak fails it; RollbackPool takes the pool back", () => {
  const { w, canary } = soakingWorld({
    onFailure: "RollbackPool",
    canary: { nodes: 1, soakSeconds: 20 },
  });
  setReady(w, canary, false);
  const plan = w.tick();
  assert.equal(plan.status?.canary?.phase, "Failed");
  assert.equal(plan.status?.rollbackHold?.image, A);
  assert.match(
    cond(plan.status, "Degraded")?.message ?? "",
    new RegExp(`node ${canary} is not Ready since`),
  );
  for (let i = 0; i < 40; i++) w.tick();
  assert.deepEqual(w.reboots.map((r) => r.node), [canary], "nobody else reboots meanwhile");
  // Back Ready, the canary goes back to a through its slot; the revision says RolledBack.
  setReady(w, canary, true);
  w.until(allOn(w, A), 60);
  assert.deepEqual(outcomes(w.pool.status), ["1:a:Succeeded", "2:b:RolledBack", "3:a:Succeeded"]);
});

Deno.test("Halt: a canary NotReady during its soak holds the rest of the pool; the revision fails", () => {
  const { w, canary } = soakingWorld({ canary: { nodes: 1, soakSeconds: 120 } });
  setReady(w, canary, false);
  const plan = w.tick();
  assert.equal(plan.status?.canary?.phase, "Failed");
  for (let i = 0; i < 200; i++) w.tick();
  assert.equal(w.pool.status?.canary?.phase, "Failed");
  // The halt names it everywhere: the headline, UpToDate, and the failure in Degraded.
  assert.equal(w.pool.status?.state, "Halted");
  assert.equal(cond(w.pool.status, "UpToDate")?.reason, "RolloutHalted");
  assert.match(cond(w.pool.status, "UpToDate")?.message ?? "", /is halted/);
  assert.equal(cond(w.pool.status, "Degraded")?.reason, "HealthCheckFailed");
  assert.deepEqual(w.reboots.map((r) => r.node), [canary], "nobody else reboots into b");
  assert.deepEqual(outcomes(w.pool.status), ["1:a:Succeeded", "2:b:Failed"]);
});

Deno.test("without a grace, a NotReady flap between two reconciles still fails the soak", () => {
  const { w, canary } = soakingWorld({ canary: { nodes: 1, soakSeconds: 300 } });
  w.now = new Date(w.now.getTime() + 10_000);
  setReady(w, canary, true); // Ready again since now: it was NotReady in between
  const plan = w.tick();
  assert.equal(plan.status?.canary?.phase, "Failed");
  assert.match(
    cond(plan.status, "Degraded")?.message ?? "",
    new RegExp(`node ${canary} was not Ready during the canary soak`),
  );
});

Deno.test("notReadyGraceSeconds: NotReady at the soak's end holds it until the grace ends", () => {
  for (const back of [true, false]) {
    const { w, canary, until } = soakingWorld({
      canary: { nodes: 1, soakSeconds: 20, notReadyGraceSeconds: 10 },
    });
    w.now = new Date(until.getTime() - 5_000);
    setReady(w, canary, false);
    const within = w.tick();
    assert.equal(within.status?.canary?.phase, "Soaking", "within its grace");
    assert.match(
      cond(within.status, "UpToDate")?.message ?? "",
      /is not Ready since .* \(grace 10s\)/,
    );
    // The soak's time is over, the node is still within its grace: the end moves.
    w.now = until;
    const held = w.plan();
    w.apply(held);
    assert.equal(held.status?.canary?.phase, "Soaking");
    assert.equal(
      held.status?.canary?.soakUntil,
      new Date(until.getTime() + 5_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    );
    assert.equal(held.requeueAfterMs, 5_000);
    assert.deepEqual(withWhy(held, "assign slot"), []);
    w.now = new Date(until.getTime() + 3_000);
    if (back) setReady(w, canary, true);
    assert.equal(w.tick().status?.canary?.phase, "Soaking");
    w.now = new Date(until.getTime() + 5_000);
    const end = w.tick();
    assert.equal(end.status?.canary?.phase, back ? "Passed" : "Failed");
    assert.equal(withWhy(end, "assign slot").length, back ? 2 : 0);
  }
});
