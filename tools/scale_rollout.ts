/**
 * A rollout at scale on the real control plane: kube-apiserver, etcd,
 * kube-controller-manager and kwok (tests/harness/control_plane.ts), a real OCI
 * registry, the install manifests, the REAL controller executable in its own
 * process (with its own least-privilege token, on a private copy of the Deno executable
 * as in its image), N kwok nodes in one or more
 * pools with one workload pod each, and each node's daemon side played by an
 * in-process stand-in running the real decision core against a simulated bootc
 * host (tools/scale_standin.ts). Every apply is judged by the invariant tracker
 * and the budgets are checked on every Node and BootcNode event.
 *
 * The pool converges on v1, then the tag moves to v2 and the rollout is
 * measured: makespan against the ideal, slot hand-off median and p99, API
 * writes per node by resource (events apart), controller peak RSS and CPU
 * seconds, its peak working set and anonymous memory in a memory cgroup
 * (tools/memory_cgroup.ts; limit `SCALE_MEMORY_LIMIT_MIB`, default 1024), the
 * API server's request rate and the reconcile latency p99.
 *
 * Not part of the test suite. Usage:
 *
 *   deno run -A tools/scale_rollout.ts [--nodes 50] [--pools 1] [--max-unavailable 10%]
 *     [--pull-ms 2000] [--reboot-ms 2000] [--timeout-min 30] [--keep-logs [--audit-bodies]]
 *     [--controller-v8-flags FLAGS]   (default: manifests/controller.yaml's DENO_V8_FLAGS)
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { INode } from "kubernetes-models/v1/Node";
import {
  API_VERSION,
  type BootcNode,
  type BootcNodePool,
  findCondition,
  POOL,
} from "../lib/api/mod.ts";
import { type KubeObject, Resources } from "../lib/kube/mod.ts";
import { ensureBuild } from "./build.ts";
import { type Node, resolveBinDir, startControlPlane } from "../tests/harness/control_plane.ts";
import { NOT_READY_ANNOTATION } from "../tests/harness/kwok.ts";
import { InvariantTracker, watchInvariants } from "../tests/harness/invariants.ts";
import { freePort, type ManagedProcess, startProcess } from "../tests/harness/process.ts";
import { startRegistry } from "../tests/harness/registry.ts";
import { apiWrites, OPERATOR_NAMESPACE } from "../tests/harness/stack.ts";
import { waitFor } from "../tests/harness/wait.ts";
import { pullImage } from "../tests/bootc_sim/registry_pull.ts";
import type { PulledImage } from "../tests/bootc_sim/model.ts";
import { StandInFleet } from "./scale_standin.ts";
import { shippedControllerV8Flags } from "./shipped_flags.ts";
import { dropFromPageCache, MemoryCgroup, trackPeaks } from "./memory_cgroup.ts";
import {
  type EventLike,
  eventsByReason,
  formatBreakdown,
  histogramBuckets,
  histogramQuantile,
  percentile,
  type ProcessUsage,
  processUsage,
  requestsByVerb,
  summarizeAudit,
  writeBreakdown,
} from "./scale_report.ts";

const MANIFESTS = new URL("../manifests/", import.meta.url).pathname;
const CRDS = new URL("../crds/", import.meta.url).pathname;
const POOL_LABEL = "scale.bootc.dev/pool";

/** Options of {@linkcode runScale}. */
export interface ScaleOptions {
  nodes: number;
  pools: number;
  maxUnavailable: string;
  pullMs: number;
  rebootMs: number;
  timeoutMin: number;
  keepLogs: boolean;
  /** Audit at level Request (write bodies too), to see what each write changed. */
  auditBodies?: boolean;
  /** DENO_V8_FLAGS for the controller process (default: the manifest's; "" for none). */
  controllerV8Flags?: string;
}

