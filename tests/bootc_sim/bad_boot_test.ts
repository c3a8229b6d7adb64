import assert from "node:assert/strict";
import {
  BAD_BOOT_LABEL,
  type BadBoot,
  badBootFromLabels,
  BadBootLabelError,
  bootHost,
  DEFAULT_BAD_UNIT,
  effectiveBadBoot,
  formatBadBoot,
  initialBootRecord,
  parseBadBoot,
} from "./bad_boot.ts";
import {
  DEFAULT_SETTINGS,
  type Deployment,
  type HostState,
  initialState,
  rollback,
} from "./model.ts";
import { buildHost, canonicalJson } from "./status.ts";

function dep(name: string, badBoot: BadBoot | null = null): Deployment {
  return {
    pullspec: `registry.test/os:${name}`,
    transport: "registry",
    image: {
      imageDigest: `sha256:${name.padEnd(64, "0")}`,
      version: name,
      timestamp: null,
      architecture: "amd64",
    },
    cachedUpdate: null,
    incompatible: false,
    pinned: false,
    softRebootCapable: false,
    downloadOnly: false,
    softRebootPrepared: false,
    checksum: name,
    deploySerial: 0,
    stateroot: "default",
    badBoot,
  };
}

const digest = (name: string) => `sha256:${name.padEnd(64, "0")}`;

/** Booted a, rollback old, `b` staged (unlocked) as by `bootc switch --apply`. */
function updating(badBoot: BadBoot | null): HostState {
  return { ...initialState(dep("a"), "boot-1"), rollback: dep("old"), staged: dep("b", badBoot) };
}

let bootNumber = 1;
function boot(state: HostState, opts: { soft?: boolean; overrides?: Record<string, string> } = {}) {
  bootNumber++;
  return bootHost(state, {
    soft: opts.soft ?? false,
    newBootId: `boot-${bootNumber}`,
    now: `2026-01-01T00:00:${String(bootNumber).padStart(2, "0")}Z`,
    overrides: opts.overrides,
  });
}

Deno.test("label values parse to modes and back; bad values are refused", () => {
  assert.deepEqual(parseBadBoot("unit-fails"), { mode: "unit-fails", unit: DEFAULT_BAD_UNIT });
  assert.deepEqual(parseBadBoot("unit-fails:kubelet.service"), {
    mode: "unit-fails",
    unit: "kubelet.service",
  });
  assert.deepEqual(parseBadBoot("never-ready"), { mode: "never-ready" });
  assert.deepEqual(parseBadBoot("falls-back"), { mode: "falls-back" });
  assert.deepEqual(parseBadBoot("reboot-loop"), { mode: "reboot-loop", crashes: 3 });
  assert.deepEqual(parseBadBoot("reboot-loop:5"), { mode: "reboot-loop", crashes: 5 });
  assert.equal(parseBadBoot("none"), null);
  for (const bad of ["reboot-loop:0", "reboot-loop:x", "unit-fails:", "never-ready:1", "crash"]) {
    assert.throws(() => parseBadBoot(bad), BadBootLabelError, bad);
  }
  for (const v of ["unit-fails:x.service", "never-ready", "falls-back", "reboot-loop:2", "none"]) {
    assert.equal(formatBadBoot(parseBadBoot(v)), v);
  }
  assert.deepEqual(badBootFromLabels({ [BAD_BOOT_LABEL]: "falls-back", other: "x" }), {
    mode: "falls-back",
  });
  assert.equal(badBootFromLabels({ "containers.bootc": "1" }), null);
});

Deno.test("a host override by digest or pullspec wins over the label", () => {
  const d = dep("b", { mode: "falls-back" });
  assert.deepEqual(effectiveBadBoot(d), { mode: "falls-back" });
  assert.equal(effectiveBadBoot(d, { [digest("b")]: "none" }), null);
  assert.deepEqual(effectiveBadBoot(dep("b"), { "registry.test/os:b": "never-ready" }), {
    mode: "never-ready",
  });
});

Deno.test("a good image boots up and Ready", () => {
  const after = boot(updating(null));
  assert.equal(after.booted?.checksum, "b");
  assert.deepEqual(
    [after.lastBoot?.outcome, after.lastBoot?.ready, after.lastBoot?.failedUnit],
    ["up", true, null],
  );
  assert.equal(after.lastBoot?.bootedDigest, digest("b"));
});

Deno.test("unit-fails: the host boots it and runs, with the unit failed", () => {
  const after = boot(updating({ mode: "unit-fails", unit: DEFAULT_BAD_UNIT }));
  assert.equal(after.booted?.checksum, "b");
  assert.equal(after.rollback?.checksum, "a");
  assert.deepEqual(
    [after.lastBoot?.outcome, after.lastBoot?.ready, after.lastBoot?.failedUnit],
    ["up", true, DEFAULT_BAD_UNIT],
  );
  // Rolling back to the good deployment clears it.
  const r = rollback(after);
  assert.ok(r.ok);
  const back = boot(r.state);
  assert.equal(back.booted?.checksum, "a");
  assert.equal(back.rollback?.checksum, "b");
  assert.deepEqual([back.lastBoot?.failedUnit, back.lastBoot?.ready], [null, true]);
});

Deno.test("never-ready: the host boots it and runs but is never Ready; a good boot is Ready", () => {
  const after = boot(updating({ mode: "never-ready" }));
  assert.equal(after.booted?.checksum, "b");
  assert.deepEqual([after.lastBoot?.outcome, after.lastBoot?.ready], ["up", false]);
  const again = boot(after);
  assert.deepEqual([again.booted?.checksum, again.lastBoot?.ready], ["b", false]);
  const r = rollback(again);
  assert.ok(r.ok);
  const back = boot(r.state);
  assert.deepEqual([back.booted?.checksum, back.lastBoot?.ready], ["a", true]);
});

