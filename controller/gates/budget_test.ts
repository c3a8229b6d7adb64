import assert from "node:assert/strict";
import { gateInput } from "./_testing.ts";
import { BUDGET_EXHAUSTED, budgetError, budgetGate, budgetLimit } from "./budget.ts";
import type { PoolPolicy, RolloutBudget } from "./policy.ts";

const berlin = "Europe/Berlin";
/** One node during business hours in Berlin, 20% of the pool otherwise. */
const businessHours: PoolPolicy = {
  timeZone: berlin,
  rollout: {
    maxUnavailable: "20%",
    budgets: [{ maxUnavailable: 1, schedule: "0 9 * * 1-5", duration: "8h" }],
  },
};
/** Nothing during business hours. */
const noneInBusinessHours: PoolPolicy = {
  timeZone: berlin,
  rollout: {
    maxUnavailable: 3,
    budgets: [{ maxUnavailable: 0, schedule: "0 9 * * 1-5", duration: "8h" }],
  },
};

interface Case {
  name: string;
  policy: PoolPolicy;
  now?: string;
  memberCount?: number;
  candidates: number;
  disrupted?: number;
  admitted: number;
  /** Expected wait; absent: no wait. */
  wait?: { message: string; until?: string; routine: boolean };
}

Deno.test("budgetGate: the most restrictive active budget, with maxUnavailable", () => {
  const cases: Case[] = [
    {
      name: "static: room for all",
      policy: { rollout: { maxUnavailable: 2 } },
      candidates: 1,
      disrupted: 1,
      admitted: 1,
    },
    {
      name: "static: slots busy with nodes in flight is routine",
      policy: { rollout: { maxUnavailable: 2 } },
      candidates: 3,
      disrupted: 1,
      admitted: 1,
      wait: { message: "1/2 reboot slots in use (maxUnavailable)", routine: true },
    },
    {
      name: "static: more candidates than slots, none in flight",
      policy: { rollout: { maxUnavailable: 1 } },
      candidates: 3,
      admitted: 1,
      wait: { message: "0/1 reboot slots in use (maxUnavailable)", routine: true },
    },
    {
      name: "business hours (Mon 11:00 CET): one node, until 17:00",
      policy: businessHours,
      now: "2026-11-23T10:00:00Z",
      candidates: 3,
      admitted: 1,
      wait: {
        message: '0/1 reboot slots in use (rollout.budgets[0] ("0 9 * * 1-5" for 8h) until ' +
          "Mon 2026-11-23 17:00 CET (Europe/Berlin))",
        until: "2026-11-23T16:00:00Z",
        routine: true,
      },
    },
    {
      name: "business hours, a node in flight: routine, until 17:00",
      policy: businessHours,
      now: "2026-11-23T10:00:00Z",
      candidates: 3,
      disrupted: 1,
      admitted: 0,
      wait: {
        message: '1/1 reboot slots in use (rollout.budgets[0] ("0 9 * * 1-5" for 8h) until ' +
          "Mon 2026-11-23 17:00 CET (Europe/Berlin))",
        until: "2026-11-23T16:00:00Z",
        routine: true,
      },
    },
    {
      name: "Monday 17:00 CET: 20% of 10",
      policy: businessHours,
      now: "2026-11-23T16:00:00Z",
      candidates: 3,
      admitted: 2,
      wait: { message: "0/2 reboot slots in use (maxUnavailable)", routine: true },
    },
    {
      name: "Saturday noon: 20% of 10",
      policy: businessHours,
      now: "2026-11-28T11:00:00Z",
      candidates: 2,
      admitted: 2,
    },
    {
      name: "business hours after spring forward (Mon 09:00 CEST = 07:00Z)",
      policy: businessHours,
      now: "2026-03-30T07:00:00Z",
      candidates: 2,
      admitted: 1,
      wait: {
        message: '0/1 reboot slots in use (rollout.budgets[0] ("0 9 * * 1-5" for 8h) until ' +
          "Mon 2026-03-30 17:00 CEST (Europe/Berlin))",
        until: "2026-03-30T15:00:00Z",
        routine: true,
      },
    },
    {
      name: "before business hours after spring forward (Mon 08:59 CEST)",
      policy: businessHours,
      now: "2026-03-30T06:59:00Z",
      candidates: 2,
      admitted: 2,
    },
    {
      name: "business hours after fall back (Mon 16:59 CET = 15:59Z)",
      policy: businessHours,
      now: "2026-10-26T15:59:00Z",
      candidates: 2,
      admitted: 1,
      wait: {
        message: '0/1 reboot slots in use (rollout.budgets[0] ("0 9 * * 1-5" for 8h) until ' +
          "Mon 2026-10-26 17:00 CET (Europe/Berlin))",
        until: "2026-10-26T16:00:00Z",
        routine: true,
      },
    },
    {
      name: "0 during business hours: no new reboot, not routine even with nodes in flight",
      policy: noneInBusinessHours,
      now: "2026-11-23T10:00:00Z",
      candidates: 2,
      disrupted: 1,
      admitted: 0,
      wait: {
        message: 'no new reboots: rollout.budgets[0] ("0 9 * * 1-5" for 8h) allows 0 ' +
          "disrupted nodes until Mon 2026-11-23 17:00 CET (Europe/Berlin)",
        until: "2026-11-23T16:00:00Z",
        routine: false,
      },
    },
    {
      name: "0 during business hours, no candidates: still says nothing may start",
      policy: noneInBusinessHours,
      now: "2026-11-23T10:00:00Z",
      candidates: 0,
      admitted: 0,
      wait: {
        message: 'no new reboots: rollout.budgets[0] ("0 9 * * 1-5" for 8h) allows 0 ' +
          "disrupted nodes until Mon 2026-11-23 17:00 CET (Europe/Berlin)",
        until: "2026-11-23T16:00:00Z",
        routine: false,
      },
    },
    {
      name: "0 during business hours, at night: maxUnavailable",
      policy: noneInBusinessHours,
      now: "2026-11-23T22:00:00Z",
      candidates: 4,
      admitted: 3,
      wait: { message: "0/3 reboot slots in use (maxUnavailable)", routine: true },
    },
    {
      name: '"0%" without a schedule: never a new reboot',
      policy: { rollout: { maxUnavailable: 2, budgets: [{ maxUnavailable: "0%" }] } },
      candidates: 1,
      admitted: 0,
      wait: {
        message: "no new reboots: rollout.budgets[0] allows 0 disrupted nodes",
        routine: false,
      },
    },
    {
      name: "percentages round up: 25% of 10 is 3, the smaller active one wins",
      policy: {
        rollout: {
          maxUnavailable: 5,
          budgets: [{ maxUnavailable: "50%" }, { maxUnavailable: "25%" }],
        },
      },
      candidates: 5,
      admitted: 3,
      wait: { message: "0/3 reboot slots in use (rollout.budgets[1])", routine: true },
    },
    {
      name: "a tie names the earlier (maxUnavailable first)",
      policy: { rollout: { maxUnavailable: 2, budgets: [{ maxUnavailable: "20%" }] } },
      candidates: 3,
      admitted: 2,
      wait: { message: "0/2 reboot slots in use (maxUnavailable)", routine: true },
    },
    {
      name: "several scheduled budgets: the active ones only",
      policy: {
        timeZone: berlin,
        rollout: {
          maxUnavailable: 4,
          budgets: [
            { maxUnavailable: 0, schedule: "0 0 * * 1", duration: "1h" }, // Mondays 00:00-01:00
            { maxUnavailable: 2, schedule: "0 9 * * 1-5", duration: "8h" },
          ],
        },
      },
      now: "2026-11-23T10:00:00Z",
      candidates: 4,
      admitted: 2,
      wait: {
        message: '0/2 reboot slots in use (rollout.budgets[1] ("0 9 * * 1-5" for 8h) until ' +
          "Mon 2026-11-23 17:00 CET (Europe/Berlin))",
        until: "2026-11-23T16:00:00Z",
        routine: true,
      },
    },
    {
      name: "a budget lowered below the nodes in flight: no room",
      policy: businessHours,
      now: "2026-11-23T10:00:00Z",
      candidates: 1,
      disrupted: 2,
      admitted: 0,
      wait: {
        message: '2/1 reboot slots in use (rollout.budgets[0] ("0 9 * * 1-5" for 8h) until ' +
          "Mon 2026-11-23 17:00 CET (Europe/Berlin))",
        until: "2026-11-23T16:00:00Z",
        routine: true,
      },
    },
    {
      name: "an unreadable budget fails closed",
      policy: {
        rollout: {
          maxUnavailable: 2,
          budgets: [{ maxUnavailable: 1, schedule: "0 9 * * 1-5", duration: "8 hours" }],
        },
      },
      candidates: 1,
      admitted: 0,
      wait: {
        message: "no new reboots: cannot read spec.rollout: rollout.budgets[0].duration: " +
          '"8 hours" is not a valid duration: use hours, minutes and seconds in that order, ' +
          'such as "8h", "90m", "1.5h" or "1h30m0s", from 1s to 87600h (10 years)',
        routine: false,
      },
    },
    {
      name: "an unreadable maxUnavailable fails closed",
      policy: { rollout: { maxUnavailable: "lots" } },
      candidates: 1,
      admitted: 0,
      wait: {
        message: 'no new reboots: cannot read spec.rollout: rollout.maxUnavailable: "lots" must ' +
          'be an integer >= 1 or a percentage from 1% to 100% (for example 1, 3 or "25%")',
        routine: false,
      },
    },
  ];
  for (const c of cases) {
    const input = gateInput({
      policy: c.policy,
      now: c.now ?? "2026-11-23T10:00:00Z",
      candidates: c.candidates,
      disrupted: c.disrupted,
      memberCount: c.memberCount ?? 10,
    });
    const d = budgetGate.decide(input);
    assert.deepEqual(d.admit, input.candidates.slice(0, c.admitted), c.name);
    if (!c.wait) {
      assert.equal(d.wait, undefined, c.name);
      continue;
    }
    assert.deepEqual(
      {
        reason: d.wait?.reason,
        message: d.wait?.message,
        until: d.wait?.until?.toISOString(),
        routine: d.wait?.routine ?? false,
      },
      {
        reason: BUDGET_EXHAUSTED,
        message: c.wait.message,
        until: c.wait.until && new Date(c.wait.until).toISOString(),
        routine: c.wait.routine,
      },
      c.name,
    );
  }
});

