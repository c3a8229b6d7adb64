import assert from "node:assert/strict";
import {
  AUTO_UPDATE_TIMER,
  failedUnits,
  initialUnits,
  rebootUnits,
  systemctl,
  systemState,
} from "./systemctl.ts";

Deno.test("the auto-update timer is enabled and active by default, like Fedora-based images", () => {
  const units = initialUnits(true);
  const enabled = systemctl(["is-enabled", AUTO_UPDATE_TIMER], units);
  assert.deepEqual([enabled.stdout, enabled.code], ["enabled\n", 0]);
  const active = systemctl(["is-active", AUTO_UPDATE_TIMER], units);
  assert.deepEqual([active.stdout, active.code], ["active\n", 0]);
  const off = systemctl(["is-enabled", AUTO_UPDATE_TIMER], initialUnits(false));
  assert.deepEqual([off.stdout, off.code], ["disabled\n", 1]);
});

Deno.test("mask --runtime --now stops the timer until a full reboot; a soft reboot keeps the mask", () => {
  const masked = systemctl(["mask", "--runtime", "--now", AUTO_UPDATE_TIMER], initialUnits(true));
  assert.equal(masked.code, 0);
  assert.match(
    masked.stderr,
    /Created symlink '\/run\/systemd\/system\/bootc-fetch-apply-updates\.timer' → '\/dev\/null'/,
  );
  assert.equal(
    systemctl(["is-enabled", AUTO_UPDATE_TIMER], masked.units).stdout,
    "masked-runtime\n",
  );
  const inactive = systemctl(["is-active", AUTO_UPDATE_TIMER], masked.units);
  assert.deepEqual([inactive.stdout, inactive.code], ["inactive\n", 3]);
  assert.equal(systemctl(["start", AUTO_UPDATE_TIMER], masked.units).code, 1);

  const soft = rebootUnits(masked.units, true);
  assert.equal(soft[AUTO_UPDATE_TIMER].runtimeMasked, true);
  assert.equal(soft[AUTO_UPDATE_TIMER].active, false);
  const full = rebootUnits(masked.units, false);
  assert.equal(full[AUTO_UPDATE_TIMER].runtimeMasked, false);
  assert.equal(full[AUTO_UPDATE_TIMER].active, true);
});

Deno.test("unmask --runtime removes the runtime mask; --quiet silences is-* output", () => {
  const masked = systemctl(["mask", "--runtime", AUTO_UPDATE_TIMER], initialUnits(true)).units;
  const un = systemctl(["unmask", "--runtime", AUTO_UPDATE_TIMER], masked);
  assert.equal(un.units[AUTO_UPDATE_TIMER].runtimeMasked, false);
  const quiet = systemctl(["is-enabled", "--quiet", AUTO_UPDATE_TIMER], un.units);
  assert.deepEqual([quiet.stdout, quiet.code], ["", 0]);
});

Deno.test("unknown units and verbs fail like systemctl", () => {
  const r = systemctl(["is-enabled", "nope.timer"], initialUnits(true));
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Failed to get unit file state for nope\.timer/);
  assert.equal(systemctl(["frob", "x"], initialUnits(true)).code, 1);
});

const BAD = "bootc-sim-bad.service";

Deno.test("is-system-running: running exits 0; starting and degraded exit 1, as systemd", () => {
  const units = initialUnits(true);
  const running = systemctl(["is-system-running"], units);
  assert.deepEqual([running.stdout, running.code], ["running\n", 0]);
  const starting = systemctl(["is-system-running"], units, { starting: true });
  assert.deepEqual([starting.stdout, starting.code], ["starting\n", 1]);
  const failed = rebootUnits(units, false, { failedUnit: BAD });
  const degraded = systemctl(["is-system-running"], failed);
  assert.deepEqual([degraded.stdout, degraded.code], ["degraded\n", 1]);
  assert.deepEqual(
    [systemctl(["is-system-running", "--quiet"], failed).stdout, systemState(failed)],
    ["", "degraded"],
  );
});

