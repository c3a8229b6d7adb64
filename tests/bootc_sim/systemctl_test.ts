import assert from "node:assert/strict";
import { AUTO_UPDATE_TIMER, initialUnits, rebootUnits, systemctl } from "./systemctl.ts";

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