Deno.test("budgetLimit: the effective limit now (status.slots and metrics)", () => {
  const cases: [string, PoolPolicy, string, number][] = [
    ["static", { rollout: { maxUnavailable: "20%" } }, "2026-11-23T10:00:00Z", 2],
    ["business hours", businessHours, "2026-11-23T10:00:00Z", 1],
    ["night", businessHours, "2026-11-23T20:00:00Z", 2],
    ["budget 0", noneInBusinessHours, "2026-11-23T10:00:00Z", 0],
  ];
  for (const [name, policy, now, want] of cases) {
    const input = gateInput({ policy, now, memberCount: 10 });
    assert.equal(budgetLimit(input).limit, want, name);
  }
  // Unreadable: it throws, naming the field (the planner publishes limit 0, InvalidSpec).
  const unreadable = gateInput({
    policy: { rollout: { maxUnavailable: 1, budgets: [{ maxUnavailable: -1 }] } },
    now: "2026-11-23T10:00:00Z",
    memberCount: 10,
  });
  assert.throws(() => budgetLimit(unreadable), /rollout\.budgets\[0\]\.maxUnavailable: -1/);
});

Deno.test("budgetLimit: which budget sets the limit and until when", () => {
  const input = gateInput({ policy: businessHours, now: "2026-11-27T15:00:00Z" }); // Fri 16:00 CET
  assert.deepEqual(budgetLimit(input), {
    limit: 1,
    source: "Budget",
    name: "rollout.budgets[0]",
    budget: 0,
    until: new Date("2026-11-27T16:00:00Z"),
    text: 'rollout.budgets[0] ("0 9 * * 1-5" for 8h)',
    message: 'rollout.budgets[0] 1 ("0 9 * * 1-5" for 8h)',
  });
});

