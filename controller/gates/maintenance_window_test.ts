import assert from "node:assert/strict";
import { gateInput } from "./_testing.ts";
import { maintenanceWindowGate, OUTSIDE_MAINTENANCE_WINDOW } from "./maintenance_window.ts";
import type { ScheduledWindow } from "./schedule.ts";

interface Case {
  name: string;
  windows: ScheduledWindow[];
  timeZone?: string;
  now: string;
  candidates?: number;
  /** True: every candidate admitted, no wait. False: none admitted, a wait until `until`. */
  open: boolean;
  until?: string;
  message?: string;
}

const saturdayNight: ScheduledWindow[] = [{ schedule: "0 22 * * 6", duration: "6h" }];
const berlin = "Europe/Berlin";

Deno.test("maintenanceWindowGate: reboots start only inside a window", () => {
  const cases: Case[] = [
    { name: "no windows: always open", windows: [], now: "2026-11-23T12:00:00Z", open: true },
    {
      name: "Monday, Saturday-night window in Berlin",
      windows: saturdayNight,
      timeZone: berlin,
      now: "2026-11-23T12:00:00Z",
      candidates: 3,
      open: false,
      until: "2026-11-28T21:00:00Z",
      message:
        "outside maintenance windows; next window opens Sat 2026-11-28 22:00 CET (Europe/Berlin)",
    },
    {
      name: "no candidates: still says nothing may start",
      windows: saturdayNight,
      timeZone: berlin,
      now: "2026-11-23T12:00:00Z",
      candidates: 0,
      open: false,
      until: "2026-11-28T21:00:00Z",
    },
    {
      name: "Saturday 22:00 CET",
      windows: saturdayNight,
      timeZone: berlin,
      now: "2026-11-28T21:00:00Z",
      candidates: 3,
      open: true,
    },
    {
      name: "Sunday 03:59 CET",
      windows: saturdayNight,
      timeZone: berlin,
      now: "2026-11-29T02:59:59Z",
      open: true,
    },
    {
      name: "Sunday 04:00 CET: closed until next Saturday",
      windows: saturdayNight,
      timeZone: berlin,
      now: "2026-11-29T03:00:00Z",
      open: false,
      until: "2026-12-05T21:00:00Z",
    },
    {
      name: "the same schedule without a zone is read in UTC",
      windows: saturdayNight,
      now: "2026-11-28T21:30:00Z",
      open: false,
      until: "2026-11-28T22:00:00Z",
      message: "outside maintenance windows; next window opens Sat 2026-11-28 22:00 UTC",
    },
    {
      name: "several windows: the nearest next one",
      windows: [
        { schedule: "0 22 * * 6", duration: "6h" },
        { schedule: "0 12 * * 3", duration: "1h" },
      ],
      timeZone: berlin,
      now: "2026-11-24T12:00:00Z",
      open: false,
      until: "2026-11-25T11:00:00Z",
      message:
        "outside maintenance windows; next window opens Wed 2026-11-25 12:00 CET (Europe/Berlin)",
    },
    {
      name: "window across midnight (UTC), after midnight",
      windows: [{ schedule: "30 23 * * *", duration: "2h" }],
      now: "2026-11-24T01:29:00Z",
      open: true,
    },
    // Spring forward: 02:00 does not exist on 2026-03-29; the window opens right after the gap.
    {
      name: "spring forward: 02:00 window opens at 03:00 CEST",
      windows: [{ schedule: "0 2 * * *", duration: "1h" }],
      timeZone: berlin,
      now: "2026-03-29T00:30:00Z",
      open: false,
      until: "2026-03-29T01:00:00Z",
      message:
        "outside maintenance windows; next window opens Sun 2026-03-29 03:00 CEST (Europe/Berlin)",
    },
    {
      name: "spring forward: 02:30 window also opens at 03:00 CEST",
      windows: [{ schedule: "30 2 * * *", duration: "1h" }],
      timeZone: berlin,
      now: "2026-03-29T01:00:00Z",
      open: true,
    },
    {
      name: "spring forward: 02:30 window lasts its hour (until 04:00 CEST)",
      windows: [{ schedule: "30 2 * * *", duration: "1h" }],
      timeZone: berlin,
      now: "2026-03-29T02:00:00Z",
      open: false,
      until: "2026-03-30T00:30:00Z",
      message:
        "outside maintenance windows; next window opens Mon 2026-03-30 02:30 CEST (Europe/Berlin)",
    },
    // Fall back: a 6h window from Saturday 2026-10-24 22:00 CEST (20:00Z) ends 02:00Z = 03:00 CET.
    {
      name: "fall back: inside during the repeated hour",
      windows: saturdayNight,
      timeZone: berlin,
      now: "2026-10-25T01:30:00Z",
      open: true,
    },
    {
      name: "fall back: the window ends after 6 elapsed hours, 03:00 CET",
      windows: saturdayNight,
      timeZone: berlin,
      now: "2026-10-25T02:00:00Z",
      open: false,
      until: "2026-10-31T21:00:00Z",
      message:
        "outside maintenance windows; next window opens Sat 2026-10-31 22:00 CET (Europe/Berlin)",
    },
    {
      name: "fall back: a repeated 02:30 starts once (CEST), not again at 02:30 CET",
      windows: [{ schedule: "30 2 * * *", duration: "30m" }],
      timeZone: berlin,
      now: "2026-10-25T01:30:00Z",
      open: false,
      until: "2026-10-26T01:30:00Z",
    },
    {
      name: "an unreadable schedule fails closed",
      windows: [{ schedule: "0 22 * * SAT-", duration: "6h" }],
      now: "2026-11-28T22:30:00Z",
      candidates: 2,
      open: false,
    },
    {
      name: "an unknown zone fails closed",
      windows: saturdayNight,
      timeZone: "Europe/Atlantis",
      now: "2026-11-28T22:30:00Z",
      open: false,
      message:
        "no new reboots: cannot read spec.maintenance.windows (time zone Europe/Atlantis): " +
        'window 0: schedule "0 22 * * 6": time zone "Europe/Atlantis" is not known',
    },
  ];
  for (const c of cases) {
    const input = gateInput({
      policy: { timeZone: c.timeZone, maintenance: { windows: c.windows } },
      now: c.now,
      candidates: c.candidates ?? 1,
    });
    const d = maintenanceWindowGate.decide(input);
    if (c.open) {
      assert.deepEqual(d, { admit: input.candidates }, c.name);
      continue;
    }
    assert.deepEqual(d.admit, [], c.name);
    assert.equal(d.wait?.reason, OUTSIDE_MAINTENANCE_WINDOW, c.name);
    assert.equal(d.wait?.until?.toISOString(), c.until && new Date(c.until).toISOString(), c.name);
    if (c.message) assert.equal(d.wait?.message, c.message, c.name);
    assert.ok(!d.wait?.routine, c.name);
  }
});
