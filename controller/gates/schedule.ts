/**
 * Time for rollout policies: cron schedules in an IANA time zone, Go-style
 * durations, and whether a set of windows (a start on each cron match, lasting
 * a duration) is open at a given instant. Cron matching and time-zone
 * arithmetic come from croner (see README.md for why); this module only adds
 * the rules of our API (five fields, a duration that is elapsed time) and the
 * window logic, as pure functions of an injected clock.
 *
 * The `...Error(value, field)` functions return a message that names the field
 * (for the pool's `InvalidSpec` condition) or undefined when the value is valid.
 * Their syntax rules are the CRD's (`lib/api/time_validation.ts`), so a value the
 * API server refuses is refused here too, with the same words; what CEL cannot
 * decide (a schedule that never runs for subtler reasons) is only caught here.
 *
 * @module
 */
import { Cron, type CronOptions } from "croner";
import {
  CRON_NEVER_RULE,
  cronSyntaxError,
  DURATION_RULE,
  INSTANT_RULE,
  isTimeZoneShape,
  parseApiDuration,
  parseApiInstant,
  TIME_ZONE_RULE,
} from "../../lib/api/time_validation.ts";

/** The zone every schedule of a pool is read in when `spec.timeZone` is not set. */
export const DEFAULT_TIME_ZONE = "UTC";

/** A recurring window: it opens at each match of `schedule` and stays open for `duration`. */
export interface ScheduledWindow {
  /** Cron schedule: five fields (minute hour day-of-month month day-of-week) or a nickname such as `@daily`. */
  schedule: string;
  /** Go-style duration such as `8h`, `90m` or `1h30m`. */
  duration: string;
}

/** Whether windows are open at an instant, and the instants around it. */
export interface WindowState {
  /** Some window started at or before `now` and has not ended yet. */
  active: boolean;
  /**
   * When active: when the open period ends, overlapping and back-to-back
   * windows counted as one period. A lower bound for pathological schedules
   * whose windows chain on beyond {@linkcode MAX_CHAIN} steps.
   */
  activeUntil?: Date;
  /** When not active: when the next window opens (absent when none ever does). */
  nextStart?: Date;
}

/** How many overlapping windows {@linkcode windowState} follows to find an open period's end. */
export const MAX_CHAIN = 1000;

/**
 * Milliseconds of a Go-style duration (hours, minutes and seconds in that order,
 * "8h", "1.5h", "1h30m0s"), or undefined when it is not one the API accepts
 * (from 1s to 87600h).
 */
export function parseDuration(value: string): number | undefined {
  return parseApiDuration(value);
}

/** Why `value` is not a valid duration for `field`, or undefined when it is. */
export function durationError(value: unknown, field: string): string | undefined {
  if (typeof value !== "string") return `${field}: must be a duration string: use ${DURATION_RULE}`;
  if (parseApiDuration(value) === undefined) {
    return `${field}: ${JSON.stringify(value)} is not a valid duration: use ${DURATION_RULE}`;
  }
  return undefined;
}

// Parsing a schedule or a zone costs far more than asking it for a date (Intl and croner set-up),
// and a reconcile asks the same few again and again: memoize. Both are pure functions of their
// key (a croner Cron without a callback keeps no state between nextRun/previousRuns calls).
const MEMO_LIMIT = 512;
function memo<T>(cache: Map<string, T>, key: string, make: () => T): T {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const value = make();
  if (cache.size >= MEMO_LIMIT) cache.clear();
  cache.set(key, value);
  return value;
}
const zones = new Map<string, boolean>();
const schedules = new Map<string, Cron | Error>();

/**
 * Whether `value` is a time zone name exactly as the zone database spells it
 * (a canonical name or a link such as Asia/Calcutta): the CRD's shape, then the
 * runtime's database. Temporal keeps the name as written (case-normalised),
 * unlike Intl, which answers with its canonical name; a name spelled in another
 * case (europe/berlin) is refused, as the API server's lookup refuses it.
 */
