/**
 * The syntax of a pool's time fields (cron schedules, durations, time zones,
 * blackout instants) in one place: as CEL rules for the CRD, so a bad value is
 * refused at `kubectl apply` with a message naming the field, and as ECMAScript
 * checks the controller runs again before it evaluates a schedule (defence in
 * depth, and the same verdict for objects stored before a rule existed). See
 * README.md for why CEL in the CRD.
 *
 * The patterns are RE2 and ECMAScript compatible (the `(?i:…)` group included)
 * and contain no `'`, so they can be embedded in CEL raw strings.
 *
 * @module
 */

/**
 * A CEL validation rule (the shape of `x-kubernetes-validations` entries). No
 * messageExpression: the API server already shows the value after the field.
 */
export interface CelRule {
  rule: string;
  message: string;
}

// ---------------------------------------------------------------------------------------------
// Cron schedules

/** The nicknames a schedule may be instead of five fields (lowercase, as CronJobs take them). */
export const CRON_NICKNAMES = [
  "@yearly",
  "@annually",
  "@monthly",
  "@weekly",
  "@daily",
  "@midnight",
  "@hourly",
] as const;

/** Longest schedule accepted (bounds the CEL cost). */
export const MAX_SCHEDULE_LENGTH = 128;

/** Month and weekday names, by the number they stand for (case does not matter). */
export const CRON_NAMES: Readonly<Record<string, number>> = {
  JAN: 1,
  FEB: 2,
  MAR: 3,
  APR: 4,
  MAY: 5,
  JUN: 6,
  JUL: 7,
  AUG: 8,
  SEP: 9,
  OCT: 10,
  NOV: 11,
  DEC: 12,
  SUN: 0,
  MON: 1,
  TUE: 2,
  WED: 3,
  THU: 4,
  FRI: 5,
  SAT: 6,
};

interface CronFieldSyntax {
  /** How messages name the field. */
  name: string;
  /** A single value (number or name). */
  value: string;
  /** A step after `/`: 1 up to the field's largest value. */
  step: string;
  /** Items other than `*`, values and ranges (day of month: L, nW; day of week: d#n, dL). */
  extraItems: readonly string[];
  /** Whether `?` may stand for the whole field (as `*`). */
  question: boolean;
  /** What the field takes, for messages. */
  accepts: string;
}

const WS = "[ \\t]";
const W = "(?i:W)";
const L = "(?i:L)";
const MONTH_NAMES = "(?i:JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)";
const DAY_NAMES = "(?i:SUN|MON|TUE|WED|THU|FRI|SAT)";
const DOM_VALUE = "(?:0?[1-9]|[12][0-9]|3[01])";
const DOW_VALUE = `(?:0?[0-7]|${DAY_NAMES})`;

const CRON_FIELDS: readonly CronFieldSyntax[] = [
  {
    name: "minute (field 1)",
    value: "[0-5]?[0-9]",
    step: "(?:[1-9]|[1-5][0-9])",
    extraItems: [],
    question: false,
    accepts: "0-59, step 1-59",
  },
  {
    name: "hour (field 2)",
    value: "(?:[01]?[0-9]|2[0-3])",
    step: "(?:[1-9]|1[0-9]|2[0-3])",
    extraItems: [],
    question: false,
    accepts: "0-23, step 1-23",
  },
  {
    name: "day of month (field 3)",
    value: DOM_VALUE,
    step: "(?:[1-9]|[12][0-9]|3[01])",
    extraItems: [`${L}${W}?`, `${DOM_VALUE}${W}`],
    question: true,
    accepts: "1-31, step 1-31; also L (last day), LW (last weekday), nW (the weekday " +
      "nearest day n) and ?",
  },
  {
    name: "month (field 4)",
    value: `(?:0?[1-9]|1[0-2]|${MONTH_NAMES})`,
    step: "(?:[1-9]|1[0-2])",
    extraItems: [],
    question: false,
    accepts: "1-12 or JAN-DEC, step 1-12",
  },
  {
    name: "day of week (field 5)",
    value: DOW_VALUE,
    step: "[1-7]",
    extraItems: [`${DOW_VALUE}#(?:[1-5]|${L})`, `${DOW_VALUE}${L}`],
    question: true,
    accepts: "0-7 (0 and 7 are Sunday) or SUN-SAT, step 1-7; also d#n (the nth weekday d " +
      "of the month, n 1-5), d#L or dL (the last one) and ?",
  },
];

