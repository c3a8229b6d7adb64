/**
 * One table of good and bad time values (cron schedules, durations, time zones,
 * blackout instants), each placed in a BootcNodePool spec where it can appear.
 * `refusal_test.ts` applies every case to the real API server;
 * `controller/gates/schedule_agreement_test.ts` runs the same values through the
 * controller's checks. Both assert the verdict written here, so the CRD, the
 * controller and the gates README cannot drift apart.
 *
 * @module
 */

/** Where a value goes in a pool's spec. */
export type Placement =
  | "window.schedule"
  | "window.duration"
  | "budget.schedule"
  | "budget.duration"
  | "channel.schedule"
  | "timeZone"
  | "blackout.start"
  | "blackout.end";

/** What kind of value a placement holds (which controller check reads it). */
export type ValueKind = "schedule" | "duration" | "timeZone" | "instant";

/** One value and the verdict on it. */
export interface TimeCase {
  at: Placement;
  value: string;
  /**
   * Refused at admission and by the controller, both saying this (absent: both accept).
   * The API server names the field before it; the controller names it too.
   */
  refused?: RegExp;
  /**
   * Accepted at admission, refused by the controller (`Degraded=True/InvalidSpec`):
   * what a CEL rule cannot decide, as the gates README says.
   */
  onlyController?: RegExp;
  /** Why the case is here. */
  note?: string;
}

const MINUTE = /the minute \(field 1\) takes 0-59/;
const HOUR = /the hour \(field 2\) takes 0-23/;
const DOM = /the day of month \(field 3\) takes 1-31/;
const MONTH = /the month \(field 4\) takes 1-12 or JAN-DEC/;
const DOW = /the day of week \(field 5\) takes 0-7/;
const SHAPE = /use five fields \(minute hour day-of-month month day-of-week\).*@hourly/;
const RANGE = /a range a-b must have a <= b/;
const NEVER = /never meet \(such as 30 February or 31 April\), so it would never run/;
const DURATION = /hours, minutes and seconds in that order.*from 1s to 87600h \(10 years\)/;
const ZONE = /a name from the IANA time zone database such as "UTC"/;
const INSTANT = /an RFC 3339 time with Z or an offset/;

