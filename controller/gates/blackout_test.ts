import assert from "node:assert/strict";
import { gateInput } from "./_testing.ts";
import { BLACKOUT, blackoutError, blackoutGate, blackoutState } from "./blackout.ts";
import type { BlackoutSpec } from "./policy.ts";

const freeze: BlackoutSpec = {
  start: "2026-12-20T00:00:00+01:00",
  end: "2027-01-03T00:00:00+01:00",
  reason: "year-end freeze",
};

interface Case {
  name: string;
  blackouts: BlackoutSpec[];
  now: string;
  /** The pool's zone, for the message (default UTC). */
  timeZone?: string;
  candidates?: number;
  admitted: number;
  until?: string;
  message?: string;
}

Deno.test("blackoutGate: no new reboot inside a blackout, until its (chain's) end", () => {
  const cases: Case[] = [
    {
      name: "no blackouts",
      blackouts: [],
      now: "2026-12-24T12:00:00Z",
      candidates: 3,
      admitted: 3,
    },
    {
      name: "before",
      blackouts: [freeze],
      now: "2026-12-19T22:59:59Z",
      candidates: 3,
      admitted: 3,
    },
    {
      name: "start is inclusive",
      blackouts: [freeze],
      timeZone: "Europe/Berlin",
      now: "2026-12-19T23:00:00Z",
      candidates: 3,
      admitted: 0,
      until: "2027-01-02T23:00:00Z",
      message:
        "blackout (year-end freeze): no new reboots until Sun 2027-01-03 00:00 CET (Europe/Berlin)",
    },
    {
      name: "no candidates: still says nothing may start",
      blackouts: [freeze],
      now: "2026-12-24T12:00:00Z",
      candidates: 0,
      admitted: 0,
      until: "2027-01-02T23:00:00Z",
    },
    {
      name: "end is exclusive",
      blackouts: [freeze],
      now: "2027-01-02T23:00:00Z",
      candidates: 2,
      admitted: 2,
    },
    {
      name: "overlapping and back-to-back blackouts: the chain's end, every reason once",
      blackouts: [
        {
          start: "2027-01-10T00:00:00Z",
          end: "2027-01-12T00:00:00Z",
          reason: "later, not chained",
        },
        {
          start: "2027-01-03T00:00:00+01:00",
          end: "2027-01-05T00:00:00+01:00",
          reason: "inventory",
        },
        freeze,
        { start: "2026-12-28T00:00:00Z", end: "2027-01-01T00:00:00Z", reason: "year-end freeze" },
        { start: "2026-12-01T00:00:00Z", end: "2026-12-02T00:00:00Z", reason: "over already" },
      ],
      now: "2026-12-24T12:00:00Z",
      admitted: 0,
      until: "2027-01-04T23:00:00Z",
      message: "blackout (year-end freeze; inventory): no new reboots until " +
        "Mon 2027-01-04 23:00 UTC",
    },
    {
      name: "a blackout without a reason",
      blackouts: [{ start: "2026-12-24T00:00:00Z", end: "2026-12-25T00:00:00Z" }],
      now: "2026-12-24T12:00:00Z",
      admitted: 0,
      until: "2026-12-25T00:00:00Z",
      message: "blackout: no new reboots until Fri 2026-12-25 00:00 UTC",
    },
    {
      name: "an unreadable blackout fails closed",
      blackouts: [freeze, { start: "next Monday", end: "2027-01-05T00:00:00Z" }],
      now: "2026-06-01T00:00:00Z",
      candidates: 2,
      admitted: 0,
      message: 'no new reboots: cannot read spec.maintenance.blackouts[1].start: "next Monday" ' +
        'is not an RFC 3339 time with Z or an offset, such as "2026-12-20T00:00:00+01:00" or ' +
        '"2026-12-19T23:00:00Z"',
    },
    {
      name: "an end before the start fails closed",
      blackouts: [{ start: "2027-01-05T00:00:00Z", end: "2027-01-03T00:00:00Z" }],
      now: "2026-06-01T00:00:00Z",
      admitted: 0,
      message: "no new reboots: cannot read spec.maintenance.blackouts[0].end: " +
        "2027-01-03T00:00:00Z must be after start 2027-01-05T00:00:00Z",
    },
  ];
  for (const c of cases) {
    const input = gateInput({
      policy: { timeZone: c.timeZone, maintenance: { blackouts: c.blackouts } },
      now: c.now,
      candidates: c.candidates ?? 1,
    });
    const d = blackoutGate.decide(input);
    assert.equal(d.admit.length, c.admitted, c.name);
    assert.deepEqual(d.admit, input.candidates.slice(0, c.admitted), c.name);
    if (c.admitted === input.candidates.length && c.admitted > 0) {
      assert.equal(d.wait, undefined, c.name);
      continue;
    }
    assert.equal(d.wait?.reason, BLACKOUT, c.name);
    assert.equal(d.wait?.until?.toISOString(), c.until && new Date(c.until).toISOString(), c.name);
    if (c.message) assert.equal(d.wait?.message, c.message, c.name);
    assert.ok(!d.wait?.routine, c.name);
  }
});

Deno.test("blackoutState: active, chain end and reasons", () => {
  const s = blackoutState([freeze], new Date("2026-12-24T12:00:00Z"));
  assert.deepEqual(s, {
    active: true,
    until: new Date("2027-01-02T23:00:00Z"),
    reasons: ["year-end freeze"],
  });
  assert.deepEqual(blackoutState([freeze], new Date("2027-01-03T00:00:00Z")), {
    active: false,
    reasons: [],
  });
});

Deno.test("blackoutError: RFC 3339 instants, end after start, errors name the field", () => {
  const f = "spec.maintenance.blackouts[2]";
  const cases: [BlackoutSpec, RegExp | undefined][] = [
    [freeze, undefined],
    [{ start: "2026-12-20T00:00:00Z", end: "2026-12-20T00:00:00.5Z" }, undefined],
    [
      { start: "2026-12-20", end: "2027-01-03T00:00:00Z" },
      /^spec\.maintenance\.blackouts\[2\]\.start: "2026-12-20" is not an RFC 3339 time/,
    ],
    [
      { start: "2026-02-30T00:00:00Z", end: "2027-01-03T00:00:00Z" },
      /\.start: "2026-02-30T00:00:00Z" is not/,
    ],
    [{ start: "2026-12-20T24:00:00Z", end: "2027-01-03T00:00:00Z" }, /\.start: .* is not/],
    [{ start: "2026-12-20T00:00:00", end: "2027-01-03T00:00:00Z" }, /\.start: .* is not/], // no zone
    [{ start: "2026-12-20T00:00:00Z", end: "soon" }, /\.end: "soon" is not/],
    [
      { start: "2026-12-20T00:00:00Z", end: "2026-12-20T01:00:00+01:00" },
      /\.end: .* must be after start/,
    ],
  ];
  for (const [b, want] of cases) {
    const err = blackoutError(b, f);
    if (want === undefined) assert.equal(err, undefined, JSON.stringify(b));
    else assert.match(err ?? "", want, JSON.stringify(b));
  }
});
