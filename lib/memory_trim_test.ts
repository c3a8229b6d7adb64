import assert from "node:assert/strict";
import {
  afterTrim,
  DEFAULT_TRIM_POLICY,
  libcMemoryAccess,
  libcPath,
  pageOutFileMappings,
  parseProcStatus,
  readResidentMemory,
  reclaimableMappings,
  type ResidentMemory,
  startMemoryTrimmer,
  startupTrimStep,
  type TrimPolicy,
  type TrimState,
  trimStep,
} from "./memory_trim.ts";
import { createLogger } from "./log.ts";

const MiB = 1 << 20;

Deno.test("parseProcStatus reads VmRSS, RssAnon and RssFile in bytes", () => {
  const text = [
    "Name:\tdeno",
    "VmPeak:\t 1234 kB",
    "VmRSS:\t   40960 kB",
    "RssAnon:\t   10240 kB",
    "RssFile:\t   30720 kB",
    "RssShmem:\t       0 kB",
  ].join("\n");
  assert.deepEqual(parseProcStatus(text), { rss: 40 * MiB, anon: 10 * MiB, file: 30 * MiB });
  assert.throws(() => parseProcStatus("Name:\tx\n"), /no VmRSS/);
});

Deno.test("reclaimableMappings keeps private read-only or executable file mappings only", () => {
  const maps = [
    "55d0c0000000-55d0c1000000 r--p 00000000 08:01 1234   /usr/bin/deno",
    "55d0c1000000-55d0c5000000 r-xp 01000000 08:01 1234   /usr/bin/deno",
    "55d0c5000000-55d0c5100000 rw-p 05000000 08:01 1234   /usr/bin/deno",
    "55d0c5100000-55d0c5200000 ---p 05100000 08:01 1234   /usr/bin/deno",
    "7f0000000000-7f0000100000 rw-s 00000000 08:01 99     /root/.cache/deno/cache.db-shm",
    "7f0000100000-7f0000200000 rw-p 00000000 00:00 0 ",
    "7f0000200000-7f0000300000 r-xp 00000000 08:01 77     /usr/lib/libc.so.6",
    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]",
    "7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0      [vdso]",
    "",
  ].join("\n");
  assert.deepEqual(
    reclaimableMappings(maps).map((m) => [m.perms, m.path, Number(m.end - m.start)]),
    [
      ["r--p", "/usr/bin/deno", 0x1000000],
      ["r-xp", "/usr/bin/deno", 0x4000000],
      ["r-xp", "/usr/lib/libc.so.6", 0x100000],
    ],
  );
});

/** Feeds samples (MiB) through trimStep; returns the indexes of the samples that trim. */
function trimsAt(samples: number[], policy: TrimPolicy = DEFAULT_TRIM_POLICY): number[] {
  let state: TrimState = { trims: 0 };
  const out: number[] = [];
  for (const [i, mib] of samples.entries()) {
    const step = trimStep(state, mib * MiB, policy);
    state = step.state;
    if (step.trim) {
      out.push(i);
      // As the trimmer does: the level the trim left (8 MiB), a working set to find again.
      state = afterTrim(state, 8 * MiB);
    }
  }
  return out;
}

Deno.test("trimStep: not while start-up still grows, once it has settled", () => {
  assert.deepEqual(trimsAt([20, 30, 37]), []);
  assert.deepEqual(trimsAt([20, 30, 37, 37.5]), [3]);
});

Deno.test("trimStep: the regrown idle working set is not trimmed again and again", () => {
  // Trim at 37.5; the idle loop faults 9 MiB back in, settles at 17 and stays there.
  assert.deepEqual(trimsAt([30, 37, 37.5, 12, 16, 17, 17.2, 17.1, 17.4, 17.3]), [2]);
});

Deno.test("trimStep: trims again once settled well above the working set (after a rollout)", () => {
  // Working set 17; a rollout grows to 30; trimmed again once it settles there.
  assert.deepEqual(trimsAt([37, 37.5, 16, 17, 17.2, 25, 30, 30.2]), [1, 7]);
  // Growth within the margin does not.
  assert.deepEqual(trimsAt([37, 37.5, 16, 17, 17.2, 20, 20.5, 20.4]), [1]);
});

