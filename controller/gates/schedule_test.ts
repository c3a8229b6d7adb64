import assert from "node:assert/strict";
import {
  durationError,
  formatInZone,
  instantError,
  parseDuration,
  parseInstant,
  parseSchedule,
  type ScheduledWindow,
  scheduleError,
  timeZoneError,
  windowState,
} from "./schedule.ts";

const H = 3_600_000;
const M = 60_000;

Deno.test("parseDuration: Go-style h/m/s durations in that order, 1s to 87600h", () => {
  const cases: [string, number | undefined][] = [
    ["8h", 8 * H],
    ["90m", 90 * M],
    ["1h30m", 90 * M],
    ["1h30m0s", 90 * M], // how Go prints durations
    ["1.5h", 90 * M],
    ["45s", 45_000],
    ["2h45m30s", 2 * H + 45 * M + 30_000],
    ["", undefined],
    ["0h", undefined],
    ["0s", undefined],
    ["-1h", undefined],
    ["8", undefined],
    ["8 h", undefined],
    ["1h 30m", undefined],
    ["1d", undefined],
    ["300ms", undefined],
    ["h", undefined],
    ["87600h", 87600 * H], // 10 years of 365 days: the largest
    ["87600.5h", undefined],
    ["100000h", undefined],
    ["1s", 1000], // the smallest
    ["0.5s", undefined],
    ["30m1h", undefined], // Go takes any order; the API takes h, m, s in order
    ["1h1h", undefined],
    [".5h", undefined],
    ["1234567h", undefined], // integer parts are bounded (no overflow in Go or CEL)
  ];
  for (const [input, want] of cases) assert.deepEqual(parseDuration(input), want, input);
});

Deno.test("durationError names the field and says what is wrong", () => {
  assert.deepEqual(durationError("8h", "spec.maintenance.windows[0].duration"), undefined);
  const cases: [unknown, RegExp][] = [
    ["8 hours", /^spec\.x: "8 hours" is not a valid duration: use hours, minutes and .*"1h30m0s"/],
    ["0m", /^spec\.x: "0m" is not a valid duration: .*from 1s to 87600h \(10 years\)/],
    ["100000h", /^spec\.x: "100000h" is not a valid duration: .*from 1s to 87600h/],
    [8, /^spec\.x: must be a duration string/],
    [undefined, /^spec\.x: must be a duration string/],
  ];
  for (const [input, want] of cases) assert.match(durationError(input, "spec.x") ?? "", want);
});

Deno.test("scheduleError: five-field cron or a nickname; errors name the field", () => {
  const valid = [
    "0 22 * * 6",
    "0 9 * * 1-5",
    "0 9 * * MON-FRI",
    "*/15 * * * *",
    "0 2,14 * * *",
    "0 0 29 2 *", // every 4 years is still a schedule
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
    " 0 22 * * 6 ",
    "0 22 * * 6#L", // the last Saturday
    "0 0 L * *",
    "0 0 15W * *",
    "0 0 31 4 1", // day of month OR day of week: every Monday in April
  ];
  for (const s of valid) assert.deepEqual(scheduleError(s, "f"), undefined, s);
  const invalid: [unknown, RegExp][] = [
    ["0 9 * * * *", /five fields/], // croner's seconds field
    ["0 0 9 * * * 2027", /five fields/],
    ["2026-12-01T00:00:00", /five fields/], // croner's one-shot ISO date
    ["0 25 * * *", /the hour \(field 2\) takes 0-23/],
    ["61 * * * *", /the minute \(field 1\) takes 0-59/],
    ["0 0 30 2 *", /never meet \(such as 30 February/],
    ["0 0 31 2-4/2 *", /never meet/], // beyond what the CRD decides: croner finds it
    ["10-5 * * * *", /a range a-b must have a <= b/],
    ["", /five fields/],
    ["@reboot", /five fields/],
    ["@DAILY", /five fields/],
    ["0 0 * * +MON", /day of week/], // croner's AND modifier
    ["every day", /five fields/],
    [42, /must be a cron schedule string/],
  ];
  for (const [s, want] of invalid) {
    const err = scheduleError(s, "spec.rollout.budgets[1].schedule");
    assert.ok(err !== undefined, `${s} should be invalid`);
    assert.match(err, /^spec\.rollout\.budgets\[1\]\.schedule: /);
    assert.match(err, want);
  }
});

Deno.test("timeZoneError: IANA names only; errors name the field", () => {
  const valid = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Asia/Calcutta",
    "Europe/Kyiv",
    "Europe/Kiev",
    "US/Eastern",
    "Etc/GMT+5",
  ];
  for (const tz of valid) assert.deepEqual(timeZoneError(tz, "spec.timeZone"), undefined, tz);
  const invalid = ["Mars/Olympus", "+01:00", "", "Europe/", "europe/berlin", "Local", "Factory", 1];
  for (const tz of invalid) {
    assert.match(
      timeZoneError(tz, "spec.timeZone") ?? "",
      /^spec\.timeZone: .* is not an IANA time zone/,
      String(tz),
    );
  }
});

