/**
 * Health-gated rollouts at the planner's level: the health verdict, the
 * failure policy, the circuit breaker, the canary and the revision history as
 * they play out over several reconciles. Single-step cases use the fixtures as
 * they are; multi-step cases run a small world: each plan's writes are applied
 * to plain Node and BootcNode objects, the plan's status becomes the pool's,
 * and a minimal daemon (one step per tick, bootc's apply/rollback/fall-back
 * semantics, reboots only with the slot+drain authorization) plays the hosts.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_FAILED_IMAGE,
  ANNOTATION_RESET_CIRCUIT,
  ANNOTATION_RETRY_REVISION,
  ANNOTATION_SPEC_GENERATION,
  type BootcNode,
  type Condition,
  findCondition,
  verifiedRelease,
  withVerifiedRelease,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, digest, image, input, node, pool, REPO } from "../testing/fixtures.ts";
import {
  A,
  allOn,
  B,
  BACK,
  cond,
  DRAINED,
  events,
  healthPool,
  mergePatch,
  NOW,
  outcomes,
  rebootedInto,
  rev,
  settledWorld,
  tail,
  withWhy,
} from "../testing/health_world.ts";

const C = image("c");
const D = image("d");
const E = image("e");

// ---------------------------------------------------------------------------
// Helpers on plans

function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}

// ---------------------------------------------------------------------------
// (1) Halt, (4) fell back, (8) minReadySeconds: one plan each

Deno.test("Halt: an Unhealthy host after its reboot fails Verified, keeps its slot and halts the image", () => {
  const plan = planPool(input(healthPool({ maxUnavailable: 2 }), {
    nodes: [node("n1", { unschedulable: true, readySince: BACK }), node("n2")],
    bootcNodes: [rebootedInto("Unhealthy"), bootcNode("n2", { phase: "staged" })],
    now: NOW,
  }));
  const write = ofKind(plan, "patchBootcNodeStatus").find((a) => a.node === "n1");
  assert.equal(write?.why, "health check failed");
  const verified = findCondition(
    (write?.patch.status as { conditions: Condition[] }).conditions,
    "Verified",
  );
  assert.equal(verified?.status, "False");
  assert.equal(verified?.reason, "CheckFailed");
  assert.match(verified?.message ?? "", /HostHealthy \(failed units: app\.service\)/);
  // Verification is the Node's story: `kubectl describe node` shows it.
  const ev = events(plan, "HealthCheckFailed").filter((e) => e.regarding.kind === "Node");
  assert.equal(ev.length, 1);
  assert.equal(ev[0].type, "Warning");
  assert.equal(ev[0].onceKey, `health-failed/n1/${B}`);
  // The slot is kept: no release, still counted. The image's rollout is halted as the
  // history says, so n2 gets no slot for it though the budget has one.
  assert.deepEqual(withWhy(plan, "release slot"), []);
  assert.deepEqual(withWhy(plan, "assign slot"), []);
  assert.equal(plan.status?.slotsInUse, 1);
  assert.equal(plan.status?.queue?.find((q) => q.node === "n2")?.waitingFor, "RolloutHalted");
  assert.equal(
    ofKind(plan, "patchBootcNode").some((a) => a.why === "mark failed (roll back)"),
    false,
  );
  assert.deepEqual(outcomes(plan.status), ["1:a:Succeeded", "2:b:Failed"]);
  assert.match(plan.status?.history?.[1].message ?? "", /rollout of .*@sha256:b+ is halted/);
  const degraded = cond(plan.status, "Degraded");
  assert.equal(degraded?.reason, "HealthCheckFailed");
  assert.match(degraded?.message ?? "", /node n1 failed health checks: HostHealthy/);
  assert.equal(plan.status?.consecutiveFailures, 1);
  assert.deepEqual(plan.status?.failedDigests, [digest("b")]);
  assert.equal(plan.status?.rollbackHold, undefined);
  assert.equal(plan.counts.Degraded, 1);

  // The next reconcile sees its own write: no second status write, event key unchanged.
  const bn = rebootedInto("Unhealthy");
  Object.assign(bn.status!, write?.patch.status);
  assert.deepEqual(bn.status!.verification, { image: B, failedChecks: ["HostHealthy"] });
  const again = planPool(input(healthPool({ maxUnavailable: 2 }, { status: plan.status }), {
    nodes: [node("n1", { unschedulable: true, readySince: BACK }), node("n2")],
    bootcNodes: [bn, bootcNode("n2", { phase: "staged" })],
    now: "2026-01-01T01:00:30Z",
  }));
  assert.deepEqual(ofKind(again, "patchBootcNodeStatus"), []);
  assert.equal(again.status?.consecutiveFailures, 1, "one failed rollout, counted once");
  // A daemon that does not keep status.verification dropped it: not written again for it
  // alone (each write would be dropped by the next report, one after another).
  const dropped = structuredClone(bn);
  delete dropped.status!.verification;
  const withoutRecord = planPool(input(healthPool({ maxUnavailable: 2 }, { status: plan.status }), {
    nodes: [node("n1", { unschedulable: true, readySince: BACK }), node("n2")],
    bootcNodes: [dropped, bootcNode("n2", { phase: "staged" })],
    now: "2026-01-01T01:00:30Z",
  }));
  assert.deepEqual(ofKind(withoutRecord, "patchBootcNodeStatus"), []);
});

Deno.test("health: a host still Starting is being verified; past the health timeout it fails naming the check", () => {
  const p = healthPool({ health: { timeoutSeconds: 120 } });
  // n2 is still on the old image (paused by the slot n1 holds), so the rollout is not done.
  const nodes = [node("n1", { unschedulable: true, readySince: BACK }), node("n2")];
  const checking = planPool(input(p, {
    nodes,
    bootcNodes: [rebootedInto("Starting"), bootcNode("n2", { phase: "staged" })],
    now: "2026-01-01T01:00:59Z",
  }));
  assert.deepEqual(ofKind(checking, "patchBootcNodeStatus"), []);
  assert.deepEqual(withWhy(checking, "release slot"), []);
  assert.match(cond(checking.status, "UpToDate")?.message ?? "", /verifying n1: HostHealthy/);
  // Woken when the timeout runs out (BACK + 120s).
  assert.equal(checking.requeueAfterMs, 1_000);
  assert.equal(cond(checking.status, "Degraded")?.status, "False");

  const late = planPool(input(p, {
    nodes,
    bootcNodes: [rebootedInto("Starting"), bootcNode("n2", { phase: "staged" })],
    now: "2026-01-01T01:01:00Z",
  }));
  const ev = events(late, "HealthCheckFailed").find((e) => e.regarding.kind === "Node");
  assert.match(ev?.message ?? "", /node n1 failed health checks: HostHealthy \(.*\) within 120s/);
  assert.equal(cond(late.status, "Degraded")?.reason, "HealthCheckFailed");
});

Deno.test("fell back: a host that booted the target and went back by itself fails in the same plan", () => {
  // What the daemon reports (decide.ts footnote 5): Degraded, Idle still Rebooting, the
  // previous image booted and the target as its rollback deployment.
  const fell = bootcNode("n1", {
    booted: A,
    rollback: B,
    phase: "degraded",
    degradedMessage: `node fell back: it booted ${B} but the host fell back to ${A}`,
    state: "Booted",
    slotAt: DRAINED,
    drainedAt: DRAINED,
  });
  fell.status!.conditions!.push({
    type: "Idle",
    status: "False",
    reason: "Rebooting",
    message: "",
    lastTransitionTime: DRAINED,
  });
  for (
    const [name, bn] of [
      ["daemon reports Degraded", fell],
      [
        "plain status",
        bootcNode("n1", {
          booted: A,
          rollback: B,
          state: "Booted",
          slotAt: DRAINED,
          drainedAt: DRAINED,
        }),
      ],
    ] as const
  ) {
    const plan = planPool(
      input(healthPool({ onFailure: "RollbackPool", health: { timeoutSeconds: 3600 } }), {
        nodes: [node("n1", { unschedulable: true, readySince: BACK })],
        bootcNodes: [bn],
        // Well within the health and reboot timeouts: detected at once.
        now: "2026-01-01T00:58:30Z",
      }),
    );
    const write = ofKind(plan, "patchBootcNodeStatus").find((a) => a.node === "n1");
    const verified = findCondition(
      (write?.patch.status as { conditions: Condition[] } | undefined)?.conditions,
      "Verified",
    );
    assert.equal(verified?.status, "False", name);
    assert.equal(verified?.reason, "FellBack", name);
    assert.match(
      verified?.message ?? "",
      /booted .*@sha256:b+ and fell back to .*@sha256:a+ by itself/,
      name,
    );
    assert.equal(events(plan, "HealthCheckFailed").length, 1, name);
    assert.equal(plan.status?.rollbackHold?.failedImage, B, name);
    assert.equal(plan.status?.rollbackHold?.image, A, name);
    assert.deepEqual(outcomes(plan.status), ["1:a:Succeeded", "2:b:RolledBack"], name);
  }
});

Deno.test("minReadySeconds counts from the Verified transition, not from Node Ready", () => {
  const p = healthPool({ minReadySeconds: 60 });
  const nodes = [node("n1", { unschedulable: true, readySince: "2025-12-01T00:00:00Z" })];
  // First plan after the checks pass: Verified=True is written, the slot is kept.
  const first = planPool(input(p, { nodes, bootcNodes: [rebootedInto("Healthy")], now: NOW }));
  const write = ofKind(first, "patchBootcNodeStatus").find((a) => a.node === "n1");
  assert.equal(write?.why, "verified");
  const verified = findCondition(
    (write?.patch.status as { conditions: Condition[] }).conditions,
    "Verified",
  );
  assert.equal(verified?.status, "True");
  assert.equal(verified?.reason, "ChecksPassed");
  assert.equal(verified?.lastTransitionTime, NOW);
  assert.deepEqual(withWhy(first, "release slot"), []);
  assert.equal(first.requeueAfterMs, 60_000);

  const cases: { now: string; released: boolean; requeue?: number }[] = [
    { now: "2026-01-01T01:00:30Z", released: false, requeue: 30_000 },
    { now: "2026-01-01T01:00:59Z", released: false, requeue: 1_000 },
    { now: "2026-01-01T01:01:00Z", released: true },
  ];
  for (const c of cases) {
    const plan = planPool(input(p, {
      nodes,
      bootcNodes: [rebootedInto("Healthy", { verifiedAt: NOW })],
      now: c.now,
    }));
    assert.equal(withWhy(plan, "release slot").includes("n1"), c.released, c.now);
    if (c.requeue) assert.equal(plan.requeueAfterMs, c.requeue, c.now);
    if (c.released) {
      // The verdict rides in the release; the daemon's acknowledgement records it:
      // Verified keeps its transition time, Updated is added.
      assert.deepEqual(ofKind(plan, "patchBootcNodeStatus"), []);
      const release = ofKind(plan, "patchBootcNode").find((a) => a.why === "release slot")!;
      const released = mergePatch(
        rebootedInto("Healthy", { verifiedAt: NOW }),
        release.patch,
      ) as BootcNode;
      released.metadata.generation = Number(
        released.metadata.annotations?.[ANNOTATION_SPEC_GENERATION],
      );
      const conds = withVerifiedRelease(
        released.status ?? {},
        verifiedRelease(released),
        true,
      ).conditions;
      assert.equal(findCondition(conds, "Verified")?.lastTransitionTime, NOW);
      assert.equal(findCondition(conds, "Updated")?.status, "True");
      assert.equal(findCondition(conds, "Updated")?.lastTransitionTime, c.now);
      assert.equal(events(plan, "NodeUpdated").length, 1);
    }
  }
  // A Verified=True from before this slot (an earlier update of the same image) or from
  // the future (a hand edit) does not count: the soak starts now.
  for (const verifiedAt of ["2026-01-01T00:00:00Z", "2099-01-01T00:00:00Z"]) {
    const plan = planPool(input(p, {
      nodes,
      bootcNodes: [rebootedInto("Healthy", { verifiedAt })],
      now: "2026-01-01T01:01:00Z",
    }));
    assert.deepEqual(withWhy(plan, "release slot"), [], verifiedAt);
    const fresh = ofKind(plan, "patchBootcNodeStatus").find((a) => a.why === "verified");
    const c = findCondition(
      (fresh?.patch.status as { conditions: Condition[] }).conditions,
      "Verified",
    );
    assert.equal(c?.lastTransitionTime, "2026-01-01T01:01:00Z", verifiedAt);
    assert.equal(plan.requeueAfterMs, 60_000, verifiedAt);
  }
  // A Verified=True left over from another image does not count.
  const stale = rebootedInto("Healthy", { verifiedAt: "2025-12-01T00:00:00Z" });
  stale.status!.verification = { image: A };
  const plan = planPool(input(p, { nodes, bootcNodes: [stale], now: NOW }));
  assert.deepEqual(withWhy(plan, "release slot"), []);
  assert.equal(ofKind(plan, "patchBootcNodeStatus")[0]?.why, "verified");
});

// ---------------------------------------------------------------------------
// (2) RollbackNode

Deno.test("RollbackNode: the failed node goes back to the last good image; nobody else gets the bad one", () => {
  const w = settledWorld({ onFailure: "RollbackNode", maxUnavailable: 1 });
  w.bad.set(B, "unit");
  w.edit((p) => p.spec.image.ref = B);

  // Until the first node fails on b.
  const failed = w.until((p) => events(p, "HealthCheckFailed").length > 0);
  const victim = events(failed, "HealthCheckFailed")[0].regarding.name;
  const mark = ofKind(failed, "patchBootcNode").find((a) => a.why === "mark failed (roll back)");
  assert.equal(mark?.node, victim);
  assert.deepEqual(mark?.patch, { metadata: { annotations: { [ANNOTATION_FAILED_IMAGE]: B } } });
  const rb = events(failed, "RollingBack");
  assert.equal(rb.length, 1);
  assert.equal(rb[0].regarding.name, victim);
  assert.match(
    rb[0].message,
    new RegExp(`${victim} failed on .*; rolling it back to .*@sha256:a+`),
  );
  assert.equal(cond(failed.status, "Degraded")?.reason, "HealthCheckFailed");
  assert.match(
    cond(failed.status, "Degraded")?.message ?? "",
    /rolling n\d back to .*; the rollout of .* is halted/,
  );

  // The next plan: its desiredImage is the last good image (from status.history).
  const next = w.tick();
  const sync = ofKind(next, "patchBootcNode").find((a) =>
    a.node === victim && a.why === "sync spec"
  );
  assert.equal((sync?.patch.spec as { desiredImage?: string })?.desiredImage, A);

  // It is rolled back through its slot; the pool hands out no slot for b meanwhile.
  const back = w.until((p) => withWhy(p, "release slot").includes(victim));
  assert.equal(w.booted()[victim], "a");
  assert.equal(w.desired()[victim], "a");
  assert.equal(w.bns.get(victim)!.metadata.annotations?.[ANNOTATION_FAILED_IMAGE], B);
  // Stays halted: more plans give no slot to anyone.
  for (let i = 0; i < 5; i++) w.tick();
  const intoB = w.reboots.filter((r) => r.image === B).map((r) => r.node);
  assert.deepEqual(intoB, [victim], "only the first node ever rebooted into b");
  const intoA = w.reboots.filter((r) => r.image === A).map((r) => r.node);
  assert.deepEqual(intoA, [victim]);
  const last = w.plans.at(-1)!;
  assert.deepEqual(withWhy(last, "assign slot"), []);
  assert.equal(cond(last.status, "Degraded")?.reason, "HealthCheckFailed");
  assert.match(
    cond(last.status, "Degraded")?.message ?? "",
    new RegExp(`${victim} failed their health checks on .* and were rolled back`),
  );
  assert.deepEqual(outcomes(last.status), ["1:a:Succeeded", "2:b:Failed"]);
  assert.equal(last.status?.slotsInUse, 0);
  assert.ok(back);
  // The Verified condition now says it is verified on the image it went back to.
  const v = findCondition(w.bns.get(victim)!.status?.conditions, "Verified");
  assert.equal(v?.status, "True");
  assert.deepEqual(w.bns.get(victim)!.status?.verification, { image: A });

  // A new target clears the mark and the node may try it.
  w.edit((p) => p.spec.image.ref = C);
  const clear = w.tick();
  assert.ok(
    ofKind(clear, "patchBootcNode").some((a) =>
      a.node === victim && a.why === "forget failure on an old image"
    ),
  );
  w.until(allOn(w, C), 60);
  assert.deepEqual(w.booted(), { n1: "c", n2: "c", n3: "c" });
});

// ---------------------------------------------------------------------------
// (3) RollbackPool with a canary, (6) a completed rollback does not reset the count

Deno.test("RollbackPool with a canary of 1: the canary fails, the pool goes back to the last good image", () => {
  const w = settledWorld({
    onFailure: "RollbackPool",
    maxUnavailable: 2,
    canary: { nodes: 1, soakSeconds: 300 },
  }, ["n1", "n2", "n3", "n4"]);
  w.bad.set(B, "unit");
  w.edit((p) => p.spec.image.ref = B);

  const failed = w.until((p) => p.status?.rollbackHold !== undefined);
  const canaryNode = events(failed, "HealthCheckFailed")[0]?.regarding.name;
  assert.ok(canaryNode);
  assert.deepEqual(
    failed.status?.rollbackHold && {
      ref: failed.status.rollbackHold.ref,
      failedImage: failed.status.rollbackHold.failedImage,
      image: failed.status.rollbackHold.image,
    },
    { ref: B, failedImage: B, image: A },
  );
  assert.deepEqual(failed.status?.failedDigests, [digest("b")]);
  assert.equal(failed.status?.consecutiveFailures, 1);
  assert.deepEqual(outcomes(failed.status), ["1:a:Succeeded", "2:b:RolledBack"]);
  const ev = events(failed, "RollingBack").filter((e) => e.regarding.kind === "BootcNodePool");
  assert.equal(ev.length, 1);
  assert.match(ev[0].message, /rolling the pool back to .*@sha256:a+/);
  assert.equal(cond(failed.status, "Degraded")?.reason, "RolledBack");
  assert.equal(failed.status?.canary?.phase, "Failed");
  // Only the canary ever got a slot for b.
  assert.deepEqual(w.reboots.filter((r) => r.image === B).map((r) => r.node), [canaryNode]);

  // Next plan: the target is the last good image; every member goes back; no canary for it.
  const back = w.tick();
  assert.equal(back.status?.targetImage, A);
  assert.equal(back.status?.canary?.image, A);
  assert.equal(back.status?.canary?.phase, "Passed");
  const synced = ofKind(back, "patchBootcNode").filter((a) => a.why === "sync spec")
    .map((a) => [a.node, (a.patch.spec as { desiredImage?: string }).desiredImage]);
  assert.deepEqual(synced.map(([, img]) => img), [A, A, A, A]);
  assert.equal(cond(back.status, "Degraded")?.reason, "RolledBack");
  assert.match(cond(back.status, "Degraded")?.message ?? "", /change spec\.image\.ref/);
  assert.deepEqual(outcomes(back.status), ["1:a:Succeeded", "2:b:RolledBack", "3:a:Progressing"]);
  assert.match(
    back.status?.history?.[2].message ?? "",
    /automatic rollback after .*@sha256:b+ failed/,
  );
  assert.equal(back.status?.rollbackHold?.image, A);

  // The canary node is rolled back through its slot; the pool ends on a.
  const done = w.until(allOn(w, A));
  assert.deepEqual(w.booted(), { n1: "a", n2: "a", n3: "a", n4: "a" });
  assert.deepEqual(w.reboots.filter((r) => r.image === B).map((r) => r.node), [canaryNode]);
  assert.deepEqual(outcomes(done.status), ["1:a:Succeeded", "2:b:RolledBack", "3:a:Succeeded"]);
  // (6) A completed automatic rollback does not reset the count; the hold stays.
  assert.equal(done.status?.consecutiveFailures, 1);
  assert.equal(done.status?.rollbackHold?.failedImage, B);
  for (let i = 0; i < 3; i++) w.tick();
  assert.equal(w.pool.status?.consecutiveFailures, 1);
  assert.equal(w.pool.status?.targetImage, A);

  // (6) A successful rollout does: the user moves on to a good image.
  w.edit((p) => p.spec.image.ref = C);
  const good = w.until(allOn(w, C), 80, 30_000);
  assert.equal(good.status?.consecutiveFailures, undefined);
  assert.equal(good.status?.rollbackHold, undefined);
  assert.deepEqual(good.status?.failedDigests, [digest("b")], "b stays recorded as failed");
  assert.deepEqual(outcomes(good.status), [
    "1:a:Succeeded",
    "2:b:RolledBack",
    "3:a:Succeeded",
    "4:c:Succeeded",
  ]);
});

Deno.test("retry: a rolled-back image is rolled out again once; failing again counts and holds again", () => {
  const w = settledWorld({ onFailure: "RollbackPool" });
  // Settled on an image: no slot held, its revision succeeded (a hold may keep UpToDate False).
  const settledOn = (img: string) => (p: Plan) =>
    p.status?.targetImage === img && (p.status.slotsInUse ?? 0) === 0 &&
    p.status.history?.at(-1)?.outcome === "Succeeded";
  w.bad.set(B, "unit");
  w.edit((p) => p.spec.image.ref = B);
  w.until((p) => p.status?.rollbackHold?.failedImage === B, 60);
  w.until(settledOn(A), 60);
  assert.deepEqual(outcomes(w.pool.status), ["1:a:Succeeded", "2:b:RolledBack", "3:a:Succeeded"]);

  // The user retries revision 2 (an annotation: no new generation); b is still bad.
  w.pool.metadata.annotations = { [ANNOTATION_RETRY_REVISION]: "2" };
  const retried = w.tick();
  assert.equal(retried.status?.targetImage, B);
  assert.equal(retried.status?.rollbackHold, undefined);
  assert.equal(retried.status?.failedDigests, undefined);
  assert.equal(
    retried.status?.history?.at(-1)?.message,
    "retry of revision 2 (bootc.dev/retry-revision)",
  );
  // It fails again: a failure of its own (counted, held), not forgotten by the same annotation.
  const again = w.until((p) => p.status?.rollbackHold?.failedImage === B, 60);
  assert.equal(again.status?.consecutiveFailures, 2);
  assert.deepEqual(again.status?.failedDigests, [digest("b")]);
  const settled = w.until(settledOn(A), 60);
  assert.deepEqual(outcomes(settled.status).map((o) => o.split(":").slice(1).join(":")), [
    "a:Succeeded",
    "b:RolledBack",
    "a:Succeeded",
    "b:RolledBack",
    "a:Succeeded",
  ]);
  for (let i = 0; i < 3; i++) assert.equal(w.tick().status?.targetImage, A);

  // Fixed meanwhile: retrying the newest failed revision rolls b out and it succeeds.
  w.bad.delete(B);
  w.pool.metadata.annotations = { [ANNOTATION_RETRY_REVISION]: "4" };
  const good = w.until(settledOn(B), 80);
  assert.equal(good.status?.rollbackHold, undefined);
  assert.equal(good.status?.failedDigests, undefined);
  assert.equal(outcomes(good.status).at(-1), "6:b:Succeeded");
});

// ---------------------------------------------------------------------------
// (4) the fell-back host in a running pool

Deno.test("RollbackPool: a host that falls back by itself is caught in the plan that first sees it", () => {
  const w = settledWorld({ onFailure: "RollbackPool", health: { timeoutSeconds: 3600 } });
  w.bad.set(B, "fallback");
  w.edit((p) => p.spec.image.ref = B);
  w.until(() => w.reboots.some((r) => r.image === B));
  const victim = w.reboots.find((r) => r.image === B)!.node;
  // The very next plan sees the fallback.
  const plan = w.tick();
  const ev = events(plan, "HealthCheckFailed");
  assert.equal(ev.length, 1);
  assert.equal(ev[0].regarding.name, victim);
  assert.match(ev[0].message, /fell back to .*@sha256:a+ by itself/);
  assert.equal(plan.status?.rollbackHold?.image, A);
  // The rollback needs no reboot of the victim (it already runs a): done without slots.
  const done = w.until(allOn(w, A));
  assert.deepEqual(w.booted(), { n1: "a", n2: "a", n3: "a" });
  assert.deepEqual(w.reboots.map((r) => `${r.node}:${tail(r.image)}`), [`${victim}:b`]);
  assert.deepEqual(outcomes(done.status), ["1:a:Succeeded", "2:b:RolledBack", "3:a:Succeeded"]);
});

// ---------------------------------------------------------------------------
// (5) the circuit breaker

Deno.test("circuit: three failed rollouts open it; then no rollback, no tag adopted; the reset closes it", () => {
  const w = settledWorld({ onFailure: "RollbackPool" });
  const failOn = (img: string, n: number) => {
    w.bad.set(img, "unit");
    w.edit((p) => p.spec.image.ref = img);
    const failed = w.until((p) => p.status?.rollbackHold?.failedImage === img, 60);
    assert.equal(failed.status?.consecutiveFailures, n, tail(img));
    w.until(allOn(w, A), 60);
    return failed;
  };
  const first = failOn(B, 1);
  assert.equal(cond(first.status, "CircuitOpen"), undefined, "no condition while it never opened");
  failOn(C, 2);
  assert.equal(w.events("CircuitOpen").length, 0);
  const third = failOn(D, 3);
  // The third failure still rolls back, and opens the circuit.
  const open = cond(third.status, "CircuitOpen");
  assert.equal(open?.status, "True");
  assert.equal(open?.reason, "TooManyFailedRollouts");
  assert.match(
    open?.message ?? "",
    /3 consecutive failed rollouts \(maxRollbacks 3\).*bootc\.dev\/reset-circuit-breaker/,
  );
  const circuitEvents = w.events("CircuitOpen");
  assert.equal(circuitEvents.length, 1);
  assert.equal(circuitEvents[0].type, "Warning");
  assert.deepEqual(w.pool.status?.failedDigests, [digest("b"), digest("c"), digest("d")]);
  assert.deepEqual(
    outcomes(w.pool.status).map((s) => s.split(":").slice(1).join(":")),
    [
      "a:Succeeded",
      "b:RolledBack",
      "a:Succeeded",
      "c:RolledBack",
      "a:Succeeded",
      "d:RolledBack",
      "a:Succeeded",
    ],
  );

  // A fourth failure: no automatic rollback, the rollout halts.
  w.bad.set(E, "unit");
  w.edit((p) => p.spec.image.ref = E);
  const fourth = w.until((p) => events(p, "HealthCheckFailed").length > 0, 60);
  assert.equal(fourth.status?.rollbackHold, undefined);
  assert.equal(fourth.status?.targetImage, E);
  assert.equal(fourth.status?.consecutiveFailures, 4);
  assert.equal(cond(fourth.status, "Degraded")?.reason, "HealthCheckFailed");
  assert.match(
    cond(fourth.status, "Degraded")?.message ?? "",
    /the circuit is open \(3 failed rollouts in a row\), so no automatic rollback/,
  );
  assert.equal(events(fourth, "RollingBack").length, 0);
  assert.equal(outcomes(fourth.status).at(-1)?.split(":").slice(1).join(":"), "e:Failed");
  for (let i = 0; i < 3; i++) {
    const p = w.tick();
    assert.equal(p.status?.targetImage, E);
    assert.deepEqual(withWhy(p, "assign slot"), []);
  }
  assert.equal(w.reboots.filter((r) => r.image === E).length, 1);
  assert.equal(w.events("CircuitOpen").length, 1, "the event is recorded once");
});

Deno.test("circuit open: a tag that moved by itself is not adopted; the reset annotation closes the circuit", () => {
  const TAG = `${REPO}:stable`;
  const p = pool({
    ref: TAG,
    generation: 4,
    status: {
      observedGeneration: 4,
      targetImage: A,
      targetDigest: digest("a"),
      consecutiveFailures: 3,
      failedDigests: [digest("b"), digest("c"), digest("d")],
      history: [rev(6, D, "RolledBack"), rev(7, A, "Succeeded")],
      conditions: [{
        type: "CircuitOpen",
        status: "True",
        reason: "TooManyFailedRollouts",
        message: "3 consecutive failed rollouts",
        lastTransitionTime: "2025-12-01T00:00:00Z",
      }],
    },
  });
  const resolution = {
    generation: 4,
    at: new Date("2026-01-01T00:59:00Z"),
    result: { ok: true as const, digest: digest("e") },
  };
  const fleet = {
    nodes: [node("n1"), node("n2")],
    bootcNodes: [
      bootcNode("n1", { booted: A, desired: A }),
      bootcNode("n2", { booted: A, desired: A }),
    ],
    resolution,
    now: NOW,
  };
  const held = planPool(input(p, fleet));
  assert.equal(held.status?.targetImage, A);
  assert.deepEqual(ofKind(held, "patchBootcNode").filter((a) => a.why === "sync spec"), []);
  // The spec's tag now means e, which the circuit keeps out: the spec is not realised.
  assert.equal(cond(held.status, "UpToDate")?.status, "False");
  assert.equal(cond(held.status, "UpToDate")?.reason, "CircuitOpen");
  assert.equal(held.status?.state, "CircuitOpen");
  assert.equal(events(held, "TargetChanged").length, 0);
  assert.equal(cond(held.status, "CircuitOpen")?.status, "True");

  // The user resets the circuit: it closes (event), and the tag is adopted.
  const reset = structuredClone(p);
  reset.metadata.annotations = { [ANNOTATION_RESET_CIRCUIT]: "1767225600" };
  const closed = planPool(input(reset, fleet));
  assert.equal(closed.status?.circuitReset, "1767225600");
  assert.equal(closed.status?.consecutiveFailures, undefined);
  assert.equal(cond(closed.status, "CircuitOpen")?.status, "False");
  assert.equal(events(closed, "CircuitClosed").length, 1);
  assert.equal(closed.status?.targetImage, image("e"));
  assert.equal(events(closed, "TargetChanged").length, 1);
  const synced = ofKind(closed, "patchBootcNode").filter((a) => a.why === "sync spec")
    .map((a) => (a.patch.spec as { desiredImage?: string }).desiredImage);
  assert.deepEqual(synced, [image("e"), image("e")]);
  // The annotation, once acted on, does nothing more (the count is not reset again).
  const again = structuredClone(reset);
  again.status = { ...closed.status!, consecutiveFailures: 1 };
  const later = planPool(input(again, fleet));
  assert.equal(later.status?.consecutiveFailures, 1);
  assert.equal(events(later, "CircuitClosed").length, 0);
});

// ---------------------------------------------------------------------------
// (7) canary with soak

Deno.test("canary: one slot for the batch, then a soak (CanarySoak until soakUntil), then maxUnavailable", () => {
  const w = settledWorld({ maxUnavailable: 2, canary: { nodes: 1, soakSeconds: 300 } }, [
    "n1",
    "n2",
    "n3",
    "n4",
    "n5",
  ]);
  w.edit((p) => p.spec.image.ref = B);
  const grants: string[][] = [];
  let soaking: Plan | undefined;
  for (let i = 0; i < 30 && !soaking; i++) {
    const p = w.tick();
    grants.push(withWhy(p, "assign slot"));
    assert.ok((p.status?.slotsInUse ?? 0) <= 1, "never more than the canary in flight");
    if (p.status?.canary?.phase === "Soaking") soaking = p;
  }
  assert.ok(soaking, "the canary soaks");
  assert.deepEqual(grants.flat().length, 1, "a single slot for the canary");
  const canaryNode = grants.flat()[0];
  assert.deepEqual(w.reboots.map((r) => r.node), [canaryNode]);
  const until = soaking.status!.canary!.soakUntil!;
  const soakStart = w.now.getTime() - 1_000;
  assert.equal(Date.parse(until), soakStart + 300_000);
  const upToDate = cond(soaking.status, "UpToDate");
  assert.equal(upToDate?.reason, "CanarySoak");
  assert.match(upToDate?.message ?? "", new RegExp(`soaking until ${until}`));
  assert.equal(soaking.requeueAfterMs, 300_000);

  // During the soak nobody else gets a slot.
  const during = w.tick(298_000);
  assert.deepEqual(withWhy(during, "assign slot"), []);
  assert.equal(during.status?.canary?.phase, "Soaking");
  assert.equal(during.requeueAfterMs, 299_000);
  // At soakUntil: Passed, and the rest proceeds at maxUnavailable (2 slots at once).
  w.now = new Date(Date.parse(until));
  const after = w.tick();
  assert.equal(after.status?.canary?.phase, "Passed");
  assert.equal(withWhy(after, "assign slot").length, 2);
  w.until(allOn(w, B), 60);
  assert.equal(w.reboots.length, 5);
  assert.deepEqual(outcomes(w.pool.status), ["1:a:Succeeded", "2:b:Succeeded"]);
});

Deno.test("canary: a canary node failing during its soak triggers the failure policy", () => {
  const w = settledWorld({
    onFailure: "RollbackPool",
    maxUnavailable: 2,
    canary: { nodes: 1, soakSeconds: 600 },
  });
  w.edit((p) => p.spec.image.ref = B);
  w.until((p) => p.status?.canary?.phase === "Soaking");
  const canaryNode = w.reboots[0].node;
  // The unit fails after the node was verified and released.
  w.bad.set(B, "unit");
  w.daemon();
  const plan = w.tick();
  assert.equal(plan.status?.canary?.phase, "Failed");
  assert.equal(plan.status?.rollbackHold?.image, A);
  assert.match(
    cond(plan.status, "Degraded")?.message ?? "",
    new RegExp(`node ${canaryNode} failed health checks`),
  );
  w.until(allOn(w, A), 60);
  assert.deepEqual(w.reboots.map((r) => `${r.node}:${tail(r.image)}`), [
    `${canaryNode}:b`,
    `${canaryNode}:a`,
  ]);
});

Deno.test("RollbackPool, two slots, no canary: both failed nodes go back; no third node reboots into the bad image", () => {
  const w = settledWorld({ onFailure: "RollbackPool", maxUnavailable: 2 }, [
    "n1",
    "n2",
    "n3",
    "n4",
  ]);
  w.bad.set(B, "unit");
  w.edit((p) => p.spec.image.ref = B);
  const failed = w.until((p) => p.status?.rollbackHold !== undefined);
  const intoB = w.reboots.filter((r) => r.image === B).map((r) => r.node);
  assert.equal(intoB.length, 2);
  assert.deepEqual(events(failed, "HealthCheckFailed").map((e) => e.regarding.name).sort(), intoB);
  assert.equal(failed.status?.consecutiveFailures, 1, "one failed rollout, however many nodes");
  w.until(allOn(w, A), 60);
  assert.deepEqual(w.booted(), { n1: "a", n2: "a", n3: "a", n4: "a" });
  assert.deepEqual(w.reboots.filter((r) => r.image === B).map((r) => r.node), intoB);
  assert.deepEqual(w.reboots.filter((r) => r.image === A).map((r) => r.node).sort(), intoB);
  assert.equal(w.events("RolloutComplete").filter((e) => e.message.includes(B)).length, 0);
});

Deno.test("RollbackNode: a fell-back host already runs the good image: released without another reboot", () => {
  const w = settledWorld({ onFailure: "RollbackNode" });
  w.bad.set(B, "fallback");
  w.edit((p) => p.spec.image.ref = B);
  const failed = w.until((p) => events(p, "HealthCheckFailed").length > 0);
  const victim = events(failed, "HealthCheckFailed")[0].regarding.name;
  assert.match(events(failed, "HealthCheckFailed")[0].message, /fell back/);
  const released = w.until((p) => withWhy(p, "release slot").includes(victim));
  assert.deepEqual(w.reboots.map((r) => `${r.node}:${tail(r.image)}`), [`${victim}:b`]);
  assert.equal(w.desired()[victim], "a");
  assert.equal(released.status?.slotsInUse, 0);
  for (let i = 0; i < 5; i++) assert.deepEqual(withWhy(w.tick(), "assign slot"), []);
  assert.equal(w.reboots.length, 1, "nobody else reboots into b");
});

Deno.test("health: pods and the Prometheus query are polled while a node is verified", () => {
  const p = healthPool({
    health: {
      podSelector: { matchLabels: { app: "cni" } },
      prometheus: { url: "http://prom:9090", query: "up == 0", forSeconds: 60 },
    },
  });
  const nodes = [node("n1", { unschedulable: true, readySince: BACK }), node("n2")];
  const bootcNodes = [rebootedInto("Healthy"), bootcNode("n2", { phase: "staged" })];
  // Pods of n1 not listed yet: asked for; nothing released.
  const unlisted = planPool({
    ...input(p, { nodes, bootcNodes, now: NOW }),
    podsListed: new Set(["n2"]),
  });
  assert.ok(unlisted.needPods.includes("n1"));
  assert.deepEqual(withWhy(unlisted, "release slot"), []);
  // Listed, query empty for 30s of 60s: polled again within 5s.
  const base = input(p, { nodes, bootcNodes, now: NOW });
  const polling = planPool({
    ...base,
    healthQueries: new Map([["n1", {
      last: "empty",
      emptySince: new Date("2026-01-01T00:59:30Z"),
    }]]),
  });
  assert.deepEqual(withWhy(polling, "release slot"), []);
  assert.ok((polling.requeueAfterMs ?? Infinity) <= 5_000);
  assert.match(
    cond(polling.status, "UpToDate")?.message ?? "",
    /verifying n1: Prometheus \(empty for 30s of 60s\)/,
  );
  // Empty for long enough: verified and released.
  const passed = planPool({
    ...base,
    healthQueries: new Map([["n1", {
      last: "empty",
      emptySince: new Date("2026-01-01T00:59:00Z"),
    }]]),
  });
  assert.deepEqual([...new Set(withWhy(passed, "release slot"))], ["n1"]);
});
