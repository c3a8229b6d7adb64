import assert from "node:assert/strict";
import {
  awaitApplyVerdict,
  isApply,
  processStartMs,
  readApplyRecords,
  recordApplyInvocation,
  writeApplyVerdict,
} from "./apply_gate.ts";
import { parseBootcArgs } from "./cli.ts";
import { simPaths } from "./store.ts";

Deno.test("isApply: only switch, upgrade and rollback with --apply ask for a reboot", () => {
  const cases: [string[], boolean][] = [
    [["switch", "--from-downloaded", "--apply"], true],
    [["switch", "--from-downloaded", "--apply", "--soft-reboot=auto"], true],
    [["upgrade", "--apply"], true],
    [["upgrade", "--from-downloaded", "--apply"], true],
    [["rollback", "--apply"], true],
    [["switch", "--download-only", "r/os:v2"], false],
    [["switch", "--from-downloaded"], false],
    [["upgrade", "--check"], false],
    [["rollback"], false],
    [["status", "--format=json"], false],
    [["--version"], false],
  ];
  for (const [argv, want] of cases) {
    const parsed = parseBootcArgs(argv, "1.16.10");
    assert.ok(parsed.ok, argv.join(" "));
    assert.equal(isApply(parsed.command), want, argv.join(" "));
  }
});

Deno.test("processStartMs: the start time from /proc/<pid>/stat and /proc/uptime", () => {
  // A command name with spaces and parentheses must not shift the fields.
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
  fields[19] = "12345"; // field 22: started 123.45 s after boot
  const stat = `4242 (deno (sim) x) ${fields.join(" ")}\n`;
  const now = 1_000_000;
  assert.equal(processStartMs(stat, "125.45 200.00\n", now), now - 2000);
  // Clock skew between the two reads never yields a start in the future.
  assert.equal(processStartMs(stat, "123.40 1.0\n", now), now);
  assert.equal(processStartMs("garbage", "1.0 1.0", now), undefined);
  assert.equal(processStartMs(stat, "", now), undefined);
});

Deno.test("processStartMs on this process: in the past, not long ago", async () => {
  const stat = await Deno.readTextFile("/proc/self/stat");
  const uptime = await Deno.readTextFile("/proc/uptime");
  const now = Date.now();
  const start = processStartMs(stat, uptime, now);
  assert.ok(start !== undefined);
  assert.ok(start <= now + 20, "not in the future");
  assert.ok(now - start < 3_600_000, "this test process started within the hour");
});

Deno.test("invocations and verdicts round-trip through the applies folder", async () => {
  const root = await Deno.makeTempDir({ prefix: "apply-gate-" });
  try {
    const paths = simPaths(root);
    assert.deepEqual(await readApplyRecords(paths), [], "no folder yet: nothing recorded");
    const before = Date.now();
    const a = await recordApplyInvocation(paths, ["switch", "--from-downloaded", "--apply"]);
    const b = await recordApplyInvocation(paths, ["rollback", "--apply"]);
    assert.notEqual(a.id, b.id);
    assert.equal(a.pid, Deno.pid);
    // The time is this process's start, so not after the call.
    assert.ok(Date.parse(a.invokedAt) <= before + 20);
    assert.deepEqual((await readApplyRecords(paths)).map((r) => r.command[0]).sort(), [
      "rollback",
      "switch",
    ]);
    assert.equal(
      await awaitApplyVerdict(paths, a.id, { timeoutMs: 50, intervalMs: 10 }),
      undefined,
      "no verdict: the wait times out",
    );
    const verdict = {
      allowed: false,
      reason: "NoRebootSlot",
      message: "no slot",
      judgedAt: new Date().toISOString(),
    };
    const waiting = awaitApplyVerdict(paths, a.id, { timeoutMs: 5_000, intervalMs: 10 });
    await writeApplyVerdict(paths, a.id, verdict);
    assert.deepEqual(await waiting, verdict);
    const records = await readApplyRecords(paths);
    assert.deepEqual(records.find((r) => r.id === a.id)?.verdict, verdict);
    assert.equal(records.find((r) => r.id === b.id)?.verdict, undefined);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
