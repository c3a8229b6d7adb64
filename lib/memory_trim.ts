/**
 * Gives a long-lived, mostly idle process's start-up pages back to the kernel (the node
 * daemon, which sits idle on every node for days).
 *
 * Most of an idle Deno program's resident set is not its data but the runtime's executable:
 * clean pages of `deno`/`denort` mapped from the file and touched once at start-up (snapshot
 * deserialization, module loading, the first TLS handshake) and then never again. The kernel
 * drops such pages only under memory pressure, so until then they count in the process's
 * resident memory. `madvise(MADV_PAGEOUT)` (Linux 5.4) asks the kernel to reclaim them now;
 * a page needed later simply faults back in from the file, alone: the mappings are advised
 * `MADV_RANDOM` first, as with read-ahead every refault of the idle loop would read and map
 * its neighbours too (measured on the daemon: idle 35.1 MiB after its trim with read-ahead,
 * 32.0 without, `tools/measure_daemon_idle.ts`). The kernel leaves pages that another
 * process maps too (another Deno on the same machine) alone, so the effect shows where the
 * executable is the process's own, as in the daemon's image.
 *
 * When to trim is decided by {@linkcode trimStep} from samples of the process's file-backed
 * resident memory: once start-up has settled, and again only after the process grew well
 * beyond the working set it settled at after the previous trim (a rollout touched code the
 * idle loop does not). A timer alone would reclaim, and read back from disk, the pages the
 * idle loop itself needs over and over. During start-up ({@linkcode startupTrimStep}) it
 * trims at once and then whenever the resident set reaches a ceiling, so that the start-up
 * pages do not pile up into the process's peak.
 *
 * @module
 */
import { type Logger, silentLogger } from "./log.ts";

const MiB = 1 << 20;
/** `MADV_PAGEOUT` from `<sys/mman.h>` (Linux 5.4+). */
const MADV_PAGEOUT = 21;
/** `MADV_RANDOM`: no read-ahead on this mapping's faults. */
const MADV_RANDOM = 1;

/** Resident memory of a process, in bytes (from `/proc/PID/status`). */
export interface ResidentMemory {
  /** `VmRSS`: everything resident. */
  rss: number;
  /** `RssAnon`: heap, stacks, the JavaScript heap; only swap could reclaim it. */
  anon: number;
  /** `RssFile`: pages mapped from files (mostly the runtime's executable); reclaimable. */
  file: number;
}

/** Parses `/proc/PID/status` (its values are in kB). */
export function parseProcStatus(text: string): ResidentMemory {
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    if (!match) throw new Error(`no ${name} in /proc status`);
    return Number(match[1]) * 1024;
  };
  return { rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile") };
}

/** This process's resident memory. */
export function readResidentMemory(): ResidentMemory {
  return parseProcStatus(Deno.readTextFileSync("/proc/self/status"));
}

/** One line of `/proc/PID/maps`. */
export interface Mapping {
  start: bigint;
  end: bigint;
  /** e.g. "r-xp". */
  perms: string;
  path: string;
}

/**
 * The mappings whose resident pages the kernel may simply drop: private, not writable and
 * backed by a file (code and read-only data of the executable and its libraries). Writable
 * private mappings hold copied-on-write pages (anonymous memory, only swap could take them)
 * and shared ones may be dirty (a database file): both are left alone.
 */
export function reclaimableMappings(maps: string): Mapping[] {
  const out: Mapping[] = [];
  for (const line of maps.split("\n")) {
    // start-end perms offset dev inode path
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ (\d+)\s+(\/.*)$/.exec(line);
    if (!m || m[4] === "0") continue; // no inode: anonymous, [heap], [stack], [vdso]
    const perms = m[3];
    if (perms[1] === "w" || perms[3] !== "p" || (perms[0] !== "r" && perms[2] !== "x")) continue;
    out.push({ start: BigInt(`0x${m[1]}`), end: BigInt(`0x${m[2]}`), perms, path: m[5] });
  }
  return out;
}

