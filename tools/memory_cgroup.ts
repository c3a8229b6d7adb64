/**
 * Memory as a cluster sees it, for the measurement tools: a process's anonymous and
 * file-backed resident memory (`/proc/PID/status`) and the working set of a memory cgroup the
 * process runs in, with a limit, as in a container.
 *
 * The kubelet's working set (what `kubectl top` shows, and what eviction and the memory limit
 * act on first) is the cgroup's usage minus its inactive file pages: cgroup v2's
 * `memory.current − inactive_file`, v1's `memory.usage_in_bytes − total_inactive_file`. It
 * counts the anonymous memory, the kernel's memory for the process, and the file pages in use
 * (the runtime's code the process keeps executing); file pages touched once are inactive and
 * left out. The cgroup is made under this process's own memory cgroup (so every limit above
 * still applies) and removed afterwards.
 *
 * @module
 */

/** Resident memory of a process, in bytes (from `/proc/PID/status`). */
export interface ProcMemory {
  /** `VmRSS`: everything resident. */
  rss: number;
  /** `RssAnon`: heap, stacks, the JavaScript heap; only swap could reclaim it. */
  anon: number;
  /** `RssFile`: pages mapped from files (mostly the runtime's executable); reclaimable. */
  file: number;
  /** `VmHWM`: the peak of `VmRSS` since the process's last exec. */
  hwm: number;
}

/** Parses `/proc/PID/status` (its values are in kB). */
export function parseProcStatus(text: string): ProcMemory {
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    if (!match) throw new Error(`no ${name} in /proc status`);
    return Number(match[1]) * 1024;
  };
  return {
    rss: field("VmRSS"),
    anon: field("RssAnon"),
    file: field("RssFile"),
    hwm: field("VmHWM"),
  };
}

/** {@linkcode ProcMemory} of `pid`. */
export function readProcMemory(pid: number): ProcMemory {
  return parseProcStatus(Deno.readTextFileSync(`/proc/${pid}/status`));
}

/** Parses a cgroup's `memory.stat` ("name value" lines) into a map. */
export function parseMemoryStat(text: string): Map<string, number> {
  const stat = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [name, value] = line.split(" ");
    if (name && value !== undefined) stat.set(name, Number(value));
  }
  return stat;
}

/** A memory cgroup's figures, in bytes. */
export interface CgroupMemory {
  /** `memory.current` (v2) or `memory.usage_in_bytes` (v1): everything charged. */
  usage: number;
  /** {@linkcode workingSet}. */
  workingSet: number;
  /** Anonymous memory charged (`anon`; v1 `total_rss`). */
  anon: number;
  /** Page cache charged (`file`; v1 `total_cache`). */
  file: number;
  /** Page cache not recently used (`inactive_file`; v1 `total_inactive_file`). */
  inactiveFile: number;
  /** The kernel's peak of `usage` (`memory.peak`, v1 `memory.max_usage_in_bytes`). */
  peakUsage?: number;
}

/** Which cgroup interface: v1's `memory` hierarchy or v2's unified one. */
export type CgroupVersion = 1 | 2;

/** The usage minus the inactive file pages, as the kubelet computes it (never below 0). */
export function workingSet(usage: number, inactiveFile: number): number {
  return Math.max(0, usage - inactiveFile);
}

/** {@linkcode CgroupMemory} from a cgroup's usage, `memory.stat` and peak files. */
export function cgroupMemory(
  version: CgroupVersion,
  usage: number,
  statText: string,
  peakUsage?: number,
): CgroupMemory {
  const stat = parseMemoryStat(statText);
  const get = (v2: string, v1: string) => stat.get(version === 2 ? v2 : v1) ?? 0;
  const inactiveFile = get("inactive_file", "total_inactive_file");
  return {
    usage,
    workingSet: workingSet(usage, inactiveFile),
    anon: get("anon", "total_rss"),
    file: get("file", "total_cache"),
    inactiveFile,
    ...(peakUsage === undefined ? {} : { peakUsage }),
  };
}

/**
 * This process's cgroup path for `version` from `/proc/self/cgroup`: the `0::` line (v2), or
 * the line whose controllers include `memory` (v1). Undefined when there is none.
 */