Deno.test("trimStep: a level settling late after a trim is new work, trimmed (workingSetSamples)", () => {
  const policy = { ...DEFAULT_TRIM_POLICY, workingSetSamples: 3 };
  // Trim at 37.5 (leaves 8); nodes arrive before the idle loop settled: 13, 19, 24, 24.5.
  assert.deepEqual(trimsAt([37, 37.5, 13, 19, 24, 24.5], policy), [1, 5]);
  // Without the limit that level becomes the working set (the daemon's policy).
  assert.deepEqual(trimsAt([37, 37.5, 13, 19, 24, 24.5]), [1]);
  // Settled within 3 samples: the working set, as before; growth within the margin stays.
  assert.deepEqual(trimsAt([37, 37.5, 13, 13.5, 15, 16, 16.2], policy), [1]);
  // Settling late only a little above the trimmed level: taken as the working set.
  assert.deepEqual(trimsAt([37, 37.5, 9, 10, 11, 11.5, 11.6], policy), [1]);
});

Deno.test("trimStep: a burst right after a trim is trimmed; a grown working set soon is not", () => {
  const policy = { ...DEFAULT_TRIM_POLICY, workingSetSamples: 3 };
  // Working set 15 (trim at 1); it grows to 20 (trim at 5, leaves 8); nodes arrive at once
  // and settle at 27, 12 above: trimmed (index 8); refaults settle at 14: the working set.
  const burst = [37, 37.5, 15, 15.2, 20, 20.2, 27, 27.2, 14, 14.2, 14.3, 14.1];
  assert.deepEqual(trimsAt(burst, policy), [1, 5, 7]);
  // The idle loop's working set really grew from 15 to 21: trimmed once, then it stays.
  const grown = [37, 37.5, 15, 15.2, 21, 21.2, 21, 21.1, 21.3, 21.2, 21, 21.1];
  assert.deepEqual(trimsAt(grown, policy), [1, 5]);
  // Refaults that settle late at the known working set are not new work.
  const slow = [37, 37.5, 15, 15.2, 20, 20.2, 10, 12, 13.5, 15, 15.3, 15.2];
  assert.deepEqual(trimsAt(slow, policy), [1, 5]);
});

Deno.test("trimStep: work that recurs after each trim is trimmed once, not every time", () => {
  const policy = { ...DEFAULT_TRIM_POLICY, workingSetSamples: 3 };
  // Idle loop at 12.5; a periodic job faults in 5 more (trim at 6); the trim's refaults settle
  // at 12.4, the job comes back to 17.6: that grown level is the working set, no third trim.
  const recurring = [37, 37.5, 12, 12.5, 12.4, 17.5, 17.6, 8, 12.5, 12.4, 17.5, 17.6, 17.5, 17.6];
  assert.deepEqual(trimsAt(recurring, policy), [1, 6]);
  // The daemon's policy (no workingSetSamples) is unchanged: the first settled level after a
  // trim is its working set, and growth beyond it trims again.
  assert.deepEqual(trimsAt(recurring), [1, 6, 9]);
});

Deno.test("startMemoryTrimmer trims when settled, logs the figures, stops on abort", async () => {
  const samples: ResidentMemory[] = [
    { rss: 50 * MiB, anon: 15 * MiB, file: 35 * MiB },
    { rss: 50 * MiB, anon: 15 * MiB, file: 35 * MiB },
    { rss: 25 * MiB, anon: 15 * MiB, file: 10 * MiB }, // after the trim
  ];
  let reads = 0;
  let pageOuts = 0;
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: "debug", write: (l) => lines.push(JSON.parse(l)) });
  const controller = new AbortController();
  startMemoryTrimmer({
    intervalMs: 5,
    startup: false,
    logger,
    read: () => samples[Math.min(reads++, samples.length - 1)],
    pageOut: () => {
      pageOuts++;
      return 1;
    },
  }, controller.signal);
  const deadline = Date.now() + 10_000;
  while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  controller.abort();
  assert.equal(pageOuts, 1);
  assert.equal(lines[0].msg, "resident memory trimmed");
  assert.equal(lines[0].rssBeforeMiB, 50);
  assert.equal(lines[0].rssAfterMiB, 25);
  assert.equal(lines[0].fileAfterMiB, 10);
  assert.equal(typeof lines[0].heapUsedMiB, "number");
});

