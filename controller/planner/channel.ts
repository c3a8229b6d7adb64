/**
 * Auto-update channels (`spec.image.channel`): a pool follows the highest
 * version of a repository inside a semver range, looking on a cron schedule in
 * the pool's time zone, never choosing a version that failed before, and not
 * moving while the circuit breaker is open. Pure: the shell lists the tags
 * (`channel_checks.ts`) and hands in the latest listing; this module chooses
 * the version and the status, and says when the next check is due.
 *
 * Versions are compared semantically with the `semver` package (the npm
 * registry's own): `v1.2.0` and `1.2.0` are one version; tags that are not
 * versions (`latest`, `sha-…`, `1.2`) are ignored. Schedules use croner, as the
 * maintenance windows do (DST handled in the pool's IANA zone).
 *
 * @module
 */
// @ts-types="@types/semver"
import semver from "semver";
import type { BootcNodePool, BootcNodePoolStatus } from "../../lib/api/mod.ts";
import { parseSchedule, scheduleError } from "../gates/schedule.ts";
import { poolTimeZone } from "../gates/policy.ts";
import { formatTime, parseTime } from "../model/slots.ts";

/** `spec.image.channel`. */
export type ChannelSpec = NonNullable<BootcNodePool["spec"]["image"]["channel"]>;
/** `status.channel`. */
export type ChannelStatus = NonNullable<BootcNodePoolStatus["channel"]>;

/** A tag that is a version. */
export interface TaggedVersion {
  /** The normalized version (no `v`). */
  version: string;
  tag: string;
}

/** The latest tag listing the shell has for a pool (see `channel_checks.ts`). */
export interface ChannelListing {
  at: Date;
  result: { ok: true; tags: string[] } | { ok: false; message: string };
}

/** Why the channel spec is invalid (InvalidSpec naming the field), or undefined. */
export function channelError(channel: ChannelSpec | undefined): string | undefined {
  if (!channel) return undefined;
  if (semver.validRange(channel.constraint) === null) {
    return `spec.image.channel.constraint: ${
      JSON.stringify(channel.constraint)
    } is not a semver range (examples: "~1.4", ">=1.2 <2", "^2")`;
  }
  if (channel.schedule !== undefined) {
    return scheduleError(channel.schedule, "spec.image.channel.schedule");
  }
  return undefined;
}

/** The tags that are versions, one per version (an exact tag preferred over `v…`). */
export function versionsOf(tags: readonly string[]): TaggedVersion[] {
  const byVersion = new Map<string, TaggedVersion>();
  for (const tag of tags) {
    const version = semver.valid(tag);
    if (version === null) continue;
    const known = byVersion.get(version);
    if (!known || (known.tag !== version && tag === version)) {
      byVersion.set(version, { version, tag });
    }
  }
  return [...byVersion.values()].sort((a, b) => semver.rcompare(a.version, b.version));
}

/** True when two spellings are the same version (`v1.2.0` = `1.2.0`). */
export function sameVersion(a: string, b: string): boolean {
  const va = semver.valid(a);
  const vb = semver.valid(b);
  return va !== null && vb !== null && semver.eq(va, vb);
}

/** What {@linkcode selectVersion} found. */
export interface VersionChoice {
  /** The highest version inside the range that has not failed. */
  chosen?: TaggedVersion;
  /** The highest version inside the range, failed or not. */
  newest?: TaggedVersion;
  /** Newer versions passed over, with why. */
  skipped: { version: string; why: string }[];
}