Deno.test("budgetError: value, schedule and duration, each naming its field", () => {
  const f = "spec.rollout.budgets[1]";
  const cases: [RolloutBudget, RegExp[]][] = [
    [{ maxUnavailable: 0 }, []],
    [{ maxUnavailable: "20%", schedule: "0 9 * * 1-5", duration: "8h" }, []],
    [{ maxUnavailable: "lots" }, [/^spec\.rollout\.budgets\[1\]\.maxUnavailable: "lots" must be/]],
    [{ maxUnavailable: 1, schedule: "0 9 * * 1-5" }, [
      /^spec\.rollout\.budgets\[1\]: schedule and duration go together/,
    ]],
    [{ maxUnavailable: 1, duration: "8h" }, [/schedule and duration go together/]],
    [{ maxUnavailable: 1, schedule: "0 9 * * 8", duration: "8h" }, [
      /\.schedule: "0 9 \* \* 8" is not a valid cron schedule/,
    ]],
    [{ maxUnavailable: 1, schedule: "0 9 * * 1", duration: "-8h" }, [
      /\.duration: "-8h" is not a valid duration/,
    ]],
    [
      { maxUnavailable: "200%", schedule: "nightly", duration: "0h" },
      [
        /\.maxUnavailable: "200%" must be an integer >= 0 or a percentage from 0% to 100%/,
        /\.schedule: "nightly"/,
        /\.duration: "0h" is not a valid duration: .*from 1s to 87600h/,
      ],
    ],
  ];
  for (const [b, wants] of cases) {
    const err = budgetError(b, f);
    if (wants.length === 0) assert.equal(err, undefined, JSON.stringify(b));
    for (const want of wants) assert.match(err ?? "", want, JSON.stringify(b));
  }
});
