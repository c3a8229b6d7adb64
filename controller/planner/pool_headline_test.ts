/**
 * The pool's headline (`status.state`), UpToDate verdict, short target and the
 * gate-wait events, through the whole planner: the cases issue 23 lists (a
 * typo'd tag, an invalid spec, a halted rollout), each failing without them.
 */
import assert from "node:assert/strict";
import { type BootcNodePool, findCondition } from "../../lib/api/mod.ts";
import { type Plan, planPool } from "./planner.ts";
import { bootcNode, digest, image, input, node, pool, REPO } from "../testing/fixtures.ts";

const EARLIER = "2026-01-01T00:30:00Z";

function upToDate(plan: Plan) {
  return findCondition(plan.status?.conditions, "UpToDate");
}

/** A pool on `ref` whose status says it rolled image("a") out to n1 and n2. */
function convergedOnA(ref: string, generation = 2): BootcNodePool {
  return pool({
    ref,
    generation,
    status: {
      observedGeneration: generation - 1,
      targetDigest: digest("a"),
      targetImage: image("a"),
      deployedDigest: digest("a"),
      lastResolvedTime: "2026-01-01T00:00:00Z",
      conditions: [{
        type: "UpToDate",
        status: "True",
        reason: "AllUpdated",
        message: "2/2",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  });
}

const ON_A = {
  nodes: [node("n1"), node("n2")],
  bootcNodes: [
    bootcNode("n1", { booted: image("a"), desired: image("a") }),
    bootcNode("n2", { booted: image("a"), desired: image("a") }),
  ],
};

Deno.test("a typo'd tag: UpToDate False and STATE ImageResolutionFailed, the old target kept", () => {
  const p = convergedOnA(`${REPO}:nosuch`);
  const plan = planPool(input(p, {
    ...ON_A,
    resolution: {
      generation: 2,
      at: new Date("2026-01-01T00:59:50Z"),
      result: { ok: false, message: "manifest unknown" },
    },
  }));
  assert.equal(plan.status?.targetImage, image("a"));
  assert.equal(plan.status?.state, "ImageResolutionFailed");
  assert.equal(upToDate(plan)?.status, "False");
  assert.equal(upToDate(plan)?.reason, "ImageResolutionFailed");
  assert.match(upToDate(plan)?.message ?? "", /^2\/2 updated; resolving .*:nosuch: manifest/);
  // The tag does not name the target it keeps: the short form is its digest, or what the
  // status showed it as (no flicker while the tag cannot be resolved).
  assert.equal(plan.status?.targetShort, "aaaaaaaaaaaa");
  p.status!.targetShort = `stable (1.0) ${"a".repeat(12)}`;
  p.status!.targetVersion = "1.0";
  const kept = planPool(input(p, {
    ...ON_A,
    resolution: {
      generation: 2,
      at: new Date("2026-01-01T00:59:50Z"),
      result: { ok: false, message: "manifest unknown" },
    },
  }));
  assert.equal(kept.status?.targetShort, `stable (1.0) ${"a".repeat(12)}`);
  // The retry is due 30 s after the failed attempt.
  assert.equal(plan.status?.nextTagResolutionTime, "2026-01-01T01:00:20Z");
});

Deno.test("an invalid spec whose image changed: UpToDate False, STATE InvalidSpec, old target", () => {
  const p = convergedOnA(image("b"));
  (p.spec.rollout as Record<string, unknown>).after = ["nope"];
  const plan = planPool(input(p, ON_A));
  assert.equal(plan.status?.targetImage, image("a"));
  assert.equal(plan.status?.state, "InvalidSpec");
  assert.equal(upToDate(plan)?.status, "False");
  assert.equal(upToDate(plan)?.reason, "InvalidSpec");
  assert.match(upToDate(plan)?.message ?? "", /rollout\.after: unknown pool "nope"/);
});

Deno.test("a halted rollout: STATE Halted, UpToDate reason RolloutHalted (not RolloutInProgress)", () => {
  const plan = planPool(input(pool({ maxUnavailable: 3 }), {
    nodes: [node("a", { unschedulable: true }), node("b", { unschedulable: true }), node("c")],
    bootcNodes: [
      bootcNode("a", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("b", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("c", { phase: "staged" }),
    ],
  }));
  assert.equal(plan.status?.state, "Halted");
  assert.equal(upToDate(plan)?.reason, "RolloutHalted");
});

Deno.test("targetShort: tag, version once a node staged it, 12 hex digits; messages use it", () => {
  const p = pool({ ref: `${REPO}:v2` });
  const staged = bootcNode("n1", { phase: "staged", desired: image("b") });
  staged.status!.staged!.version = "2.0";
  const plan = planPool(input(p, {
    nodes: [node("n1")],
    bootcNodes: [staged],
    resolution: {
      generation: 1,
      at: new Date("2026-01-01T00:59:00Z"),
      result: { ok: true, digest: digest("b") },
    },
  }));
  assert.equal(plan.status?.targetShort, "v2 (2.0) bbbbbbbbbbbb");
  assert.equal(plan.status?.targetVersion, "2.0");
  assert.equal(plan.status?.targetImage, image("b"), "the full reference, once");
  assert.equal(plan.status?.nextTagResolutionTime, "2026-01-01T01:04:00Z");
  const changed = plan.events.find((e) => e.reason === "TargetChanged");
  assert.equal(changed?.message, "rolling out v2 (2.0) bbbbbbbbbbbb");
  // A digest reference polls nothing.
  const pinned = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [staged] }));
  assert.equal(pinned.status?.nextTagResolutionTime, undefined);
  assert.equal(pinned.status?.targetShort, "(2.0) bbbbbbbbbbbb");
});

Deno.test("gate waits: an event when the pool starts waiting on a gate, one when it stops", () => {
  const staged = [bootcNode("n1", { phase: "staged" }), bootcNode("n2", { phase: "staged" })];
  const fleet = { nodes: [node("n1"), node("n2")], bootcNodes: staged };
  const first = planPool(input(pool(), fleet));
  assert.equal(upToDate(first)?.reason, "RolloutInProgress");
  assert.deepEqual(first.events.filter((e) => e.reason.startsWith("Waiting")), []);

  const paused = pool({ paused: true, status: first.status });
  const waiting = planPool(input(paused, fleet));
  assert.equal(waiting.status?.state, "Paused");
  const started = waiting.events.filter((e) => e.reason.startsWith("Waiting"));
  assert.deepEqual(started.map((e) => [e.reason, e.message]), [
    ["Waiting", "waiting on Paused: no new reboot slots while paused"],
  ]);
  // Coalesced: the next reconcile of the same wait records nothing more.
  const again = planPool(input(pool({ paused: true, status: waiting.status }), fleet));
  assert.deepEqual(again.events.filter((e) => e.reason.startsWith("Waiting")), []);

  const resumed = planPool(input(pool({ status: again.status }), fleet));
  const stopped = resumed.events.filter((e) => e.reason.startsWith("Waiting"));
  assert.deepEqual(stopped.map((e) => [e.reason, e.message]), [
    ["WaitingCleared", "no longer waiting on Paused (now RollingOut)"],
  ]);
});