export function ownCgroupPath(procSelfCgroup: string, version: CgroupVersion): string | undefined {
  for (const line of procSelfCgroup.split("\n")) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const [, id, controllers, path] = m;
    if (version === 2 && id === "0" && controllers === "") return path;
    if (version === 1 && controllers.split(",").includes("memory")) return path;
  }
  return undefined;
}

/**
 * The argv that runs `argv` inside the cgroup whose `cgroup.procs` is `procsFile`: a shell
 * moves itself in and then execs the command, so everything the command charges from its
 * first instruction on is the cgroup's.
 */
export function inCgroupArgv(procsFile: string, argv: readonly string[]): string[] {
  return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procsFile, ...argv];
}

/** Where the memory cgroup interface is mounted, found by what the files there say. */
function findMemoryHierarchy(): { version: CgroupVersion; root: string } | string {
  for (const root of ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]) {
    try {
      const controllers = Deno.readTextFileSync(`${root}/cgroup.controllers`).split(/\s+/);
      if (controllers.includes("memory")) return { version: 2, root };
    } catch {
      // not a v2 mount
    }
  }
  try {
    Deno.statSync("/sys/fs/cgroup/memory/memory.stat");
    return { version: 1, root: "/sys/fs/cgroup/memory" };
  } catch {
    return "no memory cgroup controller is mounted under /sys/fs/cgroup (v1 or v2)";
  }
}

const readNumber = (path: string): number => Number(Deno.readTextFileSync(path).trim());

/** A memory cgroup made for one measured process, with a memory limit. */
export class MemoryCgroup {
  private constructor(
    readonly version: CgroupVersion,
    readonly dir: string,
    readonly limitBytes: number,
  ) {}

  /**
   * Makes `<own memory cgroup>/<name>` with `limitBytes` as its limit, or says in a sentence
   * why it cannot here (no controller mounted, not writable, v2 without the memory controller
   * delegated to children).
   */
  static create(name: string, limitBytes: number): MemoryCgroup | string {
    const found = findMemoryHierarchy();
    if (typeof found === "string") return found;
    const own = ownCgroupPath(Deno.readTextFileSync("/proc/self/cgroup"), found.version);
    if (own === undefined) return `this process is in no v${found.version} memory cgroup`;
    const dir = `${found.root}${own === "/" ? "" : own}/${name}`;
    try {
      Deno.mkdirSync(dir);
    } catch (error) {
      return `cannot create the cgroup ${dir}: ${(error as Error).message}`;
    }
    try {
      const limitFile = found.version === 2 ? "memory.max" : "memory.limit_in_bytes";
      Deno.writeTextFileSync(`${dir}/${limitFile}`, String(limitBytes));
    } catch (error) {
      Deno.removeSync(dir);
      return `cannot set a memory limit on ${dir} (v${found.version}): ${(error as Error).message}`;
    }
    return new MemoryCgroup(found.version, dir, limitBytes);
  }

  /** `argv` run inside this cgroup (see {@linkcode inCgroupArgv}). */
  wrap(argv: readonly string[]): string[] {
    return inCgroupArgv(`${this.dir}/cgroup.procs`, argv);
  }

  /**
   * `argv` run in the cgroup above this one: for a helper the measured process starts that
   * stands in for something else (the simulated bootc, a Deno program, for a native binary),
   * so that the helper's memory is not the measured process's.
   */
  unwrap(argv: readonly string[]): string[] {
    return inCgroupArgv(`${this.dir.slice(0, this.dir.lastIndexOf("/"))}/cgroup.procs`, argv);
  }

  /** The cgroup's figures now. */
  read(): CgroupMemory {
    const v2 = this.version === 2;
    const usage = readNumber(`${this.dir}/${v2 ? "memory.current" : "memory.usage_in_bytes"}`);
    let peak: number | undefined;
    try {
      peak = readNumber(`${this.dir}/${v2 ? "memory.peak" : "memory.max_usage_in_bytes"}`);
    } catch {
      // memory.peak is Linux 5.19+
    }
    return cgroupMemory(
      this.version,
      usage,
      Deno.readTextFileSync(`${this.dir}/memory.stat`),
      peak,
    );
  }

