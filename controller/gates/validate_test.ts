import assert from "node:assert/strict";
import { policyErrors } from "./validate.ts";

Deno.test("policyErrors: every bad time-based field, each named", () => {
  assert.deepEqual(policyErrors({}), []);
  assert.deepEqual(
    policyErrors({
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
  const errors = policyErrors({
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
  assert.deepEqual(fields, [
    "spec.timeZone",
    "spec.maintenance.windows[1].schedule",
    "spec.maintenance.windows[1].duration",
    "spec.maintenance.blackouts[0].end",
    "spec.rollout.budgets[0]",
  ]);
});