/** The libc functions the trim calls. */
const LIBC_SYMBOLS = {
  // The address as an integer: Deno.UnsafePointer.create would need unscoped --allow-ffi.
  madvise: { parameters: ["usize", "usize", "i32"], result: "i32" },
  malloc_trim: { parameters: ["usize"], result: "i32" },
  open: { parameters: ["buffer", "i32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
} as const;
type Libc = Deno.DynamicLibrary<typeof LIBC_SYMBOLS>["symbols"];

/** `O_RDONLY | O_CLOEXEC` (the same on x86_64 and aarch64). */
const O_RDONLY_CLOEXEC = 0o2000000;

/**
 * Where glibc's libc lives in the images (Debian's libc6 installs it under `/lib/<triplet>`),
 * by Deno's architecture name ("x86_64", "aarch64"). A least-privilege process may load only
 * this exact path (`--allow-ffi=PATH` matches the path as given, not a bare "libc.so.6").
 */
export function libcPath(arch: string = Deno.build.arch): string {
  return `/lib/${arch}-linux-gnu/libc.so.6`;
}

/** How the trim reads this process's memory figures and gives pages back. */
export interface MemoryAccess {
  /** This process's resident memory. */
  read: () => ResidentMemory;
  /** Reclaims (see {@linkcode pageOutFileMappings}); returns the bytes advised. */
  pageOut: () => number;
}

/**
 * Memory access through libc alone, for a process without `--allow-all` (Deno lets only that
 * read `/proc/self/*`): `/proc/self/status` and `/proc/self/maps` are read with libc's
 * `open`/`read`, so `--allow-ffi=<libc path>` is the one permission needed. The library stays
 * loaded for the process's life. Throws when it cannot be loaded (FFI denied, no such file).
 */
export function libcMemoryAccess(path: string = libcPath()): MemoryAccess {
  const libc = Deno.dlopen(path, LIBC_SYMBOLS).symbols;
  const readFile = (file: string) => readThroughLibc(libc, file);
  return {
    read: () => parseProcStatus(readFile("/proc/self/status")),
    pageOut: () => pageOutWith(libc, readFile("/proc/self/maps")),
  };
}

/** Reads a whole (procfs) file with libc's open/read/close. */
function readThroughLibc(libc: Libc, file: string): string {
  const fd = libc.open(new TextEncoder().encode(`${file}\0`), O_RDONLY_CLOEXEC);
  if (fd < 0) throw new Error(`open ${file} failed`);
  try {
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      const n = Number(libc.read(fd, buffer, BigInt(buffer.length)));
      if (n < 0) throw new Error(`read ${file} failed`);
      if (n === 0) break;
      chunks.push(buffer.slice(0, n));
    }
    const text = new Uint8Array(chunks.reduce((sum, c) => sum + c.length, 0));
    let at = 0;
    for (const chunk of chunks) {
      text.set(chunk, at);
      at += chunk.length;
    }
    return new TextDecoder().decode(text);
  } finally {
    libc.close(fd);
  }
}

/**
 * Asks the kernel to reclaim this process's clean file-backed pages (see the module doc), and
 * malloc to give back the free memory in its arenas (`malloc_trim`: a thread that once
 * allocated a burst at start-up keeps an arena of several MiB otherwise).
 * Returns how many bytes of mappings were advised. Needs FFI (`--allow-ffi`), glibc and
 * reading `/proc/self/maps` (`--allow-all`; see {@linkcode libcMemoryAccess} for a process
 * without); throws when no mapping could be advised (FFI denied, a kernel without
 * `MADV_PAGEOUT`).
 */
export function pageOutFileMappings(): number {
  const libc = Deno.dlopen("libc.so.6", LIBC_SYMBOLS);
  try {
    return pageOutWith(libc.symbols, Deno.readTextFileSync("/proc/self/maps"));
  } finally {
    libc.close();
  }
}

function pageOutWith(libc: Libc, maps: string): number {
  // Free memory inside malloc's arenas (one per thread that allocated) goes back too.
  libc.malloc_trim(0n);
  let advised = 0n;
  let failed = 0;
  for (const m of reclaimableMappings(maps)) {
    const ok = libc.madvise(m.start, m.end - m.start, MADV_PAGEOUT) === 0;
    if (ok) {
      advised += m.end - m.start;
      // A page the process needs again then comes back alone: with read-ahead each refault
      // reads (and maps) its neighbours too, and an idle loop's few pages refill the mapping.
      libc.madvise(m.start, m.end - m.start, MADV_RANDOM);
    } else failed++;
  }
  if (advised === 0n) throw new Error(`madvise(MADV_PAGEOUT) failed on all ${failed} mappings`);
  return Number(advised);
}

/** When {@linkcode trimStep} trims. */
export interface TrimPolicy {
  /** File-backed memory counts as settled when it moved less than this since the last sample. */
  settleBytes: number;
  /** Trim again when the settled file-backed memory exceeds the working set by this much. */
  growthBytes: number;
  /**
   * Tells new work from refaults. After a trim, a settled level `growthBytes` above the
   * working set the trim before found, or (none found yet) one settling later than this many
   * samples and `growthBytes` above what the trim left, came with new work (a burst of nodes,
   * not the idle loop's refaults) and is trimmed; any other settled level is the working set.
   * Default: unset, the first settled level is the working set (the daemon's policy).
   */
  workingSetSamples?: number;
}

/** The default policy: settled within 1 MiB, trim again after 4 MiB of growth. */
export const DEFAULT_TRIM_POLICY: TrimPolicy = { settleBytes: 1 * MiB, growthBytes: 4 * MiB };

/** What {@linkcode trimStep} remembers between samples. */
export interface TrimState {
  /** The previous sample of file-backed resident memory (after a trim: the level it left). */
  previous?: number;
  /** The level file-backed memory settled at after the last trim: the idle working set. */
  workingSet?: number;
  /** Trims so far. */
  trims: number;
  /** The level the last trim left. */
  trimmedTo?: number;
  /** Samples since the last trim. */
  sinceTrim?: number;
  /** The working set found after the trim before (kept across trims). */
  lastWorkingSet?: number;
}

/**
 * Decides, from a new sample of file-backed resident memory, whether to trim now. Never
 * while the level moves (start-up, a rollout); the first time it settles; after a trim, the
 * next settled level is taken as the working set, and only growth well beyond it trims again.
 */
export function trimStep(
  state: TrimState,
  file: number,
  policy: TrimPolicy = DEFAULT_TRIM_POLICY,
): { state: TrimState; trim: boolean } {
  const settled = state.previous !== undefined &&
    Math.abs(file - state.previous) < policy.settleBytes;
  const next = { ...state, previous: file, sinceTrim: (state.sinceTrim ?? 0) + 1 };
  if (!settled) return { state: next, trim: false };
  if (state.trims === 0) return { state: next, trim: true };
  if (state.workingSet === undefined) {
    if (policy.workingSetSamples !== undefined) {
      // New work rather than the idle loop's refaults: a level well above the working set
      // the previous trim found (nodes arriving at once), or, with none found yet, above
      // what the trim left when it settled late.
      const late = next.sinceTrim > policy.workingSetSamples;
      const baseline = state.lastWorkingSet ?? (late ? state.trimmedTo : undefined);
      if (baseline !== undefined && file > baseline + policy.growthBytes) {
        // That level stands for the working set next time, so a loop whose working set did
        // grow is trimmed once more, not again and again.
        return { state: { ...next, lastWorkingSet: file }, trim: true };
      }
    }
    // With workingSetSamples, a level that grew before the trim stays the working set even
    // when the trim's refaults settle lower: work that recurs (a periodic resync) would fault
    // it back in and trim again, again and again, re-reading the same pages from disk.
    const workingSet = policy.workingSetSamples !== undefined
      ? Math.max(file, state.lastWorkingSet ?? file)
      : file;
    return { state: { ...next, workingSet, lastWorkingSet: workingSet }, trim: false };
  }
  if (file > state.workingSet + policy.growthBytes) {
    return { state: { ...next, lastWorkingSet: file }, trim: true };
  }
  return { state: next, trim: false };
}

/** The state {@linkcode trimStep} continues from after a trim that left `file` bytes. */
export function afterTrim(state: TrimState, file: number): TrimState {
  return {
    ...state,
    previous: file,
    workingSet: undefined,
    trims: state.trims + 1,
    trimmedTo: file,
    sinceTrim: 0,
  };
}

/**
 * Start-up trimming: the runtime's start-up (module loading, the first TLS handshake, the
 * first LIST and WATCH, the first bootc and systemctl runs) faults in tens of MiB of the
 * executable within a second or two, most pages touched once. Left alone they all count in
 * the peak; trimmed when the process nears a ceiling, the peak stays near it. Below the
 * ceiling nothing is trimmed: pages the start-up is still running would just fault back.
 */
export interface StartupTrimPolicy {
  /** How long start-up lasts (from {@linkcode startMemoryTrimmer}). */
  durationMs: number;
  /** How often to sample during start-up. */
  intervalMs: number;
  /** Trim when the resident set reaches this... */
  ceilingBytes: number;
  /** ...and file-backed memory grew by this much since the last trim (a trim would help). */
  growthBytes: number;
  /** At most this many trims (a start-up whose working set stays above the ceiling). */
  maxTrims: number;
}

/**
 * The default: for 20 s, every 50 ms, trim at 32 MiB after 3 MiB of growth, at most 24 times
 * (a daemon's start-up takes 9–15; each costs a few ms).
 */
export const DEFAULT_STARTUP_TRIM_POLICY: StartupTrimPolicy = {
  durationMs: 20_000,
  intervalMs: 50,
  ceilingBytes: 32 * MiB,
  growthBytes: 3 * MiB,
  maxTrims: 24,
};

/**
 * Whether to trim during start-up: when the resident set reached the policy's ceiling and
 * its file-backed part grew by the policy's margin over `lastTrimmed`, the level the
 * previous trim left (none yet: any level).
 */
export function startupTrimStep(
  lastTrimmed: number | undefined,
  sample: ResidentMemory,
  policy: StartupTrimPolicy = DEFAULT_STARTUP_TRIM_POLICY,
): boolean {
  if (sample.rss < policy.ceilingBytes) return false;
  return lastTrimmed === undefined || sample.file >= lastTrimmed + policy.growthBytes;
}

/** Options of {@linkcode startMemoryTrimmer}. */
export interface MemoryTrimmerOptions {
  /** How often to sample (default 30 s). */
  intervalMs?: number;
  policy?: TrimPolicy;
  /**
   * Start-up trimming ({@linkcode StartupTrimPolicy}; default
   * {@linkcode DEFAULT_STARTUP_TRIM_POLICY}); `false`: none, only the settled trims.
   */
  startup?: StartupTrimPolicy | false;
  logger?: Logger;
  /** Reads the resident memory (default: this process's). */
  read?: () => ResidentMemory;
  /** Reclaims (default {@linkcode pageOutFileMappings}). */
  pageOut?: () => number;
}

/**
 * Samples this process's resident memory every `intervalMs` and trims when
 * {@linkcode trimStep} says so, logging each trim with the JavaScript heap figures. Stops
 * when `signal` aborts, or for good after the first failure (logged once as a warning). Its
 * timer never keeps the process alive.
 */
export function startMemoryTrimmer(options: MemoryTrimmerOptions, signal: AbortSignal): void {
  const log = options.logger ?? silentLogger;
  const read = options.read ?? readResidentMemory;
  const pageOut = options.pageOut ?? pageOutFileMappings;
  const startup = options.startup ?? DEFAULT_STARTUP_TRIM_POLICY;
  if (startup) {
    if (!trimDuringStartup({ policy: startup, read, pageOut, log }, signal)) return;
  }
  let state: TrimState = { trims: 0 };
  const timer = setInterval(() => {
    try {
      const before = read();
      const step = trimStep(state, before.file, options.policy);
      state = step.state;
      if (!step.trim) return;
      pageOut();
      const after = read();
      state = afterTrim(state, after.file);
      const heap = Deno.memoryUsage();
      const mib = (n: number) => Math.round(n / MiB * 10) / 10;
      log.info("resident memory trimmed", {
        rssBeforeMiB: mib(before.rss),
        rssAfterMiB: mib(after.rss),
        fileBeforeMiB: mib(before.file),
        fileAfterMiB: mib(after.file),
        anonMiB: mib(after.anon),
        heapUsedMiB: mib(heap.heapUsed),
        heapTotalMiB: mib(heap.heapTotal),
        externalMiB: mib(heap.external),
      });
    } catch (error) {
      log.warn("resident memory trimming disabled", { error });
      clearInterval(timer);
    }
  }, options.intervalMs ?? 30_000);
  Deno.unrefTimer(timer);
  signal.addEventListener("abort", () => clearInterval(timer), { once: true });
}

/**
 * Trims at once (when over the ceiling), then every `policy.intervalMs` for
 * `policy.durationMs` whenever {@linkcode startupTrimStep} says so; logs the count and the
 * highest sample once at the end. Returns false when the first trim failed (logged once as a
 * warning), so the caller tries no more.
 */
function trimDuringStartup(
  o: {
    policy: StartupTrimPolicy;
    read: () => ResidentMemory;
    pageOut: () => number;
    log: Logger;
  },
  signal: AbortSignal,
): boolean {
  let lastTrimmed: number | undefined;
  let trims = 0;
  let peak = 0;
  const step = (): boolean => {
    try {
      const before = o.read();
      peak = Math.max(peak, before.rss);
      if (!startupTrimStep(lastTrimmed, before, o.policy)) return true;
      o.pageOut();
      lastTrimmed = o.read().file;
      trims++;
      return true;
    } catch (error) {
      o.log.warn("resident memory trimming disabled", { error });
      return false;
    }
  };
  if (!step()) return false;
  // Monotonic: a clock stepped back at boot (NTP) must not stretch the start-up phase.
  const started = performance.now();
  const timer = setInterval(() => {
    if (performance.now() - started < o.policy.durationMs && trims < o.policy.maxTrims) {
      if (!step()) clearInterval(timer);
      return;
    }
    clearInterval(timer);
    const mib = (n: number) => Math.round(n / MiB * 10) / 10;
    o.log.info("start-up memory trims done", { trims, maxSampledRssMiB: mib(peak) });
  }, o.policy.intervalMs);
  Deno.unrefTimer(timer);
  signal.addEventListener("abort", () => clearInterval(timer), { once: true });
  return true;
}
