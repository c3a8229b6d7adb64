/**
 * The simulator run as a process against a real registry, checked against the facts of
 * bootc-host.md about staging, applying, rollback, locking and the `/ostree/bootc` change signal.
 */
import assert from "node:assert/strict";
import { startRegistry } from "../harness/registry.ts";
import { SimulatedHost } from "./host.ts";
import { canonicalJson, type Json } from "./status.ts";
import { parseStatus, runBootc, startBootc } from "./testing.ts";

type Obj = Record<string, unknown>;
const at = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v as Obj | null | undefined)?.[k], o);

async function statusJson(host: SimulatedHost): Promise<Obj> {
  const r = await runBootc(host, ["status", "--format=json", "--format-version=1"]);
  assert.equal(r.code, 0, r.stderr);
  return parseStatus(r.stdout);
}

/** Sets `/ostree/bootc`'s mtime far in the past, so any touch is visible. */
async function resetMtime(host: SimulatedHost): Promise<void> {
  await Deno.utime(host.paths.bootcDir, new Date(1_000_000), new Date(1_000_000));
}

async function touched(host: SimulatedHost): Promise<boolean> {
  const m = await host.bootcDirMtime();
  assert.ok(m, "/ostree/bootc exists");
  return m.getTime() > 1_000_000;
}

