/**
 * Measures the controller's memory as a cluster sees it, idle and with N nodes in its caches
 * (default 1,000): starts a control plane (no kwok), runs the controller as a child process
 * inside a memory cgroup with a limit (tools/memory_cgroup.ts; `--limit`, default 256 MiB, the
 * Deployment's), samples it before and after creating N realistic Node objects (Ready
 * condition, 30 images) and a paused pool that selects them all (so N BootcNodes are created
 * and cached too), then stops the controller with SIGTERM and checks it exits cleanly. The
 * controller runs with the V8 flags its manifest sets (DENO_V8_FLAGS overrides them).
 *
 * It prints RssAnon and RssFile (`/proc/PID/status`), the cgroup's working set (usage minus
 * inactive file pages, what `kubectl top` and the kubelet's eviction see), and the peaks:
 * VmHWM, the cgroup's peak usage, and the highest anonymous memory and working set sampled
 * every 100 ms from the start. Where no cgroup can be made it says why and reports the
 * process's own figures.
 *
 * `--shipped` runs it as shipped: the bundle `deno task build` makes, behind its launcher
 * (its permissions), on a private copy of the Deno executable whose pages are dropped from the
 * page cache first, so that the controller is charged for what it reads of them, as when its
 * image's files are not cached on the node yet.
 *
 *   deno run --allow-all tools/measure_controller_rss.ts [N] [--shipped] [--settle SECONDS]
 *     [--limit MIB]
 */
import { parseArgs } from "node:util";
import { build } from "./build.ts";
import { Resources } from "../lib/kube/mod.ts";
import type { BootcNodePool } from "../lib/api/mod.ts";
import { startControlPlane } from "../tests/harness/control_plane.ts";
import { freePort } from "../tests/harness/process.ts";
import { waitFor } from "../tests/harness/wait.ts";
import {
  dropFromPageCache,
  formatSample,
  MemoryCgroup,
  sampleWindow,
  summarize,
  trackPeaks,
  type WindowSummary,
} from "./memory_cgroup.ts";
import { shippedControllerV8Flags } from "./shipped_flags.ts";

const { values: opts, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    shipped: { type: "boolean" },
    settle: { type: "string" },
    limit: { type: "string" },
  },
});
const n = Number(positionals[0] ?? 1000);
const settleMs = Number(opts.settle ?? 30) * 1000;
const limitMiB = Number(opts.limit ?? 256);
const MiB = 1 << 20;

const v8Flags = Deno.env.get("DENO_V8_FLAGS") ?? await shippedControllerV8Flags();

/** The command that runs the controller: from source, or as shipped (see the module doc). */
async function controllerCommand(
  dir: string,
): Promise<{ argv: string[]; env: Record<string, string> }> {
  if (!opts.shipped) {
    return {
      argv: [
        Deno.execPath(),
        "run",
        "--allow-all",
        new URL("../controller/main.ts", import.meta.url).pathname,
      ],
      env: {},
    };
  }
  const built = await build({
    outDir: `${dir}/dist`,
    only: ["controller"],
    mode: "bundle",
    log: () => {},
  });
  await Deno.copyFile(Deno.execPath(), `${dir}/deno`);
  await dropFromPageCache(`${dir}/deno`);
  await dropFromPageCache(built.targets[0].bundle);
  return { argv: [built.targets[0].executable], env: { DENO: `${dir}/deno` } };
}

