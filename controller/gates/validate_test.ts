import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { policyPool } from "./_testing.ts";
import type { Gate } from "./gate.ts";
import type { PoolPolicy } from "./policy.ts";
import { GATES } from "./registry.ts";
import { policyErrors } from "./validate.ts";

/** The errors of a lone pool with `policy`. */
function errorsOf(policy: PoolPolicy, gates?: readonly Gate[]): string[] {
  const pool = policyPool(policy);
  return policyErrors({ pool, pools: [pool], gates });
}

Deno.test("policyErrors: every bad time-based field, each named, in gate order", () => {
  assert.deepEqual(errorsOf({}), []);
  assert.deepEqual(
    errorsOf({
      timeZone: "Europe/Berlin",
      rollout: {
        maxUnavailable: "20%",
        budgets: [
          { maxUnavailable: 1, schedule: "0 9 * * 1-5", duration: "8h" },
          { maxUnavailable: "0%" },
        ],
      },
      maintenance: {
        windows: [{ schedule: "0 22 * * 6", duration: "6h" }, {
          schedule: "@daily",
          duration: "1h30m",
        }],
        blackouts: [{ start: "2026-12-20T00:00:00+01:00", end: "2027-01-03T00:00:00+01:00" }],
      },
    }),
    [],
  );
  const errors = errorsOf({
    timeZone: "Berlin",
    rollout: { budgets: [{ maxUnavailable: 1, schedule: "0 9 * * 1-5" }] },
    maintenance: {
      windows: [{ schedule: "0 22 * * 6", duration: "6h" }, {
        schedule: "0 22 * * 6 *",
        duration: "6",
      }],
      blackouts: [{ start: "2027-01-03T00:00:00Z", end: "2026-12-20T00:00:00Z" }],
    },
  });
  const fields = errors.map((e) => e.split(":")[0]);
  // The shared time zone first, then each gate's own fields in GATES order.
  assert.deepEqual(fields, [
    "spec.timeZone",
    "spec.maintenance.blackouts[0].end",
    "spec.maintenance.windows[1].schedule",
    "spec.maintenance.windows[1].duration",
    "spec.rollout.budgets[0]",
  ]);
});

Deno.test("policyErrors: maxUnavailable, canary.nodes and rollout.after are their gates' checks", () => {
  const p = policyPool({ rollout: { maxUnavailable: "150%" } });
  const spec = p.spec as BootcNodePool["spec"] & {
    rollout: { canary?: { nodes: number | string }; after?: string[] };
  };
  spec.rollout.canary = { nodes: 0 };
  spec.rollout.after = ["ghost"];
  const errors = policyErrors({ pool: p, pools: [p] });
  assert.equal(errors.length, 3, errors.join("\n"));
  assert.match(errors[0], /^spec\.rollout\.canary\.nodes/);
  assert.match(errors[1], /^spec\.rollout\.maxUnavailable/);
  assert.equal(errors[2], 'rollout.after: unknown pool "ghost"');
});

Deno.test("policyErrors: derived from the gates, so a new gate's validation shows up as is", () => {
  const frozen: Gate = {
    name: "frozen",
    reasons: [{ reason: "Frozen", blocksPool: true }],
    validate: ({ pool, pools }) => [`spec.frozen: ${pool.metadata.name} of ${pools.length}`],
    decide: (input) => ({ admit: input.candidates }),
  };
  const silent: Gate = { ...frozen, name: "silent", validate: undefined };
  const bad = { timeZone: "Berlin" };
  assert.deepEqual(errorsOf({}, [frozen, silent]), ["spec.frozen: workers of 1"]);
  assert.deepEqual(errorsOf(bad, [...GATES, frozen]).map((e) => e.split(":")[0]), [
    "spec.timeZone",
    "spec.frozen",
  ]);
  // Without the gate, its field is not checked: the registry is the only list.
  assert.deepEqual(errorsOf({}, GATES), []);
  assert.deepEqual(errorsOf({}, []), []);
});