function parseOptions(args: string[]): ScaleOptions {
  const { values } = parseArgs({
    args,
    options: {
      nodes: { type: "string", default: "50" },
      pools: { type: "string", default: "1" },
      "max-unavailable": { type: "string", default: "10%" },
      "pull-ms": { type: "string", default: "2000" },
      "reboot-ms": { type: "string", default: "2000" },
      "timeout-min": { type: "string", default: "30" },
      "keep-logs": { type: "boolean", default: false },
      "audit-bodies": { type: "boolean", default: false },
      "controller-v8-flags": { type: "string" },
    },
  });
  const int = (name: string, v: string | undefined, min: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  const nodes = int("nodes", values.nodes, 1);
  const pools = int("pools", values.pools, 1);
  if (pools > nodes) throw new Error("--pools must not exceed --nodes");
  return {
    nodes,
    pools,
    maxUnavailable: values["max-unavailable"]!,
    pullMs: int("pull-ms", values["pull-ms"], 0),
    rebootMs: int("reboot-ms", values["reboot-ms"], 0),
    timeoutMin: int("timeout-min", values["timeout-min"], 1),
    keepLogs: values["keep-logs"]!,
    auditBodies: values["audit-bodies"]!,
    controllerV8Flags: values["controller-v8-flags"],
  };
}

/**
 * The control plane's binaries, with kube-apiserver wrapped to write an audit log
 * (every request's user, agent, verb and resource at level Metadata): how the
 * API server's request rate splits between the controller and the rest.
 */
async function auditedBinDir(
  dir: string,
  bodies = false,
): Promise<{ binDir: string; auditLog: string }> {
  const real = await resolveBinDir();
  const binDir = `${dir}/bin`;
  await Deno.mkdir(binDir, { recursive: true });
  for await (const entry of Deno.readDir(real)) {
    if (entry.name !== "kube-apiserver") {
      await Deno.symlink(`${real}/${entry.name}`, `${binDir}/${entry.name}`);
    }
  }
  const policy = `${dir}/audit-policy.yaml`;
  await Deno.writeTextFile(
    policy,
    [
      "apiVersion: audit.k8s.io/v1",
      "kind: Policy",
      "omitStages: [RequestReceived]",
      "rules:",
      // Request bodies only for writes: reads would make the log huge.
      ...(bodies ? ["- level: Request", "  verbs: [create, update, patch, delete]"] : []),
      "- level: Metadata",
      "",
    ].join("\n"),
  );
  const auditLog = `${dir}/audit.log`;
  await Deno.writeTextFile(
    `${binDir}/kube-apiserver`,
    `#!/bin/sh\nexec "${real}/kube-apiserver" "$@" --audit-policy-file=${policy} ` +
      `--audit-log-path=${auditLog} --audit-log-format=json --audit-log-maxsize=0\n`,
  );
  await Deno.chmod(`${binDir}/kube-apiserver`, 0o755);
  return { binDir, auditLog };
}

/** Slots of a pool of `nodes` for maxUnavailable `mu` (percentages round up, at least 1). */
export function slotsFor(mu: string, nodes: number): number {
  const m = /^(\d+)%$/.exec(mu);
  if (m) return Math.max(1, Math.ceil((nodes * Number(m[1])) / 100));
  return Math.max(1, Number(mu));
}

const out = (line: string) => console.log(line);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

async function retry<T>(fn: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1;; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= tries) throw e;
      await new Promise((r) => setTimeout(r, 500 * i));
    }
  }
}