/** The table. */
export const TIME_CASES: readonly TimeCase[] = [
  // Cron schedules: accepted.
  { at: "window.schedule", value: "0 22 * * 6" },
  { at: "window.schedule", value: "@weekly", note: "documented nickname" },
  { at: "budget.schedule", value: "@yearly" },
  { at: "channel.schedule", value: "@midnight" },
  { at: "window.schedule", value: "*/15 9-17 * * MON-FRI" },
  { at: "window.schedule", value: "0 2,14 * * *" },
  { at: "window.schedule", value: "0 0 29 2 *", note: "leap days exist" },
  { at: "window.schedule", value: "0 22 * * 6#L", note: "the last Saturday" },
  { at: "window.schedule", value: "0 0 L * *" },
  { at: "budget.schedule", value: "0 0 15W * *" },
  { at: "window.schedule", value: "0 0 31 4 1", note: "day of month OR day of week" },
  { at: "window.schedule", value: "0 3 * jan-mar/2 sun" },
  { at: "window.schedule", value: "0 0 30 2 MON", note: "every Monday in February" },
  { at: "window.schedule", value: "0 0 31 */2 *", note: "January, March, ..." },
  // Cron schedules: refused, naming the field of the schedule that is wrong.
  { at: "window.schedule", value: "61 * * * *", refused: MINUTE },
  { at: "budget.schedule", value: "0 25 * * *", refused: HOUR },
  { at: "window.schedule", value: "0 0 0 * *", refused: DOM },
  { at: "window.schedule", value: "0 0 32 * *", refused: DOM },
  { at: "window.schedule", value: "0 0 * 13 *", refused: MONTH },
  { at: "channel.schedule", value: "0 0 * * 8", refused: DOW },
  { at: "window.schedule", value: "*/0 * * * *", refused: MINUTE, note: "a step of 0" },
  { at: "window.schedule", value: "*/60 * * * *", refused: MINUTE, note: "a step over 59" },
  { at: "window.schedule", value: "0 0 * 1/2 *", refused: MONTH, note: "a step needs * or a-b" },
  { at: "window.schedule", value: "10-5 * * * *", refused: RANGE },
  { at: "window.schedule", value: "0 0 * * FRI-MON", refused: RANGE },
  { at: "window.schedule", value: "0 0 30 2 *", refused: NEVER },
  { at: "budget.schedule", value: "0 0 31 4,6,9,11 *", refused: NEVER },
  { at: "window.schedule", value: "0 0 30W FEB ?", refused: NEVER },
  { at: "window.schedule", value: "0 0 31 2-2 *", refused: NEVER },
  { at: "window.schedule", value: "@reboot", refused: SHAPE },
  { at: "window.schedule", value: "@DAILY", refused: SHAPE, note: "nicknames are lowercase" },
  { at: "window.schedule", value: "0 9 * * * *", refused: SHAPE, note: "croner's seconds" },
  { at: "window.schedule", value: "every saturday", refused: SHAPE },
  { at: "window.schedule", value: "0 0 * * +MON", refused: DOW, note: "croner's AND modifier" },
  {
    at: "window.schedule",
    value: "0 0 31 2-4/2 *",
    onlyController: NEVER,
    note: "February and April through a step: beyond the CRD's rules, the controller enumerates",
  },
  // Durations.
  { at: "window.duration", value: "8h" },
  { at: "window.duration", value: "1.5h", note: "documented" },
  { at: "budget.duration", value: "1h30m0s", note: "as Go prints durations" },
  { at: "window.duration", value: "87600h", note: "the bound: 10 years" },
  { at: "window.duration", value: "45s" },
  { at: "window.duration", value: "100000h", refused: DURATION },
  { at: "window.duration", value: "0h", refused: DURATION },
  { at: "budget.duration", value: "0.5s", refused: DURATION },
  { at: "window.duration", value: "1d", refused: DURATION },
  { at: "window.duration", value: "30m1h", refused: DURATION },
  { at: "budget.duration", value: "-8h", refused: DURATION },
  { at: "window.duration", value: "6 hours", refused: DURATION },
  // Time zones: canonical names and links (the zone databases know both).
  { at: "timeZone", value: "Asia/Kolkata" },
  { at: "timeZone", value: "Asia/Calcutta" },
  { at: "timeZone", value: "Europe/Kyiv" },
  { at: "timeZone", value: "Europe/Kiev" },
  { at: "timeZone", value: "US/Eastern" },
  { at: "timeZone", value: "UTC" },
  { at: "timeZone", value: "Etc/GMT+5" },
  { at: "timeZone", value: "America/Argentina/Buenos_Aires" },
  { at: "timeZone", value: "Mars/Olympus", refused: ZONE },
  { at: "timeZone", value: "+01:00", refused: ZONE },
  { at: "timeZone", value: "europe/berlin", refused: ZONE },
  { at: "timeZone", value: "Local", refused: ZONE },
  { at: "timeZone", value: "Berlin Time", refused: ZONE },
  // Blackout instants.
  { at: "blackout.start", value: "2026-12-20T00:00:00+01:00" },
  { at: "blackout.start", value: "2028-02-29T00:00:00Z" },
  { at: "blackout.start", value: "2000-02-29T00:00:00Z" },
  { at: "blackout.end", value: "2100-02-29T00:00:00Z", refused: INSTANT },
  { at: "blackout.start", value: "2026-02-29T00:00:00Z", refused: INSTANT },
  { at: "blackout.start", value: "2026-12-20T00:00:00", refused: INSTANT, note: "no offset" },
  { at: "blackout.start", value: "2026-12-20T00:00:00+25:00", refused: INSTANT },
  { at: "blackout.end", value: "2026-12-20", refused: INSTANT },
  { at: "blackout.end", value: "2026-12-20t00:00:00z", refused: INSTANT },
];

/** The kind of value at `at`. */
export function kindOf(at: Placement): ValueKind {
  if (at.endsWith("schedule")) return "schedule";
  if (at.endsWith("duration")) return "duration";
  if (at === "timeZone") return "timeZone";
  return "instant";
}

