import assert from "node:assert/strict";
import { BootcCommandError, BootcCommandStopped, HostBootcExecutor } from "./executor.ts";

const STATUS = JSON.stringify({
  apiVersion: "org.containers.bootc/v1",
  kind: "BootcHost",
  metadata: { name: "host" },
  spec: { image: { image: "q/os@sha256:" + "a".repeat(64), transport: "registry" } },
  status: {
    booted: {
      image: {
        image: { image: "q/os@sha256:" + "a".repeat(64), transport: "registry" },
        imageDigest: "sha256:" + "a".repeat(64),
      },
      incompatible: false,
      pinned: false,
    },
    staged: null,
    rollback: null,
  },
});

/** Aborts `stop` once `ready` holds (polled every 20 ms), then 100 ms later. */
function abortOnce(stop: AbortController, ready: () => Promise<boolean>): void {
  const poll = async () => {
    if (await ready()) setTimeout(() => stop.abort(), 100);
    else setTimeout(poll, 20);
  };
  poll();
}

/** Whether `path` exists. */
async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/**
 * A fake `bootc` that logs its argv (and whether the prefix ran) and behaves per $MODE.
 * Its status time limit is generous unless a test is about it: on a loaded machine a
 * shell script behind `env` can take longer than a real bootc status.
 */
async function fakeHost(mode: string, options: { statusMs?: number } = {}) {
  const dir = await Deno.makeTempDir();
  const log = `${dir}/log`;
  await Deno.writeTextFile(`${dir}/status.json`, STATUS);
  const script = `${dir}/bootc`;
  await Deno.writeTextFile(
    script,
    `#!/bin/bash
echo "prefix=\${PREFIXED-no} container=\${container-unset} $*" >> ${log}
case "${mode}:$*" in
  slow:*) sleep 30 ;;
  slowpull:switch*|slowpull:upgrade*) sleep 30 ;;
  quickpull:switch*) sleep 1 ;;
  slowlock:upgrade*) sleep 30 ;;
  trapterm:switch*) trap 'exit 0' TERM; touch ${dir}/trapped; sleep 30 & wait ;;
  nobus:systemctl*) echo "Failed to connect to bus: No such file or directory" >&2; exit 1 ;;
  *:--version) echo "bootc 1.16.10" ;;
  *:systemctl\\ is-enabled*) echo "masked-runtime"; exit 1 ;;
  *:systemctl\\ is-system-running) echo "degraded"; exit 1 ;;
  *:systemctl\\ list-units*) printf 'a.service loaded failed failed A\\n\\xe2\\x97\\x8f b.mount loaded failed failed B\\n' ;;
  *:systemctl\\ is-active*) printf 'active\\nfailed\\n'; exit 3 ;;
  badbless:bless\\ status) echo "Failed to read EFI variable" >&2; exit 1 ;;
  *:bless\\ status) echo "indeterminate" ;;
  old:status\\ --format=json*) echo "error: unexpected argument '--format'" >&2; exit 2 ;;
  v0:status\\ --format=json*) echo "error: Status: Unsupported format version: 1" >&2; exit 1 ;;
  v0:status\\ --json) cat ${dir}/v1alpha1.json ;;
  *:status*) cat ${dir}/status.json ;;
  fail:switch*) echo "Fetching" ; echo "error: Switching: Pulling: manifest unknown" >&2; exit 1 ;;
  *) echo ok ;;
esac
`,
  );
  await Deno.chmod(script, 0o755);
  const executor = new HostBootcExecutor({
    bootcCommand: [script],
    systemctlCommand: [script, "systemctl"],
    blessBootCommand: [script, "bless"],
    hostExecPrefix: ["env", "PREFIXED=yes"],
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", container: "oci" },
    timeouts: { statusMs: options.statusMs ?? 20_000 },
    killGraceMs: 200,
  });
  const lines = async () =>
    (await Deno.readTextFile(log).catch(() => "")).split("\n").filter((l) => l);
  return { dir, executor, lines, cleanup: () => Deno.remove(dir, { recursive: true }) };
}