  /** Removes the cgroup once its processes are gone (retrying while the kernel lets them go). */
  async remove(): Promise<void> {
    for (let attempt = 0;; attempt++) {
      try {
        Deno.removeSync(this.dir);
        return;
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return;
        if (attempt >= 50) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/**
 * Drops a file's pages from the page cache (GNU dd's `nocache`, after a sync), so that the
 * measured process, not the one that wrote the file, is charged for the pages it reads.
 */
export async function dropFromPageCache(path: string): Promise<void> {
  const out = await new Deno.Command("dd", {
    args: [`of=${path}`, "oflag=nocache", "conv=notrunc,fdatasync", "count=0", "status=none"],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`dd nocache ${path}: ${new TextDecoder().decode(out.stderr)}`);
}

/** One reading of a measured process: its own figures and its cgroup's, if any. */
export interface MemorySample {
  proc: ProcMemory;
  cgroup?: CgroupMemory;
}

const MiB = 1 << 20;
const mib = (bytes: number) => (bytes / MiB).toFixed(1);

/**
 * One line for a sample: "anon 23.0, file 9.1 MiB (RSS 32.1, VmHWM 80.2); working set 30.2
 * MiB (usage 41.0, inactive file 10.8, cgroup peak 85.0)".
 */
export function formatSample(s: MemorySample): string {
  const p = s.proc;
  const own = `RssAnon ${mib(p.anon)}, RssFile ${mib(p.file)} MiB (VmRSS ${mib(p.rss)}, ` +
    `VmHWM ${mib(p.hwm)})`;
  if (!s.cgroup) return own;
  const c = s.cgroup;
  return `${own}; working set ${mib(c.workingSet)} MiB (usage ${mib(c.usage)}, inactive file ` +
    `${mib(c.inactiveFile)}${c.peakUsage === undefined ? "" : `, peak usage ${mib(c.peakUsage)}`})`;
}

/** {@linkcode MemorySample} of `pid` now (and of `cgroup`, when it runs in one). */
export function readSample(pid: number, cgroup?: MemoryCgroup): MemorySample {
  return { proc: readProcMemory(pid), ...(cgroup ? { cgroup: cgroup.read() } : {}) };
}

/** What a window of samples comes to. */
export interface WindowSummary {
  last: MemorySample;
  /** The median of the second half's samples: a level, not one lucky moment. */
  medianAnon: number;
  medianWorkingSet?: number;
  /** The highest working set sampled. */
  maxWorkingSet?: number;
}

/** Summarizes samples taken over a window (at least one). */
export function summarize(samples: readonly MemorySample[]): WindowSummary {
  const late = samples.slice(Math.floor(samples.length / 2));
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const sets = samples.flatMap((s) => s.cgroup ? [s.cgroup.workingSet] : []);
  const lateSets = late.flatMap((s) => s.cgroup ? [s.cgroup.workingSet] : []);
  return {
    last: samples[samples.length - 1],
    medianAnon: median(late.map((s) => s.proc.anon)),
    ...(sets.length
      ? { medianWorkingSet: median(lateSets), maxWorkingSet: Math.max(...sets) }
      : {}),
  };
}

/** Samples `pid` every `everyMs` for `ms`. */
export async function sampleWindow(
  pid: number,
  cgroup: MemoryCgroup | undefined,
  ms: number,
  everyMs = 500,
): Promise<MemorySample[]> {
  const samples: MemorySample[] = [];
  for (let waited = 0; waited < ms; waited += everyMs) {
    samples.push(readSample(pid, cgroup));
    await new Promise((r) => setTimeout(r, everyMs));
  }
  samples.push(readSample(pid, cgroup));
  return samples;
}

/**
 * Tracks the highest working set and anonymous memory of `pid` from now on, every `everyMs`
 * (the kernel keeps the peak of VmRSS and of the cgroup's usage, not of these).
 */
export function trackPeaks(pid: number, cgroup: MemoryCgroup | undefined, everyMs = 100) {
  const peaks = { anon: 0, workingSet: 0 };
  const timer = setInterval(() => {
    try {
      const s = readSample(pid, cgroup);
      peaks.anon = Math.max(peaks.anon, s.proc.anon);
      peaks.workingSet = Math.max(peaks.workingSet, s.cgroup?.workingSet ?? 0);
    } catch {
      // between exec()s, or gone
    }
  }, everyMs);
  return { peaks, stop: () => clearInterval(timer) };
}
