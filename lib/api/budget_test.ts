import assert from "node:assert/strict";
import {
  BUDGET_MAX_UNAVAILABLE,
  CANARY_NODES,
  CLUSTER_MAX_UNAVAILABLE,
  clusterCapOf,
  type IntOrPercent,
  intOrPercentError,
  MAX_STAGING,
  POOL_MAX_UNAVAILABLE,
  poolSlotLimit,
  resolveIntOrPercent,
  resolvePoolMaxUnavailable,
  SlotLimitSource,
} from "./budget.ts";

Deno.test("resolveIntOrPercent: minimum 1 (maxUnavailable, maxStaging, canary nodes)", () => {
  const cases: [IntOrPercent, number, number | "error"][] = [
    [3, 10, 3],
    ["2", 10, 2],
    ["25%", 10, 3], // rounded up
    ["10%", 10, 1],
    ["10%", 3, 1], // at least 1
    ["1%", 10, 1],
    ["1%", 0, 1], // even of an empty pool
    ["100%", 7, 7],
    ["50%", 5, 3],
    [5, 2, 5], // more than the pool: as is (the pool's size bounds it anyway)
    [0, 10, "error"],
    ["0", 10, "error"],
    ["0%", 10, "error"],
    [-1, 10, "error"],
    [1.5, 10, "error"],
    ["101%", 10, "error"],
    ["20 %", 10, "error"],
    ["abc", 10, "error"],
    ["", 10, "error"],
  ];
  for (const rule of [POOL_MAX_UNAVAILABLE, MAX_STAGING, CANARY_NODES]) {
    for (const [value, total, want] of cases) {
      const label = `${rule.field} ${JSON.stringify(value)} of ${total}`;
      if (want === "error") assert.throws(() => resolveIntOrPercent(value, total, rule), label);
      else assert.equal(resolveIntOrPercent(value, total, rule), want, label);
    }
  }
});

Deno.test("resolveIntOrPercent: minimum 0 (scheduled and cluster budgets): 0 and 0% are 0", () => {
  const cases: [IntOrPercent, number, number | "error"][] = [
    [0, 10, 0],
    ["0", 10, 0],
    ["0%", 10, 0],
    ["0%", 0, 0],
    [3, 10, 3],
    ["20%", 10, 2],
    ["25%", 3, 1],
    ["50%", 3, 2],
    ["10%", 0, 1],
    ["100%", 10, 10],
    [-1, 10, "error"],
    ["-1", 10, "error"],
    ["-5%", 10, "error"],
    ["101%", 10, "error"],
    [1.5, 10, "error"],
    ["20 %", 10, "error"],
    ["", 10, "error"],
  ];
  for (const rule of [BUDGET_MAX_UNAVAILABLE, CLUSTER_MAX_UNAVAILABLE]) {
    for (const [value, total, want] of cases) {
      const label = `${JSON.stringify(value)} of ${total}`;
      if (want === "error") assert.throws(() => resolveIntOrPercent(value, total, rule), label);
      else assert.equal(resolveIntOrPercent(value, total, rule), want, label);
    }
  }
});

Deno.test("intOrPercentError names the field and the accepted range", () => {
  assert.equal(intOrPercentError("25%", POOL_MAX_UNAVAILABLE), undefined);
  assert.equal(
    intOrPercentError("lots", POOL_MAX_UNAVAILABLE),
    'rollout.maxUnavailable: "lots" must be an integer >= 1 or a percentage from 1% to 100% ' +
      '(for example 1, 3 or "25%")',
  );
  assert.match(
    intOrPercentError("200%", { field: "spec.rollout.budgets[1].maxUnavailable", minimum: 0 })!,
    /^spec\.rollout\.budgets\[1\]\.maxUnavailable: "200%" must be an integer >= 0 or a percentage from 0% to 100%/,
  );
  assert.match(intOrPercentError(null, MAX_STAGING)!, /rollout\.maxStaging: null must be/);
});