Deno.test("a bad image's failed unit: is-active failed (3), is-failed (0), listed as failed", () => {
  const units = rebootUnits(initialUnits(true), false, { failedUnit: BAD });
  const active = systemctl(["is-active", BAD], units);
  assert.deepEqual([active.stdout, active.code], ["failed\n", 3]);
  const dashed = systemctl(["is-active", "--", BAD, AUTO_UPDATE_TIMER], units);
  assert.deepEqual([dashed.stdout, dashed.code], ["failed\nactive\n", 0]);
  const isFailed = systemctl(["is-failed", BAD], units);
  assert.deepEqual([isFailed.stdout, isFailed.code], ["failed\n", 0]);
  const timerNotFailed = systemctl(["is-failed", AUTO_UPDATE_TIMER], units);
  assert.deepEqual([timerNotFailed.stdout, timerNotFailed.code], ["active\n", 1]);
  assert.deepEqual(
    [systemctl(["is-failed"], units).stdout, systemctl(["is-failed"], units).code],
    ["degraded\n", 0],
  );
  assert.deepEqual(failedUnits(units), [BAD]);

  const plain = systemctl(["list-units", "--state=failed", "--plain", "--no-legend"], units);
  assert.equal(plain.code, 0);
  const fields = plain.stdout.trimEnd().split(/\s+/);
  assert.deepEqual(fields.slice(0, 4), [BAD, "loaded", "failed", "failed"]);
  assert.equal(plain.stdout.split("\n").length, 2, "exactly one line");
  const failedFlag = systemctl(["--failed", "--plain", "--no-legend"], units);
  assert.equal(failedFlag.stdout, plain.stdout);
  const spaced = systemctl(["list-units", "--state", "failed", "--no-legend"], units);
  assert.match(spaced.stdout, /^● bootc-sim-bad\.service +loaded failed failed /);
  const json = systemctl(["list-units", "--failed", "-o", "json"], units);
  assert.deepEqual(JSON.parse(json.stdout).map((r: { unit: string }) => r.unit), [BAD]);
  assert.equal(
    systemctl(["list-units", "--failed", "--legend=false", "--plain"], units).stdout,
    plain.stdout,
  );
  const legend = systemctl(["list-units", "--failed"], units);
  assert.match(legend.stdout, /^ {2}UNIT +LOAD +ACTIVE SUB +DESCRIPTION\n/);
  assert.match(legend.stdout, /\n1 loaded units listed\./);

  const show = systemctl(["show", "-p", "ActiveState,SubState", BAD], units);
  assert.equal(show.stdout, "ActiveState=failed\nSubState=failed\n");
  const manager = systemctl(["show", "--property=SystemState", "--value"], units);
  assert.equal(manager.stdout, "degraded\n");
  const restart = systemctl(["restart", BAD], units);
  assert.equal(restart.code, 1, "it fails again when started");
  assert.match(restart.stderr, /^Job for bootc-sim-bad\.service failed/);
});

Deno.test("a healthy host lists no failed units; a good boot clears the bad image's unit", () => {
  const bad = rebootUnits(initialUnits(true), false, { failedUnit: BAD });
  const good = rebootUnits(bad, false);
  assert.equal(good[BAD], undefined, "the unit only the bad image shipped is gone");
  assert.equal(systemctl(["is-system-running"], good).code, 0);
  const none = systemctl(["list-units", "--state=failed", "--plain", "--no-legend"], good);
  assert.deepEqual([none.stdout, none.code], ["", 0]);
  const legend = systemctl(["list-units", "--failed"], good);
  assert.match(
    legend.stdout,
    /^ {2}UNIT +LOAD +ACTIVE SUB +DESCRIPTION\n\n0 loaded units listed\./,
  );
  const inactive = systemctl(["is-active", BAD], good);
  assert.deepEqual([inactive.stdout, inactive.code], ["inactive\n", 3]);
  assert.equal(systemctl(["is-active", AUTO_UPDATE_TIMER], good).code, 0);
});

Deno.test("an existing unit named by unit-fails fails, and recovers on the next good boot", () => {
  const units = {
    ...initialUnits(true),
    "kubelet.service": { ...initialUnits(true)[AUTO_UPDATE_TIMER] },
  };
  const bad = rebootUnits(units, false, { failedUnit: "kubelet.service" });
  assert.equal(systemctl(["is-active", "kubelet.service"], bad).stdout, "failed\n");
  const good = rebootUnits(bad, true);
  assert.deepEqual(
    [systemctl(["is-active", "kubelet.service"], good).stdout, good["kubelet.service"].failed],
    ["active\n", undefined],
  );
  const reset = systemctl(["reset-failed"], bad);
  assert.equal(systemctl(["is-system-running"], reset.units).stdout, "running\n");
});

Deno.test("while the boot is starting a failing unit is activating, not yet failed", () => {
  const units = rebootUnits(initialUnits(true), false, { failedUnit: BAD });
  const active = systemctl(["is-active", BAD], units, { starting: true });
  assert.deepEqual([active.stdout, active.code], ["activating\n", 3]);
  assert.equal(
    systemctl(["list-units", "--failed", "--plain", "--no-legend"], units, { starting: true })
      .stdout,
    "",
  );
});