function isKnownTimeZone(value: string): boolean {
  return memo(zones, value, () => {
    if (!isTimeZoneShape(value)) return false;
    try {
      // croner reads the zone through Intl: it must know the name too.
      new Intl.DateTimeFormat("en-US", { timeZone: value });
      return Temporal.Now.zonedDateTimeISO(value).timeZoneId === value;
    } catch {
      return false;
    }
  });
}

/** Why `value` is not a valid IANA time zone for `field`, or undefined when it is. */
export function timeZoneError(value: unknown, field: string): string | undefined {
  if (typeof value !== "string" || !isKnownTimeZone(value)) {
    return `${field}: ${JSON.stringify(value)} is not an IANA time zone: use ${TIME_ZONE_RULE}`;
  }
  return undefined;
}

function cronOptions(timeZone: string): CronOptions {
  return {
    timezone: timeZone,
    // Exactly five fields: seconds and years are croner extensions other cron tools reject.
    mode: "5-part",
    // A listed or ranged time ("0 2,14 * * *") behaves in DST changes like a single time: once
    // on a repeated hour, right after a skipped one (as Vixie cron), not skipped.
    fixedTimeRule: "no-wildcard",
  };
}

/**
 * Parses `schedule` in `timeZone`. Throws an Error saying what is wrong (no
 * field name) when the schedule or zone is invalid or the schedule never matches.
 */
export function parseSchedule(schedule: string, timeZone: string): Cron {
  const result = memo(schedules, `${timeZone}\n${schedule}`, () => {
    try {
      return compileSchedule(schedule, timeZone);
    } catch (e) {
      return e as Error;
    }
  });
  if (result instanceof Error) throw result;
  return result;
}

function compileSchedule(schedule: string, timeZone: string): Cron {
  // The API's grammar first (five fields or a nickname, ranges, steps): it also keeps out
  // croner's extensions (seconds and year fields, one-shot ISO dates, the + modifier).
  const syntax = cronSyntaxError(schedule);
  if (syntax !== undefined) throw new Error(syntax);
  if (!isKnownTimeZone(timeZone)) {
    throw new Error(`time zone ${JSON.stringify(timeZone)} is not known`);
  }
  let cron: Cron;
  try {
    cron = new Cron(schedule.trim(), cronOptions(timeZone));
  } catch (e) {
    throw new Error((e as Error).message.replace(/^CronPattern: /, ""));
  }
  // Only fields that can never match together (30 February) make a schedule that never fires;
  // with no year field that does not depend on the reference instant.
  if (cron.nextRun(new Date(0)) === null) throw new Error(CRON_NEVER_RULE);
  return cron;
}

/** Why `schedule` is not a valid cron schedule for `field`, or undefined when it is. */
export function scheduleError(schedule: unknown, field: string): string | undefined {
  if (typeof schedule !== "string") return `${field}: must be a cron schedule string`;
  try {
    parseSchedule(schedule, DEFAULT_TIME_ZONE);
    return undefined;
  } catch (e) {
    return `${field}: ${JSON.stringify(schedule)} is not a valid cron schedule: ${
      (e as Error).message
    }`;
  }
}

interface ParsedWindow {
  cron: Cron;
  ms: number;
}

function parseWindows(windows: readonly ScheduledWindow[], timeZone: string): ParsedWindow[] {
  return windows.map((w, i) => {
    const ms = parseDuration(w.duration);
    if (ms === undefined) {
      throw new Error(`window ${i}: duration ${JSON.stringify(w.duration)} is not valid`);
    }
    try {
      return { cron: parseSchedule(w.schedule, timeZone), ms };
    } catch (e) {
      throw new Error(
        `window ${i}: schedule ${JSON.stringify(w.schedule)}: ${(e as Error).message}`,
      );
    }
  });
}

/** The latest start of `w` at or before `t` whose window still covers `t`, as its end. */
function coveringEnd(w: ParsedWindow, t: number): number | undefined {
  // previousRuns is strictly before its reference; croner works in whole seconds.
  const [last] = w.cron.previousRuns(1, new Date(t + 1));
  if (!last) return undefined;
  const end = last.getTime() + w.ms;
  return end > t ? end : undefined;
}

