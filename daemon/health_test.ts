import assert from "node:assert/strict";
import {
  assessBoot,
  assessSystem,
  assessUnits,
  checkHostHealth,
  healthCheckError,
  MAX_FAILED_UNITS,
} from "./health.ts";
import { FakeBootcHost } from "./testing.ts";

const AT = new Date("2026-05-01T10:00:00Z");

/** state/reason of a check. */
const summary = (c: { state: string; reason: string }) => `${c.state}/${c.reason}`;

Deno.test("assessSystem: every answer of is-system-running", () => {
  const cases: [string, string][] = [
    ["running", "Healthy/SystemRunning"],
    ["initializing", "Starting/Starting"],
    ["starting", "Starting/Starting"],
    ["degraded", "Unhealthy/UnitFailed"],
    ["maintenance", "Unhealthy/UnitFailed"],
    ["stopping", "Unhealthy/UnitFailed"],
    ["something-new", "Unhealthy/UnitFailed"],
    ["offline", "Unknown/CheckError"],
    ["unknown", "Unknown/CheckError"],
  ];
  for (const [state, expected] of cases) {
    const check = assessSystem(state, { units: [] }, AT);
    assert.equal(summary(check), expected, state);
    if (state !== "degraded") {
      assert.match(check.message, new RegExp(`is-system-running: ${state}`), state);
    }
    assert.equal(check.at, AT);
  }
  assert.equal(assessSystem("stopping", undefined, AT).stopping, true);
  assert.equal(assessSystem("maintenance", undefined, AT).stopping, undefined);
  assert.match(assessSystem("maintenance", undefined, AT).message, /maintenance mode/);
});

Deno.test("assessSystem: degraded names the failed units, sorted and bounded", () => {
  const check = assessSystem("degraded", { units: ["b.service", "a.service", "b.service"] }, AT);
  assert.deepEqual(check.failedUnits, ["a.service", "b.service"]);
  assert.equal(check.message, "the system is degraded: failed units: a.service, b.service");
  const many = Array.from({ length: 100 }, (_, i) => `u${String(i).padStart(3, "0")}.service`);
  assert.equal(assessSystem("degraded", { units: many }, AT).failedUnits.length, MAX_FAILED_UNITS);
  const unlisted = assessSystem("degraded", { error: "timed out" }, AT);
  assert.equal(summary(unlisted), "Unhealthy/UnitFailed");
  assert.deepEqual(unlisted.failedUnits, []);
  assert.match(unlisted.message, /could not be listed: timed out/);
});

Deno.test("assessUnits: active, on the way, failed", () => {
  const units = ["kubelet.service", "crio.service"];
  assert.equal(summary(assessUnits(units, ["active", "active"], AT)), "Healthy/UnitsActive");
  for (const state of ["activating", "reloading", "inactive", "deactivating"]) {
    const check = assessUnits(units, ["active", state], AT);
    assert.equal(summary(check), "Starting/Starting", state);
    assert.equal(check.message, `waiting for units: crio.service (${state})`);
  }
  const failed = assessUnits(units, ["failed", "activating"], AT);
  assert.equal(summary(failed), "Unhealthy/UnitFailed");
  assert.deepEqual(failed.failedUnits, ["kubelet.service"]);
  assert.equal(
    failed.message,
    "failed units: kubelet.service (failed); not active yet: crio.service (activating)",
  );
  // An answer systemd may add later is not taken for healthy.
  assert.equal(summary(assessUnits(["x.service"], ["weird"], AT)), "Unhealthy/UnitFailed");
});