/** Picks the version to run from a listing, passing over `failed` and `unverified` ones. */
export function selectVersion(options: {
  tags: readonly string[];
  constraint: string;
  preRelease?: "Exclude" | "Include";
  failed?: readonly string[];
  unverified?: readonly string[];
}): VersionChoice {
  const includePrerelease = options.preRelease === "Include";
  const failed = options.failed ?? [];
  const unverified = options.unverified ?? [];
  const skipped: VersionChoice["skipped"] = [];
  let newest: TaggedVersion | undefined;
  let newestAny: TaggedVersion | undefined;
  for (const v of versionsOf(options.tags)) {
    if (semver.prerelease(v.version) && !includePrerelease) continue;
    if (!semver.satisfies(v.version, options.constraint, { includePrerelease })) {
      if (!newestAny) newestAny = v;
      continue;
    }
    newest ??= v;
    if (failed.some((f) => sameVersion(f, v.version))) {
      skipped.push({ version: v.version, why: "failed its health checks before" });
      continue;
    }
    if (unverified.some((f) => sameVersion(f, v.version))) {
      skipped.push({ version: v.version, why: "does not verify (tried again at the next check)" });
      continue;
    }
    return { chosen: v, newest, skipped: outside(newestAny, v, options.constraint, skipped) };
  }
  return { newest, skipped: outside(newestAny, newest, options.constraint, skipped) };
}

function outside(
  any: TaggedVersion | undefined,
  chosen: TaggedVersion | undefined,
  constraint: string,
  skipped: VersionChoice["skipped"],
): VersionChoice["skipped"] {
  if (any && (!chosen || semver.gt(any.version, chosen.version))) {
    return [{ version: any.version, why: `outside ${constraint}` }, ...skipped];
  }
  return skipped;
}

/** When the next check is due after `last` (none yet: now). */
export function nextCheckAt(options: {
  pool: BootcNodePool;
  last: Date | undefined;
  now: Date;
  /** The interval without a schedule. */
  intervalMs: number;
}): Date {
  const { pool, last, now } = options;
  if (!last) return now;
  const schedule = pool.spec.image.channel?.schedule;
  if (!schedule) return new Date(last.getTime() + options.intervalMs);
  const next = parseSchedule(schedule, poolTimeZone(pool)).nextRun(last);
  return next ?? new Date(last.getTime() + 365 * 24 * 3600_000);
}

/** What the channel step decided for this reconcile. */
export interface ChannelDecision {
  /** `repository:tag` to roll out (undefined until a first version is chosen). */
  ref?: string;
  status: ChannelStatus;
  /** When the shell should list the tags next. */
  dueAt: Date;
  /** A newer version is available but the circuit is open (event once per version). */
  blockedByCircuit?: string;
}

/** The channel's state for this reconcile from its last status and the latest listing. */
export function channelStep(options: {
  pool: BootcNodePool;
  listing?: ChannelListing;
  circuitOpen: boolean;
  now: Date;
  intervalMs: number;
}): ChannelDecision | undefined {
  const { pool, listing, now } = options;
  const channel = pool.spec.image.channel;
  if (!channel) return undefined;
  const prior = pool.status?.channel;
  // A new repository or range starts over (failed versions are per repository).
  const same = prior?.repository === channel.repository && prior.constraint === channel.constraint;
  const start: ChannelStatus = same && prior ? { ...prior } : {
    repository: channel.repository,
    constraint: channel.constraint,
    failedVersions: prior?.repository === channel.repository ? prior.failedVersions : undefined,
  };
  const last = parseTime(start.lastCheckTime);
  const dueAt = nextCheckAt({ pool, last, now, intervalMs: options.intervalMs });
  // An unverified version is passed over until the first check due after it was refused.
  const stillUnverified = (time: string) =>
    listing !== undefined &&
    nextCheckAt({ pool, last: parseTime(time), now, intervalMs: options.intervalMs }).getTime() >
      listing.at.getTime();
  const listed = listing && (!last || listing.at.getTime() >= dueAt.getTime())
    ? applyListing(start, channel, listing, options.circuitOpen, stillUnverified)
    : { status: start };
  const status = listed.status;
  const next = nextCheckAt({
    pool,
    last: parseTime(status.lastCheckTime),
    now,
    intervalMs: options.intervalMs,
  });
  return {
    ref: status.currentTag ? `${channel.repository}:${status.currentTag}` : undefined,
    status: dropUndefined({ ...status, nextCheckTime: formatTime(next) }),
    dueAt: next,
    blockedByCircuit: listed.blockedByCircuit,
  };
}

