import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import {
  channelError,
  channelFailed,
  channelStep,
  channelUnverified,
  nextCheckAt,
  sameVersion,
  selectVersion,
  versionsOf,
} from "./channel.ts";

const TAGS = ["1.0.0", "v1.0.1", "1.1.0", "2.0.0", "latest", "sha-abc123", "1.2", "1.1.1-rc.1"];

Deno.test("versionsOf: semver tags only, v prefix folded, newest first", () => {
  assert.deepEqual(
    versionsOf([...TAGS, "1.0.1"]).map((v) => `${v.version}=${v.tag}`),
    ["2.0.0=2.0.0", "1.1.1-rc.1=1.1.1-rc.1", "1.1.0=1.1.0", "1.0.1=1.0.1", "1.0.0=1.0.0"],
  );
  assert.ok(sameVersion("v1.2.0", "1.2.0"));
  assert.ok(!sameVersion("1.2.0", "1.2.1"));
  assert.ok(!sameVersion("latest", "latest"));
});

const selectCases: {
  name: string;
  constraint: string;
  failed?: string[];
  preRelease?: "Include";
  chosen?: string;
  newest?: string;
  skipped?: string[];
}[] = [
  {
    name: "tilde",
    constraint: "~1.0",
    chosen: "1.0.1",
    newest: "1.0.1",
    skipped: ["2.0.0 outside ~1.0"],
  },
  { name: "range", constraint: ">=1.0 <2", chosen: "1.1.0", newest: "1.1.0" },
  { name: "v prefix in the range", constraint: "^v1.0.0", chosen: "1.1.0" },
  { name: "caret major 2", constraint: "^2", chosen: "2.0.0", skipped: [] },
  {
    name: "failed version skipped, spelled with v",
    constraint: "~1.0",
    failed: ["v1.0.1"],
    chosen: "1.0.0",
    newest: "1.0.1",
    skipped: ["2.0.0 outside ~1.0", "1.0.1 failed its health checks before"],
  },
  { name: "pre-release only when asked", constraint: ">=1.1.0 <1.2.0", chosen: "1.1.0" },
  {
    name: "pre-release included",
    constraint: ">=1.1.0 <1.2.0",
    preRelease: "Include",
    chosen: "1.1.1-rc.1",
  },
  { name: "nothing inside", constraint: "~3", chosen: undefined, newest: undefined },
  {
    name: "everything inside failed",
    constraint: "~1.0",
    failed: ["1.0.0", "1.0.1"],
    chosen: undefined,
    newest: "1.0.1",
  },
];
for (const c of selectCases) {
  Deno.test(`selectVersion: ${c.name}`, () => {
    const got = selectVersion({
      tags: TAGS,
      constraint: c.constraint,
      failed: c.failed,
      preRelease: c.preRelease,
    });
    assert.equal(got.chosen?.version, c.chosen);
    if ("newest" in c) assert.equal(got.newest?.version, c.newest);
    if (c.skipped) assert.deepEqual(got.skipped.map((s) => `${s.version} ${s.why}`), c.skipped);
  });
}

Deno.test("selectVersion keeps the tag as spelled", () => {
  assert.equal(selectVersion({ tags: TAGS, constraint: "~1.0" }).chosen?.tag, "v1.0.1");
});

Deno.test("channelError names the field", () => {
  assert.equal(channelError({ repository: "r/os", constraint: "~1.4" }), undefined);
  assert.match(
    channelError({ repository: "r/os", constraint: "~x!" }) ?? "",
    /^spec\.image\.channel\.constraint: "~x!" is not a semver range/,
  );
  assert.match(
    channelError({ repository: "r/os", constraint: "~1", schedule: "61 * * * *" }) ?? "",
    /^spec\.image\.channel\.schedule: /,
  );
});

function pool(
  channel: Record<string, unknown>,
  status?: Record<string, unknown>,
  timeZone?: string,
): BootcNodePool {
  return {
    metadata: { name: "p", generation: 1 },
    spec: {
      nodeSelector: {},
      image: { channel },
      rollout: {},
      ...(timeZone ? { timeZone } : {}),
    },
    status: status ? { channel: status } : undefined,
  } as unknown as BootcNodePool;
}