function fieldPattern(f: CronFieldSyntax): string {
  const items = [
    `\\*(?:/${f.step})?`,
    `${f.value}(?:-${f.value}(?:/${f.step})?)?`,
    ...f.extraItems,
  ];
  const item = `(?:${items.join("|")})`;
  const list = `${item}(?:,${item})*`;
  return f.question ? `(?:\\?|${list})` : list;
}

const NICKNAME_PATTERN = `^${WS}*(?:${CRON_NICKNAMES.join("|")})${WS}*$`;
const FIVE_FIELDS_PATTERN = `^${WS}*[^ \\t]+(?:${WS}+[^ \\t]+){4}${WS}*$`;

/** What a schedule looks like, for messages. */
export const CRON_RULE = "five fields (minute hour day-of-month month day-of-week) such as " +
  `"0 22 * * 6", or one of ${CRON_NICKNAMES.join(", ")}`;

const ITEM_FORMS = "each field is *, a value or a range a-b, either with an optional /step, " +
  "or a comma-separated list of those";

/** A day of month that no month (30, 31) or no short month (31) has, as list items. */
function domList(days: string): string {
  const item = `(?:${days}${W}?|${days}-${days})`;
  return `${item}(?:,${item})*`;
}
function monthList(months: string): string {
  const item = `(?:${months})`;
  return `${item}(?:,${item})*`;
}
const DOW_ANY = "(?:\\*|\\?)";
const FIRST_TWO = `^${WS}*[^ \\t]+${WS}+[^ \\t]+${WS}+`;
/**
 * Schedules that name only days that none of their months has (30 or 31 February, 31 April):
 * plain day and month lists with any day of week. Anything subtler (steps, ranges across
 * months) is left to the controller, which enumerates the schedule.
 */
const FEB = "(?:0?2|(?i:FEB))";
const SHORT_MONTH = "(?:0?[2469]|11|(?i:FEB|APR|JUN|SEP|NOV))";
const NEVER_PATTERNS = [
  `${FIRST_TWO}${domList("3[01]")}${WS}+${monthList(`${FEB}(?:-${FEB})?`)}${WS}+${DOW_ANY}${WS}*$`,
  `${FIRST_TWO}${domList("31")}${WS}+${monthList(SHORT_MONTH)}${WS}+${DOW_ANY}${WS}*$`,
];

/** The message when a schedule's days and months never meet. */
export const CRON_NEVER_RULE = "the days of month and months never meet (such as 30 February " +
  "or 31 April), so it would never run";
/** The message when a range runs backwards. */
export const CRON_RANGE_RULE = "a range a-b must have a <= b (MON-FRI, 22-23; for a range " +
  "across the end use a list such as FRI,SAT,SUN,MON)";

interface CronCheck {
  /** True when the schedule passes this check (ECMAScript). */
  ok: (schedule: string) => boolean;
  /** The same condition in CEL, on `self`. */
  cel: string;
  message: string;
}

function matches(pattern: string): (s: string) => boolean {
  const re = new RegExp(pattern);
  return (s) => re.test(s);
}

const isFive = matches(FIVE_FIELDS_PATTERN);
const isNickname = matches(NICKNAME_PATTERN);
const isNever = NEVER_PATTERNS.map(matches);
const celFive = `self.matches(r'${FIVE_FIELDS_PATTERN}')`;

