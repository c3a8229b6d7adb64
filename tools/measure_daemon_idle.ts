/**
 * Measures the daemon while idle: the built daemon executable runs against a
 * real API server for a host that already runs its desired image (its BootcNode
 * owned by a pool, as the controller creates it, so the daemon takes its real
 * path rather than ignoring a BootcNode no pool owns), then for
 * `--seconds` (default 60) the script samples its resident memory and counts
 * the API requests the daemon's BootcNode traffic causes, from the API server's
 * own metrics (`apiserver_request_total`, `apiserver_longrunning_requests`).
 *
 *   deno run --allow-all tools/measure_daemon_idle.ts [--seconds 60]
 *
 * Set DENO_V8_FLAGS to try V8 options (the launcher passes the environment on).
 * The daemon is built into a private folder (BOOTC_BUILD_MODE, default bundle),
 * so a shared `dist/` is neither needed nor disturbed.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { API_VERSION, type BootcNode, type BootcNodePool, NODE, POOL } from "../lib/api/mod.ts";
import { Resources } from "../lib/kube/mod.ts";
import { SimulatedHost } from "../tests/bootc_sim/host.ts";
import { startControlPlane } from "../tests/harness/control_plane.ts";
import { startProcess } from "../tests/harness/process.ts";
import { startRegistry } from "../tests/harness/registry.ts";
import { waitFor } from "../tests/harness/wait.ts";
import { build, type BuildMode } from "./build.ts";

const { values } = parseArgs({ args: Deno.args, options: { seconds: { type: "string" } } });
const seconds = Number(values.seconds ?? 60);

/** Sums metric lines of `name` whose labels include every pair in `match`. */
function sumMetric(text: string, name: string, match: Record<string, string>): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!Object.entries(match).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

const rssMiB = (pid: number) => {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
};

const logDir = await Deno.makeTempDir({ prefix: "bootc-daemon-idle-" });
const mode = (Deno.env.get("BOOTC_BUILD_MODE") || "bundle") as BuildMode;
const [built, cp, registry] = await Promise.all([
  build({ outDir: `${logDir}/dist`, only: ["daemon"], mode }),
  startControlPlane({ kwok: false, controllerManager: false, scheduler: false, quiet: true }),
  startRegistry(),
]);
const daemonExecutable = built.targets[0].executable;
// A bundle's launcher finds `deno` in $DENO (this very executable; PATH may have none).
const daemonArgv = built.mode === "compile"
  ? [daemonExecutable]
  : ["/usr/bin/env", `DENO=${Deno.execPath()}`, daemonExecutable];
let host: SimulatedHost | undefined;
try {
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
  // In a pod the daemon reads its service-account files and never parses YAML; a JSON
  // kubeconfig takes the same path here (YAML would load the `yaml` package and Deno's
  // Node compatibility layer, about 13 MiB more).
  const kubeconfig = `${logDir}/kubeconfig.json`;
  const { parse } = await import("yaml");
  await Deno.writeTextFile(
    kubeconfig,
    JSON.stringify(parse(await Deno.readTextFile(cp.kubeconfigPath))),
  );
  const [command, ...prefix] = daemonArgv;
  const daemon = startProcess({
    name: "daemon",
    command,
    args: [
      ...prefix,
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
    logPath: `${logDir}/daemon.log`,
  });
  await waitFor(async () => {
    const bn = await nodes.get("idle-node");
    // True/Idle, not True/NotOwned: the owned path.
    return bn.status?.conditions?.some((c) =>
      c.type === "Idle" && c.status === "True" && c.reason === "Idle"
    );
  }, { timeoutMs: 30_000, message: "daemon reports Idle (reason Idle)" });
  // Let start-up work settle before the window opens.
  await new Promise((r) => setTimeout(r, 5000));
  const metrics = async () => {
    const res = await cp.client.transport.request({ method: "GET", path: "/metrics" });
    return await res.text();
  };
  const before = await metrics();
  const rss: number[] = [];
  for (let t = 0; t < seconds; t += 5) {
    await new Promise((r) => setTimeout(r, 5000));
    rss.push(rssMiB(daemon.pid));
  }
  const after = await metrics();
  const delta = (verb: string) =>
    sumMetric(after, "apiserver_request_total", { resource: "bootcnodes", verb }) -
    sumMetric(before, "apiserver_request_total", { resource: "bootcnodes", verb });
  const writes = ["POST", "PUT", "PATCH", "DELETE"].reduce((n, v) => n + delta(v), 0);
  const openWatches = sumMetric(after, "apiserver_longrunning_requests", {
    resource: "bootcnodes",
    verb: "WATCH",
  });
  console.log(
    `daemon idle for ${seconds}s: RSS ${rss.at(-1)!.toFixed(1)} MiB (max ${
      Math.max(...rss).toFixed(1)
    }); BootcNode API traffic: ${openWatches} open watch, ${delta("WATCH")} new watches, ` +
      `${delta("GET") + delta("LIST")} reads, ${writes} writes` +
      ` [${built.mode}]` +
      (Deno.env.get("DENO_V8_FLAGS") ? ` (DENO_V8_FLAGS=${Deno.env.get("DENO_V8_FLAGS")})` : ""),
  );
  await daemon.stop();
} finally {
  await host?.destroy();
  await Promise.allSettled([cp.stop(), registry.stop()]);
  await Deno.remove(logDir, { recursive: true });
}