Deno.test("startMemoryTrimmer disables itself after a failure, with one warning", async () => {
  const lines: string[] = [];
  const logger = createLogger({ level: "debug", write: (l) => lines.push(JSON.parse(l).msg) });
  let pageOuts = 0;
  const controller = new AbortController();
  startMemoryTrimmer({
    intervalMs: 2,
    startup: false,
    logger,
    read: () => ({ rss: 40 * MiB, anon: 10 * MiB, file: 30 * MiB }),
    pageOut: () => {
      pageOuts++;
      throw new Error("FFI denied");
    },
  }, controller.signal);
  const deadline = Date.now() + 10_000;
  while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50));
  controller.abort();
  assert.deepEqual(lines, ["resident memory trimming disabled"]);
  assert.equal(pageOuts, 1);
});

Deno.test("startupTrimStep: at the ceiling, after each growth of the margin since the last trim", () => {
  const policy = {
    durationMs: 1000,
    intervalMs: 10,
    ceilingBytes: 32 * MiB,
    growthBytes: 3 * MiB,
    maxTrims: 10,
  };
  const at = (rss: number, file: number) => ({
    rss: rss * MiB,
    anon: (rss - file) * MiB,
    file: file * MiB,
  });
  assert.equal(startupTrimStep(undefined, at(31, 20), policy), false, "below the ceiling");
  assert.equal(startupTrimStep(undefined, at(40, 25), policy), true);
  assert.equal(startupTrimStep(10 * MiB, at(34, 12), policy), false, "too little to gain");
  assert.equal(startupTrimStep(10 * MiB, at(34, 13), policy), true);
});

Deno.test("startMemoryTrimmer trims at start-up at once and at the ceiling, then stops", async () => {
  let file = 30 * MiB;
  let pageOuts = 0;
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: "info", write: (l) => lines.push(JSON.parse(l)) });
  const controller = new AbortController();
  startMemoryTrimmer({
    intervalMs: 60_000,
    startup: {
      durationMs: 200,
      intervalMs: 5,
      ceilingBytes: 32 * MiB,
      growthBytes: 3 * MiB,
      maxTrims: 10,
    },
    logger,
    read: () => ({ rss: file + 10 * MiB, anon: 10 * MiB, file }),
    pageOut: () => {
      pageOuts++;
      file = 8 * MiB;
      return 1;
    },
  }, controller.signal);
  // The first trim is synchronous: before the caller's next line (its first watch).
  assert.equal(pageOuts, 1);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(pageOuts, 1, "below the ceiling, no trim");
  file = 25 * MiB;
  const deadline = Date.now() + 10_000;
  while (pageOuts < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.equal(pageOuts, 2);
  // After start-up it stops sampling (the settled trimmer's interval is a minute here).
  while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  file = 30 * MiB;
  await new Promise((r) => setTimeout(r, 30));
  controller.abort();
  assert.equal(pageOuts, 2);
  assert.equal(lines[0].msg, "start-up memory trims done");
  assert.equal(lines[0].trims, 2);
  assert.equal(lines[0].maxSampledRssMiB, 40);
});

Deno.test("startMemoryTrimmer stops trimming at start-up after maxTrims", async () => {
  let pageOuts = 0;
  let justTrimmed = false;
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: "info", write: (l) => lines.push(JSON.parse(l)) });
  const controller = new AbortController();
  startMemoryTrimmer({
    intervalMs: 60_000,
    startup: {
      durationMs: 10_000,
      intervalMs: 2,
      ceilingBytes: 32 * MiB,
      growthBytes: 3 * MiB,
      maxTrims: 3,
    },
    logger,
    // A working set that stays above the ceiling: every trim is undone at once.
    read: () => {
      const file = (justTrimmed ? 8 : 40) * MiB;
      justTrimmed = false;
      return { rss: file + 10 * MiB, anon: 10 * MiB, file };
    },
    pageOut: () => {
      justTrimmed = true;
      return ++pageOuts;
    },
  }, controller.signal);
  const deadline = Date.now() + 10_000;
  while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  controller.abort();
  assert.equal(pageOuts, 3);
  assert.equal(lines[0].msg, "start-up memory trims done");
});