/** "anon 23.0 MiB (median of the last half 22.9), working set 30.1 (median 30.0, max 31.2)". */
function window(w: WindowSummary): string {
  const ws = w.medianWorkingSet === undefined
    ? ""
    : `; working set median ${(w.medianWorkingSet / MiB).toFixed(1)}, max ${
      (w.maxWorkingSet! / MiB).toFixed(1)
    } MiB`;
  return `${formatSample(w.last)}\n    late-half median RssAnon ${
    (w.medianAnon / MiB).toFixed(1)
  } MiB${ws}`;
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

const workDir = await Deno.makeTempDir({ prefix: "bootc-controller-rss-" });
const cp = await startControlPlane({ kwok: false, controllerManager: false, scheduler: false });
let child: Deno.ChildProcess | undefined;
let stopPeaks = () => {};
const cgroup = MemoryCgroup.create(`bootc-measure-controller-${Deno.pid}`, limitMiB * MiB);
try {
  // Every CRD: the controller waits for all its informers (the budgets' too) before it is ready.
  const crds = new URL("../crds/", import.meta.url);
  for await (const entry of Deno.readDir(crds)) {
    if (entry.name.endsWith(".yaml")) {
      await cp.applyYaml(await Deno.readTextFile(new URL(entry.name, crds)));
    }
  }
  const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  await waitFor(async () => (await pools.list(), true), { timeoutMs: 30_000, message: "CRDs" });

  const port = freePort();
  const command = await controllerCommand(workDir);
  const argv = typeof cgroup === "string" ? command.argv : cgroup.wrap(command.argv);
  child = new Deno.Command(argv[0], {
    args: [
      ...argv.slice(1),
      "--kubeconfig",
      cp.kubeconfigPath,
      "--leader-elect=false",
      "--metrics-addr",
      `127.0.0.1:${port}`,
    ],
    stdout: Deno.env.get("LOG_LEVEL") ? "inherit" : "null",
    stderr: Deno.env.get("LOG_LEVEL") ? "inherit" : "null",
    env: { LOG_LEVEL: Deno.env.get("LOG_LEVEL") ?? "warn", DENO_V8_FLAGS: v8Flags, ...command.env },
  }).spawn();
  const pid = child.pid;
  const memory = typeof cgroup === "string" ? undefined : cgroup;
  const peaks = trackPeaks(pid, memory);
  stopPeaks = peaks.stop;
  await waitFor(
    async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 || false,
    {
      timeoutMs: 60_000,
      message: "controller ready",
      intervalMs: 250,
    },
  );
  console.log(
    `controller ${opts.shipped ? "as shipped (bundle, private Deno)" : "from source"}, ` +
      `DENO_V8_FLAGS=${v8Flags || "(none)"}; ` +
      (memory
        ? `in a cgroup v${memory.version} with a ${limitMiB} MiB limit (${memory.dir})`
        : `no cgroup (${cgroup}): the working set is not measured, RssAnon and RssFile apart`),
  );
  const readyPeaks = { ...peaks.peaks };
  const idle = summarize(await sampleWindow(pid, memory, settleMs));

  const nodes = cp.client.resource(Resources.nodes);
  const names = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(5, "0")}`);
  const images = Array.from({ length: 30 }, (_, i) => ({
    names: [
      `registry.example/team/app-${i}@sha256:${String(i).padStart(64, "0")}`,
      `registry.example/team/app-${i}:v1.${i}`,
    ],
    sizeBytes: 100_000_000 + i,
  }));
  await inBatches(names, 25, async (name) => {
    const created = await nodes.create({
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name,
        labels: {
          "node-role.kubernetes.io/worker": "",
          "kubernetes.io/hostname": name,
          "kubernetes.io/arch": "amd64",
          "topology.kubernetes.io/zone": `zone-${name.length % 3}`,
        },
      },
    });
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    await nodes.updateStatus({
      ...created,
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
          ...["MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
            type,
            status: "False",
            reason: `KubeletHas${type.startsWith("Mem") ? "Sufficient" : "No"}${type}`,
            message: "ok",
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          })),
        ],
        capacity: { cpu: "16", memory: "65536Mi", pods: "110" },
        allocatable: { cpu: "15800m", memory: "64000Mi", pods: "110" },
        addresses: [{ type: "InternalIP", address: "10.0.0.1" }, {
          type: "Hostname",
          address: name,
        }],
        nodeInfo: {
          architecture: "amd64",
          bootID: crypto.randomUUID(),
          containerRuntimeVersion: "cri-o://1.33.0",
          kernelVersion: "6.12.0",
          kubeProxyVersion: "",
          kubeletVersion: "v1.36.3",
          machineID: crypto.randomUUID().replaceAll("-", ""),
          operatingSystem: "linux",
          osImage: "Fedora bootc",
          systemUUID: crypto.randomUUID(),
        },
        images,
      },
    } as never);
  });
  await pools.create({
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    metadata: { name: "workers" },
    spec: {
      nodeSelector: { matchLabels: { "node-role.kubernetes.io/worker": "" } },
      image: { ref: `quay.io/example/os@sha256:${"b".repeat(64)}` },
      rollout: {
        maxUnavailable: "10%",
        paused: true,
        drainTimeoutSeconds: 600,
        rebootTimeoutSeconds: 1800,
        minReadySeconds: 0,
      },
      disruption: { rebootPolicy: "RebootOnly" },
    },
  });
  await waitFor(async () => (await pools.get("workers")).status?.nodeCount === n, {
    timeoutMs: 300_000,
    intervalMs: 1000,
    message: `pool status counts ${n} nodes`,
  });
  const loaded = summarize(await sampleWindow(pid, memory, settleMs));
  peaks.stop();
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const p50 = /bootc_reconcile_duration_seconds_count\{pool="workers"\} (\d+)/.exec(metrics)?.[1];
  child.kill("SIGTERM");
  const status = await child.status;
  child = undefined;
  const peak = (bytes: number) => (bytes / MiB).toFixed(1);
  console.log(
    [
      `controller idle (ready, no nodes; ${settleMs / 1000} s): ${window(idle)}`,
      `controller with ${n} Nodes + ${n} BootcNodes cached (${settleMs / 1000} s after the ` +
      `pool counted them): ${window(loaded)}`,
      `controller peaks: VmHWM ${peak(loaded.last.proc.hwm)} MiB; RssAnon ${
        peak(peaks.peaks.anon)
      } MiB (${peak(readyPeaks.anon)} until ready)` +
      (memory
        ? `; working set ${peak(peaks.peaks.workingSet)} MiB (${
          peak(readyPeaks.workingSet)
        } until ready); cgroup peak usage ${peak(loaded.last.cgroup?.peakUsage ?? 0)} MiB`
        : ""),
      `${p50} reconciles; exit code after SIGTERM ${status.code}`,
    ].join("\n"),
  );
} finally {
  stopPeaks();
  if (child) {
    child.kill("SIGKILL");
    await child.status;
  }
  if (typeof cgroup !== "string") await cgroup.remove();
  await cp.stop();
  await Deno.remove(workDir, { recursive: true });
}
