/**
 * The pool's views agree with one another: a halted rollout is named by
 * UpToDate as well as by Degraded, and a pool whose selector overlaps nodes
 * another pool runs is the one that reports it (not UpToDate, no
 * RolloutComplete), while the pool that runs them stays healthy.
 *
 * @module
 */
import assert from "node:assert/strict";
import { findCondition } from "../../lib/api/mod.ts";
import { planPool } from "./planner.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";
import { B, cond, events, settledWorld } from "../testing/health_world.ts";

Deno.test("onFailure Halt: the failure halts the rollout in UpToDate, STATE and Degraded alike", () => {
  const w = settledWorld({ onFailure: "Halt", maxUnavailable: 1 });
  w.bad.set(B, "unit");
  w.edit((p) => p.spec.image.ref = B);
  w.until((p) => events(p, "HealthCheckFailed").length > 0);
  const plan = w.tick();
  const upToDate = cond(plan.status, "UpToDate");
  const degraded = cond(plan.status, "Degraded");
  assert.equal(plan.status?.state, "Halted");
  assert.deepEqual([upToDate?.status, upToDate?.reason], ["False", "RolloutHalted"]);
  assert.match(
    upToDate?.message ?? "",
    /^0\/3 updated; .*1 degraded; .*the rollout of .* is halted/,
  );
  assert.deepEqual([degraded?.status, degraded?.reason], ["True", "HealthCheckFailed"]);
});

Deno.test("a pool overlapping another's nodes reports the conflict; the owner stays healthy", () => {
  const workers = pool({ ref: image("a") });
  const extra = pool({ name: "extra", ref: image("a") });
  const nodes = [node("w1"), node("w2")];
  const bootcNodes = ["w1", "w2"].map((n) =>
    bootcNode(n, { booted: image("a"), desired: image("a") })
  );
  const owner = planPool(input(workers, { nodes, bootcNodes, otherPools: [extra] }));
  assert.equal(findCondition(owner.status?.conditions, "Degraded")?.status, "False");
  assert.equal(findCondition(owner.status?.conditions, "UpToDate")?.status, "True");
  assert.equal(owner.status?.state, "AllUpdated");
  assert.ok(!owner.events.some((e) => e.reason === "NodeConflict"));

  const newcomer = planPool(input(extra, { nodes, bootcNodes, otherPools: [workers] }));
  const up = findCondition(newcomer.status?.conditions, "UpToDate");
  const degraded = findCondition(newcomer.status?.conditions, "Degraded");
  assert.deepEqual([up?.status, up?.reason], ["False", "NodeConflict"]);
  assert.match(up?.message ?? "", /w1, w2 also match pool workers/);
  assert.deepEqual([degraded?.status, degraded?.reason], ["True", "NodeConflict"]);
  assert.equal(newcomer.status?.state, "NodeConflict");
  assert.equal(newcomer.status?.nodeCount, 0);
  assert.ok(!newcomer.events.some((e) => e.reason === "RolloutComplete"));
  assert.equal(newcomer.actions.filter((a) => a.kind === "createBootcNode").length, 0);
});