/** The path the API server and the controller name for `at`. */
export function fieldOf(at: Placement): string {
  switch (at) {
    case "window.schedule":
    case "window.duration":
      return `spec.maintenance.windows[0].${at.split(".")[1]}`;
    case "budget.schedule":
    case "budget.duration":
      return `spec.rollout.budgets[1].${at.split(".")[1]}`;
    case "channel.schedule":
      return "spec.image.channel.schedule";
    case "timeZone":
      return "spec.timeZone";
    case "blackout.start":
    case "blackout.end":
      return `spec.maintenance.blackouts[0].${at.split(".")[1]}`;
  }
}

/**
 * A valid pool spec with `value` at `at` (the values around it are valid, so a
 * refusal can only be about `value`). Blackouts stay far apart, so the end
 * follows the start whatever the value.
 */
export function poolSpecWith(at: Placement, value: string): Record<string, unknown> {
  const ref = { ref: "quay.io/example/os:latest" };
  const channel = { repository: "quay.io/example/os", constraint: "~1.4", schedule: value };
  const window = { schedule: "0 22 * * 6", duration: "6h" };
  const budget = { maxUnavailable: 0, schedule: "0 9 * * 1-5", duration: "8h" };
  const blackout = { start: "2000-01-01T00:00:00Z", end: "2999-01-01T00:00:00Z" };
  const field = at.split(".")[1];
  return {
    nodeSelector: {},
    image: at === "channel.schedule" ? { channel } : ref,
    ...(at === "timeZone" ? { timeZone: value } : {}),
    ...(at.startsWith("budget.")
      ? { rollout: { budgets: [{ maxUnavailable: 1 }, { ...budget, [field]: value }] } }
      : {}),
    ...(at.startsWith("window.")
      ? { maintenance: { windows: [{ ...window, [field]: value }] } }
      : {}),
    ...(at.startsWith("blackout.")
      ? { maintenance: { blackouts: [{ ...blackout, [field]: value }] } }
      : {}),
  };
}

/**
 * One value of `spec.rollout.drain` (issue 26's drain policy) and the verdict on
 * it: accepted, or refused with a cause on `field` whose message matches.
 */
export interface DrainCase {
  drain: Record<string, unknown>;
  refused?: { field: string; message: RegExp };
  note?: string;
}

const DRAIN = "spec.rollout.drain";

/** The drain policy's table (`refusal_test.ts` applies each to the real API server). */
export const DRAIN_CASES: readonly DrainCase[] = [
  { drain: {} },
  {
    drain: {
      podSelector: { matchLabels: { "app.kubernetes.io/name": "longhorn-manager" } },
      gracePeriodSeconds: 30,
      deleteEmptyDirData: true,
      skipWaitForDeleteTimeoutSeconds: 300,
      onTimeout: "Force",
    },
    note: "every field",
  },
  {
    drain: {
      podSelector: { matchExpressions: [{ key: "longhorn.io/component", operator: "Exists" }] },
    },
  },
  { drain: { onTimeout: "Degrade" } },
  {
    drain: { podSelector: {} },
    refused: { field: `${DRAIN}.podSelector`, message: /an empty selector would leave every pod/ },
    note: "would keep every pod: the drain would do nothing",
  },
  {
    drain: { podSelector: { matchLabels: {} } },
    refused: { field: `${DRAIN}.podSelector`, message: /give matchLabels or matchExpressions/ },
  },
  {
    drain: { podSelector: { matchLabels: { "bad key!": "x" } } },
    refused: { field: `${DRAIN}.podSelector.matchLabels`, message: /is not a valid label key/ },
  },
  {
    drain: { gracePeriodSeconds: 0 },
    refused: {
      field: `${DRAIN}.gracePeriodSeconds`,
      message: /should be greater than or equal to 1/,
    },
    note: "0 would remove pods without waiting for them",
  },
  {
    drain: { skipWaitForDeleteTimeoutSeconds: 0 },
    refused: {
      field: `${DRAIN}.skipWaitForDeleteTimeoutSeconds`,
      message: /should be greater than or equal to 1/,
    },
  },
  {
    drain: { onTimeout: "Delete" },
    refused: { field: `${DRAIN}.onTimeout`, message: /supported values: "Degrade", "Force"/ },
  },
  {
    drain: { deleteEmptyDirData: "yes" },
    refused: { field: `${DRAIN}.deleteEmptyDirData`, message: /must be of type boolean/ },
  },
];