Deno.test("nextCheckAt: Saturdays 22:00 in Berlin across the end of DST", () => {
  const p = pool(
    { repository: "r/os", constraint: "~1", schedule: "0 22 * * 6" },
    undefined,
    "Europe/Berlin",
  );
  // Saturday 2026-10-17 22:00 CEST (UTC+2) was the last check; the next Saturday is after
  // the switch to CET (UTC+1) on 2026-10-25, so 22:00 local is 21:00Z.
  const next = nextCheckAt({
    pool: p,
    last: new Date("2026-10-17T20:00:00Z"),
    now: new Date("2026-10-18T00:00:00Z"),
    intervalMs: 60_000,
  });
  assert.equal(next.toISOString(), "2026-10-24T20:00:00.000Z");
  const after = nextCheckAt({ pool: p, last: next, now: next, intervalMs: 60_000 });
  assert.equal(after.toISOString(), "2026-10-31T21:00:00.000Z");
  // Spring forward: 2027-03-28 02:30 does not exist in Berlin; the check still happens that
  // day, once, at the first valid time (03:00 CEST = 01:00Z), as cron runs skipped jobs.
  const daily = pool(
    { repository: "r/os", constraint: "~1", schedule: "30 2 * * *" },
    undefined,
    "Europe/Berlin",
  );
  const spring = nextCheckAt({
    pool: daily,
    last: new Date("2027-03-27T01:30:00Z"), // 02:30 CET on the 27th
    now: new Date("2027-03-27T02:00:00Z"),
    intervalMs: 60_000,
  });
  assert.equal(spring.toISOString(), "2027-03-28T01:00:00.000Z");
  const afterSpring = nextCheckAt({ pool: daily, last: spring, now: spring, intervalMs: 1 });
  assert.equal(afterSpring.toISOString(), "2027-03-29T00:30:00.000Z"); // 02:30 CEST
  // Without a schedule: every interval; with no check yet: now.
  const plain = pool({ repository: "r/os", constraint: "~1" });
  const now = new Date("2026-01-01T00:00:00Z");
  assert.equal(nextCheckAt({ pool: plain, last: undefined, now, intervalMs: 5000 }), now);
  assert.equal(
    nextCheckAt({ pool: plain, last: now, now, intervalMs: 5000 }).toISOString(),
    "2026-01-01T00:00:05.000Z",
  );
});

const NOW = new Date("2026-11-23T10:00:00Z");
const ok = (tags: string[], at = NOW) => ({ at, result: { ok: true as const, tags } });

Deno.test("channelStep: first check picks the newest inside the range and says what it passed over", () => {
  const d = channelStep({
    pool: pool({ repository: "r/os", constraint: "~1.0" }),
    listing: ok(TAGS),
    circuitOpen: false,
    now: NOW,
    intervalMs: 60_000,
  })!;
  assert.equal(d.ref, "r/os:v1.0.1");
  assert.equal(d.status.currentVersion, "1.0.1");
  assert.equal(d.status.newestVersion, "1.0.1");
  assert.equal(d.status.lastCheckTime, "2026-11-23T10:00:00Z");
  assert.equal(d.status.nextCheckTime, "2026-11-23T10:01:00Z");
  assert.equal(d.status.message, "2.0.0 outside ~1.0");
});

Deno.test("channelStep: no listing yet keeps the last version and asks for a check now", () => {
  const p = pool({ repository: "r/os", constraint: "~1.0" });
  const d = channelStep({ pool: p, circuitOpen: false, now: NOW, intervalMs: 60_000 })!;
  assert.equal(d.ref, undefined);
  assert.equal(d.dueAt.getTime(), NOW.getTime());
});

Deno.test("channelStep: a listing older than the due time is not a new check", () => {
  const prior = {
    repository: "r/os",
    constraint: "~1.0",
    currentVersion: "1.0.0",
    currentTag: "1.0.0",
    lastCheckTime: "2026-11-23T09:59:30Z",
  };
  const p = pool({ repository: "r/os", constraint: "~1.0" }, prior);
  const stale = channelStep({
    pool: p,
    listing: ok(TAGS, new Date("2026-11-23T09:59:30Z")),
    circuitOpen: false,
    now: NOW,
    intervalMs: 60_000,
  })!;
  assert.equal(stale.ref, "r/os:1.0.0");
  assert.equal(stale.dueAt.toISOString(), "2026-11-23T10:00:30.000Z");
  const fresh = channelStep({
    pool: p,
    listing: ok(TAGS, new Date("2026-11-23T10:00:31Z")),
    circuitOpen: false,
    now: new Date("2026-11-23T10:00:31Z"),
    intervalMs: 60_000,
  })!;
  assert.equal(fresh.ref, "r/os:v1.0.1");
});

Deno.test("channelStep: the circuit open holds the version and says a newer one is available", () => {
  const p = pool({ repository: "r/os", constraint: "~1.0" }, {
    repository: "r/os",
    constraint: "~1.0",
    currentVersion: "1.0.0",
    currentTag: "1.0.0",
  });
  const d = channelStep({
    pool: p,
    listing: ok(TAGS),
    circuitOpen: true,
    now: NOW,
    intervalMs: 1,
  })!;
  assert.equal(d.ref, "r/os:1.0.0");
  assert.equal(d.blockedByCircuit, "1.0.1");
  assert.match(d.status.message ?? "", /^1\.0\.1 available, circuit open/);
});

