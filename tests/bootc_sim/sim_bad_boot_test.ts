/**
 * Bad images, run as processes against a real registry: each bad-boot mode's `bootc status` and
 * `systemctl` answers after the host boots the image, and `bootc rollback --apply` (through the
 * apply gate) booting the previous deployment again.
 */
import assert from "node:assert/strict";
import { startRegistry, type TestRegistry } from "../harness/registry.ts";
import {
  BAD_BOOT_LABEL,
  badImageLabels,
  DEFAULT_BAD_UNIT,
  DEFAULT_BOOT_CHECK_UNIT,
} from "./bad_boot.ts";
import { SimulatedHost } from "./host.ts";
import { parseStatus, runBootc, startBootc } from "./testing.ts";

type Obj = Record<string, unknown>;
const at = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v as Obj | null | undefined)?.[k], o);

async function statusJson(host: SimulatedHost): Promise<Obj> {
  const r = await runBootc(host, ["status", "--format=json", "--format-version=1"]);
  assert.equal(r.code, 0, r.stderr);
  return parseStatus(r.stdout);
}

/** The digests status reports for staged, booted and rollback. */
async function digests(host: SimulatedHost) {
  const doc = await statusJson(host);
  const of = (slot: string) => at(doc, "status", slot, "image", "imageDigest") ?? null;
  return { staged: of("staged"), booted: of("booted"), rollback: of("rollback") };
}

const systemctl = (host: SimulatedHost, ...args: string[]) =>
  runBootc(host, ["systemctl", ...args]);

/** Runs `bootc <args>` (an `--apply`), waits for its reboot request, kills it and boots. */
async function applyAndBoot(host: SimulatedHost, args: string[]) {
  const running = startBootc(host, args);
  try {
    await host.waitForRebootRequest({ timeoutMs: 60_000 });
    await host.killLockHolder();
  } finally {
    await running.kill();
  }
  return await host.reboot();
}

interface Images {
  good: string;
  goodDigest: string;
  unitFails: string;
  unitFailsDigest: string;
  bootIncomplete: string;
  kubeletFails: string;
  neverReady: string;
  neverReadyDigest: string;
  fallsBack: string;
  fallsBackDigest: string;
  loop: string;
  loopDigest: string;
  malformed: string;
  v2: string;
  v2Digest: string;
}

async function pushImages(reg: TestRegistry): Promise<Images> {
  const push = async (tag: string, version: string, labels?: Record<string, string>) => {
    const pushed = await reg.pushImage({ repository: "os", tag, version, labels });
    return [`${reg.host}/os:${tag}`, pushed.digest] as const;
  };
  const [good, goodDigest] = await push("v1", "1");
  const [unitFails, unitFailsDigest] = await push("unit-fails", "2", badImageLabels("unit-fails"));
  const [bootIncomplete] = await push("boot-incomplete", "2", badImageLabels("boot-incomplete"));
  const [kubeletFails] = await push(
    "kubelet-fails",
    "2",
    badImageLabels({ mode: "unit-fails", unit: "kubelet.service" }),
  );
  const [neverReady, neverReadyDigest] = await push(
    "never-ready",
    "3",
    badImageLabels("never-ready"),
  );
  const [fallsBack, fallsBackDigest] = await push("falls-back", "4", badImageLabels("falls-back"));
  const [loop, loopDigest] = await push("loop", "5", badImageLabels("reboot-loop:2"));
  const [malformed] = await push("malformed", "6", { [BAD_BOOT_LABEL]: "explodes" });
  const [v2, v2Digest] = await push("v2", "7");
  return {
    good,
    goodDigest,
    unitFails,
    unitFailsDigest,
    bootIncomplete,
    kubeletFails,
    neverReady,
    neverReadyDigest,
    fallsBack,
    fallsBackDigest,
    loop,
    loopDigest,
    malformed,
    v2,
    v2Digest,
  };
}