Deno.test("checkHostHealth: runs the right queries and never throws", async () => {
  const host = new FakeBootcHost(null);
  assert.equal(summary(await checkHostHealth(host, undefined, () => AT)), "Healthy/SystemRunning");
  assert.equal(host.healthQueries, 1, "running: no unit listing");
  host.systemStateText = "degraded";
  host.failed = ["bad.service"];
  const degraded = await checkHostHealth(host, { units: [] }, () => AT);
  assert.deepEqual(degraded.failedUnits, ["bad.service"]);
  assert.equal(host.healthQueries, 3);
  // healthUnits replace is-system-running: a degraded system with the listed units active is fine.
  host.unitActive = { "kubelet.service": "active" };
  assert.equal(
    summary(await checkHostHealth(host, { units: ["kubelet.service"] }, () => AT)),
    "Healthy/UnitsActive",
  );
  assert.equal(
    summary(
      await checkHostHealth(
        host,
        { units: ["kubelet.service", "missing.service"] },
        () => AT,
      ),
    ),
    "Starting/Starting",
  );
  host.systemctlError = "cannot run nsenter";
  const error = await checkHostHealth(host, undefined, () => AT);
  assert.equal(summary(error), "Unknown/CheckError");
  assert.equal(error.message, "cannot check the host's health: systemctl: cannot run nsenter");
  assert.deepEqual(error, healthCheckError("systemctl: cannot run nsenter", AT));
});

Deno.test("assessBoot: boot-complete.target and systemd-bless-boot, in systemd's terms", () => {
  const boot = (systemState: string, target: string, bless: string, failedUnits?: string[]) =>
    assessBoot({ systemState, target, bless, failedUnits }, AT);
  assert.equal(summary(boot("running", "active", "good")), "Healthy/SystemRunning");
  assert.equal(summary(boot("running", "active", "clean")), "Healthy/SystemRunning");
  assert.match(boot("running", "active", "absent").message, /no boot counting/);
  // The boot is still running its checks: nothing is decided yet.
  assert.equal(summary(boot("starting", "inactive", "indeterminate")), "Starting/Starting");
  assert.equal(summary(boot("running", "active", "indeterminate")), "Starting/Starting");
  // The boot ended short of the target: a failed check with its own reason, naming the units.
  const short = boot("degraded", "inactive", "indeterminate", ["greenboot-healthcheck.service"]);
  assert.equal(summary(short), "Unhealthy/BootIncomplete");
  assert.deepEqual(short.failedUnits, ["greenboot-healthcheck.service"]);
  assert.match(short.message, /did not reach boot-complete\.target.*greenboot-healthcheck/);
  assert.equal(summary(boot("running", "inactive", "clean")), "Unhealthy/BootIncomplete");
  // An entry marked bad fails whatever the target says.
  assert.equal(summary(boot("running", "active", "bad")), "Unhealthy/BootMarkedBad");
});

Deno.test("checkHostHealth with bootAssessment: a failed assessment wins over the host check", async () => {
  const host = new FakeBootcHost(null);
  const require = { units: ["kubelet.service"], bootAssessment: "Require" as const };
  host.unitActive = { "kubelet.service": "active", "boot-complete.target": "active" };
  const passed = await checkHostHealth(host, require, () => AT);
  assert.equal(summary(passed), "Healthy/UnitsActive");
  assert.match(passed.message, /boot-complete\.target reached/);
  // The listed units are fine, but the boot never reached the target: the assessment says so.
  host.unitActive = { "kubelet.service": "active", "boot-complete.target": "inactive" };
  host.systemStateText = "degraded";
  host.failed = ["bootc-sim-boot-check.service"];
  host.blessText = "indeterminate";
  const short = await checkHostHealth(host, require, () => AT);
  assert.equal(summary(short), "Unhealthy/BootIncomplete");
  assert.deepEqual(short.failedUnits, ["bootc-sim-boot-check.service"]);
  // Without listed units the system state serves both checks: asked once, not twice.
  const before = host.healthQueries;
  const unlisted = await checkHostHealth(host, { bootAssessment: "Require" }, () => AT);
  assert.equal(summary(unlisted), "Unhealthy/BootIncomplete");
  // is-system-running, its failed units, boot-complete.target, systemd-bless-boot.
  assert.equal(host.healthQueries - before, 4);
  // Without the requirement the same host passes on its units alone.
  assert.equal(
    summary(await checkHostHealth(host, { units: ["kubelet.service"] }, () => AT)),
    "Healthy/UnitsActive",
  );
  // A host check that fails on its own still names its own cause while the boot is fine.
  host.unitActive = { "kubelet.service": "failed", "boot-complete.target": "active" };
  host.blessText = "good";
  assert.equal(summary(await checkHostHealth(host, require, () => AT)), "Unhealthy/UnitFailed");
});