/** A valid pool spec with `drain` as its drain policy. */
export function poolSpecWithDrain(drain: Record<string, unknown>): Record<string, unknown> {
  return {
    nodeSelector: {},
    image: { ref: "quay.io/example/os:latest" },
    rollout: { drain },
  };
}

/** One `spec.rollout.strategy` value and the verdict on it. */
export interface StrategyCase {
  value: string;
  /** What the API server's refusal says (absent: accepted). */
  refused?: RegExp;
}

const STRATEGY_VALUES = /supported values: "RollingUpdate", "External"/;

/** `spec.rollout.strategy` (the enum; external orchestrator mode). */
export const STRATEGY_CASES: readonly StrategyCase[] = [
  { value: "RollingUpdate" },
  { value: "External" },
  { value: "external", refused: STRATEGY_VALUES },
  { value: "Manual", refused: STRATEGY_VALUES },
  { value: "", refused: STRATEGY_VALUES },
];

/**
 * One value of `spec.rollout.approval` (issue 26's approval gate) and the
 * verdict on it: accepted, or refused with a cause on `field` whose message
 * matches. `controller/gates/approval_test.ts` runs the same table through the
 * controller's check (`approvalSpecErrors`), except for what only the schema's
 * types and bounds say (`schemaOnly`).
 */
export interface ApprovalCase {
  approval: Record<string, unknown>;
  refused?: { field: string; message: RegExp; schemaOnly?: boolean };
  note?: string;
}

const APPROVAL = "spec.rollout.approval";

/** The approval gate's table (`refusal_test.ts` applies each to the real API server). */
export const APPROVAL_CASES: readonly ApprovalCase[] = [
  { approval: { mode: "Annotation" } },
  { approval: { mode: "Annotation", scope: "Pool" } },
  { approval: { mode: "Webhook", webhook: { url: "https://approve.example.com/bootc" } } },
  {
    approval: {
      mode: "Webhook",
      scope: "Node",
      webhook: {
        url: "https://10.0.0.7:8443/approve",
        timeoutSeconds: 5,
        caBundle: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        secretRef: { name: "a" },
      },
    },
    note: "every field",
  },
  { approval: { mode: "Webhook", webhook: { url: "http://10.0.0.7:8080/approve" } } },
  {
    approval: {
      mode: "Webhook",
      webhook: { url: "http://10.0.0.7:8080/approve", secretRef: { name: "a" } },
    },
    refused: { field: `${APPROVAL}.webhook`, message: /secretRef .* needs an https:\/\/ url/ },
    note: "credentials never go in the clear",
  },
  {
    approval: { mode: "Webhook" },
    refused: { field: APPROVAL, message: /webhook is required with mode: Webhook/ },
  },
  {
    approval: { mode: "Annotation", webhook: { url: "https://approve.example.com" } },
    refused: { field: APPROVAL, message: /webhook is required with mode: Webhook and not allowed/ },
    note: "a webhook that would never be called",
  },
  {
    approval: { mode: "Annotation", scope: "Node" },
    refused: { field: APPROVAL, message: /scope: Node needs mode: Webhook/ },
  },
  {
    approval: { mode: "Webhook", webhook: { url: "ftp://approve.example.com" } },
    refused: { field: `${APPROVAL}.webhook.url`, message: /absolute http:\/\/ or https:\/\/ URL/ },
  },
  {
    approval: { mode: "Webhook", webhook: { url: "https://user:pw@approve.example.com" } },
    refused: { field: `${APPROVAL}.webhook.url`, message: /no credentials/ },
    note: "credentials belong in the Secret",
  },
  {
    approval: { mode: "Person" },
    refused: { field: `${APPROVAL}.mode`, message: /supported values: "Annotation", "Webhook"/ },
  },
  {
    approval: { mode: "Webhook", scope: "Zone", webhook: { url: "https://a.example" } },
    refused: { field: `${APPROVAL}.scope`, message: /supported values: "Pool", "Node"/ },
  },
  {
    approval: { mode: "Webhook", webhook: { url: "https://a.example", timeoutSeconds: 0 } },
    refused: {
      field: `${APPROVAL}.webhook.timeoutSeconds`,
      message: /should be greater than or equal to 1/,
      schemaOnly: true,
    },
  },
  {
    approval: {},
    refused: { field: `${APPROVAL}.mode`, message: /Required value/, schemaOnly: true },
  },
];