/** Runs the scale rollout and prints its report. */
export async function runScale(o: ScaleOptions): Promise<void> {
  const started = Date.now();
  const logDir = await Deno.makeTempDir({ prefix: "bootc-scale-" });
  out(`scale rollout: ${o.nodes} nodes in ${o.pools} pool(s), maxUnavailable ${o.maxUnavailable}`);
  out(`  logs: ${logDir}`);
  const audit = await auditedBinDir(logDir, o.auditBodies);
  const [executables, cp, registry] = await Promise.all([
    ensureBuild(),
    startControlPlane({
      logDir: `${logDir}/control-plane`,
      quiet: true,
      scheduler: false,
      binDir: audit.binDir,
    }),
    startRegistry(),
  ]);
  let controller: ManagedProcess | undefined;
  // The controller's memory as a cluster sees it: a cgroup with a limit, as its container.
  const limitMiB = Number(Deno.env.get("SCALE_MEMORY_LIMIT_MIB") ?? 1024);
  const cgroup = MemoryCgroup.create(`bootc-scale-controller-${Deno.pid}`, limitMiB * 2 ** 20);
  const memory = typeof cgroup === "string" ? undefined : cgroup;
  let stopPeaks = () => {};
  let fleet: StandInFleet | undefined;
  let watch: ReturnType<typeof watchInvariants> | undefined;
  let failed = true;
  const errors: string[] = [];
  try {
    const repository = `${registry.host}/bootc/os`;
    const v1 = await registry.pushImage({ repository: "bootc/os", tag: "v1", version: "1.0" });
    const v2 = await registry.pushImage({ repository: "bootc/os", tag: "v2", version: "2.0" });
    await registry.tagExisting("bootc/os", "v1", "stable");
    for await (const entry of Deno.readDir(CRDS)) await cp.applyYaml(`${CRDS}${entry.name}`);
    await cp.applyYaml(`${MANIFESTS}namespace.yaml`);
    for (const file of ["controller-rbac.yaml", "daemon-rbac.yaml", "admission-policy.yaml"]) {
      await cp.applyYaml(`${MANIFESTS}${file}`);
    }

    const poolNames = Array.from({ length: o.pools }, (_, i) => `pool-${i + 1}`);
    const nodeNames = Array.from(
      { length: o.nodes },
      (_, i) => `node-${String(i + 1).padStart(4, "0")}`,
    );
    const poolOf = (i: number) => poolNames[i % o.pools];
    const perPool = new Map(
      poolNames.map((p) => [p, nodeNames.filter((_, i) => poolOf(i) === p).length]),
    );
    const limits = Object.fromEntries(
      poolNames.map((p) => [p, { maxUnavailable: slotsFor(o.maxUnavailable, perPool.get(p)!) }]),
    );
    const tracker = new InvariantTracker({ limits });
    watch = watchInvariants(cp.client, tracker);

    const pulls = new Map<string, Promise<PulledImage>>();
    const pull = (pullspec: string) => {
      let p = pulls.get(pullspec);
      if (!p) {
        p = pullImage({
          pullspec,
          architecture: "amd64",
          insecureRegistries: [registry.host],
          auth: null,
        });
        pulls.set(pullspec, p);
      }
      return p;
    };
    const bootImage = `${repository}:stable`;
    const v1Pulled = await pull(bootImage);
    fleet = new StandInFleet({
      client: cp.client,
      pull,
      pullMs: o.pullMs,
      rebootMs: o.rebootMs,
      // As cp.setNodeReady, polling less often: up to 10 % of the nodes reboot at once.
      setNodeReady: async (node, ready) => {
        const nodes = cp.client.resource<Node>(Resources.nodes);
        await retry(() =>
          nodes.patch(node, {
            metadata: { annotations: { [NOT_READY_ANNOTATION]: ready ? null : "true" } },
          }, { type: "merge" })
        );
        const want = ready ? "True" : "False";
        await waitFor(async () => {
          const n = await nodes.get(node);
          return n.status?.conditions?.find((c) => c.type === "Ready")?.status === want;
        }, { timeoutMs: 60_000, intervalMs: 500, message: `node ${node} Ready=${want} (kwok)` });
      },
      tracker,
      onError: (node, e) => {
        if (errors.length < 50) errors.push(`${node}: ${e instanceof Error ? e.message : e}`);
      },
    });

    const t = Date.now();
    await inBatches(nodeNames.map((n, i) => [n, i] as const), 25, async ([name, i]) => {
      await retry(() =>
        cp.createNode(name, {
          labels: { "node-role.kubernetes.io/worker": "", [POOL_LABEL]: poolOf(i) },
        })
      );
      await fleet!.add(name, bootImage, v1Pulled);
      await retry(() =>
        cp.createPod("default", `app-${name}`, {
          nodeName: name,
          labels: { app: "scale", node: name },
          waitRunning: false,
        })
      );
    });
    out(`  ${o.nodes} kwok nodes and pods created in ${secs(Date.now() - t)}`);
    await fleet.start();

    const token = await cp.mintToken({
      namespace: OPERATOR_NAMESPACE,
      serviceAccount: "bootc-operator-controller",
      expirationSeconds: 24 * 3600,
    });
    const metricsPort = freePort();
    // As in its image, the controller's Deno executable is its own: its file-backed pages
    // are not shared with other Deno processes here, so its resident set counts them all.
    const privateDeno = `${logDir}/deno`;
    await Deno.copyFile(Deno.execPath(), privateDeno);
    await dropFromPageCache(privateDeno);
    const shipped = executables.controller.map((arg) =>
      arg.startsWith("DENO=") ? `DENO=${privateDeno}` : arg
    );
    const [command, ...prefix] = memory ? memory.wrap(shipped) : shipped;
    out(
      memory
        ? `  controller in a cgroup v${memory.version} with a ${limitMiB} MiB limit`
        : `  controller in no cgroup (${cgroup}): no working set figures`,
    );
    controller = startProcess({
      name: "controller",
      command,
      args: [
        ...prefix,
        "--kubeconfig",
        await cp.kubeconfigForToken(token),
        "--namespace",
        OPERATOR_NAMESPACE,
        "--metrics-addr",
        `127.0.0.1:${metricsPort}`,
        "--registry-poll-interval",
        "2s",
        "--insecure-registry",
        registry.host,
      ],
      env: {
        LOG_LEVEL: Deno.env.get("SCALE_CONTROLLER_LOG_LEVEL") ?? "warn",
        ...(o.controllerV8Flags ? { DENO_V8_FLAGS: o.controllerV8Flags } : {}),
      },
      logPath: `${logDir}/controller.log`,
    });
    const controllerPid = controller.pid;
    const peaks = trackPeaks(controllerPid, memory, 500);
    stopPeaks = peaks.stop;
    const samples: ProcessUsage[] = [];
    const sampler = setInterval(() => {
      const u = processUsage(controllerPid);
      if (u) samples.push(u);
    }, 1000);

    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    for (const name of poolNames) {
      await pools.create({
        apiVersion: API_VERSION,
        kind: POOL.kind,
        metadata: { name },
        spec: {
          nodeSelector: { matchLabels: { [POOL_LABEL]: name } },
          image: { ref: bootImage },
          // An integer is a count, as in the CRD's int-or-string.
          rollout: {
            maxUnavailable: /^\d+$/.test(o.maxUnavailable)
              ? Number(o.maxUnavailable)
              : o.maxUnavailable,
          },
          disruption: { rebootPolicy: "RebootOnly" },
        },
      } as unknown as BootcNodePool);
    }
    const converged = (list: BootcNodePool[], digest: string) =>
      poolNames.every((name) => {
        const p = list.find((x) => x.metadata.name === name);
        return p?.status?.targetDigest === digest &&
          findCondition(p.status.conditions, "UpToDate")?.status === "True" &&
          p.status.updatedCount === perPool.get(name) && p.status.nodeCount === perPool.get(name);
      });
    const t1 = Date.now();
    await waitFor(async () => converged((await pools.list()).items, v1.digest), {
      timeoutMs: 15 * 60_000,
      intervalMs: 2000,
      message: "pools to converge on v1",
    });
    out(
      `  pools converged on v1 in ${secs(Date.now() - t1)} (setup ${secs(Date.now() - started)})`,
    );
    const idle = processUsage(controllerPid);
    const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
    const setupPeaks = { ...peaks.peaks };
    out(
      `  controller with ${o.nodes} Nodes, BootcNodes and pods known: RSS ${
        idle?.rssMiB.toFixed(1)
      } MiB, peak ${idle?.peakRssMiB.toFixed(1)} MiB` +
        (memory ? `, working set ${mib(memory.read().workingSet)} MiB` : "") +
        (o.controllerV8Flags ? ` (DENO_V8_FLAGS=${o.controllerV8Flags})` : ""),
    );

    const controllerMetrics = async () =>
      await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const apiserverMetrics = async () => {
      const res = await cp.client.transport.request({ method: "GET", path: "/metrics" });
      return await res.text();
    };
    const writesBefore = await apiWrites(cp);
    const requestsBefore = requestsByVerb(await apiserverMetrics());
    const histBefore = histogramBuckets(
      await controllerMetrics(),
      "bootc_reconcile_duration_seconds",
    );
    const harnessBefore = fleet.harnessNodeWrites;
    const cpuBefore = processUsage(controllerPid)?.cpuSeconds ?? 0;
    const rebootsBefore = fleet.reboots;

    out(`moving the tag to v2 (${v2.digest.slice(7, 19)})…`);
    await registry.tagExisting("bootc/os", "v2", "stable");
    const t0 = Date.now();
    const deadline = t0 + o.timeoutMin * 60_000;
    let lastLine = "";
    let finished = false;
    while (Date.now() < deadline) {
      const list = (await pools.list()).items;
      if (converged(list, v2.digest)) {
        finished = true;
        break;
      }
      const updated = list.reduce(
        (n, p) => n + (p.status?.targetDigest === v2.digest ? p.status?.updatedCount ?? 0 : 0),
        0,
      );
      const slots = list.reduce((n, p) => n + (p.status?.slotsInUse ?? 0), 0);
      const line = `  [${
        secs(Date.now() - t0)
      }] ${updated}/${o.nodes} updated, ${slots} slots in use`;
      if (line.replace(/^\s*\[[^\]]*\]/, "") !== lastLine) {
        out(line);
        lastLine = line.replace(/^\s*\[[^\]]*\]/, "");
      }
      if (tracker.violations.length > 0) break;
      await new Promise((r) => setTimeout(r, 2000));
    }
    const makespan = Date.now() - t0;
    const t2 = Date.now();
    clearInterval(sampler);
    const writesAfter = await apiWrites(cp);
    const requestsAfter = requestsByVerb(await apiserverMetrics());
    const histAfter = histogramBuckets(
      await controllerMetrics(),
      "bootc_reconcile_duration_seconds",
    );
    const usage = processUsage(controllerPid);
    const breakdown = writeBreakdown(
      writesBefore,
      writesAfter,
      fleet.harnessNodeWrites - harnessBefore,
    );
    const [finalNodes, finalBootcNodes] = await Promise.all([
      cp.client.resource<INode>(Resources.nodes).list(),
      cp.client.resource<BootcNode>(Resources.bootcNodes).list(),
    ]);
    const problems = [
      ...tracker.violations,
      ...(finished ? tracker.checkFinal(finalNodes.items, finalBootcNodes.items) : []),
    ];

    const intervals = tracker.intervals.filter((i) => i.start >= t0);
    if (o.keepLogs) {
      await Deno.writeTextFile(`${logDir}/intervals.json`, JSON.stringify({ t0, intervals }));
    }
    const cycles = intervals.filter((i) => i.end !== undefined).map((i) => i.end! - i.start);
    const cycle = percentile(cycles, 50) ?? 0;
    const firstSlot = intervals.length ? Math.min(...intervals.map((i) => i.start)) - t0 : 0;
    const waves = Math.max(
      ...poolNames.map((p) => Math.ceil(perPool.get(p)! / limits[p].maxUnavailable)),
    );
    const ideal = waves * cycle + firstSlot;
    // Nothing was disrupted before the tag moved (the hosts boot v1 already).
    const handoffs = tracker.handoffDelays();
    const reqTotal = Object.keys(requestsAfter).reduce(
      (n, v) => n + requestsAfter[v] - (requestsBefore[v] ?? 0),
      0,
    );
    const reqBy = Object.entries(requestsAfter)
      .map(([v, n]) => [v, n - (requestsBefore[v] ?? 0)] as const)
      .filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1])
      .map(([v, n]) => `${v} ${(n / (makespan / 1000)).toFixed(1)}`).join(", ");
    const p99 = histogramQuantile(histBefore, histAfter, 0.99);
    const p50 = histogramQuantile(histBefore, histAfter, 0.5);
    const peakRss = Math.max(usage?.peakRssMiB ?? 0, ...samples.map((s) => s.rssMiB));

    out("");
    out(
      finished
        ? `Rollout of ${o.nodes} nodes finished in ${secs(makespan)}.`
        : `Rollout did NOT finish in ${o.timeoutMin} min: ${lastLine.trim()}`,
    );
    out(`  reboots:                 ${fleet.reboots - rebootsBefore}`);
    out(
      `  most nodes unavailable:  ${tracker.maxDisrupted} per pool (maxUnavailable ${
        poolNames.map((p) => limits[p].maxUnavailable).join("/")
      })`,
    );
    out(
      `  makespan vs ideal:       ${secs(makespan)} vs ${secs(ideal)} = ${waves} waves × ` +
        `${secs(cycle)} per-node cycle (median) + ${secs(firstSlot)} until the first slot` +
        ` (${(makespan / Math.max(1, ideal)).toFixed(2)}×)`,
    );
    // Where the time beyond the ideal goes: the cycle's spread (the ideal takes the median
    // for every node) and slots left empty (hand-offs, and the last wave running out).
    const slotCount = poolNames.reduce((n, p) => n + limits[p].maxUnavailable, 0);
    const heldMs = cycles.reduce((a, b) => a + b, 0);
    const meanCycle = heldMs / Math.max(1, cycles.length);
    const windowMs = Math.max(1, makespan - firstSlot);
    out(
      `  where the time goes:     per-node cycle mean ${secs(meanCycle)}, p90 ${
        secs(percentile(cycles, 90) ?? 0)
      }, max ${secs(Math.max(0, ...cycles))}; slots held ${
        (100 * heldMs / (slotCount * windowMs)).toFixed(0)
      }% of the time from the first grant to the end (${secs(heldMs / slotCount)} of ${
        secs(windowMs)
      } per slot)`,
    );
    out(
      `  slot hand-off:           median ${percentile(handoffs, 50) ?? "-"} ms, p99 ${
        percentile(handoffs, 99) ?? "-"
      } ms (${handoffs.length} hand-offs)`,
    );
    out(`  API writes:              ${formatBreakdown(breakdown, o.nodes)}`);
    // Cluster-scoped objects' events (Nodes, BootcNodes, pools) are stored in "default".
    const events = await cp.client.resource<EventLike & KubeObject>(Resources.events, "default")
      .list();
    out(`  events by reason:        ${eventsByReason(events.items, t0, o.nodes)}`);
    stopPeaks();
    out(
      `  controller memory:       peak working set ${mib(peaks.peaks.workingSet)} MiB ` +
        `(${mib(setupPeaks.workingSet)} until converged on v1), peak RssAnon ` +
        `${mib(peaks.peaks.anon)} MiB (${mib(setupPeaks.anon)})` +
        (memory ? `; cgroup peak usage ${mib(memory.read().peakUsage ?? 0)} MiB` : ""),
    );
    out(
      `  controller:              peak RSS ${peakRss.toFixed(1)} MiB (now ${
        usage?.rssMiB.toFixed(1) ?? "-"
      }), CPU ${((usage?.cpuSeconds ?? 0) - cpuBefore).toFixed(1)} s during the rollout (${
        (usage?.cpuSeconds ?? 0).toFixed(1)
      } s since start)`,
    );
    out(
      `  kube-apiserver:          ${
        (reqTotal / (makespan / 1000)).toFixed(1)
      } requests/s during the rollout (${reqBy})`,
    );
    const audited = summarizeAudit(await Deno.readTextFile(audit.auditLog), t0, t2);
    const ctl = audited.byUser["bootc-operator-controller"];
    if (ctl) {
      const rate = (n: number) => (n / (makespan / 1000)).toFixed(1);
      out(
        `  controller's requests:   ${rate(ctl.total)}/s (${
          Object.entries(ctl.byVerb).sort((a, b) => b[1] - a[1]).map(([v, n]) => `${v} ${rate(n)}`)
            .join(", ")
        }); ${audited.total} requests in the audit log, ${rate(audited.total)}/s`,
      );
    }
    out(
      `  reconcile latency:       p50 ≤ ${p50?.bound ?? "-"} s, p99 ≤ ${p99?.bound ?? "-"} s ` +
        `(histogram buckets; ${p99?.count ?? 0} reconciles)`,
    );
    out(
      `  invariants:              ${
        problems.length ? problems.slice(0, 10).join("; ") : "all held"
      }`,
    );
    if (errors.length) out(`  stand-in errors:         ${errors.slice(0, 5).join("; ")}`);
    failed = !finished || problems.length > 0;
  } finally {
    // Every step bounded: a stuck one is reported, and the processes are stopped anyway.
    const bounded = async (what: string, work: Promise<unknown>, ms = 30_000) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), ms));
      const outcome = await Promise.race([work.catch((e) => out(`teardown: ${what}: ${e}`)), late]);
      clearTimeout(timer);
      if (outcome === "late") out(`teardown: ${what} did not finish in ${ms / 1000} s; going on`);
    };
    const standIns = await fleet?.stop();
    if (standIns) out(`teardown: stand-ins ${standIns}`);
    stopPeaks();
    await bounded(
      "stopping the controller",
      controller?.stop({ graceMs: 5000 }) ?? Promise.resolve(),
    );
    if (memory) await bounded("removing the controller's cgroup", memory.remove());
    await bounded("stopping the invariant watch", watch?.stop() ?? Promise.resolve());
    await bounded(
      "stopping the control plane",
      Promise.allSettled([cp.stop(), registry.stop()]),
      60_000,
    );
    if (!o.keepLogs && !failed) await Deno.remove(logDir, { recursive: true }).catch(() => {});
    else out(`logs kept in ${logDir}`);
  }
  if (failed) throw new Error("the scale rollout failed (see above)");
}

if (import.meta.main) {
  try {
    const options = parseOptions(Deno.args);
    options.controllerV8Flags ??= await shippedControllerV8Flags();
    await runScale(options);
  } catch (e) {
    console.error(`scale_rollout: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
  // Whatever a stuck teardown step left pending (reported above) must not keep us alive.
  Deno.exit(0);
}