Deno.test("parseSchedule rejects an unknown zone", () => {
  assert.throws(() => parseSchedule("0 9 * * *", "Mars/Olympus"), /time zone/);
});

interface WindowCase {
  name: string;
  windows: ScheduledWindow[];
  tz: string;
  now: string;
  active: boolean;
  until?: string;
  next?: string;
}

function checkWindowCases(cases: WindowCase[]) {
  for (const c of cases) {
    const got = windowState(c.windows, c.tz, new Date(c.now));
    assert.deepEqual(
      {
        active: got.active,
        until: got.activeUntil?.toISOString(),
        next: got.nextStart?.toISOString(),
      },
      {
        active: c.active,
        until: c.until && new Date(c.until).toISOString(),
        next: c.next && new Date(c.next).toISOString(),
      },
      c.name,
    );
  }
}

Deno.test("windowState: windows across midnight and several windows (UTC)", () => {
  const night = [{ schedule: "0 22 * * *", duration: "4h" }];
  const two = [
    { schedule: "0 1 * * *", duration: "2h" },
    { schedule: "0 13 * * *", duration: "1h" },
  ];
  checkWindowCases([
    {
      name: "before",
      windows: night,
      tz: "UTC",
      now: "2026-11-23T21:59:59.999Z",
      active: false,
      next: "2026-11-23T22:00Z",
    },
    {
      name: "at start",
      windows: night,
      tz: "UTC",
      now: "2026-11-23T22:00Z",
      active: true,
      until: "2026-11-24T02:00Z",
    },
    {
      name: "after midnight",
      windows: night,
      tz: "UTC",
      now: "2026-11-24T01:59:59Z",
      active: true,
      until: "2026-11-24T02:00Z",
    },
    {
      name: "end is exclusive",
      windows: night,
      tz: "UTC",
      now: "2026-11-24T02:00Z",
      active: false,
      next: "2026-11-24T22:00Z",
    },
    {
      name: "between two",
      windows: two,
      tz: "UTC",
      now: "2026-11-23T12:00Z",
      active: false,
      next: "2026-11-23T13:00Z",
    },
    {
      name: "in the second",
      windows: two,
      tz: "UTC",
      now: "2026-11-23T13:30Z",
      active: true,
      until: "2026-11-23T14:00Z",
    },
    {
      name: "after the second",
      windows: two,
      tz: "UTC",
      now: "2026-11-23T14:00Z",
      active: false,
      next: "2026-11-24T01:00Z",
    },
    {
      name: "in the first",
      windows: two,
      tz: "UTC",
      now: "2026-11-24T02:00Z",
      active: true,
      until: "2026-11-24T03:00Z",
    },
    {
      name: "overlapping windows make one period",
      windows: [{ schedule: "0 1 * * *", duration: "2h" }, {
        schedule: "0 2 * * *",
        duration: "3h",
      }],
      tz: "UTC",
      now: "2026-11-23T01:30Z",
      active: true,
      until: "2026-11-23T05:00Z",
    },
    {
      name: "back-to-back windows make one period",
      windows: [{ schedule: "0 1 * * *", duration: "1h" }, {
        schedule: "0 2 * * *",
        duration: "1h",
      }],
      tz: "UTC",
      now: "2026-11-23T01:00Z",
      active: true,
      until: "2026-11-23T03:00Z",
    },
    {
      name: "a window longer than its period chains into the next start",
      windows: [{ schedule: "0 */6 * * *", duration: "7h" }],
      tz: "UTC",
      now: "2026-11-23T05:00Z",
      active: true,
      // Starts every 6 hours, each open 7: the period never ends, so activeUntil is the lower
      // bound after MAX_CHAIN (1000) steps of 6 hours from the 07:00 end: 250 days on.
      until: "2027-07-31T07:00Z",
    },
    { name: "no windows", windows: [], tz: "UTC", now: "2026-11-23T05:00Z", active: false },
  ]);
});

