/**
 * Measures the daemon as shipped while idle, and where its memory goes.
 *
 * The daemon is built by `deno task build`'s own code (into a private folder;
 * BOOTC_BUILD_MODE, default bundle) and run the way the image runs it (the
 * executable: a compiled binary, or the launcher running the bundle with
 * `deno run --cached-only --no-config ...`) against a real API server, for a
 * host that already runs its desired image (its BootcNode owned by a pool, as
 * the controller creates it, so the daemon takes its real path). Once it
 * reports Idle, the script samples its memory, waits for the daemon's first
 * "resident memory trimmed" log line (lib/memory_trim.ts; at most 150 s), then for
 * `--seconds` (default 60) samples its memory and counts the API requests of
 * the resources the daemon uses, from the API server's own metrics
 * (`apiserver_request_total`, `apiserver_longrunning_requests`). It prints:
 *
 * - the bundle: size, the modules in it, and whether anything heavy is loaded
 *   at start-up (a static `node:` import, TypeBox, the YAML parser);
 * - the PEAK from start to Idle: the daemon's `VmHWM` (the kernel's high-water mark of its
 *   resident set since its exec) read once it reports Idle, and a start-up timeline of VmRSS
 *   sampled every 5 ms from spawn to Idle (when and of what the peak was made);
 * - a table: Deno's own floor (an empty program run the same way, before and
 *   after the same trim) against the daemon idle before and after its trim:
 *   VmRSS, RssAnon, RssFile, and the V8 heap;
 * - the daemon's resident memory by mapping (the runtime's executable, anonymous
 *   memory holding the V8 heap and thread stacks, malloc's heap, libraries);
 * - the API traffic while idle.
 *
 *   deno run --allow-all tools/measure_daemon_idle.ts [--seconds 60]
 *
 * In bundle mode the daemon runs on a private copy of the Deno executable: in
 * the image the executable is the daemon's alone, while here every other Deno
 * process on the machine (this script included) shares its pages, which would
 * both inflate the figures (the kernel maps cached neighbours on each fault)
 * and keep the trim from reclaiming them (the kernel leaves shared pages).
 * The daemon's DENO_DIR holds only the dependency-analysis cache the daemon's image carries
 * (tools/image/dep_cache.ts; MEASURE_DAEMON_DEP_CACHE=0 leaves it empty, a cold start).
 * Set DENO_V8_FLAGS to try V8 options (the launcher passes the environment on);
 * MEASURE_DAEMON_BUNDLE=FILE runs that bundle instead of the one built (an instrumented copy),
 * MEASURE_DAEMON_LOG=FILE keeps the daemon's log.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { API_VERSION, NODE, POOL } from "../lib/api/constants.ts";
import type { BootcNode, BootcNodePool } from "../lib/api/schema.ts";
import { Resources } from "../lib/kube/mod.ts";
import { parseProcStatus } from "../lib/memory_trim.ts";
import { SimulatedHost } from "../tests/bootc_sim/host.ts";
import { startControlPlane } from "../tests/harness/control_plane.ts";
import { startProcess } from "../tests/harness/process.ts";
import { startRegistry } from "../tests/harness/registry.ts";
import { waitFor } from "../tests/harness/wait.ts";
import { build, type BuildMode, launcherScript, TARGETS } from "./build.ts";
import { DEP_CACHE_FILE, depAnalysisCache } from "./image/dep_cache.ts";

const MiB = 1 << 20;
/** The resources the daemon reads or writes. */
const DAEMON_RESOURCES = ["bootcnodes", "nodes", "events", "secrets"];

/** Sums metric lines of `name` whose labels include every pair in `match`. */
export function sumMetric(text: string, name: string, match: Record<string, string>): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!Object.entries(match).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/** Resident bytes by mapping name (`/proc/PID/smaps`): file basename, "[anon]", "[heap]"... */
export function residentByMapping(smaps: string): Map<string, number> {
  const by = new Map<string, number>();
  let current = "[anon]";
  for (const line of smaps.split("\n")) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      current = header[1] ? header[1].split("/").pop()! : "[anon]";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) by.set(current, (by.get(current) ?? 0) + Number(rss[1]) * 1024);
  }
  return by;
}