/**
 * The channel status after a due listing: the version chosen (unless the open
 * circuit holds a move back, `blockedByCircuit`), the newest seen, and a message
 * naming what was passed over or why the listing failed.
 */
function applyListing(
  prior: ChannelStatus,
  channel: NonNullable<BootcNodePool["spec"]["image"]["channel"]>,
  listing: ChannelListing,
  circuitOpen: boolean,
  stillUnverified: (time: string) => boolean,
): { status: ChannelStatus; blockedByCircuit?: string } {
  const status = { ...prior };
  const unverified = (prior.unverifiedVersions ?? []).filter((u) => stillUnverified(u.time));
  status.unverifiedVersions = unverified.length > 0 ? unverified : undefined;
  if (!listing.result.ok) {
    status.message = `listing the tags of ${channel.repository} failed: ${listing.result.message}`;
    return { status };
  }
  status.lastCheckTime = formatTime(listing.at);
  const choice = selectVersion({
    tags: listing.result.tags,
    constraint: channel.constraint,
    preRelease: channel.preRelease,
    failed: status.failedVersions,
    unverified: unverified.map((u) => u.version),
  });
  status.newestVersion = choice.newest?.version;
  status.newestTag = choice.newest?.tag;
  const notes = choice.skipped.map((s) => `${s.version} ${s.why}`);
  const moving = choice.chosen && choice.chosen.version !== status.currentVersion;
  // Leaving a version that failed is the rollback, not an automatic change.
  const currentFailed = status.currentVersion !== undefined &&
    (status.failedVersions ?? []).some((f) => sameVersion(f, status.currentVersion!));
  let blockedByCircuit: string | undefined;
  if (moving && circuitOpen && status.currentVersion && !currentFailed) {
    blockedByCircuit = choice.chosen!.version;
    notes.unshift(`${choice.chosen!.version} available, circuit open`);
  } else if (choice.chosen) {
    status.currentVersion = choice.chosen.version;
    status.currentTag = choice.chosen.tag;
  } else {
    notes.unshift(`no version of ${channel.repository} inside ${channel.constraint}`);
  }
  status.message = notes.length > 0 ? notes.join("; ") : undefined;
  return { status, blockedByCircuit };
}

/**
 * The channel status after the current version failed: it joins the failed
 * versions and the next check is due at once, so the highest version that has
 * not failed is chosen again.
 */
export function channelFailed(status: ChannelStatus): ChannelStatus {
  const current = status.currentVersion;
  if (!current) return status;
  const failed = [...(status.failedVersions ?? [])];
  if (!failed.some((f) => sameVersion(f, current))) failed.push(current);
  return dropUndefined({
    ...status,
    failedVersions: failed.slice(-64),
    lastCheckTime: undefined,
    message: `${current} failed its health checks; never chosen again`,
  });
}

/**
 * The channel status after the current version's image did not verify: it is
 * passed over until the channel's next check after `now`, and the latest listing
 * is applied again at once, so the highest other version is chosen.
 */
export function channelUnverified(status: ChannelStatus, now: Date): ChannelStatus {
  const current = status.currentVersion;
  if (!current) return status;
  const others = (status.unverifiedVersions ?? []).filter((u) => !sameVersion(u.version, current));
  return dropUndefined({
    ...status,
    unverifiedVersions: [...others, { version: current, time: formatTime(now) }].slice(-16),
    lastCheckTime: undefined,
    message: `${current} does not verify (spec.image.verification); passed over until the ` +
      `next check`,
  });
}

function dropUndefined<T extends object>(obj: T): T {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as T;
}