Deno.test("executor runs bootc through the prefix without `container`", async () => {
  const h = await fakeHost("ok");
  try {
    assert.equal(await h.executor.version(), "bootc 1.16.10");
    const host = await h.executor.status();
    assert.equal(host.status.booted?.image?.imageDigest, "sha256:" + "a".repeat(64));
    assert.deepEqual(await h.lines(), [
      "prefix=yes container=unset --version",
      "prefix=yes container=unset status --format=json --format-version=1",
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor falls back to --json on hosts that reject --format, and remembers", async () => {
  const h = await fakeHost("old");
  try {
    const host = await h.executor.status();
    assert.ok(host.status.booted);
    await h.executor.status();
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "status --format=json --format-version=1",
      "status --json",
      "status --json",
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor reads v1alpha1 from hosts that know only format version 0", async () => {
  const h = await fakeHost("v0");
  try {
    await Deno.copyFile(
      new URL("./testdata/v1alpha1_2024.json", import.meta.url),
      `${h.dir}/v1alpha1.json`,
    );
    const host = await h.executor.status();
    assert.equal(host.apiVersion, "org.containers.bootc/v1alpha1");
    assert.equal(host.status.booted?.image?.imageDigest, "sha256:" + "1".repeat(64));
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "status --format=json --format-version=1",
      "status --json",
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor does not retry other status failures, and names the unreadable field", async () => {
  const h = await fakeHost("ok");
  try {
    const doc = JSON.parse(STATUS);
    doc.status.booted.image.imageDigest = null;
    await Deno.writeTextFile(`${h.dir}/status.json`, JSON.stringify(doc));
    await assert.rejects(() => h.executor.status(), (e: unknown) => {
      assert.ok(e instanceof BootcCommandError);
      assert.equal(
        e.message,
        "bootc status: status.booted.image.imageDigest: expected a string, got null",
      );
      return true;
    });
    assert.equal((await h.lines()).length, 1, "one command: a parse error is not a usage error");
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor stages with the method the version allows", async () => {
  const h = await fakeHost("ok");
  try {
    await h.executor.stage("q/os@sha256:" + "b".repeat(64), "switch-download-only");
    await h.executor.stage("q/os@sha256:" + "c".repeat(64), "switch-then-upgrade-download-only");
    await h.executor.maskAutoUpdates();
    assert.equal(await h.executor.autoUpdatesMasked(), true);
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "switch --download-only q/os@sha256:" + "b".repeat(64),
      "switch q/os@sha256:" + "c".repeat(64),
      "upgrade --download-only",
      "systemctl mask --runtime --now bootc-fetch-apply-updates.timer",
      "systemctl is-enabled bootc-fetch-apply-updates.timer",
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor puts bootc's error: line in the error message", async () => {
  const h = await fakeHost("fail");
  try {
    await assert.rejects(
      () => h.executor.stage("q/os@sha256:" + "b".repeat(64), "switch-download-only"),
      (e: unknown) => {
        assert.ok(e instanceof BootcCommandError);
        assert.equal(
          e.message,
          "bootc switch --download-only: error: Switching: Pulling: manifest unknown",
        );
        assert.equal(e.result?.code, 1);
        return true;
      },
    );
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor times out a blocking status", async () => {
  const h = await fakeHost("slow", { statusMs: 300 });
  try {
    await assert.rejects(() => h.executor.status(), (e: unknown) => {
      assert.ok(e instanceof BootcCommandError);
      assert.equal(e.timedOut, true);
      assert.match(e.message, /bootc status: timed out/);
      return true;
    });
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor runs apply detached and reports how it ended", async () => {
  const h = await fakeHost("ok");
  try {
    const handle = h.executor.apply({ soft: true, method: "switch" });
    assert.equal(await handle.exited, undefined);
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "switch --from-downloaded --apply --soft-reboot=auto",
    ]);
  } finally {
    await h.cleanup();
  }
  const f = await fakeHost("fail");
  try {
    const err = await f.executor.apply({ soft: false, method: "switch" }).exited;
    assert.ok(err instanceof BootcCommandError);
    assert.match(err.message, /^bootc switch --from-downloaded --apply: error: Switching/);
  } finally {
    await f.cleanup();
  }
});

Deno.test("executor rolls back with --apply, detached, and undoes a queued rollback", async () => {
  const h = await fakeHost("ok");
  try {
    assert.equal(await h.executor.applyRollback({ soft: true }).exited, undefined);
    assert.equal(await h.executor.applyRollback({ soft: false }).exited, undefined);
    await h.executor.unqueueRollback();
    assert.deepEqual(await h.lines(), [
      "prefix=yes container=unset rollback --apply --soft-reboot=auto",
      "prefix=yes container=unset rollback --apply",
      "prefix=yes container=unset rollback",
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor reads systemd's health answers whatever the exit code", async () => {
  const h = await fakeHost("ok");
  try {
    assert.equal(await h.executor.systemState(), "degraded");
    assert.deepEqual(await h.executor.failedUnits(), ["a.service", "b.mount"]);
    assert.deepEqual(await h.executor.unitStates(["x.service", "y.service"]), [
      "active",
      "failed",
    ]);
    await assert.rejects(h.executor.unitStates(["only-one-answer-expected"]), /expected 1 answers/);
    assert.deepEqual(await h.lines(), [
      "prefix=yes container=unset systemctl is-system-running",
      "prefix=yes container=unset systemctl list-units --state=failed --plain --no-legend",
      "prefix=yes container=unset systemctl is-active -- x.service y.service",
      "prefix=yes container=unset systemctl is-active -- only-one-answer-expected",
    ]);
  } finally {
    await h.cleanup();
  }
  const f = await fakeHost("nobus");
  try {
    await assert.rejects(
      f.executor.systemState(),
      /^BootcCommandError: systemctl is-system-running: Failed to connect to bus/,
    );
    await assert.rejects(f.executor.failedUnits(), /list-units --state=failed: Failed to connect/);
  } finally {
    await f.cleanup();
  }
});

Deno.test("executor reads systemd-bless-boot's verdict, absent when the host has none", async () => {
  const h = await fakeHost("ok");
  try {
    assert.equal(await h.executor.blessStatus(), "indeterminate");
    assert.deepEqual(await h.lines(), ["prefix=yes container=unset bless status"]);
    const none = new HostBootcExecutor({
      blessBootCommand: [`${h.dir}/no-such-bless-boot`],
      hostExecPrefix: ["env"],
    });
    assert.equal(await none.blessStatus(), "absent");
  } finally {
    await h.cleanup();
  }
  const f = await fakeHost("badbless");
  try {
    await assert.rejects(f.executor.blessStatus(), /systemd-bless-boot status: Failed to read EFI/);
  } finally {
    await f.cleanup();
  }
});

Deno.test("executor stops a pull on request and waits for it to end", async () => {
  const h = await fakeHost("slow");
  try {
    const stop = new AbortController();
    const started = Date.now();
    // Stopped once it runs: on a loaded machine 300 ms may pass before it starts.
    abortOnce(stop, async () => (await h.lines()).some((l) => l.includes(" switch ")));
    await assert.rejects(
      () =>
        h.executor.stage("q/os@sha256:" + "b".repeat(64), "switch-download-only", {
          signal: stop.signal,
        }),
      (e: unknown) => {
        assert.ok(e instanceof BootcCommandStopped, String(e));
        assert.equal(e.message, "bootc switch --download-only: stopped");
        return true;
      },
    );
    assert.ok(Date.now() - started < 10_000, "the 30 s pull did not run to its end");
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "switch --download-only q/os@sha256:" + "b".repeat(64),
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor stops the transient unit of a pull it stopped", async () => {
  const h = await fakeHost("slowpull");
  try {
    const executor = new HostBootcExecutor({
      bootcCommand: [`${h.dir}/bootc`],
      systemctlCommand: [`${h.dir}/bootc`, "systemctl"],
      // systemd-run stand-in: drop its options up to `--`, run the rest.
      systemdRunCommand: [
        "bash",
        "-c",
        'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"',
        "-",
      ],
      hostExecPrefix: [],
      transientUnits: true,
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
      killGraceMs: 200,
    });
    const stop = new AbortController();
    // Stopped once it runs: on a loaded machine 300 ms may pass before it starts.
    abortOnce(stop, async () => (await h.lines()).some((l) => l.includes(" switch ")));
    await assert.rejects(
      () =>
        executor.stage("q/os@sha256:" + "b".repeat(64), "switch-download-only", {
          signal: stop.signal,
        }),
      BootcCommandStopped,
    );
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "switch --download-only q/os@sha256:" + "b".repeat(64),
      "systemctl stop bootc-operator-stage.service",
    ]);
    // A lock past its (short) time limit: its unit is stopped too.
    await Deno.remove(`${h.dir}/log`);
    await assert.rejects(() => executor.lockStaged({ timeoutMs: 300 }), BootcCommandError);
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "upgrade --download-only",
      "systemctl stop bootc-operator-stage.service",
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor can wrap stage commands in a transient unit", () => {
  const executor = new HostBootcExecutor({
    hostExecPrefix: ["nsenter", "-m/proc/1/ns/mnt", "--"],
    transientUnits: true,
  });
  assert.deepEqual(executor.bootcArgv(["switch", "--download-only", "x"], "bootc-operator-stage"), [
    "nsenter",
    "-m/proc/1/ns/mnt",
    "--",
    "systemd-run",
    "--wait",
    "--collect",
    "--pipe",
    "--quiet",
    "--unit=bootc-operator-stage",
    // A stopped pull ends within the wait for its stop (review 16 L4).
    "--property=TimeoutStopSec=20",
    "--",
    "bootc",
    "switch",
    "--download-only",
    "x",
  ]);
  // Status never goes through a unit.
  assert.deepEqual(executor.bootcArgv(["status"]), [
    "nsenter",
    "-m/proc/1/ns/mnt",
    "--",
    "bootc",
    "status",
  ]);
});

Deno.test("executor never stops a two-step stage: its switch stages unlocked before it exits", async () => {
  const h = await fakeHost("quickpull");
  try {
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    // The switch takes 1 s; stopping it would leave an unlocked stage: it runs on, then locks.
    await h.executor.stage("q/os@sha256:" + "c".repeat(64), "switch-then-upgrade-download-only", {
      signal: stop.signal,
    });
    assert.deepEqual((await h.lines()).map((l) => l.split(" ").slice(2).join(" ")), [
      "switch q/os@sha256:" + "c".repeat(64),
      "upgrade --download-only",
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor: a pull that ended by itself as it was stopped succeeded", async () => {
  const h = await fakeHost("trapterm");
  try {
    const stop = new AbortController();
    // Stopped once its trap is set: a SIGTERM before that would kill it outright.
    abortOnce(stop, () => exists(`${h.dir}/trapped`));
    // It finishes its work on SIGTERM and exits 0, as a command whose exit raced the stop.
    await h.executor.stage("q/os@sha256:" + "b".repeat(64), "switch-download-only", {
      signal: stop.signal,
    });
  } finally {
    await h.cleanup();
  }
});

Deno.test("executor: the lock of an unwanted image gets its own, shorter time limit", async () => {
  const h = await fakeHost("slowlock");
  try {
    const started = Date.now();
    await assert.rejects(() => h.executor.lockStaged({ timeoutMs: 300 }), (e: unknown) => {
      assert.ok(e instanceof BootcCommandError && e.timedOut, String(e));
      assert.match(e.message, /bootc upgrade --download-only: timed out/);
      return true;
    });
    assert.ok(Date.now() - started < 10_000);
  } finally {
    await h.cleanup();
  }
});