Deno.test("resolvePoolMaxUnavailable: unset is 1", () => {
  assert.equal(resolvePoolMaxUnavailable(undefined, 10), 1);
  assert.equal(resolvePoolMaxUnavailable("30%", 10), 3);
  assert.throws(() => resolvePoolMaxUnavailable(0, 10), /rollout\.maxUnavailable: 0 must be/);
});

Deno.test("poolSlotLimit: the most restrictive of maxUnavailable, active budgets and whole-pool cluster budgets", () => {
  const until = new Date("2026-11-27T16:00:00Z");
  // maxUnavailable alone.
  assert.deepEqual(poolSlotLimit({ maxUnavailable: "20%", memberCount: 10 }), {
    limit: 2,
    source: SlotLimitSource.MaxUnavailable,
    name: "maxUnavailable",
    text: "maxUnavailable",
    message: "maxUnavailable 20% of 10 nodes = 2",
  });
  // An inactive budget says nothing; an active scheduled one sets the limit until it ends.
  const budgets = [
    { maxUnavailable: 0, active: false, schedule: "0 22 * * *", duration: "2h" },
    { maxUnavailable: 1, active: true, until, schedule: "0 9 * * 1-5", duration: "8h" },
  ];
  assert.deepEqual(poolSlotLimit({ maxUnavailable: 3, budgets, memberCount: 10 }), {
    limit: 1,
    source: SlotLimitSource.Budget,
    name: "rollout.budgets[1]",
    budget: 1,
    until,
    text: 'rollout.budgets[1] ("0 9 * * 1-5" for 8h)',
    message: 'rollout.budgets[1] 1 ("0 9 * * 1-5" for 8h)',
  });
  // A budget without a schedule is always active; "0%" of any pool is 0.
  const always = poolSlotLimit({
    maxUnavailable: 3,
    budgets: [{ maxUnavailable: "0%", active: true }],
    memberCount: 10,
  });
  assert.deepEqual([always.limit, always.name, always.text, always.until], [
    0,
    "rollout.budgets[0]",
    "rollout.budgets[0]",
    undefined,
  ]);
  // Ties name the earlier: maxUnavailable before a budget of the same size.
  assert.equal(
    poolSlotLimit({
      maxUnavailable: 2,
      budgets: [{ maxUnavailable: 2, active: true }],
      memberCount: 10,
    }).source,
    SlotLimitSource.MaxUnavailable,
  );
  // A cluster budget selecting the whole pool: its room left by other pools' disruptions.
  const cluster = poolSlotLimit({
    maxUnavailable: 3,
    memberCount: 10,
    clusterCaps: [
      { name: "wide", maxUnavailable: "50%", selected: 20, disruptedElsewhere: 2 }, // 10 - 2 = 8
      { name: "tight", maxUnavailable: 2, selected: 20, disruptedElsewhere: 1 }, // 1
    ],
  });
  assert.deepEqual([cluster.limit, cluster.source, cluster.name, cluster.message], [
    1,
    SlotLimitSource.ClusterBudget,
    "tight",
    "BootcDisruptionBudget tight 2 (1 used by other pools)",
  ]);
  assert.equal(poolSlotLimit({ memberCount: 3 }).message, "maxUnavailable 1");
  assert.throws(
    () => poolSlotLimit({ maxUnavailable: 0, memberCount: 10 }),
    /rollout\.maxUnavailable/,
  );
  assert.throws(
    () => poolSlotLimit({ budgets: [{ maxUnavailable: "x", active: false }], memberCount: 10 }),
    /rollout\.budgets\[0\]\.maxUnavailable: "x"/,
    "an unreadable budget fails even when inactive",
  );
});

Deno.test("clusterCapOf: room never below 0; an invalid budget gives none", () => {
  assert.equal(
    clusterCapOf({ name: "b", maxUnavailable: 1, selected: 4, disruptedElsewhere: 3 }),
    0,
  );
  assert.equal(
    clusterCapOf({ name: "b", maxUnavailable: "0%", selected: 4, disruptedElsewhere: 0 }),
    0,
  );
  assert.equal(
    clusterCapOf({
      name: "b",
      maxUnavailable: 5,
      selected: 4,
      disruptedElsewhere: 0,
      invalid: "x",
    }),
    0,
  );
});