Deno.test("channelStep: a failed listing keeps the version and says why", () => {
  const p = pool({ repository: "r/os", constraint: "~1.0" }, {
    repository: "r/os",
    constraint: "~1.0",
    currentVersion: "1.0.0",
    currentTag: "1.0.0",
  });
  const d = channelStep({
    pool: p,
    listing: { at: NOW, result: { ok: false, message: "HTTP 503" } },
    circuitOpen: false,
    now: NOW,
    intervalMs: 1,
  })!;
  assert.equal(d.ref, "r/os:1.0.0");
  assert.match(d.status.message ?? "", /listing the tags of r\/os failed: HTTP 503/);
});

Deno.test("channelFailed: the version joins the failed list and the next check is due at once", () => {
  const s = channelFailed({
    repository: "r/os",
    currentVersion: "1.0.2",
    currentTag: "1.0.2",
    lastCheckTime: "2026-11-23T09:00:00Z",
    failedVersions: ["1.0.9"],
  });
  assert.deepEqual(s.failedVersions, ["1.0.9", "1.0.2"]);
  assert.equal(s.lastCheckTime, undefined);
  // The next step re-selects from a listing made after the failure: 1.0.2 is passed over.
  const d = channelStep({
    pool: pool({ repository: "r/os", constraint: "~1.0" }, { ...s, constraint: "~1.0" }),
    listing: ok(["1.0.0", "1.0.1", "1.0.2"]),
    circuitOpen: false,
    now: NOW,
    intervalMs: 1,
  })!;
  assert.equal(d.ref, "r/os:1.0.1");
  assert.match(d.status.message ?? "", /1\.0\.2 failed its health checks before/);
});

Deno.test("channelUnverified: passed over until the next check, then tried again", () => {
  const s = channelUnverified({
    repository: "r/os",
    constraint: "~1.0",
    currentVersion: "1.0.2",
    currentTag: "1.0.2",
    lastCheckTime: "2026-11-23T09:00:00Z",
  }, NOW);
  assert.deepEqual(s.unverifiedVersions, [{ version: "1.0.2", time: "2026-11-23T10:00:00Z" }]);
  assert.equal(s.lastCheckTime, undefined);
  const step = (listing: ReturnType<typeof ok>, now: Date, status = s) =>
    channelStep({
      pool: pool({ repository: "r/os", constraint: "~1.0" }, status),
      listing,
      circuitOpen: false,
      now,
      intervalMs: 3600_000,
    })!;
  // The listing it had is applied again at once: the highest other version is chosen.
  const back = step(ok(["1.0.1", "1.0.2"], new Date("2026-11-23T09:00:00Z")), NOW);
  assert.equal(back.ref, "r/os:1.0.1");
  assert.match(back.status.message ?? "", /1\.0\.2 does not verify/);
  // A listing before the next check still passes it over; the first one after tries it again.
  const soon = step(ok(["1.0.1", "1.0.2"], new Date("2026-11-23T10:30:00Z")), NOW, {
    ...back.status,
    lastCheckTime: undefined,
  });
  assert.equal(soon.ref, "r/os:1.0.1");
  const later = step(ok(["1.0.1", "1.0.2"], new Date("2026-11-23T11:00:00Z")), NOW, {
    ...back.status,
    lastCheckTime: undefined,
  });
  assert.equal(later.ref, "r/os:1.0.2");
  assert.equal(later.status.unverifiedVersions, undefined);
});

Deno.test("channelStep: a new range starts over but keeps the repository's failed versions", () => {
  const p = pool({ repository: "r/os", constraint: "~1.1" }, {
    repository: "r/os",
    constraint: "~1.0",
    currentVersion: "1.0.1",
    currentTag: "1.0.1",
    lastCheckTime: "2026-11-23T09:59:59Z",
    failedVersions: ["1.1.0"],
  });
  const d = channelStep({
    pool: p,
    listing: ok(TAGS),
    circuitOpen: false,
    now: NOW,
    intervalMs: 60_000,
  })!;
  // 1.1.0 failed before and 1.1.1-rc.1 is a pre-release: nothing inside ~1.1 to run.
  assert.equal(d.status.currentVersion, undefined);
  assert.deepEqual(d.status.failedVersions, ["1.1.0"]);
  assert.match(d.status.message ?? "", /no version of r\/os inside ~1\.1/);
});

Deno.test("channelStep: with the circuit open a failed version may still be left for a good one", () => {
  const p = pool({ repository: "r/os", constraint: "~1.0" }, {
    repository: "r/os",
    constraint: "~1.0",
    currentVersion: "1.0.1",
    currentTag: "v1.0.1",
    failedVersions: ["1.0.1"],
  });
  const d = channelStep({
    pool: p,
    listing: ok(TAGS),
    circuitOpen: true,
    now: NOW,
    intervalMs: 1,
  })!;
  assert.equal(d.ref, "r/os:1.0.0");
  assert.equal(d.blockedByCircuit, undefined);
});