Deno.test("bootc simulator: bad images misbehave when booted, the same on every host", async (t) => {
  const reg = await startRegistry();
  try {
    const img = await pushImages(reg);

    await t.step(
      "boot-incomplete: boot-complete.target never reached, entry not blessed",
      async () => {
        const host = await SimulatedHost.create({ image: img.good });
        try {
          const blessed = await runBootc(host, ["bless-boot", "status"]);
          assert.deepEqual([blessed.stdout, blessed.code], ["good\n", 0]);
          const reached = await systemctl(host, "is-active", "boot-complete.target");
          assert.deepEqual([reached.stdout, reached.code], ["active\n", 0]);
          const record = await applyAndBoot(host, ["switch", "--apply", img.bootIncomplete]);
          assert.deepEqual(
            [record.outcome, record.failedUnit, record.bootCheckFailed, record.ready],
            ["up", DEFAULT_BOOT_CHECK_UNIT, true, true],
          );
          const target = await systemctl(host, "is-active", "boot-complete.target");
          assert.deepEqual([target.stdout, target.code], ["inactive\n", 3]);
          assert.equal((await runBootc(host, ["bless-boot", "status"])).stdout, "indeterminate\n");
          assert.equal((await systemctl(host, "is-system-running")).stdout, "degraded\n");
          // Booting a good deployment again reaches the target.
          await applyAndBoot(host, ["rollback", "--apply"]);
          assert.equal(
            (await systemctl(host, "is-active", "boot-complete.target")).stdout,
            "active\n",
          );
          assert.equal((await runBootc(host, ["bless-boot", "status"])).stdout, "good\n");
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step("unit-fails: degraded, the unit failed; rollback --apply clears it", async () => {
      const host = await SimulatedHost.create({ image: img.good });
      try {
        assert.deepEqual(
          [
            (await systemctl(host, "is-system-running")).stdout,
            (await systemctl(host, "is-system-running")).code,
          ],
          ["running\n", 0],
        );
        const record = await applyAndBoot(host, ["switch", "--apply", img.unitFails]);
        assert.deepEqual([record.outcome, record.failedUnit, record.ready], [
          "up",
          DEFAULT_BAD_UNIT,
          true,
        ]);
        assert.deepEqual(await digests(host), {
          staged: null,
          booted: img.unitFailsDigest,
          rollback: img.goodDigest,
        });
        const running = await systemctl(host, "is-system-running");
        assert.deepEqual([running.stdout, running.code], ["degraded\n", 1]);
        const active = await systemctl(host, "is-active", DEFAULT_BAD_UNIT);
        assert.deepEqual([active.stdout, active.code], ["failed\n", 3]);
        const isFailed = await systemctl(host, "is-failed", DEFAULT_BAD_UNIT);
        assert.deepEqual([isFailed.stdout, isFailed.code], ["failed\n", 0]);
        const list = await systemctl(
          host,
          "list-units",
          "--state=failed",
          "--plain",
          "--no-legend",
        );
        assert.equal(list.code, 0);
        assert.match(list.stdout, /^bootc-sim-bad\.service +loaded +failed +failed .*\n$/);
        assert.equal(
          (await systemctl(host, "--failed", "--plain", "--no-legend")).stdout,
          list.stdout,
        );

        // The daemon's rollback goes through the apply gate like any apply.
        await host.setApplyGate(true);
        const bootIdBefore = await host.bootId();
        const rollback = startBootc(host, ["rollback", "--apply"]);
        try {
          // (The ungated switch above left its invocation without a verdict: not this one.)
          const rollbacks = async () =>
            (await host.pendingApplies()).filter((a) => a.command[0] === "rollback");
          let pending = await rollbacks();
          for (let i = 0; pending.length === 0 && i < 600; i++) {
            await new Promise((r) => setTimeout(r, 50));
            pending = await rollbacks();
          }
          assert.equal(pending.length, 1);
          assert.deepEqual(pending[0].command, ["rollback", "--apply"]);
          assert.equal(await host.rebootRequested(), false, "nothing happens before the verdict");
          await host.answerApply(pending[0].id, { allowed: true, reason: "Test", message: "ok" });
          const request = await host.waitForRebootRequest({ timeoutMs: 60_000 });
          assert.equal(request.invocation, pending[0].id);
          assert.equal(request.soft, false);
          // (`bootc status` would wait: the hanging --apply holds the sysroot lock.)
          assert.equal(at(await host.status(), "spec", "bootOrder"), "rollback");
          await host.killLockHolder();
        } finally {
          await rollback.kill();
        }
        const back = await host.reboot();
        assert.deepEqual([back.outcome, back.failedUnit], ["up", null]);
        assert.notEqual(await host.bootId(), bootIdBefore);
        assert.deepEqual(await digests(host), {
          staged: null,
          booted: img.goodDigest,
          rollback: img.unitFailsDigest,
        });
        assert.equal((await systemctl(host, "is-system-running")).code, 0);
        const gone = await systemctl(host, "is-active", DEFAULT_BAD_UNIT);
        assert.deepEqual([gone.stdout, gone.code], ["inactive\n", 3]);
        assert.equal(
          (await systemctl(host, "list-units", "--failed", "--plain", "--no-legend")).stdout,
          "",
        );
      } finally {
        await host.destroy();
      }
    });

    await t.step("unit-fails:<unit> fails that unit", async () => {
      const host = await SimulatedHost.create({ image: img.good });
      try {
        await applyAndBoot(host, ["switch", "--apply", img.kubeletFails]);
        const active = await systemctl(host, "is-active", "kubelet.service");
        assert.deepEqual([active.stdout, active.code], ["failed\n", 3]);
        assert.equal((await systemctl(host, "is-active", DEFAULT_BAD_UNIT)).stdout, "inactive\n");
        assert.equal((await systemctl(host, "is-system-running")).stdout, "degraded\n");
      } finally {
        await host.destroy();
      }
    });

    await t.step("never-ready: up and running, never Ready until a good boot", async () => {
      const host = await SimulatedHost.create({ image: img.good, softRebootCapable: true });
      try {
        const record = await applyAndBoot(host, ["switch", "--apply", img.neverReady]);
        assert.deepEqual([record.outcome, record.ready], ["up", false]);
        assert.equal((await digests(host)).booted, img.neverReadyDigest);
        assert.equal((await systemctl(host, "is-system-running")).code, 0, "systemd is fine");
        assert.equal((await host.lastBoot())?.ready, false);
        assert.deepEqual(await host.bootedBadBoot(), { mode: "never-ready" });
        // An unexpected reboot does not help.
        assert.equal((await host.reboot({ soft: false })).ready, false);
        const back = await applyAndBoot(host, ["rollback", "--apply", "--soft-reboot=auto"]);
        assert.deepEqual([back.outcome, back.ready, back.soft], ["up", true, true]);
        assert.deepEqual(await digests(host), {
          staged: null,
          booted: img.goodDigest,
          rollback: img.neverReadyDigest,
        });
        assert.equal(await host.bootedBadBoot(), null);
      } finally {
        await host.destroy();
      }
    });

    await t.step(
      "falls-back: the host comes back on the previous deployment by itself",
      async () => {
        const host = await SimulatedHost.create({ image: img.good });
        try {
          const bootIdBefore = await host.bootId();
          const record = await applyAndBoot(host, ["switch", "--apply", img.fallsBack]);
          assert.equal(record.outcome, "fell-back");
          assert.equal(record.fellBackFrom, img.fallsBackDigest);
          assert.equal(record.ready, true);
          assert.deepEqual(await digests(host), {
            staged: null,
            booted: img.goodDigest,
            rollback: img.fallsBackDigest,
          });
          const doc = await statusJson(host);
          assert.equal(at(doc, "spec", "bootOrder"), "default");
          assert.equal(at(doc, "status", "rollbackQueued"), false);
          assert.equal(at(doc, "spec", "image", "image"), img.good);
          const bootId = await host.bootId();
          assert.notEqual(bootId, bootIdBefore);
          assert.equal(
            (await Deno.readTextFile(`${host.root}/proc/sys/kernel/random/boot_id`)).trim(),
            bootId,
          );
          assert.equal((await systemctl(host, "is-system-running")).stdout, "running\n");
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step("reboot-loop:2 crashes twice, then falls back", async () => {
      const host = await SimulatedHost.create({ image: img.good });
      try {
        const bootIds = new Set([await host.bootId()]);
        let record = await applyAndBoot(host, ["switch", "--apply", img.loop]);
        for (const crash of [1, 2]) {
          assert.deepEqual([record.outcome, record.crashes, record.ready], [
            "crashed",
            crash,
            false,
          ]);
          assert.equal((await digests(host)).booted, img.loopDigest, "still trying the bad one");
          bootIds.add(await host.bootId());
          record = await host.reboot();
        }
        bootIds.add(await host.bootId());
        assert.equal(bootIds.size, 4);
        assert.deepEqual([record.outcome, record.crashes, record.fellBackFrom], [
          "fell-back",
          2,
          img.loopDigest,
        ]);
        assert.deepEqual(await digests(host), {
          staged: null,
          booted: img.goodDigest,
          rollback: img.loopDigest,
        });
        assert.equal((await host.reboot()).outcome, "up", "it stays on the good deployment");
      } finally {
        await host.destroy();
      }
    });

    await t.step(
      "a malformed label fails the switch; a host override marks a good image",
      async () => {
        const host = await SimulatedHost.create({ image: img.good });
        try {
          const r = await runBootc(host, ["switch", img.malformed]);
          assert.equal(r.code, 1);
          assert.match(
            r.stderr,
            /^error: Switching: bootc simulator: invalid dev\.bootc\.sim\.bad-boot value "explodes"/,
          );
          assert.equal((await digests(host)).staged, null);

          await host.setBadBoot(img.v2Digest, "never-ready");
          assert.equal((await applyAndBoot(host, ["switch", "--apply", img.v2])).ready, false);
          await host.setBadBoot(img.v2Digest, null);
          assert.equal((await host.reboot()).ready, true);
          // "none" makes a labelled image good on this host only.
          await host.setBadBoot(img.fallsBack, "none");
          const record = await applyAndBoot(host, ["switch", "--apply", img.fallsBack]);
          assert.deepEqual([record.outcome, record.ready], ["up", true]);
          assert.equal((await digests(host)).booted, img.fallsBackDigest);
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step("a host created on a unit-fails image is degraded from the start", async () => {
      const host = await SimulatedHost.create({ image: img.unitFails });
      try {
        assert.equal((await systemctl(host, "is-system-running")).stdout, "degraded\n");
        assert.equal((await host.lastBoot())?.failedUnit, DEFAULT_BAD_UNIT);
      } finally {
        await host.destroy();
      }
    });

    await t.step("is-system-running says starting for startingMs after a boot", async () => {
      const host = await SimulatedHost.create({ image: img.good, startingMs: 60_000 });
      try {
        await applyAndBoot(host, ["switch", "--apply", img.unitFails]);
        const r = await systemctl(host, "is-system-running");
        assert.deepEqual([r.stdout, r.code], ["starting\n", 1]);
        assert.equal((await systemctl(host, "is-active", DEFAULT_BAD_UNIT)).stdout, "activating\n");
        await host.setStartingMs(0);
        assert.equal((await systemctl(host, "is-system-running")).stdout, "degraded\n");
      } finally {
        await host.destroy();
      }
    });
  } finally {
    await reg.stop();
  }
});
