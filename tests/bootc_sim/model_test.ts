import assert from "node:assert/strict";
import {
  capabilitiesOf,
  type Deployment,
  type HostState,
  initialState,
  lockStaged,
  newDeployment,
  reboot,
  rollback,
  softRebootDecision,
  specImage,
  stage,
  unlockStaged,
  versionAtLeast,
} from "./model.ts";

function dep(name: string, extra: Partial<Deployment> = {}): Deployment {
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
    ...extra,
  };
}

function host(parts: Partial<HostState>): HostState {
  return { ...initialState(dep("a"), "boot-1"), ...parts };
}

Deno.test("a reboot boots an unlocked staged deployment; the old booted one becomes rollback", () => {
  const s = host({ booted: dep("a"), rollback: dep("old"), staged: dep("b") });
  const after = reboot(s, { soft: false, newBootId: "boot-2" });
  assert.equal(after.booted?.pullspec, "registry.test/os:b");
  assert.equal(after.rollback?.pullspec, "registry.test/os:a");
  assert.equal(after.staged, null);
  assert.equal(after.bootId, "boot-2");
  assert.deepEqual(after.other, [], "the old rollback is garbage collected");
});

Deno.test("a reboot discards a locked (download-only) staged deployment", () => {
  const s = host({
    booted: dep("a"),
    rollback: dep("old"),
    staged: dep("b", { downloadOnly: true }),
  });
  const after = reboot(s, { soft: false, newBootId: "boot-2" });
  assert.equal(after.booted?.pullspec, "registry.test/os:a");
  assert.equal(after.rollback?.pullspec, "registry.test/os:old");
  assert.equal(after.staged, null);
});

Deno.test("a soft reboot keeps the boot ID, a full reboot changes it", () => {
  const s = host({ staged: dep("b", { softRebootCapable: true }) });
  assert.equal(reboot(s, { soft: true, newBootId: "new" }).bootId, "boot-1");
  assert.equal(reboot(s, { soft: false, newBootId: "new" }).bootId, "new");
});

Deno.test("a queued rollback boots the rollback deployment and swaps the pair", () => {
  const queued = rollback(host({ booted: dep("a"), rollback: dep("old") }));
  assert.ok(queued.ok);
  const after = reboot(queued.state, { soft: false, newBootId: "x" });
  assert.equal(after.booted?.pullspec, "registry.test/os:old");
  assert.equal(after.rollback?.pullspec, "registry.test/os:a");
  assert.equal(after.rollbackQueued, false);
});

Deno.test("rollback swaps the boot order, discards the staged deployment and can be reverted", () => {
  const s = host({ booted: dep("a"), rollback: dep("old"), staged: dep("b") });
  const first = rollback(s);
  assert.ok(first.ok);
  assert.equal(first.reverting, false);
  assert.equal(first.state.rollbackQueued, true);
  assert.equal(first.state.staged, null);
  const second = rollback(first.state);
  assert.ok(second.ok);
  assert.equal(second.reverting, true);
  assert.equal(second.state.rollbackQueued, false);
  assert.deepEqual(rollback(host({ rollback: null })), {
    ok: false,
    error: "No rollback available",
  });
});

Deno.test("--from-downloaded unlocks whatever is staged without looking at the image", () => {
  const s = host({ staged: dep("unexpected", { downloadOnly: true }) });
  const r = unlockStaged(s);
  assert.ok(r.ok);
  assert.equal(r.changed, true);
  assert.equal(r.state.staged?.pullspec, "registry.test/os:unexpected");
  assert.equal(r.state.staged?.downloadOnly, false);
  const again = unlockStaged(r.state);
  assert.ok(again.ok);
  assert.equal(again.changed, false);
  assert.deepEqual(unlockStaged(host({ staged: null })), {
    ok: false,
    error: "No staged deployment found",
  });
});

Deno.test("lockStaged locks an unlocked staged deployment once", () => {
  const r = lockStaged(host({ staged: dep("b") }));
  assert.equal(r.changed, true);
  assert.equal(r.state.staged?.downloadOnly, true);
  assert.equal(lockStaged(r.state).changed, false);
});

Deno.test("the spec image comes from the staged deployment, else the booted one", () => {
  assert.equal(specImage(host({ staged: dep("b") }))?.image, "registry.test/os:b");
  assert.equal(specImage(host({ staged: null }))?.image, "registry.test/os:a");
  assert.equal(specImage(host({ booted: dep("a", { incompatible: true }) })), null);
});

Deno.test("staging replaces a staged deployment and clears a queued rollback", () => {
  const s = host({ staged: dep("b"), rollback: dep("old"), rollbackQueued: true });
  const after = stage(s, dep("c"));
  assert.equal(after.staged?.pullspec, "registry.test/os:c");
  assert.equal(after.rollbackQueued, false);
});

Deno.test("deploy serials count deployments of the same commit", () => {
  const s = host({ booted: dep("a") });
  const image = dep("a").image!;
  const d = newDeployment({
    state: s,
    pullspec: "x",
    image,
    checksum: "a",
    softRebootCapable: false,
    downloadOnly: true,
  });
  assert.equal(d.deploySerial, 1);
  assert.equal(d.downloadOnly, true);
  const other = newDeployment({
    state: s,
    pullspec: "x",
    image,
    checksum: "zzz",
    softRebootCapable: false,
    downloadOnly: false,
  });
  assert.equal(other.deploySerial, 0);
});

Deno.test("--soft-reboot: auto falls back to a full reboot, required fails when not capable", () => {
  assert.deepEqual(softRebootDecision("auto", dep("b"), "staged"), { ok: true, soft: false });
  assert.deepEqual(
    softRebootDecision("auto", dep("b", { softRebootCapable: true }), "staged"),
    { ok: true, soft: true },
  );
  assert.deepEqual(softRebootDecision("required", dep("b"), "staged"), {
    ok: false,
    error: "Soft reboot was required but staged deployment is not soft-reboot capable",
  });
  assert.deepEqual(softRebootDecision(null, dep("b"), "staged"), { ok: true, soft: false });
});

Deno.test("versions gate switch --download-only (1.16.10) and upgrade --download-only (1.12)", () => {
  assert.deepEqual(capabilitiesOf("1.16.10"), {
    switchDownloadOnly: true,
    upgradeDownloadOnly: true,
  });
  assert.deepEqual(capabilitiesOf("1.16.9"), {
    switchDownloadOnly: false,
    upgradeDownloadOnly: true,
  });
  assert.deepEqual(capabilitiesOf("1.12.0"), {
    switchDownloadOnly: false,
    upgradeDownloadOnly: true,
  });
  assert.deepEqual(capabilitiesOf("1.10"), {
    switchDownloadOnly: false,
    upgradeDownloadOnly: false,
  });
  assert.ok(versionAtLeast("2.0.0", "1.16.10"));
  assert.ok(!versionAtLeast("1.9.99", "1.12.0"));
});