Deno.test("bootc simulator: staging, applying, rollback and locking against a real registry", async (t) => {
  const reg = await startRegistry();
  try {
    const v1 = await reg.pushImage({ repository: "os", tag: "v1", version: "1" });
    const v2 = await reg.pushImage({ repository: "os", tag: "v2", version: "2" });
    const v3 = await reg.pushImage({ repository: "os", tag: "v3", version: "3" });
    const img = (tag: string) => `${reg.host}/os:${tag}`;

    await t.step(
      "status prints one line of canonical JSON describing the booted image",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          const r = await runBootc(host, ["status", "--format=json", "--format-version=1"]);
          assert.equal(r.code, 0);
          assert.equal(r.stderr, "");
          const doc = parseStatus(r.stdout);
          assert.equal(r.stdout, canonicalJson(doc as Json), "keys sorted, no whitespace");
          assert.equal(doc.apiVersion, "org.containers.bootc/v1");
          assert.equal(doc.kind, "BootcHost");
          assert.equal(at(doc, "status", "booted", "image", "imageDigest"), v1.digest);
          assert.equal(at(doc, "status", "booted", "image", "version"), "1");
          assert.equal(at(doc, "status", "booted", "image", "image", "image"), img("v1"));
          assert.equal(at(doc, "status", "booted", "store"), "ostreeContainer");
          assert.equal(at(doc, "status", "staged"), null);
          assert.equal(at(doc, "status", "type"), "bootcHost");
          assert.equal(at(doc, "spec", "image", "image"), img("v1"));
          const human = await runBootc(host, ["status", "--format=humanreadable"]);
          assert.match(human.stdout, new RegExp(`^● Booted image: ${img("v1")}\n`));
          const yaml = await runBootc(host, ["status"]);
          assert.match(yaml.stdout, /^apiVersion: org\.containers\.bootc\/v1\n/, "YAML off a tty");
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "switch --download-only stages locked and touches /ostree/bootc; a reboot discards it",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          await resetMtime(host);
          const r = await runBootc(host, ["switch", "--download-only", img("v2")]);
          assert.equal(r.code, 0, r.stderr);
          assert.ok(await touched(host), "switch touches /ostree/bootc");
          const doc = await statusJson(host);
          assert.equal(at(doc, "status", "staged", "image", "imageDigest"), v2.digest);
          assert.equal(at(doc, "status", "staged", "downloadOnly"), true);
          assert.equal(
            at(doc, "spec", "image", "image"),
            img("v2"),
            "spec follows the staged entry",
          );
          const bootId = await host.bootId();
          await host.reboot();
          const after = await statusJson(host);
          assert.equal(at(after, "status", "booted", "image", "imageDigest"), v1.digest);
          assert.equal(at(after, "status", "staged"), null);
          assert.notEqual(await host.bootId(), bootId);
          assert.equal(
            (await Deno.readTextFile(`${host.root}/proc/sys/kernel/random/boot_id`)).trim(),
            await host.bootId(),
          );
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "switch stages unlocked; a reboot boots it and keeps the old one as rollback",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          const r = await runBootc(host, ["switch", img("v2")]);
          assert.equal(r.code, 0, r.stderr);
          assert.match(r.stdout, /Queued for next boot: /);
          assert.equal(at(await statusJson(host), "status", "staged", "downloadOnly"), false);
          assert.equal(await host.rebootRequested(), false, "no --apply, no reboot");
          await host.reboot();
          const doc = await statusJson(host);
          assert.equal(at(doc, "status", "booted", "image", "imageDigest"), v2.digest);
          assert.equal(at(doc, "status", "rollback", "image", "imageDigest"), v1.digest);
          assert.equal(at(doc, "status", "staged"), null);
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "switch to the specified image changes nothing, so it cannot lock a staged one",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          await resetMtime(host);
          const same = await runBootc(host, ["switch", img("v1")]);
          assert.deepEqual([same.code, same.stdout], [0, "Image specification is unchanged.\n"]);
          assert.equal(await touched(host), false);
          assert.equal((await runBootc(host, ["switch", img("v2")])).code, 0);
          const lock = await runBootc(host, ["switch", "--download-only", img("v2")]);
          assert.deepEqual([lock.code, lock.stdout], [0, "Image specification is unchanged.\n"]);
          assert.equal(at(await statusJson(host), "status", "staged", "downloadOnly"), false);
          // There is no "unstage": switching to the booted image stages a new copy of it.
          assert.equal((await runBootc(host, ["switch", "--download-only", img("v1")])).code, 0);
          const doc = await statusJson(host);
          assert.equal(at(doc, "status", "staged", "image", "imageDigest"), v1.digest);
          assert.equal(at(doc, "status", "staged", "ostree", "deploySerial"), 1);
          assert.equal(at(doc, "status", "staged", "downloadOnly"), true);
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "a nonexistent image fails with one error: line, exit 1, nothing changed",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          await resetMtime(host);
          const before = await host.readState();
          for (const ref of [img("nope"), `${reg.host}/nothere:v1`]) {
            const r = await runBootc(host, ["switch", "--download-only", ref]);
            assert.equal(r.code, 1);
            assert.equal(r.stdout, "");
            assert.match(r.stderr, /^error: Switching: Pulling: [^\n]*unknown[^\n]*\n$/);
          }
          assert.match(
            (await runBootc(host, ["switch", img("nope")])).stderr,
            /manifest unknown: manifest unknown\n$/,
          );
          assert.deepEqual((await host.readState()).state, before.state);
          assert.equal(await touched(host), false);
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "--from-downloaded --apply unlocks, asks for a reboot and never returns; status blocks meanwhile",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          assert.equal((await runBootc(host, ["switch", "--download-only", img("v2")])).code, 0);
          await resetMtime(host);
          const apply = startBootc(host, ["switch", "--from-downloaded", "--apply"]);
          const request = await host.waitForRebootRequest({ timeoutMs: 20_000 });
          assert.equal(request.soft, false);
          assert.ok(await apply.stillRunningAfter(300), "--apply waits to be killed");
          const { state } = await host.readState();
          assert.equal(state.staged?.downloadOnly, false, "unlocked");
          assert.equal(
            await touched(host),
            false,
            "--from-downloaded does not touch /ostree/bootc",
          );
          const status = startBootc(host, ["status", "--format=json"]);
          assert.ok(await status.stillRunningAfter(500), "status waits for the sysroot lock");
          const killed = await apply.kill();
          assert.match(killed.stdout, /Staged deployment will now be applied on reboot/);
          const st = await status.done;
          assert.equal(st.code, 0);
          assert.equal(at(parseStatus(st.stdout), "status", "staged", "downloadOnly"), false);
          const bootId = await host.bootId();
          await host.reboot();
          const doc = await statusJson(host);
          assert.equal(at(doc, "status", "booted", "image", "imageDigest"), v2.digest);
          assert.equal(at(doc, "status", "rollback", "image", "imageDigest"), v1.digest);
          assert.notEqual(await host.bootId(), bootId);
          assert.equal(await host.rebootRequested(), false);
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "every --apply is recorded when invoked; with the gate on it waits for the verdict",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1"), applyGate: true });
        try {
          assert.equal((await runBootc(host, ["switch", "--download-only", img("v2")])).code, 0);
          assert.deepEqual(await host.applyInvocations(), [], "staging is no apply");
          const before = Date.now();
          const apply = startBootc(host, ["switch", "--from-downloaded", "--apply"]);
          let pending = await host.pendingApplies();
          for (let i = 0; pending.length === 0 && i < 400; i++) {
            await new Promise((r) => setTimeout(r, 50));
            pending = await host.pendingApplies();
          }
          assert.equal(pending.length, 1, "the invocation is recorded");
          const [invocation] = pending;
          assert.deepEqual(invocation.command, ["switch", "--from-downloaded", "--apply"]);
          // The process start time: after we spawned it (clock ticks are 10 ms), before now.
          const invokedAt = Date.parse(invocation.invokedAt);
          assert.ok(invokedAt >= before - 20 && invokedAt <= Date.now(), invocation.invokedAt);
          // Gated: nothing is unlocked and no reboot is asked for until the harness answers.
          assert.ok(await apply.stillRunningAfter(300));
          assert.equal(await host.rebootRequested(), false);
          assert.equal((await host.readState()).state.staged?.downloadOnly, true, "still locked");
          await host.answerApply(invocation.id, {
            allowed: true,
            reason: "SlotAndDrain",
            message: "test",
          });
          const request = await host.waitForRebootRequest({ timeoutMs: 20_000 });
          assert.equal(request.invocation, invocation.id, "the request names its invocation");
          assert.equal((await host.readState()).state.staged?.downloadOnly, false, "unlocked");
          assert.deepEqual(await host.pendingApplies(), []);
          assert.equal((await host.applyInvocations())[0].verdict?.reason, "SlotAndDrain");
          await apply.kill();
          await host.reboot();
          // Without the gate an --apply is still recorded, and goes ahead on its own.
          await host.setApplyGate(false);
          const rollback = startBootc(host, ["rollback", "--apply"]);
          const second = await host.waitForRebootRequest({ timeoutMs: 20_000 });
          const records = await host.applyInvocations();
          assert.equal(records.length, 2);
          assert.deepEqual(records[1].command, ["rollback", "--apply"]);
          assert.equal(second.invocation, records[1].id);
          assert.equal(records[1].verdict, undefined);
          await rollback.kill();
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "reboot() refuses while an --apply holds the sysroot lock; killLockHolder kills it",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          await runBootc(host, ["switch", "--download-only", img("v2")]);
          const apply = startBootc(host, ["upgrade", "--from-downloaded", "--apply"]);
          await host.waitForRebootRequest({ timeoutMs: 20_000 });
          await assert.rejects(() => host.reboot(), /still holds the sysroot lock/);
          assert.ok(await host.killLockHolder(), "the --apply process held the lock");
          assert.equal((await apply.done).code, 137, "SIGKILLed");
          assert.equal(await host.killLockHolder(), null);
          await host.reboot();
          assert.equal(
            at(await statusJson(host), "status", "booted", "image", "imageDigest"),
            v2.digest,
          );
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step("status blocks while a switch holds the lock for its pull", async () => {
      const host = await SimulatedHost.create({ image: img("v1"), pullDelayMs: 1500 });
      try {
        const sw = startBootc(host, ["switch", "--download-only", img("v2")]);
        await new Promise((r) => setTimeout(r, 400));
        const st = startBootc(host, ["status", "--format=json"]);
        const [swDone, stDone] = await Promise.all([sw.done, st.done]);
        assert.equal(swDone.code, 0, swDone.stderr);
        assert.equal(stDone.code, 0, stDone.stderr);
        // It answered only after the switch: it sees the staged image.
        assert.equal(
          at(parseStatus(stDone.stdout), "status", "staged", "image", "imageDigest"),
          v2.digest,
        );
      } finally {
        await host.destroy();
      }
    });

    await t.step(
      "--soft-reboot=auto soft-reboots a capable deployment and keeps the boot ID",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1"), softRebootCapable: true });
        try {
          await runBootc(host, ["switch", "--download-only", img("v2")]);
          assert.equal(at(await statusJson(host), "status", "staged", "softRebootCapable"), true);
          const apply = startBootc(host, [
            "switch",
            "--from-downloaded",
            "--apply",
            "--soft-reboot=auto",
          ]);
          const request = await host.waitForRebootRequest({ timeoutMs: 20_000 });
          assert.equal(request.soft, true);
          await apply.kill();
          const bootId = await host.bootId();
          await host.reboot();
          assert.equal(await host.bootId(), bootId);
          assert.equal(
            at(await statusJson(host), "status", "booted", "image", "imageDigest"),
            v2.digest,
          );
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "--soft-reboot=required fails when the staged deployment is not capable",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          await runBootc(host, ["switch", "--download-only", img("v2")]);
          const r = await runBootc(host, [
            "switch",
            "--from-downloaded",
            "--apply",
            "--soft-reboot=required",
          ]);
          assert.equal(r.code, 1);
          assert.match(
            r.stderr,
            /^error: Switching: .*Soft reboot was required but staged deployment is not soft-reboot capable\n$/,
          );
          assert.equal(await host.rebootRequested(), false);
          const auto = startBootc(host, [
            "switch",
            "--from-downloaded",
            "--apply",
            "--soft-reboot=auto",
          ]);
          assert.equal((await host.waitForRebootRequest({ timeoutMs: 20_000 })).soft, false);
          await auto.kill();
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "upgrade re-pulls the spec tag: --check, --download-only locks, plain upgrade unlocks",
      async () => {
        await reg.tagExisting("os", "v1", "stable");
        const host = await SimulatedHost.create({ image: img("stable") });
        try {
          const none = await runBootc(host, ["upgrade"]);
          assert.deepEqual([none.code, none.stdout], [0, "No update available.\n"]);
          await reg.tagExisting("os", "v2", "stable");
          await resetMtime(host);
          const check = await runBootc(host, ["upgrade", "--check"]);
          assert.match(
            check.stdout,
            /^Update available for: .*\n {2}Version: 2\n {2}Digest: sha256:/,
          );
          assert.equal(
            at(await statusJson(host), "status", "booted", "cachedUpdate", "imageDigest"),
            v2.digest,
          );
          await resetMtime(host);
          assert.equal((await runBootc(host, ["upgrade", "--download-only"])).code, 0);
          assert.ok(await touched(host), "a changing upgrade touches /ostree/bootc");
          let doc = await statusJson(host);
          assert.equal(at(doc, "status", "staged", "image", "imageDigest"), v2.digest);
          assert.equal(at(doc, "status", "staged", "downloadOnly"), true);
          await resetMtime(host);
          const again = await runBootc(host, ["upgrade", "--download-only"]);
          assert.equal(again.stdout, "Staged update present, not changed\n");
          const unlock = await runBootc(host, ["upgrade"]);
          assert.equal(unlock.stdout, "Staged deployment will now be applied on reboot\n");
          assert.equal(await touched(host), false, "unlocking does not touch /ostree/bootc");
          doc = await statusJson(host);
          assert.equal(at(doc, "status", "staged", "downloadOnly"), false);
          const relock = await runBootc(host, ["upgrade", "--download-only"]);
          assert.equal(relock.stdout, "Image downloaded, but will not be applied on reboot\n");
          const apply = startBootc(host, ["upgrade", "--from-downloaded", "--apply"]);
          await host.waitForRebootRequest({ timeoutMs: 20_000 });
          await apply.kill();
          await host.reboot();
          assert.equal(
            at(await statusJson(host), "status", "booted", "image", "imageDigest"),
            v2.digest,
          );
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "bootc 1.12 lacks switch --download-only; upgrade --download-only locks the spec image",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1"), bootcVersion: "1.12.0" });
        try {
          assert.equal((await runBootc(host, ["--version"])).stdout, "bootc 1.12.0\n");
          const r = await runBootc(host, ["switch", "--download-only", img("v2")]);
          assert.equal(r.code, 2);
          assert.match(r.stderr, /^error: unexpected argument '--download-only' found\n/);
          assert.equal((await runBootc(host, ["switch", img("v2")])).code, 0);
          assert.equal((await runBootc(host, ["upgrade", "--download-only"])).code, 0);
          const doc = await statusJson(host);
          assert.equal(at(doc, "status", "staged", "image", "imageDigest"), v2.digest);
          assert.equal(at(doc, "status", "staged", "downloadOnly"), true);
          await host.setBootcVersion("1.10");
          const old = await runBootc(host, ["upgrade", "--download-only"]);
          assert.equal(old.code, 2);
          const legacy = await runBootc(host, ["status", "--json"]);
          assert.equal(legacy.code, 0);
          assert.equal(
            "downloadOnly" in (at(parseStatus(legacy.stdout), "status", "staged") as Obj),
            false,
          );
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "rollback swaps the boot order, discards the staged deployment, touches /ostree/bootc",
      async () => {
        const host = await SimulatedHost.create({ image: img("v1") });
        try {
          const none = await runBootc(host, ["rollback"]);
          assert.deepEqual([none.code, none.stderr], [
            1,
            "error: Rollback: No rollback available\n",
          ]);
          await runBootc(host, ["switch", img("v2")]);
          await host.reboot();
          await runBootc(host, ["switch", "--download-only", img("v3")]);
          await resetMtime(host);
          const r = await runBootc(host, ["rollback"]);
          assert.deepEqual([r.code, r.stdout], [0, "Next boot: rollback deployment\n"]);
          assert.ok(await touched(host));
          let doc = await statusJson(host);
          assert.equal(at(doc, "status", "staged"), null);
          assert.equal(at(doc, "status", "rollbackQueued"), true);
          assert.equal(at(doc, "spec", "bootOrder"), "rollback");
          assert.equal(
            (await runBootc(host, ["rollback"])).stdout,
            "Next boot: current deployment\n",
          );
          assert.equal(at(await statusJson(host), "status", "rollbackQueued"), false);
          const apply = startBootc(host, ["rollback", "--apply"]);
          await host.waitForRebootRequest({ timeoutMs: 20_000 });
          await apply.kill();
          await host.reboot();
          doc = await statusJson(host);
          assert.equal(at(doc, "status", "booted", "image", "imageDigest"), v1.digest);
          assert.equal(at(doc, "status", "rollback", "image", "imageDigest"), v2.digest);
          assert.equal(v3.digest.startsWith("sha256:"), true);
        } finally {
          await host.destroy();
        }
      },
    );
  } finally {
    await reg.stop();
  }
});