Deno.test("pageOutFileMappings advises this process's executable and libraries", () => {
  const advised = pageOutFileMappings();
  // At least the Deno executable's code was advised (how much the kernel reclaims depends on
  // which pages other processes on this machine share).
  const exe = Deno.realPathSync(Deno.execPath());
  const exeBytes = reclaimableMappings(Deno.readTextFileSync("/proc/self/maps"))
    .filter((m) => m.path === exe)
    .reduce((n, m) => n + Number(m.end - m.start), 0);
  assert.ok(exeBytes > 0, "the executable is mapped");
  assert.ok(advised >= exeBytes, `advised ${advised} bytes, executable maps ${exeBytes}`);
  // Refaults come back one page at a time (MADV_RANDOM: "rr" in the mapping's VmFlags).
  const smaps = Deno.readTextFileSync("/proc/self/smaps").split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/);
  const exeCode = smaps.filter((m) => m.split("\n")[0].endsWith(exe) && / r-xp /.test(m));
  assert.ok(exeCode.length > 0, "the executable's code is mapped");
  for (const m of exeCode) {
    assert.match(/^VmFlags:(.*)$/m.exec(m)?.[1] ?? "", /\brr\b/, m.split("\n")[0]);
  }
  // What stays resident is not asserted: test files run in parallel in this one process, and
  // the others fault pages in meanwhile (tools/measure_*.ts measure the effect in processes of
  // their own).
});

Deno.test("libcPath: Debian's libc6 path per architecture", () => {
  assert.equal(libcPath("x86_64"), "/lib/x86_64-linux-gnu/libc.so.6");
  assert.equal(libcPath("aarch64"), "/lib/aarch64-linux-gnu/libc.so.6");
});

Deno.test({
  name: "libcMemoryAccess reads the same figures as /proc/self/status does",
  // The controller keeps libc loaded for its whole life; so does this test's access.
  sanitizeResources: false,
}, () => {
  const access = libcMemoryAccess();
  // Test files run in parallel in this one process: its resident set may move between two
  // reads, so the figures must agree in one of a few tries, not necessarily the first.
  const tries: string[] = [];
  for (let i = 0; i < 10; i++) {
    const viaLibc = access.read();
    const viaDeno = readResidentMemory();
    assert.ok(viaLibc.file > 0 && viaLibc.anon > 0);
    if (Math.abs(viaLibc.rss - viaDeno.rss) < 8 * MiB) return;
    tries.push(`${viaLibc.rss} vs ${viaDeno.rss}`);
  }
  assert.fail(`never within 8 MiB: ${tries.join(", ")}`);
});

Deno.test("libcMemoryAccess reads and trims with nothing but --allow-ffi=<libc path>", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/probe.ts`;
    await Deno.writeTextFile(
      script,
      `import { libcMemoryAccess } from ${JSON.stringify(import.meta.resolve("./memory_trim.ts"))};
const access = libcMemoryAccess();
const before = access.read();
console.log(JSON.stringify({ before, advised: access.pageOut(), after: access.read() }));
`,
    );
    const run = (flags: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "--no-config", "--no-lock", "--no-prompt", ...flags, script],
        stdout: "piped",
        stderr: "piped",
      }).output();
    const ok = await run([`--allow-ffi=${libcPath()}`]);
    const stderr = new TextDecoder().decode(ok.stderr);
    assert.ok(ok.success, stderr);
    const out = JSON.parse(new TextDecoder().decode(ok.stdout));
    assert.ok(out.before.rss > 10 * MiB && out.before.file > 0, JSON.stringify(out));
    assert.ok(out.advised > 0);
    // Without the permission it throws (the controller then runs on untrimmed).
    const denied = await run([]);
    assert.equal(denied.success, false);
    assert.match(new TextDecoder().decode(denied.stderr), /NotCapable|--allow-ffi/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