/** Every number range a-b of the schedule, names read as their numbers. */
function ranges(schedule: string): [number, number][] {
  let text = schedule.toUpperCase();
  for (const [name, n] of Object.entries(CRON_NAMES)) text = text.replaceAll(name, String(n));
  return [...text.matchAll(/([0-9]+)-([0-9]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
}

function celRangesAscend(): string {
  let text = "self.upperAscii()";
  for (const [name, n] of Object.entries(CRON_NAMES)) text += `.replace('${name}', '${n}')`;
  return `${text}.findAll('[0-9]+-[0-9]+')` +
    `.all(r, int(r.split('-')[0]) <= int(r.split('-')[1]))`;
}

/** The checks, in order; a five-field check passes on a schedule of another shape. */
const CRON_CHECKS: readonly CronCheck[] = [
  {
    ok: (s) => isNickname(s) || isFive(s),
    cel: `self.matches(r'${NICKNAME_PATTERN}') || ${celFive}`,
    message: `use ${CRON_RULE}`,
  },
  ...CRON_FIELDS.map((f, i): CronCheck => {
    const pattern = `^${WS}*(?:[^ \\t]+${WS}+){${i}}(?:${fieldPattern(f)})(?:${WS}|$)`;
    const isField = matches(pattern);
    return {
      ok: (s) => !isFive(s) || isField(s),
      cel: `!${celFive} || self.matches(r'${pattern}')`,
      message: `the ${f.name} takes ${f.accepts}; ${ITEM_FORMS}`,
    };
  }),
  {
    ok: (s) => !isFive(s) || ranges(s).every(([a, b]) => a <= b),
    cel: `!${celFive} || ${celRangesAscend()}`,
    message: CRON_RANGE_RULE,
  },
  {
    ok: (s) => !isNever.some((never) => never(s)),
    cel: NEVER_PATTERNS.map((p) => `!self.matches(r'${p}')`).join(" && "),
    message: CRON_NEVER_RULE,
  },
];

/**
 * Why `schedule` breaks the API's cron syntax, or undefined when it does not
 * (exactly the CRD's verdict). The controller also asks croner, which catches
 * what these rules leave open (schedules that never run for subtler reasons).
 */
export function cronSyntaxError(schedule: string): string | undefined {
  return CRON_CHECKS.find((c) => !c.ok(schedule))?.message;
}

/** The CRD's rules for a cron schedule, in the order of {@linkcode cronSyntaxError}. */
export function cronCelRules(): CelRule[] {
  return CRON_CHECKS.map((c) => ({
    rule: c.cel,
    message: `must be a valid cron schedule: ${c.message}`,
  }));
}

// ---------------------------------------------------------------------------------------------
// Durations

/** The longest duration accepted, as written and in milliseconds (10 years of 365 days). */
export const MAX_DURATION = "87600h";
/** {@linkcode MAX_DURATION} in milliseconds. */
export const MAX_DURATION_MS = 87600 * 3_600_000;
/** The shortest duration accepted (one second) in milliseconds. */
export const MIN_DURATION_MS = 1000;

/**
 * Go-style hours, minutes and seconds, in that order, each at most once, with optional
 * fractions. Integer parts are bounded so that no value overflows Go's duration (about
 * 2.5 million hours) and CEL's `duration()` never fails.
 */
export const DURATION_PATTERN = "^(?:[0-9]{1,6}(?:\\.[0-9]+)?h)?(?:[0-9]{1,7}(?:\\.[0-9]+)?m)?" +
  "(?:[0-9]{1,9}(?:\\.[0-9]+)?s)?$";

/** What a duration looks like, for messages. */
export const DURATION_RULE = 'hours, minutes and seconds in that order, such as "8h", "90m", ' +
  `"1.5h" or "1h30m0s", from 1s to ${MAX_DURATION} (10 years)`;

/** The CRD's rule for a duration. */
export function durationCelRule(): CelRule {
  return {
    rule: `self.matches(r'${DURATION_PATTERN}') && duration(self) >= duration('1s') && ` +
      `duration(self) <= duration('${MAX_DURATION}')`,
    message: `must be a duration of ${DURATION_RULE}`,
  };
}

const durationRe = new RegExp(DURATION_PATTERN);
const DURATION_UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000 };

/**
 * Milliseconds of a duration the API accepts (rounded to the millisecond), or
 * undefined when `value` is not one (exactly the CRD's verdict).
 */
export function parseApiDuration(value: string): number | undefined {
  if (value === "" || !durationRe.test(value)) return undefined;
  let ms = 0;
  for (const [, num, unit] of value.matchAll(/([0-9.]+)([hms])/g)) {
    ms += Number(num) * DURATION_UNIT_MS[unit];
  }
  return ms >= MIN_DURATION_MS && ms <= MAX_DURATION_MS ? Math.round(ms) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Time zones

/** An IANA zone name's shape: letters first; offsets such as +01:00 are not zones. */
export const TIME_ZONE_PATTERN = "^[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+){0,2}$";
/** Names Go's zone lookup takes that are not places: the host's zone and tzdata's placeholder. */
export const NOT_TIME_ZONES = ["Local", "Factory"] as const;

/** What a zone looks like, for messages. */
export const TIME_ZONE_RULE = 'a name from the IANA time zone database such as "UTC", ' +
  '"Europe/Berlin" or "America/New_York" (links such as "Asia/Calcutta" too; offsets such as ' +
  '"+01:00" are not zones)';

/**
 * The CRD's rule for a time zone. The API server looks the name up in its own zone
 * database (Go's, embedded in kube-apiserver, the one CronJob's timeZone uses):
 * `getHours` fails on an unknown zone, and the API server reports that failure as
 * "unknown time zone X evaluating rule: <message>" on the field.
 */
export function timeZoneCelRule(): CelRule {
  return {
    rule: `self.matches(r'${TIME_ZONE_PATTERN}') && ` +
      `!(self in [${NOT_TIME_ZONES.map((z) => `'${z}'`).join(", ")}]) && ` +
      `timestamp('2000-01-01T00:00:00Z').getHours(self) >= 0`,
    message: `must be ${TIME_ZONE_RULE}`,
  };
}

const timeZoneRe = new RegExp(TIME_ZONE_PATTERN);

/**
 * Whether `value` has the shape of a zone name and is none of {@linkcode NOT_TIME_ZONES}
 * (the controller then asks its own zone database whether the name exists).
 */
export function isTimeZoneShape(value: string): boolean {
  return timeZoneRe.test(value) && !(NOT_TIME_ZONES as readonly string[]).includes(value);
}

// ---------------------------------------------------------------------------------------------
// Instants (blackouts)

/** Longest RFC 3339 instant accepted (bounds the CEL cost). */
export const MAX_INSTANT_LENGTH = 64;

const YEAR = "[1-9][0-9]{3}";
const LEAP_YEAR = "(?:[1-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26])00)";
const MONTH_DAY = "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|" +
  "(?:0[13578]|1[02])-31)";
const CLOCK = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?";
const OFFSET = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";

/**
 * An RFC 3339 instant with `T`, `Z` or an offset, a date that exists (29 February in leap
 * years only), years 1000-9999 and at most nanoseconds: what Go's and CEL's timestamps read.
 */
export const INSTANT_PATTERN = `^(?:${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)T${CLOCK}${OFFSET}$`;

/** What an instant looks like, for messages. */
export const INSTANT_RULE = "an RFC 3339 time with Z or an offset, such as " +
  '"2026-12-20T00:00:00+01:00" or "2026-12-19T23:00:00Z"';

/** The CRD's rule for an instant. */
export function instantCelRule(): CelRule {
  return {
    rule: `self.matches(r'${INSTANT_PATTERN}')`,
    message: `must be ${INSTANT_RULE}`,
  };
}

/** The CEL condition "`expr` (a string) is an instant the API accepts". */
export function celIsInstant(expr: string): string {
  return `${expr}.matches(r'${INSTANT_PATTERN}')`;
}

const instantRe = new RegExp(INSTANT_PATTERN);

/** The instant `value` names, or undefined when the API does not accept it. */
export function parseApiInstant(value: string): Date | undefined {
  if (!instantRe.test(value)) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : new Date(t);
}