Deno.test("falls-back: one boot ends on the previous deployment, the bad one as rollback", () => {
  const before = updating({ mode: "falls-back" });
  const after = boot(before, { soft: true });
  assert.equal(after.booted?.checksum, "a");
  assert.equal(after.rollback?.checksum, "b");
  assert.equal(after.staged, null);
  assert.equal(after.rollbackQueued, false);
  assert.notEqual(after.bootId, before.bootId, "a fall-back is a full boot even from a soft one");
  assert.deepEqual(after.lastBoot, {
    outcome: "fell-back",
    at: after.lastBoot!.at,
    bootId: after.bootId,
    soft: false,
    triedDigest: digest("b"),
    bootedDigest: digest("a"),
    badBoot: { mode: "falls-back" },
    ready: true,
    failedUnit: null,
    bootCheckFailed: false,
    crashes: 1,
    fellBackFrom: digest("b"),
  });
  // The next boot stays on the good deployment.
  const next = boot(after);
  assert.deepEqual([next.booted?.checksum, next.lastBoot?.outcome], ["a", "up"]);
});

Deno.test("reboot-loop:N crashes N boots in a row, then falls back", () => {
  let s = boot(updating({ mode: "reboot-loop", crashes: 3 }));
  const bootIds = new Set([s.bootId]);
  for (let crash = 1; crash <= 3; crash++) {
    assert.equal(s.lastBoot?.outcome, "crashed", `boot ${crash}`);
    assert.equal(s.lastBoot?.crashes, crash);
    assert.equal(s.lastBoot?.ready, false);
    assert.equal(s.lastBoot?.bootedDigest, null);
    assert.equal(s.booted?.checksum, "b", "it keeps trying the bad deployment");
    s = boot(s);
    bootIds.add(s.bootId);
  }
  assert.equal(bootIds.size, 4, "every crash is a boot of its own");
  assert.equal(s.lastBoot?.outcome, "fell-back");
  assert.equal(s.lastBoot?.crashes, 3);
  assert.deepEqual([s.booted?.checksum, s.rollback?.checksum, s.staged], ["a", "b", null]);
  assert.equal(s.lastBoot?.ready, true);
  assert.equal(boot(s).lastBoot?.outcome, "up");
});

Deno.test("a crash counter starts afresh for a new attempt at the bad image", () => {
  let s = boot(updating({ mode: "reboot-loop", crashes: 1 }));
  assert.equal(s.lastBoot?.outcome, "crashed");
  s = boot(s);
  assert.equal(s.lastBoot?.outcome, "fell-back");
  // The admin queues the bad deployment again: the boot counter is reset.
  const r = rollback(s);
  assert.ok(r.ok);
  const again = boot(r.state);
  assert.deepEqual([again.lastBoot?.outcome, again.lastBoot?.crashes], ["crashed", 1]);
});

Deno.test("a bad image with nothing to fall back to stays up, never Ready", () => {
  // Only a host created on a bad image (an update always leaves a rollback) gets here.
  const s: HostState = initialState(dep("b", { mode: "falls-back" }), "boot-1");
  const after = boot(s);
  assert.deepEqual(
    [after.booted?.checksum, after.rollback, after.lastBoot?.outcome, after.lastBoot?.ready],
    ["b", null, "up", false],
  );
});

Deno.test("the previous deployment's own unit-fails / never-ready apply after a fall-back", () => {
  const s: HostState = {
    ...initialState(dep("a", { mode: "unit-fails", unit: "x.service" }), "boot-1"),
    staged: dep("b", { mode: "falls-back" }),
  };
  const after = boot(s);
  assert.deepEqual([after.lastBoot?.outcome, after.lastBoot?.failedUnit], [
    "fell-back",
    "x.service",
  ]);
});

Deno.test("a host created on a bad image: unit-fails fails the unit, never-ready is not Ready", () => {
  const now = "2026-01-01T00:00:00Z";
  const unit = initialBootRecord(
    initialState(dep("a", { mode: "unit-fails", unit: "u.service" }), "b1"),
    {
      now,
    },
  );
  assert.deepEqual([unit.failedUnit, unit.ready], ["u.service", true]);
  const nr = initialBootRecord(initialState(dep("a", { mode: "never-ready" }), "b1"), { now });
  assert.equal(nr.ready, false);
  const good = initialBootRecord(initialState(dep("a"), "b1"), {
    now,
    overrides: { "registry.test/os:a": "never-ready" },
  });
  assert.equal(good.ready, false, "the override applies");
});

Deno.test("bootc status after a fall-back: booted previous, rollback bad, default order; no sim fields", () => {
  const after = boot(updating({ mode: "reboot-loop", crashes: 1 }));
  const fell = boot(after);
  const host = buildHost({ state: fell, settings: DEFAULT_SETTINGS });
  const status = host.status as Record<string, Record<string, Record<string, unknown>> | null>;
  assert.equal(status.booted?.image?.imageDigest, digest("a"));
  assert.equal(status.rollback?.image?.imageDigest, digest("b"));
  assert.equal(status.staged, null);
  assert.equal(host.status && (host.status as Record<string, unknown>).rollbackQueued, false);
  assert.deepEqual(host.spec, {
    image: { image: "registry.test/os:a", transport: "registry" },
    bootOrder: "default",
  });
  const json = canonicalJson(host);
  assert.doesNotMatch(json, /badBoot|bad-boot|lastBoot|crash/);
});