/** The end of the latest-ending window covering `t`, or undefined when none does. */
function openEnd(ws: readonly ParsedWindow[], t: number): number | undefined {
  let end: number | undefined;
  for (const w of ws) {
    const e = coveringEnd(w, t);
    if (e !== undefined && (end === undefined || e > end)) end = e;
  }
  return end;
}

/**
 * Whether any of `windows` (schedules read in `timeZone`) is open at `now`: a
 * window is open iff one of its starts `s` has `s <= now < s + duration`.
 * Durations are elapsed time, so a window across a DST change lasts exactly
 * its duration. No windows: never active, no next start (the caller decides
 * what "no windows" means). Throws on an invalid schedule, duration or zone.
 */
export function windowState(
  windows: readonly ScheduledWindow[],
  timeZone: string,
  now: Date,
): WindowState {
  const ws = parseWindows(windows, timeZone);
  const t = now.getTime();
  let end = openEnd(ws, t);
  if (end === undefined) {
    let next: number | undefined;
    for (const w of ws) {
      const s = w.cron.nextRun(now)?.getTime();
      if (s !== undefined && (next === undefined || s < next)) next = s;
    }
    return next === undefined ? { active: false } : { active: false, nextStart: new Date(next) };
  }
  // Follow windows that start before (or as) the current one ends: one open period.
  for (let i = 0; i < MAX_CHAIN; i++) {
    const further = openEnd(ws, end);
    if (further === undefined) break;
    end = further;
  }
  return { active: true, activeUntil: new Date(end) };
}

// CLDR gives en-US abbreviations for American zones (EST) and en-GB ones for European zones (CET,
// BST); elsewhere both fall back to an offset (GMT+9), which is what we show then.
const ABBREVIATION_LOCALES = ["en-US", "en-GB"];

function zoneAbbreviation(date: Date, timeZone: string): string {
  let abbr = "";
  for (const locale of ABBREVIATION_LOCALES) {
    abbr = new Intl.DateTimeFormat(locale, { timeZone, timeZoneName: "short" })
      .formatToParts(date).find((p) => p.type === "timeZoneName")?.value ?? "";
    if (!/^GMT[+-]/.test(abbr)) break;
  }
  return abbr;
}

/**
 * `date` for people, in `timeZone`: "Sat 2026-11-28 22:00 CET (Europe/Berlin)"
 * (seconds only when not zero; the zone once when it is its own abbreviation, as UTC).
 * The zone is shown as the spec wrote it (Asia/Kolkata, not Intl's Asia/Calcutta).
 */
export function formatInZone(date: Date, timeZone: string): string {
  const zone = isKnownTimeZone(timeZone) ? timeZone : DEFAULT_TIME_ZONE;
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      weekday: "short",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    }).formatToParts(date).map((p) => [p.type, p.value]),
  );
  const seconds = parts.second === "00" ? "" : `:${parts.second}`;
  const abbr = zoneAbbreviation(date, zone);
  const suffix = abbr === zone ? abbr : `${abbr} (${zone})`;
  return `${parts.weekday} ${parts.year}-${parts.month}-${parts.day} ` +
    `${parts.hour}:${parts.minute}${seconds} ${suffix}`;
}

/**
 * An RFC 3339 instant ("2026-12-20T00:00:00+01:00", "2026-12-20T00:00:00Z"), or
 * undefined when `value` is not one the API accepts: `T` and `Z` in capitals, a
 * date that exists (Date.parse would roll 30 February over into March).
 */
export function parseInstant(value: string): Date | undefined {
  return parseApiInstant(value);
}

/** Why `value` is not an RFC 3339 instant for `field`, or undefined when it is. */
export function instantError(value: unknown, field: string): string | undefined {
  if (typeof value === "string" && parseApiInstant(value) !== undefined) return undefined;
  return `${field}: ${JSON.stringify(value)} is not ${INSTANT_RULE}`;
}
