/**
 * The whole operator on loopback, in one call: a real control plane, a real OCI
 * registry with two versions of an OS image, the install manifests (CRDs, RBAC,
 * admission policy), the REAL controller executable running with its own
 * service-account token, and a {@linkcode Fleet} of simulated hosts whose REAL
 * daemons run with node-bound tokens. Used by the demo and the end-to-end suite.
 *
 * @module
 */
import { API_VERSION, type BootcNodePool, POOL } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { ensureBuild } from "../../tools/build.ts";
import { type ControlPlane, startControlPlane } from "./control_plane.ts";
import { Fleet, type FleetEvent } from "./fleet.ts";
import { InvariantTracker, type InvariantWatch, watchInvariants } from "./invariants.ts";
import { freePort, type ManagedProcess, startProcess } from "./process.ts";
import { startRegistry, type TestRegistry } from "./registry.ts";

/** Namespace of the operator (leases, pull secrets, service accounts). */
export const OPERATOR_NAMESPACE = "bootc-operator";
const MANIFESTS = new URL("../../manifests/", import.meta.url).pathname;
const CRDS = new URL("../../crds/", import.meta.url).pathname;

/** Options of {@linkcode startStack}. */
export interface StackOptions {
  /** Folder for every process log (default: a temp folder, removed on stop unless kept). */
  logDir?: string;
  /** Controller flags added to the defaults. */
  controllerArgs?: string[];
  /** Daemon flags added to the defaults. */
  daemonArgs?: string[];
  /** Run the components with their own least-privilege credentials (default true). */
  leastPrivilege?: boolean;
  /** Start the controller right away (default true). */
  startController?: boolean;
  /** Reboot down time of a simulated host (default 300 ms). */
  rebootDelayMs?: number;
  onFleetEvent?: (event: FleetEvent) => void;
  /** Limits for the invariant tracker, per pool. */
  limits?: Record<string, { maxUnavailable: number }>;
}

/** The images pushed to the registry. */
export interface StackImages {
  /** `127.0.0.1:PORT/bootc/os` */
  repository: string;
  v1: { tag: string; digest: string; ref: string };
  v2: { tag: string; digest: string; ref: string };
}

/** A running operator stack. */
export interface Stack {
  cp: ControlPlane;
  registry: TestRegistry;
  fleet: Fleet;
  tracker: InvariantTracker;
  images: StackImages;
  logDir: string;
  controller?: ManagedProcess;
  controllerMetricsPort: number;
  /** Starts (or restarts) the controller process. */
  startController(): Promise<ManagedProcess>;
  /** SIGKILLs the controller. */
  killController(): Promise<void>;
  /**
   * Starts a second controller replica (its own process, metrics port and log) that
   * contends for the same leader-election Lease.
   */
  startStandbyController(): Promise<{ process: ManagedProcess; metricsPort: number }>;
  /** Creates a pool. */
  createPool(
    name: string,
    spec: Partial<BootcNodePool["spec"]> & { image: BootcNodePool["spec"]["image"] },
  ): Promise<
    BootcNodePool
  >;
  /**
   * Writes (POST/PUT/PATCH/DELETE) to the resources the operator writes, from the API
   * server's metrics; take a difference around the interval of interest and subtract
   * `fleet.nodeWrites` (the supervisor's own readiness flips) from `nodes`.
   */
  apiWrites(): Promise<{ total: number; byResource: Record<string, number> }>;
  stop(options?: { keepLogs?: boolean }): Promise<void>;
}

