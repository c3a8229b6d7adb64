import assert from "node:assert/strict";
import {
  cronCelRules,
  cronSyntaxError,
  DURATION_PATTERN,
  durationCelRule,
  INSTANT_PATTERN,
  instantCelRule,
  parseApiDuration,
  parseApiInstant,
  TIME_ZONE_PATTERN,
  timeZoneCelRule,
} from "./time_validation.ts";

Deno.test("patterns embed in CEL raw strings and compile as ECMAScript", () => {
  for (const p of [DURATION_PATTERN, TIME_ZONE_PATTERN, INSTANT_PATTERN]) {
    assert.ok(!p.includes("'"), p);
    new RegExp(p);
  }
  const rules = [...cronCelRules(), durationCelRule(), timeZoneCelRule(), instantCelRule()];
  for (const r of rules) {
    // Every regex of a rule is a CEL raw string r'...': none may hold a quote of its own.
    for (const [, pattern] of r.rule.matchAll(/r'([^']*)'/g)) new RegExp(pattern);
    assert.ok(!r.message.includes("'"), r.message);
  }
});

Deno.test("cronSyntaxError: one message per rule, in the CRD's order", () => {
  const cases: [string, RegExp | undefined][] = [
    ["0 22 * * 6", undefined],
    ["\t0  22 * * 6 ", undefined],
    ["@hourly", undefined],
    ["00 00 01 01 00", undefined],
    ["59 23 31 12 7", undefined],
    ["*/59 */23 */31 */12 */7", undefined],
    ["0 0 LW * *", undefined],
    ["0 0 1,15,L * MON#1,FRI#L,5L", undefined],
    ["0 0 ? * *", undefined],
    ["@daily 1", /^use five fields/],
    ["0 0 * *", /^use five fields/],
    ["*/60 * * * *", /^the minute \(field 1\)/],
    ["007 * * * *", /^the minute \(field 1\)/],
    ["0 */24 * * *", /^the hour \(field 2\)/],
    ["0 ? * * *", /^the hour \(field 2\)/],
    ["0 0 L-3 * *", /^the day of month \(field 3\)/],
    ["0 0 1-5W * *", /^the day of month \(field 3\)/],
    ["0 0 * JANUARY *", /^the month \(field 4\)/],
    ["0 0 * 1/2 *", /^the month \(field 4\)/], // croner refuses a step without * or a range
    ["0 0 * * 5#6", /^the day of week \(field 5\)/],
    ["0 0 * * L", /^the day of week \(field 5\)/],
    ["0 0 * DEC-JAN *", /^a range a-b must have a <= b/],
    ["0 0 31 2-2 *", /^the days of month and months never meet/],
    ["0 0 30,31 feb *", /^the days of month and months never meet/],
    ["0 0 31W 4 *", /^the days of month and months never meet/],
    ["0 0 30 2 MON", undefined], // every Monday in February
    ["0 0 31 */2 *", undefined], // January, March, ...
  ];
  for (const [s, want] of cases) {
    const err = cronSyntaxError(s);
    if (want === undefined) assert.equal(err, undefined, s);
    else assert.match(err ?? "accepted", want, s);
  }
});

Deno.test("parseApiDuration: h, m, s in order, 1s to 87600h", () => {
  const cases: [string, number | undefined][] = [
    ["1s", 1000],
    ["1.5h", 5_400_000],
    ["1h30m0s", 5_400_000],
    ["0.0166666667m", 1000],
    ["999999h", undefined],
    ["0.999999999s", undefined],
    ["", undefined],
    ["1h ", undefined],
    ["1H", undefined],
  ];
  for (const [value, want] of cases) assert.equal(parseApiDuration(value), want, value);
});

Deno.test("parseApiInstant: dates that exist, capitals, offsets up to 23:59", () => {
  const cases: [string, string | undefined][] = [
    ["2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"], // divisible by 400
    ["1900-02-29T00:00:00Z", undefined], // by 100, not 400
    ["2100-02-29T00:00:00Z", undefined],
    ["2024-02-29T23:59:59-23:59", "2024-03-01T23:58:59.000Z"],
    ["2026-04-31T00:00:00Z", undefined],
    ["2026-12-31T00:00:00.1234567890Z", undefined], // more than nanoseconds
    ["2026-12-20T00:00:60Z", undefined],
  ];
  for (const [value, want] of cases) {
    assert.equal(parseApiInstant(value)?.toISOString(), want, value);
  }
});
