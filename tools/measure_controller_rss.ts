/**
 * Measures the controller's resident memory with N nodes in its caches
 * (default 1,000): starts a control plane (no kwok), runs controller/main.ts
 * as a child process, samples its RSS from /proc before and after creating N
 * realistic Node objects (Ready condition, 30 images) and a paused pool that
 * selects them all (so N BootcNodes are created and cached too), then stops
 * the controller with SIGTERM and checks it exits cleanly. The controller runs
 * with the V8 flags its manifest sets (DENO_V8_FLAGS overrides them).
 *
 * `--shipped` runs it as shipped: the bundle `deno task build` makes, behind its
 * launcher (its permissions: FFI for the memory trim), on a private copy of the
 * Deno executable (in the image the executable is the controller's alone; here
 * other Deno processes share its pages, which the kernel would neither count
 * apart nor reclaim), sampled long enough for the first trim (`--settle 75`).
 *
 *   deno run --allow-all tools/measure_controller_rss.ts [N] [--shipped] [--settle SECONDS]
 */
import { parseArgs } from "node:util";
import { build } from "./build.ts";
import { Resources } from "../lib/kube/mod.ts";
import type { BootcNodePool } from "../lib/api/mod.ts";
import { startControlPlane } from "../tests/harness/control_plane.ts";
import { freePort } from "../tests/harness/process.ts";
import { waitFor } from "../tests/harness/wait.ts";
import { shippedControllerV8Flags } from "./shipped_flags.ts";

const { values: opts, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: { shipped: { type: "boolean" }, settle: { type: "string" } },
});
const n = Number(positionals[0] ?? 1000);
const settleMs = Number(opts.settle ?? (opts.shipped ? 75 : 5)) * 1000;

const v8Flags = Deno.env.get("DENO_V8_FLAGS") ?? await shippedControllerV8Flags();

async function rssMiB(pid: number, field = "VmRSS"): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** "61 MiB (anon 23, file 37)": what could be reclaimed shows apart. */
async function breakdown(pid: number): Promise<string> {
  const [rss, anon, file] = await Promise.all(
    ["VmRSS", "RssAnon", "RssFile"].map((f) => rssMiB(pid, f)),
  );
  return `${rss.toFixed(0)} MiB (anon ${anon.toFixed(0)}, file ${file.toFixed(0)})`;
}

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
  return { argv: [built.targets[0].executable], env: { DENO: `${dir}/deno` } };
}

/**
 * Samples RSS every 500 ms for `ms`: the last sample, the highest, and the median of the second
 * half (a trimmed process's level between trims and refaults, not one lucky moment).
 */
async function settleRss(
  pid: number,
  ms = 5000,
): Promise<{ last: number; max: number; median: number }> {
  const samples: number[] = [];
  for (let waited = 0; waited < ms; waited += 500) {
    samples.push(await rssMiB(pid));
    await new Promise((r) => setTimeout(r, 500));
  }
  const late = samples.slice(Math.floor(samples.length / 2)).sort((a, b) => a - b);
  return {
    last: samples.at(-1) ?? 0,
    max: Math.max(...samples),
    median: late[Math.floor(late.length / 2)] ?? 0,
  };
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

const workDir = await Deno.makeTempDir({ prefix: "bootc-controller-rss-" });
const cp = await startControlPlane({ kwok: false, controllerManager: false, scheduler: false });
let child: Deno.ChildProcess | undefined;
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
  child = new Deno.Command(command.argv[0], {
    args: [
      ...command.argv.slice(1),
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
  await waitFor(
    async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 || false,
    {
      timeoutMs: 60_000,
      message: "controller ready",
      intervalMs: 250,
    },
  ).catch((e) => {
    throw e;
  });
  console.log(
    `controller ${opts.shipped ? "as shipped (bundle, private Deno)" : "from source"}, ` +
      `DENO_V8_FLAGS=${v8Flags || "(none)"}`,
  );
  const idle = await settleRss(pid, settleMs);
  const idleBreakdown = await breakdown(pid);

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
  const loaded = await settleRss(pid, settleMs);
  const loadedBreakdown = await breakdown(pid);
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const p50 = /bootc_reconcile_duration_seconds_count\{pool="workers"\} (\d+)/.exec(metrics)?.[1];
  child.kill("SIGTERM");
  const status = await child.status;
  child = undefined;
  console.log(
    `controller RSS: ${idleBreakdown} idle (no nodes, max ${idle.max.toFixed(0)}, ` +
      `late median ${idle.median.toFixed(0)}); ` +
      `${loadedBreakdown} with ${n} Nodes + ${n} BootcNodes cached ` +
      `(max ${loaded.max.toFixed(0)} MiB, late median ${loaded.median.toFixed(0)}); ` +
      `${p50} reconciles; exit code after SIGTERM ${status.code}`,
  );
} finally {
  if (child) {
    child.kill("SIGKILL");
    await child.status;
  }
  await cp.stop();
  await Deno.remove(workDir, { recursive: true });
}
