import assert from "node:assert/strict";
import {
  cgroupMemory,
  formatSample,
  inCgroupArgv,
  type MemorySample,
  ownCgroupPath,
  parseMemoryStat,
  parseProcStatus,
  summarize,
  workingSet,
} from "./memory_cgroup.ts";

const MiB = 1 << 20;

Deno.test("parseProcStatus reads RSS, its anonymous and file parts and the peak in bytes", () => {
  const status = "Name:\tdeno\nVmHWM:\t   81920 kB\nVmRSS:\t   40960 kB\nRssAnon:\t   30720 kB\n" +
    "RssFile:\t   10240 kB\nRssShmem:\t       0 kB\n";
  assert.deepEqual(parseProcStatus(status), {
    rss: 40 * MiB,
    anon: 30 * MiB,
    file: 10 * MiB,
    hwm: 80 * MiB,
  });
  assert.throws(() => parseProcStatus("VmRSS:\t1 kB\n"), /no RssAnon/);
});

Deno.test("the working set leaves out inactive file pages, as the kubelet does", () => {
  assert.equal(workingSet(50 * MiB, 12 * MiB), 38 * MiB);
  assert.equal(workingSet(5 * MiB, 6 * MiB), 0);
  const v2 = "anon 31457280\nfile 20971520\nactive_file 8388608\ninactive_file 12582912\n";
  assert.deepEqual(cgroupMemory(2, 55 * MiB, v2, 90 * MiB), {
    usage: 55 * MiB,
    workingSet: 43 * MiB,
    anon: 30 * MiB,
    file: 20 * MiB,
    inactiveFile: 12 * MiB,
    peakUsage: 90 * MiB,
  });
  // v1: the hierarchical totals (the cgroup's own plus its children's), as cAdvisor reads them.
  const v1 = "cache 1\nrss 2\ninactive_file 3\ntotal_cache 20971520\ntotal_rss 31457280\n" +
    "total_inactive_file 4194304\n";
  const m = cgroupMemory(1, 52 * MiB, v1);
  assert.equal(m.workingSet, 48 * MiB);
  assert.equal(m.anon, 30 * MiB);
  assert.equal(m.file, 20 * MiB);
  assert.equal(m.peakUsage, undefined);
  assert.equal(parseMemoryStat("a 1\n\nb 2\n").get("b"), 2);
});

Deno.test("ownCgroupPath finds the v2 path or the v1 memory controller's", () => {
  const hybrid = "9:name=systemd:/\n4:memory:/jobs/abc\n1:cpu,cpuacct:/x\n0::/\n";
  assert.equal(ownCgroupPath(hybrid, 1), "/jobs/abc");
  assert.equal(ownCgroupPath(hybrid, 2), "/");
  assert.equal(ownCgroupPath("0::/user.slice/session-1.scope\n", 2), "/user.slice/session-1.scope");
  assert.equal(ownCgroupPath("0::/user.slice\n", 1), undefined);
  assert.equal(ownCgroupPath("5:cpu,memory:/a:b\n", 1), "/a:b");
});

Deno.test("inCgroupArgv: the command itself is the process written to cgroup.procs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // A plain file stands in for cgroup.procs: what the shell writes there is the pid of the
    // command it then execs.
    const procs = `${dir}/cgroup.procs`;
    const [cmd, ...args] = inCgroupArgv(procs, ["/bin/sh", "-c", 'echo $$; echo "$1"', "-", "a b"]);
    const out = await new Deno.Command(cmd, { args, stdout: "piped" }).output();
    assert.equal(out.code, 0);
    const [pid, arg] = new TextDecoder().decode(out.stdout).trim().split("\n");
    assert.equal((await Deno.readTextFile(procs)).trim(), pid);
    assert.equal(arg, "a b", "arguments pass through unsplit");
    // A cgroup that cannot be joined stops the command before it runs.
    const [bad, ...badArgs] = inCgroupArgv(`${dir}/no/such/dir`, ["/bin/echo", "ran"]);
    const failed = await new Deno.Command(bad, { args: badArgs, stdout: "piped", stderr: "null" })
      .output();
    assert.notEqual(failed.code, 0);
    assert.equal(new TextDecoder().decode(failed.stdout), "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("summarize: the late median and the highest working set of a window", () => {
  const sample = (anon: number, ws?: number): MemorySample => ({
    proc: { rss: anon + 10, anon, file: 10, hwm: 100 },
    ...(ws === undefined ? {} : {
      cgroup: { usage: ws + 5, workingSet: ws, anon, file: 15, inactiveFile: 5 },
    }),
  });
  const s = summarize([sample(40, 90), sample(20, 30), sample(22, 31), sample(21, 35)]);
  assert.equal(s.medianAnon, 22);
  assert.equal(s.medianWorkingSet, 35);
  assert.equal(s.maxWorkingSet, 90);
  assert.equal(s.last.proc.anon, 21);
  const bare = summarize([sample(10), sample(12)]);
  assert.equal(bare.medianWorkingSet, undefined);
  assert.equal(bare.medianAnon, 12);
  assert.match(formatSample(sample(10 * MiB)), /^RssAnon 10\.0, RssFile 0\.0 MiB/);
  assert.match(
    formatSample(sample(10 * MiB, 20 * MiB)),
    /; working set 20\.0 MiB \(usage 20\.0, inactive file 0\.0\)$/,
  );
});