/** What the bundle holds: source modules and npm packages (esbuild's `// path` markers). */
export function bundleModules(bundle: string): { own: string[]; npm: Map<string, number> } {
  const own: string[] = [];
  const npm = new Map<string, number>();
  let pkg: string | undefined;
  for (const line of bundle.split("\n")) {
    const marker = /^\/\/ (\S+\.[cm]?[jt]s)$/.exec(line);
    if (marker) {
      const m = /npm\/[^/]+\/((?:@[^/]+\/)?[^/]+)\/[^/]+\//.exec(marker[1]);
      pkg = m?.[1];
      if (!pkg) own.push(marker[1]);
      continue;
    }
    if (pkg) npm.set(pkg, (npm.get(pkg) ?? 0) + line.length + 1);
  }
  return { own, npm };
}

interface Sample {
  rss: number;
  anon: number;
  file: number;
  heap?: { heapUsed: number; heapTotal: number; external: number };
}

const readSample = (pid: number): Sample =>
  parseProcStatus(Deno.readTextFileSync(`/proc/${pid}/status`));

/** `VmHWM` (the peak resident set since the process's last exec) in bytes (`/proc/PID/status`). */
export function parsePeak(status: string): number {
  const match = /^VmHWM:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error("no VmHWM in /proc status");
  return Number(match[1]) * 1024;
}

const readPeak = (pid: number): number => parsePeak(Deno.readTextFileSync(`/proc/${pid}/status`));

/** A resident-memory sample taken `ms` after the daemon was spawned. */
interface TimedSample {
  ms: number;
  rss: number;
  anon: number;
  file: number;
}

/**
 * Samples `pid`'s resident memory every `everyMs` until stopped (the start-up timeline; the
 * VmHWM read at the end gives the exact peak, these show when it happened and of what).
 */
function startSampler(pid: number, started: number, everyMs = 5) {
  const samples: TimedSample[] = [];
  const timer = setInterval(() => {
    try {
      samples.push({ ms: performance.now() - started, ...readSample(pid) });
    } catch {
      // between exec()s, or gone
    }
  }, everyMs);
  return { samples, stop: () => clearInterval(timer) };
}

/** The samples at which VmRSS moved by `stepBytes` or more since the last one kept, and the max. */
export function timeline<T extends { rss: number }>(samples: T[], stepBytes: number): T[] {
  const kept: T[] = [];
  const max = samples.reduce(
    (m, s) => (s.rss > (m?.rss ?? -1) ? s : m),
    undefined as T | undefined,
  );
  for (const s of samples) {
    const last = kept.at(-1);
    if (!last || Math.abs(s.rss - last.rss) >= stepBytes || s === max) kept.push(s);
  }
  return kept;
}

/**
 * An empty program, for Deno's own floor: idles; on SIGUSR1 writes its V8 heap
 * figures to the file named by its argument, on SIGUSR2 first trims itself as
 * lib/memory_trim.ts does (kept inline so the floor loads nothing).
 */