Deno.test("windowState: Saturday night in Berlin, winter time", () => {
  const sat = [{ schedule: "0 22 * * 6", duration: "6h" }];
  const tz = "Europe/Berlin";
  checkWindowCases([
    // 22:00 CET = 21:00Z
    {
      name: "Monday",
      windows: sat,
      tz,
      now: "2026-11-23T12:00Z",
      active: false,
      next: "2026-11-28T21:00Z",
    },
    {
      name: "Saturday 21:59 CET",
      windows: sat,
      tz,
      now: "2026-11-28T20:59Z",
      active: false,
      next: "2026-11-28T21:00Z",
    },
    {
      name: "Saturday 22:00 CET",
      windows: sat,
      tz,
      now: "2026-11-28T21:00Z",
      active: true,
      until: "2026-11-29T03:00Z",
    },
    {
      name: "Sunday 03:59 CET",
      windows: sat,
      tz,
      now: "2026-11-29T02:59Z",
      active: true,
      until: "2026-11-29T03:00Z",
    },
    {
      name: "Sunday 04:00 CET",
      windows: sat,
      tz,
      now: "2026-11-29T03:00Z",
      active: false,
      next: "2026-12-05T21:00Z",
    },
  ]);
});

Deno.test("windowState: spring forward in Berlin (2026-03-29, 02:00 CET -> 03:00 CEST)", () => {
  const tz = "Europe/Berlin";
  const at2 = [{ schedule: "0 2 * * *", duration: "1h" }];
  const at230 = [{ schedule: "30 2 * * *", duration: "1h" }];
  const at1 = [{ schedule: "0 1 * * *", duration: "3h" }];
  checkWindowCases([
    // The day before: 02:00 CET = 01:00Z.
    {
      name: "02:00 the day before",
      windows: at2,
      tz,
      now: "2026-03-28T01:00Z",
      active: true,
      until: "2026-03-28T02:00Z",
    },
    // 02:00 does not exist on the day: the window opens right after the gap, 03:00 CEST = 01:00Z.
    {
      name: "01:30 CET, before the gap",
      windows: at2,
      tz,
      now: "2026-03-29T00:30Z",
      active: false,
      next: "2026-03-29T01:00Z",
    },
    {
      name: "03:00 CEST",
      windows: at2,
      tz,
      now: "2026-03-29T01:00Z",
      active: true,
      until: "2026-03-29T02:00Z",
    },
    {
      name: "04:00 CEST",
      windows: at2,
      tz,
      now: "2026-03-29T02:00Z",
      active: false,
      next: "2026-03-30T00:00Z",
    },
    // 02:30 does not exist either: also at 03:00 CEST (not 03:30), the first valid time after the gap.
    {
      name: "02:30 moved to 03:00 CEST",
      windows: at230,
      tz,
      now: "2026-03-29T00:59Z",
      active: false,
      next: "2026-03-29T01:00Z",
    },
    {
      name: "02:30 window open",
      windows: at230,
      tz,
      now: "2026-03-29T01:59Z",
      active: true,
      until: "2026-03-29T02:00Z",
    },
    {
      name: "02:30 the day after (CEST)",
      windows: at230,
      tz,
      now: "2026-03-29T02:00Z",
      active: false,
      next: "2026-03-30T00:30Z",
    },
    // A window across the change lasts its duration in elapsed time: 01:00 CET + 3h = 05:00 CEST.
    {
      name: "3h from 01:00 CET",
      windows: at1,
      tz,
      now: "2026-03-29T02:59Z",
      active: true,
      until: "2026-03-29T03:00Z",
    },
    {
      name: "3h from 01:00 CET, ended",
      windows: at1,
      tz,
      now: "2026-03-29T03:00Z",
      active: false,
      next: "2026-03-29T23:00Z",
    },
  ]);
});