/** Starts the stack; see the module doc. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const ownsLogDir = options.logDir === undefined;
  const logDir = options.logDir ?? await Deno.makeTempDir({ prefix: "bootc-stack-" });
  await Deno.mkdir(logDir, { recursive: true });
  const leastPrivilege = options.leastPrivilege ?? true;
  const [executables, cp, registry] = await Promise.all([
    ensureBuild(),
    startControlPlane({ logDir: `${logDir}/control-plane`, quiet: true }),
    startRegistry(),
  ]);
  let fleet: Fleet | undefined;
  let controller: ManagedProcess | undefined;
  const standbys: ManagedProcess[] = [];
  let invariantWatch: InvariantWatch | undefined;
  try {
    const repository = `${registry.host}/bootc/os`;
    const v1 = await registry.pushImage({ repository: "bootc/os", tag: "v1", version: "1.0" });
    const v2 = await registry.pushImage({ repository: "bootc/os", tag: "v2", version: "2.0" });
    await registry.tagExisting("bootc/os", "v1", "stable");
    const images: StackImages = {
      repository,
      v1: { tag: "v1", digest: v1.digest, ref: `${repository}:v1` },
      v2: { tag: "v2", digest: v2.digest, ref: `${repository}:v2` },
    };

    for await (const entry of Deno.readDir(CRDS)) await cp.applyYaml(`${CRDS}${entry.name}`);
    await cp.applyYaml(`${MANIFESTS}namespace.yaml`);
    for (const file of ["controller-rbac.yaml", "daemon-rbac.yaml", "admission-policy.yaml"]) {
      await cp.applyYaml(`${MANIFESTS}${file}`);
    }

    const tracker = new InvariantTracker({ limits: options.limits ?? {} });
    invariantWatch = watchInvariants(cp.client, tracker);
    const tokenKubeconfig = async (serviceAccount: string, node?: string) => {
      if (!leastPrivilege) return cp.kubeconfigPath;
      const token = await cp.mintToken({
        namespace: OPERATOR_NAMESPACE,
        serviceAccount,
        boundObject: node ? { kind: "Node", name: node } : undefined,
        expirationSeconds: 24 * 3600,
      });
      return cp.kubeconfigForToken(token);
    };
    fleet = new Fleet({
      controlPlane: cp,
      daemonCommand: executables.daemon,
      logDir,
      tracker,
      rebootDelayMs: options.rebootDelayMs,
      kubeconfigFor: (node) => tokenKubeconfig("bootc-operator-daemon", node),
      daemonArgs: options.daemonArgs,
      onEvent: options.onFleetEvent,
    });
    fleet.start();

    const controllerKubeconfig = await tokenKubeconfig("bootc-operator-controller");
    const controllerMetricsPort = freePort();
    let controllerStarts = 0;
    const launchController = (metricsPort: number) => {
      const [command, ...prefix] = executables.controller;
      controllerStarts++;
      return startProcess({
        name: "controller",
        command,
        args: [
          ...prefix,
          "--kubeconfig",
          controllerKubeconfig,
          "--namespace",
          OPERATOR_NAMESPACE,
          "--metrics-addr",
          `127.0.0.1:${metricsPort}`,
          "--registry-poll-interval",
          "2s",
          "--insecure-registry",
          registry.host,
          ...(options.controllerArgs ?? []),
        ],
        logPath: `${logDir}/controller-${controllerStarts}.log`,
      });
    };
    const stack: Stack = {
      cp,
      registry,
      fleet,
      tracker,
      images,
      logDir,
      controllerMetricsPort,
      get controller() {
        return controller;
      },
      async startController() {
        if (controller?.running) await controller.stop({ graceMs: 0 });
        controller = launchController(controllerMetricsPort);
        return controller;
      },
      startStandbyController() {
        const metricsPort = freePort();
        const process = launchController(metricsPort);
        standbys.push(process);
        return Promise.resolve({ process, metricsPort });
      },
      async killController() {
        await controller?.stop({ graceMs: 0 });
      },
      async createPool(name, spec) {
        const pool = {
          apiVersion: API_VERSION,
          kind: POOL.kind,
          metadata: { name },
          spec: { nodeSelector: {}, ...spec },
        } as unknown as BootcNodePool;
        return await cp.client.resource<BootcNodePool>(Resources.bootcNodePools).create(pool);
      },
      apiWrites: () => apiWrites(cp),
      async stop(stopOptions = {}) {
        await invariantWatch?.stop();
        await Promise.all([controller, ...standbys].map((p) => p?.stop({ graceMs: 2000 })));
        await fleet?.stop();
        await Promise.allSettled([cp.stop(), registry.stop()]);
        if (ownsLogDir && !stopOptions.keepLogs) {
          await Deno.remove(logDir, { recursive: true }).catch(() => {});
        }
      },
    };
    if (options.startController ?? true) await stack.startController();
    return stack;
  } catch (error) {
    await invariantWatch?.stop();
    await controller?.stop({ graceMs: 0 });
    await fleet?.stop();
    await Promise.allSettled([cp.stop(), registry.stop()]);
    throw error;
  }
}

/**
 * Write requests the API server has served, by resource, summed from
 * `apiserver_request_total` (verbs POST, PUT, PATCH, DELETE; our resources and
 * the core ones the operator touches).
 */
export async function apiWrites(
  cp: ControlPlane,
): Promise<{ total: number; byResource: Record<string, number> }> {
  const res = await cp.client.transport.request({ method: "GET", path: "/metrics" });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET /metrics: HTTP ${res.status}: ${text.slice(0, 200)}`);
  const byResource: Record<string, number> = {};
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (!["POST", "PUT", "PATCH", "DELETE"].includes(labels.verb)) continue;
    if (!["bootcnodes", "bootcnodepools", "nodes", "pods", "events"].includes(labels.resource)) {
      continue;
    }
    // kwok and the harness write Node and Pod status (heartbeats, readiness) and delete
    // evicted pods: not the operator's writes. The operator's pod writes are evictions.
    if (
      (labels.resource === "nodes" || labels.resource === "pods") && labels.subresource === "status"
    ) {
      continue;
    }
    if (labels.resource === "pods" && labels.subresource !== "eviction") continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    const key = `${labels.resource}${labels.subresource ? "/" + labels.subresource : ""}`;
    byResource[key] = (byResource[key] ?? 0) + value;
    total += value;
  }
  return { total, byResource };
}