const FLOOR_PROGRAM = `
const MADV_PAGEOUT = 21;
function trim() {
  const libc = Deno.dlopen("libc.so.6", {
    madvise: { parameters: ["pointer", "usize", "i32"], result: "i32" },
    malloc_trim: { parameters: ["usize"], result: "i32" },
  });
  libc.symbols.malloc_trim(0);
  for (const line of Deno.readTextFileSync("/proc/self/maps").split("\\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\\S{4}) \\S+ \\S+ (\\d+)\\s+(\\/.*)$/.exec(line);
    if (!m || m[4] === "0" || m[3][1] === "w" || m[3][3] !== "p" || (m[3][0] !== "r" && m[3][2] !== "x")) continue;
    const start = BigInt("0x" + m[1]);
    libc.symbols.madvise(Deno.UnsafePointer.create(start), BigInt("0x" + m[2]) - start, MADV_PAGEOUT);
  }
  libc.close();
}
const out = Deno.args[0];
const report = () => Deno.writeTextFileSync(out, JSON.stringify(Deno.memoryUsage()));
Deno.addSignalListener("SIGUSR1", report);
Deno.addSignalListener("SIGUSR2", () => { trim(); report(); });
setInterval(() => {}, 1 << 30);
`;

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { seconds: { type: "string" } } });
  const seconds = Number(values.seconds ?? 60);
  const logDir = await Deno.makeTempDir({ prefix: "bootc-daemon-idle-" });
  const mode = (Deno.env.get("BOOTC_BUILD_MODE") || "bundle") as BuildMode;
  const [built, cp, registry] = await Promise.all([
    build({ outDir: `${logDir}/dist`, only: ["daemon"], mode }),
    startControlPlane({ kwok: false, controllerManager: false, scheduler: false, quiet: true }),
    startRegistry(),
  ]);
  const target = TARGETS.find((t) => t.name === "daemon")!;
  const daemonExecutable = built.targets[0].executable;
  // Experiments: run another bundle (e.g. one instrumented by hand) the shipped way.
  const override = Deno.env.get("MEASURE_DAEMON_BUNDLE");
  if (override && built.mode === "bundle") await Deno.copyFile(override, built.targets[0].bundle);
  // As in the image (tools/image/spec.ts, depCacheDir): Deno's dependency-analysis cache
  // already answers for the bundle, so the daemon starts without parsing it.
  // MEASURE_DAEMON_DEP_CACHE=0: without (a cold DENO_DIR).
  const denoDir = `${logDir}/deno-dir`;
  await Deno.mkdir(denoDir);
  const depCache = built.mode === "bundle" && Deno.env.get("MEASURE_DAEMON_DEP_CACHE") !== "0";
  if (depCache) {
    const bundle = built.targets[0].bundle;
    await Deno.writeFile(
      `${denoDir}/${DEP_CACHE_FILE}`,
      await depAnalysisCache({ bundle, url: `file://${bundle}` }),
    );
  }
  // One copy each for the daemon and the floor: the kernel does not reclaim shared pages.
  const privateDeno = `${logDir}/deno`;
  if (built.mode === "bundle") await Deno.copyFile(Deno.execPath(), privateDeno);
  let host: SimulatedHost | undefined;
  // Stopped on the way out also after a failure: the daemon writes into its DENO_DIR, in logDir.
  const children: { stop(): Promise<unknown> }[] = [];
  try {
    // Deno's floor: an empty program run exactly like the daemon.
    const floorDir = `${logDir}/floor`;
    await Deno.mkdir(floorDir);
    await Deno.writeTextFile(`${floorDir}/floor.js`, FLOOR_PROGRAM);
    if (built.mode === "bundle") await Deno.copyFile(Deno.execPath(), `${floorDir}/deno`);
    let floorArgv: string[];
    if (built.mode === "bundle") {
      // The launcher's own flags, from the script the build wrote.
      const flags = /run (.*) "\$here/.exec(launcherScript(target))![1].split(" ");
      floorArgv = [
        `${floorDir}/deno`,
        "run",
        ...flags,
        `${floorDir}/floor.js`,
        `${floorDir}/heap.json`,
      ];
    } else {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "compile",
          "--quiet",
          "--no-config",
          "--no-lock",
          ...target.permissions,
          "-o",
          `${floorDir}/floor`,
          `${floorDir}/floor.js`,
        ],
      }).output();
      if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
      floorArgv = [`${floorDir}/floor`, `${floorDir}/heap.json`];
    }
    const floor = startProcess({
      name: "floor",
      command: floorArgv[0],
      args: floorArgv.slice(1),
      logPath: `${logDir}/floor.log`,
    });
    children.push(floor);
    const floorSample = async (request: "heap" | "trim"): Promise<Sample> => {
      await Deno.remove(`${floorDir}/heap.json`).catch(() => {});
      // Signals rather than polling: a floor that wakes up touches code an idle one does not.
      Deno.kill(floor.pid, request === "heap" ? "SIGUSR1" : "SIGUSR2");
      await waitFor(() => Deno.stat(`${floorDir}/heap.json`).then(() => true, () => false), {
        timeoutMs: 20_000,
        message: "the floor program answers",
      });
      await new Promise((r) => setTimeout(r, 2000));
      const heap = JSON.parse(await Deno.readTextFile(`${floorDir}/heap.json`));
      return { ...readSample(floor.pid), heap };
    };

    const image = await registry.pushImage({ repository: "bootc/os", tag: "v1", version: "1.0" });
    const pinned = `${registry.host}/bootc/os@${image.digest}`;
    host = await SimulatedHost.create({ image: pinned });
    for await (const f of Deno.readDir(new URL("../crds/", import.meta.url))) {
      await cp.applyYaml(new URL(`../crds/${f.name}`, import.meta.url).pathname);
    }
    const nodes = cp.client.resource<BootcNode>(Resources.bootcNodes);
    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    await waitFor(() => nodes.list().then(() => pools.list()).then(() => true, () => false), {
      timeoutMs: 20_000,
      message: "CRDs served",
    });
    // No controller runs: the pool only owns the BootcNode (paused, selecting no Node).
    const pool = await pools.create({
      apiVersion: API_VERSION,
      kind: POOL.kind,
      metadata: { name: "idle-pool" },
      spec: {
        nodeSelector: { matchLabels: { "bootc.dev/measure": "none" } },
        image: { ref: pinned },
        rollout: {
          maxUnavailable: 1,
          paused: true,
          drainTimeoutSeconds: 600,
          rebootTimeoutSeconds: 1800,
          minReadySeconds: 0,
        },
        disruption: { rebootPolicy: "RebootOnly" },
      },
    });
    await nodes.create({
      apiVersion: API_VERSION,
      kind: NODE.kind,
      metadata: {
        name: "idle-node",
        ownerReferences: [{
          apiVersion: API_VERSION,
          kind: POOL.kind,
          name: pool.metadata.name!,
          uid: pool.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        }],
      },
      spec: { desiredImage: pinned, desiredImageState: "Staged", rebootPolicy: "RebootOnly" },
    });
    // In a pod the daemon reads its service-account files and parses no YAML; a JSON
    // kubeconfig takes the same path here (a YAML one would load the YAML parser).
    const kubeconfig = `${logDir}/kubeconfig.json`;
    const { parse } = await import("yaml");
    await Deno.writeTextFile(
      kubeconfig,
      JSON.stringify(parse(await Deno.readTextFile(cp.kubeconfigPath))),
    );
    const daemonLog = `${logDir}/daemon.log`;
    const started = performance.now();
    const daemon = startProcess({
      name: "daemon",
      command: daemonExecutable,
      env: built.mode === "bundle" ? { DENO: privateDeno, DENO_DIR: denoDir } : {},
      args: [
        "run",
        "--kubeconfig",
        kubeconfig,
        "--node-name",
        "idle-node",
        // No namespace flag: the daemon detects that it runs in the host's namespace.
        "--host-root",
        host.root,
        "--bootc-command",
        host.command().join(" "),
        "--systemctl-command",
        host.systemctlCommand().join(" "),
      ],
      logPath: daemonLog,
    });
    children.push(daemon);
    const sampler = startSampler(daemon.pid, started);
    await waitFor(async () => {
      const bn = await nodes.get("idle-node");
      // True/Idle, not True/NotOwned: the owned path.
      return bn.status?.conditions?.some((c) =>
        c.type === "Idle" && c.status === "True" && c.reason === "Idle"
      );
    }, { timeoutMs: 30_000, message: "daemon reports Idle (reason Idle)" });
    const idleAfterS = (performance.now() - started) / 1000;
    // VmHWM: the exact peak from the daemon's exec (after the launcher's) to Idle.
    const peakToIdle = readPeak(daemon.pid);
    sampler.stop();
    const startup = timeline(sampler.samples, 2 * MiB);
    // Let start-up work settle, then the untrimmed figures (the first trim comes later).
    await new Promise((r) => setTimeout(r, 5000));
    const trimLines = async () =>
      (await Deno.readTextFile(daemonLog)).split("\n").filter((l) =>
        l.includes('"resident memory trimmed"')
      ).map((l) => JSON.parse(l));
    if ((await trimLines()).length > 0) throw new Error("the daemon trimmed before the sample");
    const daemonBefore = readSample(daemon.pid);
    const floorBefore = await floorSample("heap");
    const floorPeak = readPeak(floor.pid);
    // Until its first settled trim (none within 150 s: the idle level needed none), VmRSS
    // every 5 s.
    const beforeTrim: number[] = [];
    let trims: { heapUsedMiB: number; heapTotalMiB: number; externalMiB: number }[] = [];
    for (let waited = 0; waited < 150_000; waited += 5000) {
      trims = await trimLines();
      if (trims.length > 0) break;
      beforeTrim.push(readSample(daemon.pid).rss);
      await new Promise((r) => setTimeout(r, 5000));
    }
    const trimmedAfterS = (performance.now() - started) / 1000;
    const floorAfter = await floorSample("trim");
    await floor.stop();

    const metrics = async () => {
      const res = await cp.client.transport.request({ method: "GET", path: "/metrics" });
      return await res.text();
    };
    const before = await metrics();
    const samples: Sample[] = [];
    for (let t = 0; t < seconds; t += 5) {
      await new Promise((r) => setTimeout(r, 5000));
      samples.push(readSample(daemon.pid));
    }
    const after = await metrics();
    const smaps = residentByMapping(await Deno.readTextFile(`/proc/${daemon.pid}/smaps`));
    const allTrims = await trimLines();
    const startupTrims = (await Deno.readTextFile(daemonLog)).split("\n").filter((l) =>
      l.includes('"start-up memory trims done"')
    ).map((l) =>
      JSON.parse(l)
    )[0];
    const peakOverall = readPeak(daemon.pid);
    const keepLog = Deno.env.get("MEASURE_DAEMON_LOG");
    if (keepLog) await Deno.copyFile(daemonLog, keepLog);
    const endS = (performance.now() - started) / 1000;
    await daemon.stop();

    const delta = (verb: string) =>
      DAEMON_RESOURCES.reduce(
        (n, resource) =>
          n + sumMetric(after, "apiserver_request_total", { resource, verb }) -
          sumMetric(before, "apiserver_request_total", { resource, verb }),
        0,
      );
    const writes = ["POST", "PUT", "PATCH", "DELETE"].reduce((n, v) => n + delta(v), 0);
    const openWatches = sumMetric(after, "apiserver_longrunning_requests", {
      resource: "bootcnodes",
      verb: "WATCH",
    });

    const mib = (n: number) => (n / MiB).toFixed(1).padStart(6);
    const first = trims[0];
    const daemonHeap = first
      ? {
        heapUsed: first.heapUsedMiB * MiB,
        heapTotal: first.heapTotalMiB * MiB,
        external: first.externalMiB * MiB,
      }
      : undefined;
    const last = samples.at(-1)!;
    const maxRss = Math.max(...samples.map((s) => s.rss));
    const bundleText = await Deno.readTextFile(built.targets[0].bundle);
    const { own, npm } = bundleModules(bundleText);
    const staticNode = [...bundleText.matchAll(/^import .* from "(node:[^"]+)";$/gm)].map((m) =>
      m[1]
    );

    const out: string[] = [];
    out.push(
      `daemon ${
        built.mode === "compile" ? "binary" : "bundle, launcher"
      } built by tools/build.ts ` +
        `(--platform=${target.platform}, V8 flags: ${target.v8Flags.join(" ") || "none"}): bundle ${
          (bundleText.length / 1024).toFixed(0)
        } KiB, ` +
        `${own.length} own modules; npm packages: ${
          [...npm].map(([p, n]) => `${p} ${(n / 1024).toFixed(0)} KiB`).join(", ") || "none"
        }`,
    );
    out.push(
      `  static node: imports at start-up: ${staticNode.join(", ") || "none"}; TypeBox: ${
        npm.has("@sinclair/typebox") ? "bundled" : "not bundled"
      }; YAML parser: ${
        npm.has("yaml")
          ? "bundled, evaluated only when a YAML kubeconfig is parsed"
          : built.targets[0].beside.length
          ? `beside the bundle (${
            built.targets[0].beside.map((p) => p.split("/").pop()).join(", ")
          }), loaded only when a YAML kubeconfig is parsed`
          : "absent"
      }`,
    );
    out.push(
      `  Idle after ${idleAfterS.toFixed(1)}s, first settled trim ${
        first ? `after ${trimmedAfterS.toFixed(0)}s` : `none within ${trimmedAfterS.toFixed(0)}s`
      }, ` +
        `${allTrims.length} trim(s) in all` +
        (startupTrims ? `, ${startupTrims.trims} at start-up (the first 20 s)` : ""),
    );
    out.push(
      `  PEAK from start to Idle (VmHWM): ${mib(peakToIdle).trim()} MiB; over the whole run ` +
        `${mib(peakOverall).trim()} MiB; Deno floor's own peak ${mib(floorPeak).trim()} MiB`,
    );
    out.push(
      "  start-up timeline (VmRSS/anon/file MiB at ms since spawn, each 2 MiB move): " +
        startup.map((s) =>
          `${s.ms.toFixed(0)}ms ${mib(s.rss).trim()}/${mib(s.anon).trim()}/${mib(s.file).trim()}`
        ).join(", "),
    );
    out.push("");
    out.push(
      "MiB                                   VmRSS RssAnon RssFile  V8 used  V8 total  external",
    );
    const row = (name: string, s: Sample) =>
      out.push(
        `${name.padEnd(36)}${mib(s.rss)} ${mib(s.anon)}  ${mib(s.file)}  ` +
          (s.heap
            ? `${mib(s.heap.heapUsed)}    ${mib(s.heap.heapTotal)}   ${mib(s.heap.external)}`
            : "     -         -         -"),
      );
    row("Deno floor (empty program)", floorBefore);
    row("Deno floor, trimmed", floorAfter);
    row("daemon idle, before its trim", daemonBefore);
    row(`daemon idle, trimmed (+${endS.toFixed(0)}s from start)`, { ...last, heap: daemonHeap });
    out.push(
      `daemon minus floor, trimmed: ${mib(last.rss - floorAfter.rss)} MiB ` +
        `(anon ${mib(last.anon - floorAfter.anon).trim()}, file ${
          mib(last.file - floorAfter.file).trim()
        }); max VmRSS in the window ${mib(maxRss).trim()}`,
    );
    out.push(
      `daemon VmRSS every 5 s from +5 s after Idle until then (MiB): ${
        beforeTrim.map((r) => mib(r).trim()).join(" ")
      }`,
    );
    out.push(
      `daemon VmRSS every 5 s after that (MiB): ${samples.map((s) => mib(s.rss).trim()).join(" ")}`,
    );
    out.push("");
    out.push("daemon resident memory by mapping, at the end (MiB):");
    const exe = built.mode === "bundle" ? "deno" : target.executable;
    const names: Record<string, string> = {
      [exe]: `${exe} (the runtime's executable: code, read-only data)`,
      "[anon]": "[anon] (V8 heap, thread stacks, runtime buffers)",
      "[heap]": "[heap] (malloc)",
    };
    for (const [name, bytes] of [...smaps].sort((a, b) => b[1] - a[1]).slice(0, 7)) {
      out.push(`  ${mib(bytes)}  ${names[name] ?? name}`);
    }
    out.push("");
    out.push(
      `daemon idle for ${seconds}s after that: RSS ${mib(last.rss).trim()} MiB ` +
        `(max ${mib(maxRss).trim()}) at +${endS.toFixed(0)}s from start; peak start to Idle ` +
        `${mib(peakToIdle).trim()} MiB; ` +
        `API traffic (${DAEMON_RESOURCES.join(", ")}): ${openWatches} open BootcNode watch, ` +
        `${delta("WATCH")} new watches, ${delta("GET") + delta("LIST")} reads, ${writes} writes ` +
        `[${built.mode}${depCache ? ", dependency cache pre-filled as in the image" : ""}]` +
        (Deno.env.get("DENO_V8_FLAGS") ? ` (DENO_V8_FLAGS=${Deno.env.get("DENO_V8_FLAGS")})` : ""),
    );
    console.log(out.join("\n"));
  } finally {
    await Promise.allSettled(children.map((c) => c.stop()));
    await host?.destroy();
    await Promise.allSettled([cp.stop(), registry.stop()]);
    await Deno.remove(logDir, { recursive: true });
  }
}