Deno.test("windowState: fall back in Berlin (2026-10-25, 03:00 CEST -> 02:00 CET)", () => {
  const tz = "Europe/Berlin";
  const sat = [{ schedule: "0 22 * * 6", duration: "6h" }];
  const at230 = [{ schedule: "30 2 * * *", duration: "1h" }];
  checkWindowCases([
    // Saturday 22:00 CEST = 20:00Z; 6 hours later is 02:00Z = 03:00 CET (5 hours on the wall clock).
    {
      name: "Saturday 22:00 CEST",
      windows: sat,
      tz,
      now: "2026-10-24T20:00Z",
      active: true,
      until: "2026-10-25T02:00Z",
    },
    {
      name: "02:30 CEST (first pass)",
      windows: sat,
      tz,
      now: "2026-10-25T00:30Z",
      active: true,
      until: "2026-10-25T02:00Z",
    },
    {
      name: "02:30 CET (second pass)",
      windows: sat,
      tz,
      now: "2026-10-25T01:30Z",
      active: true,
      until: "2026-10-25T02:00Z",
    },
    {
      name: "03:00 CET",
      windows: sat,
      tz,
      now: "2026-10-25T02:00Z",
      active: false,
      next: "2026-10-31T21:00Z",
    },
    // A repeated local time starts a window once, on its first occurrence (02:30 CEST = 00:30Z).
    {
      name: "repeated 02:30, first",
      windows: at230,
      tz,
      now: "2026-10-25T00:30Z",
      active: true,
      until: "2026-10-25T01:30Z",
    },
    {
      name: "repeated 02:30, second",
      windows: at230,
      tz,
      now: "2026-10-25T01:30Z",
      active: false,
      next: "2026-10-26T01:30Z",
    },
  ]);
});

Deno.test("windowState: business hours in Berlin across both 2026 changes", () => {
  const tz = "Europe/Berlin";
  const biz = [{ schedule: "0 9 * * 1-5", duration: "8h" }];
  checkWindowCases([
    {
      name: "Fri before spring, 09:00 CET",
      windows: biz,
      tz,
      now: "2026-03-27T08:00Z",
      active: true,
      until: "2026-03-27T16:00Z",
    },
    {
      name: "Sat before spring",
      windows: biz,
      tz,
      now: "2026-03-28T12:00Z",
      active: false,
      next: "2026-03-30T07:00Z",
    },
    {
      name: "Mon after spring, 09:00 CEST",
      windows: biz,
      tz,
      now: "2026-03-30T07:00Z",
      active: true,
      until: "2026-03-30T15:00Z",
    },
    {
      name: "Mon after spring, 17:00 CEST",
      windows: biz,
      tz,
      now: "2026-03-30T15:00Z",
      active: false,
      next: "2026-03-31T07:00Z",
    },
    {
      name: "Fri before fall, 16:59 CEST",
      windows: biz,
      tz,
      now: "2026-10-23T14:59Z",
      active: true,
      until: "2026-10-23T15:00Z",
    },
    {
      name: "Sun of fall back",
      windows: biz,
      tz,
      now: "2026-10-25T12:00Z",
      active: false,
      next: "2026-10-26T08:00Z",
    },
    {
      name: "Mon after fall, 09:00 CET",
      windows: biz,
      tz,
      now: "2026-10-26T08:00Z",
      active: true,
      until: "2026-10-26T16:00Z",
    },
  ]);
});

Deno.test("windowState agrees with the first start after (now - duration) around both Berlin changes", () => {
  const tz = "Europe/Berlin";
  const windows: ScheduledWindow[] = [
    { schedule: "0 2 * * *", duration: "1h" },
    { schedule: "30 2 * * *", duration: "30m" },
    { schedule: "*/20 1-3 * * *", duration: "10m" },
    { schedule: "0 22 * * 6", duration: "6h" },
    { schedule: "0 9 * * 1-5", duration: "8h" },
  ];
  for (const day of ["2026-03-28T00:00Z", "2026-10-24T00:00Z"]) {
    const from = Date.parse(day);
    for (const w of windows) {
      const cron = parseSchedule(w.schedule, tz);
      const ms = parseDuration(w.duration)!;
      for (let t = from; t < from + 72 * H; t += 11 * M) {
        const first = cron.nextRun(new Date(t - ms));
        const want = first !== null && first.getTime() <= t;
        assert.deepEqual(
          windowState([w], tz, new Date(t)).active,
          want,
          `${w.schedule} ${w.duration} at ${new Date(t).toISOString()}`,
        );
      }
    }
  }
});

