/**
 * Measures the daemon as shipped while idle, and where its memory goes.
 *
 * The daemon is built by `deno task build`'s own code (into a private folder;
 * BOOTC_BUILD_MODE, default bundle) and run the way the image runs it (the
 * executable: a compiled binary, or the launcher running the bundle with
 * `deno run --cached-only --no-config ...`) against a real API server, for a
 * host that already runs its desired image (its BootcNode owned by a pool, as
 * the controller creates it, so the daemon takes its real path), inside a memory
 * cgroup with a limit as in its pod (`--limit`, default 256 MiB; tools/memory_cgroup.ts).
 * Once it reports Idle, the script samples its memory, then for `--seconds` (default 60)
 * samples it every 5 s and counts the API requests of the resources the daemon uses, from
 * the API server's own metrics (`apiserver_request_total`, `apiserver_longrunning_requests`).
 * It prints:
 *
 * - the bundle: size, the modules in it, and whether anything heavy is loaded
 *   at start-up (a static `node:` import, TypeBox, the YAML parser);
 * - the PEAK from start to Idle: the daemon's `VmHWM` (the kernel's high-water mark of its
 *   resident set since its exec) read once it reports Idle, and a start-up timeline of VmRSS
 *   sampled every 5 ms from spawn to Idle (when and of what the peak was made);
 * - a table: Deno's own floor (an empty program run the same way, in a cgroup of its
 *   own) against the daemon idle: VmRSS, RssAnon, RssFile, the cgroup's working set
 *   (usage minus inactive file pages, as the kubelet counts it) and the V8 heap;
 * - the peaks: VmHWM, the cgroup's peak usage, and the highest working set sampled;
 * - the daemon's resident memory by mapping (the runtime's executable, anonymous
 *   memory holding the V8 heap and thread stacks, malloc's heap, libraries);
 * - the API traffic while idle.
 *
 *   deno run --allow-all tools/measure_daemon_idle.ts [--seconds 60]
 *
 * In bundle mode the daemon runs on a private copy of the Deno executable: in
 * the image the executable is the daemon's alone, while here every other Deno
 * process on the machine (this script included) shares its pages, which would
 * inflate the figures (the kernel maps cached neighbours on each fault) and charge
 * them to whichever cgroup read them first. The copies and the bundle are dropped
 * from the page cache before they run, so the daemon is charged for what it reads,
 * as when its image's files are not cached on the node yet. Without a cgroup (none
 * can be made here) it says why and reports RssAnon and RssFile apart.
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
import {
  type CgroupMemory,
  dropFromPageCache,
  MemoryCgroup,
  parseProcStatus,
  trackPeaks,
} from "./memory_cgroup.ts";
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
  cgroup?: CgroupMemory;
}

const readSample = (pid: number, cgroup?: MemoryCgroup): Sample => ({
  ...parseProcStatus(Deno.readTextFileSync(`/proc/${pid}/status`)),
  ...(cgroup ? { cgroup: cgroup.read() } : {}),
});

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
 * figures to the file named by its argument.
 */
