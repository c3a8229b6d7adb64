import assert from "node:assert/strict";
import { planPool } from "./planner.ts";
import { channelStep } from "./channel.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";

/** A channel pool as the reconciler hands it to the planner (its ref the chosen version). */
function channelPool(status?: Record<string, unknown>) {
  const p = pool({ status: status as never });
  p.spec.image = {
    channel: { repository: "quay.io/example/os", constraint: "~1.0" },
  } as typeof p.spec.image;
  return p;
}

Deno.test("planner: a channel pool comes back at its next check and records its status", () => {
  const now = new Date("2026-01-01T01:00:00Z");
  const p = channelPool();
  const decision = channelStep({
    pool: p,
    listing: { at: now, result: { ok: true, tags: ["1.0.0", "1.0.1", "2.0.0"] } },
    circuitOpen: false,
    now,
    intervalMs: 60_000,
  })!;
  assert.equal(decision.ref, "quay.io/example/os:1.0.1");
  const planned = { ...p, spec: { ...p.spec, image: { ...p.spec.image, ref: decision.ref } } };
  const plan = planPool({
    ...input(planned, { nodes: [node("n1")], bootcNodes: [bootcNode("n1", { phase: "idle" })] }),
    channel: decision,
    now,
  });
  assert.ok(plan.requeueAfterMs !== undefined && plan.requeueAfterMs <= 60_000);
  assert.equal(plan.status?.channel?.currentVersion, "1.0.1");
  assert.equal(plan.status?.channel?.nextCheckTime, "2026-01-01T01:01:00Z");
});

Deno.test("planner: a bad channel constraint is InvalidSpec naming the field", () => {
  const p = channelPool();
  p.spec.image.channel!.constraint = "~one";
  const plan = planPool(input(p, { nodes: [node("n1")], bootcNodes: [bootcNode("n1")] }));
  const degraded = plan.status?.conditions?.find((c) => c.type === "Degraded");
  assert.equal(degraded?.reason, "InvalidSpec");
  assert.match(
    degraded?.message ?? "",
    /spec\.image\.channel\.constraint: "~one" is not a semver range/,
  );
});

Deno.test("planner: a channel version that fails joins the failed versions and a re-check is due", () => {
  const now = new Date("2026-01-01T01:00:00Z");
  const history = [
    {
      revision: 1,
      image: image("a"),
      digest: image("a").split("@")[1],
      startedAt: "t",
      outcome: "Succeeded",
    },
  ];
  const status = {
    targetDigest: image("b").split("@")[1],
    targetImage: image("b"),
    history,
    channel: {
      repository: "quay.io/example/os",
      constraint: "~1.0",
      currentVersion: "1.0.2",
      currentTag: "1.0.2",
      lastCheckTime: "2026-01-01T00:59:00Z",
    },
  };
  const p = channelPool(status);
  p.spec.rollout.onFailure = "RollbackPool";
  const decision = channelStep({ pool: p, circuitOpen: false, now, intervalMs: 600_000 })!;
  const planned = { ...p, spec: { ...p.spec, image: { ...p.spec.image, ref: decision.ref } } };
  // n1 rebooted into b (version 1.0.2) and reports a failed unit.
  const plan = planPool({
    ...input(planned, {
      nodes: [node("n1", { unschedulable: true })],
      bootcNodes: [bootcNode("n1", {
        booted: image("b"),
        desired: image("b"),
        slotAt: "2026-01-01T00:50:00Z",
        drainedAt: "2026-01-01T00:51:00Z",
        state: "Booted",
        host: "Unhealthy",
      })],
      resolution: {
        generation: 1,
        at: now,
        result: { ok: true, digest: image("b").split("@")[1] },
      },
    }),
    channel: decision,
    now,
  });
  assert.deepEqual(plan.status?.channel?.failedVersions, ["1.0.2"]);
  assert.equal(plan.status?.channel?.lastCheckTime, undefined, "a re-check is due at once");
  assert.equal(plan.status?.rollbackHold?.failedImage, image("b"));
});

Deno.test("planner: a version is marked failed once, not again while its node is rolled back", () => {
  const now = new Date("2026-01-01T01:00:00Z");
  const bDigest = image("b").split("@")[1];
  const status = {
    targetDigest: bDigest,
    targetImage: image("b"),
    failedDigests: [bDigest], // counted in an earlier plan
    consecutiveFailures: 1,
    history: [
      {
        revision: 1,
        image: image("a"),
        digest: image("a").split("@")[1],
        startedAt: "t",
        outcome: "Succeeded",
      },
    ],
    channel: {
      repository: "quay.io/example/os",
      constraint: "~1.0",
      currentVersion: "1.0.1", // the channel already went back to the good version
      currentTag: "1.0.1",
      failedVersions: ["1.0.2"],
      lastCheckTime: "2026-01-01T00:59:59Z",
    },
  };
  const p = channelPool(status);
  p.spec.rollout.onFailure = "Halt";
  const decision = channelStep({ pool: p, circuitOpen: false, now, intervalMs: 600_000 })!;
  const planned = { ...p, spec: { ...p.spec, image: { ...p.spec.image, ref: decision.ref } } };
  const plan = planPool({
    ...input(planned, {
      nodes: [node("n1", { unschedulable: true })],
      bootcNodes: [bootcNode("n1", {
        booted: image("b"),
        desired: image("b"),
        slotAt: "2026-01-01T00:50:00Z",
        drainedAt: "2026-01-01T00:51:00Z",
        state: "Booted",
        host: "Unhealthy",
      })],
    }),
    channel: decision,
    now,
  });
  assert.deepEqual(plan.status?.channel?.failedVersions, ["1.0.2"]);
  assert.equal(plan.status?.channel?.currentVersion, "1.0.1");
});

Deno.test("planner: going back to an image that succeeded before does not end a run of failures", () => {
  const a = image("a");
  const ad = a.split("@")[1];
  const p = pool({
    ref: a,
    status: {
      targetDigest: ad,
      targetImage: a,
      consecutiveFailures: 1,
      history: [
        { revision: 1, image: a, digest: ad, startedAt: "t1", outcome: "Succeeded" },
        { revision: 2, image: image("b"), digest: "sha256:b", startedAt: "t2", outcome: "Failed" },
        { revision: 3, image: a, digest: ad, startedAt: "t3", outcome: "Progressing" },
      ],
    } as never,
  });
  const plan = planPool(input(p, {
    nodes: [node("n1")],
    bootcNodes: [bootcNode("n1", { booted: a, desired: a })],
  }));
  assert.equal(plan.status?.history?.at(-1)?.outcome, "Succeeded");
  assert.equal(plan.status?.consecutiveFailures, 1);
  // A new image that succeeds does end it.
  const c = image("c");
  const fresh = planPool(input(pool({ ref: c, status: { ...p.status, targetImage: c } as never }), {
    nodes: [node("n1")],
    bootcNodes: [bootcNode("n1", { booted: c, desired: c })],
  }));
  assert.equal(fresh.status?.history?.at(-1)?.image, c);
  assert.equal(fresh.status?.consecutiveFailures, undefined);
});