Deno.test("windowState throws on invalid input (gates catch and fail closed)", () => {
  const now = new Date("2026-11-23T12:00Z");
  assert.throws(
    () => windowState([{ schedule: "0 25 * * *", duration: "1h" }], "UTC", now),
    /window 0/,
  );
  assert.throws(
    () => windowState([{ schedule: "0 2 * * *", duration: "1 hour" }], "UTC", now),
    /duration/,
  );
  assert.throws(
    () => windowState([{ schedule: "0 2 * * *", duration: "1h" }], "Nowhere/Land", now),
    /time zone/,
  );
});

Deno.test("formatInZone: local time, abbreviation and zone", () => {
  const cases: [string, string, string][] = [
    ["2026-11-28T21:00:00Z", "Europe/Berlin", "Sat 2026-11-28 22:00 CET (Europe/Berlin)"],
    ["2026-10-24T20:00:00Z", "Europe/Berlin", "Sat 2026-10-24 22:00 CEST (Europe/Berlin)"],
    ["2026-10-25T00:30:00Z", "Europe/Berlin", "Sun 2026-10-25 02:30 CEST (Europe/Berlin)"],
    ["2026-10-25T01:30:00Z", "Europe/Berlin", "Sun 2026-10-25 02:30 CET (Europe/Berlin)"],
    ["2026-11-28T21:00:00Z", "UTC", "Sat 2026-11-28 21:00 UTC"],
    ["2026-11-28T21:00:05Z", "UTC", "Sat 2026-11-28 21:00:05 UTC"],
    ["2026-07-01T12:00:00Z", "America/New_York", "Wed 2026-07-01 08:00 EDT (America/New_York)"],
    ["2026-07-01T12:00:00Z", "Europe/London", "Wed 2026-07-01 13:00 BST (Europe/London)"],
    ["2026-07-01T12:00:00Z", "Asia/Tokyo", "Wed 2026-07-01 21:00 GMT+9 (Asia/Tokyo)"],
    ["2026-07-01T00:00:00Z", "Asia/Tokyo", "Wed 2026-07-01 09:00 GMT+9 (Asia/Tokyo)"],
    // As the spec wrote it, not as Intl canonicalises it (Asia/Calcutta, Europe/Kiev).
    ["2026-07-01T00:00:00Z", "Asia/Kolkata", "Wed 2026-07-01 05:30 GMT+5:30 (Asia/Kolkata)"],
    ["2026-07-01T00:00:00Z", "Asia/Calcutta", "Wed 2026-07-01 05:30 GMT+5:30 (Asia/Calcutta)"],
    ["2026-07-01T00:00:00Z", "Europe/Kyiv", "Wed 2026-07-01 03:00 EEST (Europe/Kyiv)"],
  ];
  for (const [iso, tz, want] of cases) assert.deepEqual(formatInZone(new Date(iso), tz), want);
});

Deno.test("parseInstant / instantError: strict RFC 3339", () => {
  const cases: [string, string | undefined][] = [
    ["2026-12-20T00:00:00Z", "2026-12-20T00:00:00.000Z"],
    ["2026-12-20T00:00:00+01:00", "2026-12-19T23:00:00.000Z"],
    ["2026-12-20T00:00:00.250Z", "2026-12-20T00:00:00.250Z"],
    ["2026-12-20T00:00:00.123456789Z", "2026-12-20T00:00:00.123Z"],
    ["2026-12-20t00:00:00z", undefined], // CEL's timestamp() takes capitals only
    ["2026-12-20T00:00:00+23:60", undefined],
    ["0999-12-20T00:00:00Z", undefined],
    ["2028-02-29T12:00:00-05:00", "2028-02-29T17:00:00.000Z"],
    ["2026-02-29T00:00:00Z", undefined], // not a leap year (Date.parse rolls it into March)
    ["2026-12-20T24:00:00Z", undefined],
    ["2026-12-20T00:00:00", undefined], // no offset: ambiguous
    ["2026-12-20", undefined],
    ["2026-12-20 00:00:00Z", undefined],
    ["2026-12-20T00:00:00+24:00", undefined],
    ["Dec 20 2026", undefined],
  ];
  for (const [input, want] of cases) {
    assert.equal(parseInstant(input)?.toISOString(), want, input);
    assert.equal(instantError(input, "f") === undefined, want !== undefined, input);
  }
  assert.match(
    instantError(3, "spec.maintenance.blackouts[0].start") ?? "",
    /^spec\.maintenance\.blackouts\[0\]\.start: 3 is not an RFC 3339 time/,
  );
});