const FLOOR_PROGRAM = `
const out = Deno.args[0];
Deno.addSignalListener("SIGUSR1", () => Deno.writeTextFileSync(out, JSON.stringify(Deno.memoryUsage())));
setInterval(() => {}, 1 << 30);
`;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { seconds: { type: "string" }, limit: { type: "string" } },
  });
  const seconds = Number(values.seconds ?? 60);
  const limitBytes = Number(values.limit ?? 256) * MiB;
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
  // One copy each for the daemon and the floor, so neither shares the other's file pages.
  const privateDeno = `${logDir}/deno`;
  if (built.mode === "bundle") await Deno.copyFile(Deno.execPath(), privateDeno);
  let host: SimulatedHost | undefined;
  // Stopped on the way out also after a failure: the daemon writes into its DENO_DIR, in logDir.
  const children: { stop(): Promise<unknown> }[] = [];
  const cgroups = ["daemon", "floor"].map((name) =>
    MemoryCgroup.create(`bootc-measure-${name}-${Deno.pid}`, limitBytes)
  );
  const [daemonCgroup, floorCgroup] = cgroups.map((c) => typeof c === "string" ? undefined : c);
  const inCgroup = (cgroup: MemoryCgroup | undefined, argv: string[]) =>
    cgroup ? cgroup.wrap(argv) : argv;
  let stopPeaks = () => {};
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
    // What each runs it reads itself, as from an image not yet in the node's page cache.
    const uncached = built.mode === "bundle"
      ? [privateDeno, `${floorDir}/deno`, built.targets[0].bundle, ...built.targets[0].beside]
      : [daemonExecutable, floorArgv[0]];
    if (depCache) uncached.push(`${denoDir}/${DEP_CACHE_FILE}`);
    await Promise.all(uncached.map(dropFromPageCache));
    floorArgv = inCgroup(floorCgroup, floorArgv);
    const floor = startProcess({
      name: "floor",
      command: floorArgv[0],
      args: floorArgv.slice(1),
      logPath: `${logDir}/floor.log`,
    });
    children.push(floor);
    const floorSample = async (): Promise<Sample> => {
      await Deno.remove(`${floorDir}/heap.json`).catch(() => {});
      // Signals rather than polling: a floor that wakes up touches code an idle one does not.
      Deno.kill(floor.pid, "SIGUSR1");
      await waitFor(() => Deno.stat(`${floorDir}/heap.json`).then(() => true, () => false), {
        timeoutMs: 20_000,
        message: "the floor program answers",
      });
      await new Promise((r) => setTimeout(r, 2000));
      const heap = JSON.parse(await Deno.readTextFile(`${floorDir}/heap.json`));
      return { ...readSample(floor.pid, floorCgroup), heap };
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
    const daemonArgv = inCgroup(daemonCgroup, [daemonExecutable]);
    // The simulated bootc and systemctl are Deno programs standing in for native ones: they
    // run outside the daemon's cgroup (a script each, as the daemon splits its flags at spaces).
    const outside = async (name: string, argv: string[]) => {
      if (!daemonCgroup) return argv.join(" ");
      const path = `${logDir}/${name}`;
      const quoted = daemonCgroup.unwrap(argv).map((a) => `'${a.replaceAll("'", `'\\''`)}'`);
      await Deno.writeTextFile(path, `#!/bin/sh\nexec ${quoted.join(" ")} "$@"\n`, { mode: 0o755 });
      return path;
    };
    const bootcCommand = await outside("bootc", host.command());
    const systemctlCommand = await outside("systemctl", host.systemctlCommand());
    const daemon = startProcess({
      name: "daemon",
      command: daemonArgv[0],
      env: built.mode === "bundle" ? { DENO: privateDeno, DENO_DIR: denoDir } : {},
      args: [
        ...daemonArgv.slice(1),
        "run",
        "--kubeconfig",
        kubeconfig,
        "--node-name",
        "idle-node",
        // No namespace flag: the daemon detects that it runs in the host's namespace.
        "--host-root",
        host.root,
        "--bootc-command",
        bootcCommand,
        "--systemctl-command",
        systemctlCommand,
      ],
      logPath: daemonLog,
    });
    children.push(daemon);
    const sampler = startSampler(daemon.pid, started);
    const peaks = trackPeaks(daemon.pid, daemonCgroup);
    stopPeaks = peaks.stop;
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
    const peaksToIdle = { ...peaks.peaks };
    sampler.stop();
    const startup = timeline(sampler.samples, 2 * MiB);
    // Let start-up work settle, then the first idle figures.
    await new Promise((r) => setTimeout(r, 5000));
    const daemonBefore = readSample(daemon.pid, daemonCgroup);
    const floorBefore = await floorSample();
    const floorPeak = readPeak(floor.pid);
    const floorPeakUsage = floorBefore.cgroup?.peakUsage;
    await floor.stop();

    const metrics = async () => {
      const res = await cp.client.transport.request({ method: "GET", path: "/metrics" });
      return await res.text();
    };
    const before = await metrics();
    const samples: Sample[] = [];
    for (let t = 0; t < seconds; t += 5) {
      await new Promise((r) => setTimeout(r, 5000));
      samples.push(readSample(daemon.pid, daemonCgroup));
    }
    const after = await metrics();
    peaks.stop();
    const smaps = residentByMapping(await Deno.readTextFile(`/proc/${daemon.pid}/smaps`));
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
    const last = samples.at(-1)!;
    const maxRss = Math.max(...samples.map((s) => s.rss));
    const workingSets = samples.flatMap((s) => s.cgroup ? [s.cgroup.workingSet] : []);
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
      `  Idle after ${idleAfterS.toFixed(1)}s; ` +
        (daemonCgroup
          ? `each in a cgroup v${daemonCgroup.version} with a ${mib(limitBytes).trim()} MiB limit`
          : `no cgroup (${cgroups[0]}): no working set, RssAnon and RssFile apart`),
    );
    out.push(
      `  PEAK from start to Idle (VmHWM): ${mib(peakToIdle).trim()} MiB; over the whole run ` +
        `${mib(peakOverall).trim()} MiB; Deno floor's own peak ${mib(floorPeak).trim()} MiB`,
    );
    out.push(
      `  PEAK RssAnon sampled every 100 ms: ${mib(peaksToIdle.anon).trim()} MiB to Idle, ` +
        `${mib(peaks.peaks.anon).trim()} over the whole run` + (daemonCgroup
          ? `; working set ${mib(peaksToIdle.workingSet).trim()} MiB to Idle, ${
            mib(peaks.peaks.workingSet).trim()
          } over the whole run; cgroup peak usage ${mib(last.cgroup?.peakUsage ?? 0).trim()} MiB` +
            ` (the floor's ${mib(floorPeakUsage ?? 0).trim()})`
          : ""),
    );
    out.push(
      "  start-up timeline (VmRSS/anon/file MiB at ms since spawn, each 2 MiB move): " +
        startup.map((s) =>
          `${s.ms.toFixed(0)}ms ${mib(s.rss).trim()}/${mib(s.anon).trim()}/${mib(s.file).trim()}`
        ).join(", "),
    );
    out.push("");
    out.push(
      "MiB                              VmRSS RssAnon RssFile  working set  V8 used  V8 total",
    );
    const row = (name: string, s: Sample) =>
      out.push(
        `${name.padEnd(31)}${mib(s.rss)} ${mib(s.anon)}  ${mib(s.file)}       ` +
          (s.cgroup ? mib(s.cgroup.workingSet) : "     -") +
          (s.heap
            ? `   ${mib(s.heap.heapUsed)}    ${mib(s.heap.heapTotal)}`
            : "        -         -"),
      );
    row("Deno floor (empty program)", floorBefore);
    row("daemon idle, +5 s after Idle", daemonBefore);
    row(`daemon idle, +${endS.toFixed(0)}s from start`, last);
    out.push(
      `daemon minus floor: ${mib(last.rss - floorBefore.rss).trim()} MiB ` +
        `(anon ${mib(last.anon - floorBefore.anon).trim()}, file ${
          mib(last.file - floorBefore.file).trim()
        }); max VmRSS in the window ${mib(maxRss).trim()}` +
        (workingSets.length ? `, max working set ${mib(Math.max(...workingSets)).trim()}` : ""),
    );
    out.push(
      `daemon every 5 s after that (MiB, RssAnon/working set): ${
        samples.map((s) =>
          `${mib(s.anon).trim()}/${s.cgroup ? mib(s.cgroup.workingSet).trim() : "-"}`
        ).join(" ")
      }`,
    );
    out.push("");
    out.push("daemon resident memory by mapping, at the end (MiB):");
    const exe = built.mode === "bundle" ? "deno" : target.executable;
    const names: Record<string, string> = {
      [exe]: `${exe} (the runtime's executable: code, read-only data)`,
      "[anon]": "[anon] (V8 heap, thread stacks, runtime buffers)",
      "[heap]": "[heap] (malloc)",
    };
    for (
      const [name, bytes] of [...smaps].sort((a, b) =>
        b[1] - a[1]
      ).slice(0, 7)
    ) {
      out.push(`  ${mib(bytes)}  ${names[name] ?? name}`);
    }
    out.push("");
    out.push(
      `daemon idle for ${seconds}s after that: RssAnon ${mib(last.anon).trim()} MiB, working ` +
        `set ${last.cgroup ? mib(last.cgroup.workingSet).trim() : "-"} MiB, VmRSS ${
          mib(last.rss).trim()
        } (max ${mib(maxRss).trim()}) at +${endS.toFixed(0)}s from start; peak start to Idle ` +
        `${mib(peakToIdle).trim()} MiB; ` +
        `API traffic (${DAEMON_RESOURCES.join(", ")}): ${openWatches} open BootcNode watch, ` +
        `${delta("WATCH")} new watches, ${delta("GET") + delta("LIST")} reads, ${writes} writes ` +
        `[${built.mode}${depCache ? ", dependency cache pre-filled as in the image" : ""}]` +
        (Deno.env.get("DENO_V8_FLAGS") ? ` (DENO_V8_FLAGS=${Deno.env.get("DENO_V8_FLAGS")})` : ""),
    );
    console.log(out.join("\n"));
  } finally {
    stopPeaks();
    await Promise.allSettled(children.map((c) => c.stop()));
    for (const cgroup of cgroups) if (typeof cgroup !== "string") await cgroup.remove();
    await host?.destroy();
    await Promise.allSettled([cp.stop(), registry.stop()]);
    await Deno.remove(logDir, { recursive: true });
  }
}
