/**
 * A real node for the test bed: containerd (with Debian's runc) and a kubelet of the control
 * plane's Kubernetes version, on loopback, registered with a test control plane
 * (tests/harness/control_plane.ts). Binaries and images come from tests/node/build.sh (cached).
 *
 * ```ts
 * const cp = await startControlPlane({ kwok: false });
 * const node = await startRealNode({ controlPlane: cp });
 * try {
 *   // schedule pods on node.name, image BUSYBOX_IMAGE (imagePullPolicy: Never); they get
 *   // addresses from the node's bridge and reach the API server at the kubernetes Service.
 *   // node.exposeToNode({ name: "registry", port }) makes a port of this machine reachable
 *   // from them at NODE_IP:port; node.installHost(host) puts a simulated bootc host in it;
 *   // node.reboot({ during: () => host.reboot() }) reboots it.
 * } finally {
 *   await node.stop();
 *   await cp.stop();
 * }
 * ```
 *
 * The node is a host of its own: pid, mount and network namespaces held by its init
 * (tests/node/node_namespaces.ts). Pods get addresses from a CNI bridge and reach the API server
 * through the `kubernetes` Service; a hostPID pod's `/proc/1` is the node's init, whose mount
 * namespace holds the simulated host's `bootc` once {@linkcode RealNode.installHost} ran.
 *
 * Everything lives in one temp folder (containerd's root, state, socket and runc root, the
 * kubelet's root, certificates, pod logs) and one cgroup per hierarchy, never in
 * /var/lib/containerd or /var/lib/kubelet; `/run`, `/var/log` and `/var/lib/cni` are the node's
 * own tmpfs. One exception of the upstream programs, undone by stop(): six kernel settings the
 * kubelet sets at start ({@linkcode KUBELET_KERNEL_SETTINGS}). stop() ends the node's init (the
 * kernel kills every process of the node with it, and its mounts go with its mount namespace) and
 * removes its cgroups (tests/node/host_sweep.ts). The init dies with the test process
 * (`setpriv --pdeathsig`, `unshare --kill-child`). Relaxations against a production node:
 * tests/node/real_node_config.ts.
 *
 * @module
 */

import { dirname } from "node:path";
import { type KubeObject, Resources } from "../../lib/kube/mod.ts";
import type { IClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import type { CommandResult, ControlPlane, Node } from "../harness/control_plane.ts";
import { renderKubeconfig } from "../harness/control_plane_args.ts";
import { issueLeaf } from "../harness/pki.ts";
import { freePort, type ManagedProcess, startProcess, tailFile } from "../harness/process.ts";
import { waitFor } from "../harness/wait.ts";
import type { SimulatedHost } from "../bootc_sim/mod.ts";
import { installHostCommands } from "./host_namespace.ts";
import { cachedBuildOutput } from "../harness/cached_build.ts";
import { sweepNode } from "./host_sweep.ts";
import { type NodeNamespaces, runCommand, startNodeNamespaces } from "./node_namespaces.ts";
import {
  cniConfig,
  containerdConfig,
  kubeletArgs,
  kubeletConfig,
  NODE_IP,
  type NodeLayout,
  nodePaths,
  SERVICE_IP,
} from "./real_node_config.ts";

/** Version of the images tests/node/build.sh makes (its `images_version`). */
const IMAGES_VERSION = 1;
/** The pod sandbox image (tests/node/pause.c), imported at start. */
export const PAUSE_IMAGE = `bootc-test.local/pause:${IMAGES_VERSION}`;
/** A busybox image (entrypoint /bin/sh), imported at start; use `imagePullPolicy: Never`. */
export const BUSYBOX_IMAGE = `bootc-test.local/busybox:${IMAGES_VERSION}`;

/** Options of {@linkcode startRealNode}. */
export interface StartRealNodeOptions {
  controlPlane: ControlPlane;
  /**
   * Node name (default "localhost"). The test API server reaches kubelets by their Hostname
   * address first (its default `--kubelet-preferred-address-types`), which is the node name:
   * "localhost", or a loopback address such as "127.0.0.2" for a second node (its kubelet is
   * then reached there), keeps `kubectl logs`/`exec` working.
   */
  name?: string;
  /** Folder with the node's binaries (default: `BOOTC_NODE_BIN_DIR`, else tests/node/build.sh). */
  binDir?: string;
  /** The control plane CA's key (default: `ca.key` beside its `caCertPath`). */
  caKeyPath?: string;
  /** More OCI image archives to import into containerd (namespace k8s.io) before the kubelet starts. */
  images?: string[];
  /** Keep containerd's and the kubelet's logs here (default: under `BOOTC_TEST_LOG_DIR` when set, else removed by stop()). */
  logDir?: string;
  /** Give up waiting for the Node to be Ready after this long (default 120 s). */
  readyTimeoutMs?: number;
}

/** A running real node. */
export interface RealNode {
  readonly name: string;
  /** The node's temp folder (removed by stop()). */
  readonly dir: string;
  readonly binDir: string;
  /** containerd's socket (for `ctr --address`). */
  readonly containerdSocket: string;
  /** The node's init as this machine sees it (PID 1 of the node). */
  readonly initPid: number;
  /** Runs ctr against this node's containerd in namespace k8s.io (never throws on exit codes). */
  ctr(args: string[]): Promise<CommandResult>;
  /** Imports an OCI image archive into the CRI's namespace. */
  importImage(archivePath: string): Promise<void>;
  /** Installs `host`'s `bootc` and `systemctl` in the node's host (tests/node/host_namespace.ts). */
  installHost(host: SimulatedHost): Promise<void>;
  /** Runs `argv` in the node's mount and network namespaces (never throws on an exit code). */
  runInHost(argv: string[]): Promise<CommandResult>;
  /** Makes `port` of this machine's loopback reachable inside the node at `NODE_IP:port`. */
  exposeToNode(options: { name: string; port: number }): Promise<void>;
  /**
   * Reboots the node: ends every process of it (as a power cut would: containers, shims,
   * containerd, kubelet), forgets what lives in `/run` (containerd's state, runc's), runs `during`
   * while it is down (the simulated host's own reboot), then boots it again: namespaces,
   * forwards, the host's commands, containerd and the kubelet, which restarts the pods bound to
   * the node. Resolves once the kubelet reports Ready again.
   */
  reboot(options?: { during?: () => Promise<unknown>; readyTimeoutMs?: number }): Promise<void>;
  /** How many times {@linkcode RealNode.reboot} ran. */
  readonly reboots: number;
  /** The last lines of containerd's or the kubelet's log. */
  logTail(component: "containerd" | "kubelet", lines?: number): Promise<string>;
  /** Stops the kubelet, the containers and containerd; undoes mounts and cgroups; removes the Node. */
  stop(): Promise<void>;
}

/** Made for the node's private tmpfs when missing (CNI's cache folder); removed by stop(). */
const CNI_CACHE_DIR = "/var/lib/cni";

const BUILD_SCRIPT = new URL("./build.sh", import.meta.url).pathname;

/** The folder with the node's binaries: `BOOTC_NODE_BIN_DIR`, else tests/node/build.sh's last line. */
export async function resolveNodeBinDir(): Promise<string> {
  return await cachedBuildOutput({ script: BUILD_SCRIPT, override: "BOOTC_NODE_BIN_DIR" });
}

function note(message: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(`[real-node] ${message}\n`));
}

/** A signal aborted (naming the log) when `process` exits: stops waiting for it early. */
function abortOnExit(process: ManagedProcess): AbortSignal {
  const controller = new AbortController();
  process.exited.then((s) =>
    controller.abort(new Error(`${process.name} exited (code ${s.code}); log: ${process.logPath}`))
  );
  return controller.signal;
}

class KubeletNode implements RealNode {
  readonly name: string;
  readonly dir: string;
  readonly binDir: string;
  readonly containerdSocket: string;
  #layout: NodeLayout;
  #cp: ControlPlane;
  #ns?: NodeNamespaces;
  #containerd?: ManagedProcess;
  #kubelet?: ManagedProcess;
  #stopping?: Promise<void>;
  /** Whether this node counts in {@linkcode machineState} (released once, by stop()). */
  #holdsMachineState = false;
  /** Made again at every boot: the ports exposed to the node, the host installed in it. */
  #exposed: { name: string; port: number }[] = [];
  #host?: SimulatedHost;
  reboots = 0;

  constructor(layout: NodeLayout, cp: ControlPlane) {
    this.#layout = layout;
    this.#cp = cp;
    this.name = layout.name;
    this.dir = layout.dir;
    this.binDir = layout.binDir;
    this.containerdSocket = nodePaths(layout).containerdSocket;
  }

  get initPid() {
    return this.#ns?.initPid ?? 0;
  }

  async installHost(host: SimulatedHost): Promise<void> {
    await installHostCommands({
      host,
      layerDir: `${this.dir}/host-bin`,
      run: (argv) => this.runInHost(argv),
    });
    this.#host = host;
  }

  runInHost(argv: string[]): Promise<CommandResult> {
    if (!this.#ns) throw new Error(`node ${this.name} has not started`);
    return this.#ns.run(argv);
  }

  async exposeToNode(options: { name: string; port: number }): Promise<void> {
    await this.#expose(options);
    this.#exposed.push(options);
  }

  async #expose(options: { name: string; port: number }): Promise<void> {
    if (!this.#ns) throw new Error(`node ${this.name} has not started`);
    await this.#ns.forward({
      name: options.name,
      listenIn: "node",
      listen: { host: NODE_IP, port: options.port },
      connect: { host: "127.0.0.1", port: options.port },
    });
  }

  ctr(args: string[]): Promise<CommandResult> {
    return runCommand(
      `${this.binDir}/ctr`,
      ["--address", this.containerdSocket, "--namespace", "k8s.io", ...args],
      120_000,
    );
  }

  async importImage(archivePath: string): Promise<void> {
    const r = await this.ctr(["images", "import", "--platform", "linux/amd64", archivePath]);
    if (r.code !== 0) throw new Error(`ctr images import ${archivePath}: ${r.stderr || r.stdout}`);
  }

  logTail(component: "containerd" | "kubelet", lines = 40): Promise<string> {
    return tailFile(`${nodePaths(this.#layout).logDir}/${component}.log`, lines);
  }

  /**
   * Starts the node's namespaces and the connections across them: the kubelet and pods reach
   * the API server (at its own address, and at the `kubernetes` Service's), the API server
   * reaches the kubelet.
   */
  async startNamespaces(): Promise<void> {
    const p = nodePaths(this.#layout);
    await Deno.mkdir(p.logDir, { recursive: true });
    if (!this.#holdsMachineState) {
      await acquireMachineState();
      this.#holdsMachineState = true;
    }
    this.#ns = await startNodeNamespaces({
      initPath: `${this.binDir}/node-init`,
      dir: this.dir,
      logDir: p.logDir,
    });
    const api = new URL(this.#cp.apiServerUrl);
    const apiPort = Number(api.port);
    const local = (port: number) => ({ host: "127.0.0.1", port });
    await this.#ns.forward({
      name: "api",
      listenIn: "node",
      listen: local(apiPort),
      connect: local(apiPort),
    });
    await this.#ns.forward({
      name: "service",
      listenIn: "node",
      listen: { host: SERVICE_IP, port: 443 },
      connect: local(apiPort),
    });
    const kubeletPort = this.#layout.kubeletPort;
    await this.#ns.forward({
      name: "kubelet",
      listenIn: "machine",
      listen: { host: kubeletAddress(this.name), port: kubeletPort },
      connect: local(kubeletPort),
    });
  }

  /** Writes configs and credentials, creates the cgroup root, starts containerd, imports images. */
  async startContainerd(images: string[]): Promise<void> {
    const p = nodePaths(this.#layout);
    for (const d of [p.cniConfDir, p.podLogsDir, p.volumePluginDir]) {
      await Deno.mkdir(d, { recursive: true });
    }
    await Deno.writeTextFile(p.containerdConfig, containerdConfig(this.#layout));
    await Deno.writeTextFile(`${p.cniConfDir}/10-bootc-test.conflist`, cniConfig());
    this.#containerd = startProcess({
      name: "containerd",
      ...this.#ns!.enterArgs([
        `${this.binDir}/containerd`,
        "--config",
        p.containerdConfig,
        "--log-level",
        "warn",
      ]),
      logPath: `${p.logDir}/containerd.log`,
      // The shim is found on PATH.
      env: { PATH: `${this.binDir}:${Deno.env.get("PATH") ?? "/usr/sbin:/usr/bin:/sbin:/bin"}` },
    });
    await waitFor(async () => (await this.ctr(["version"])).code === 0, {
      timeoutMs: 60_000,
      intervalMs: 100,
      message: "containerd to answer on its socket",
      signal: abortOnExit(this.#containerd),
    });
    for (const image of images) await this.importImage(image);
  }

  /** Issues the node's client certificate and RBAC, writes the kubelet's config (once per node). */
  async prepareKubelet(caKeyPath: string): Promise<void> {
    const p = nodePaths(this.#layout);
    await Deno.mkdir(p.kubeletCertDir, { recursive: true });
    await createCgroupRoot(this.#layout.cgroupRoot);
    const client = await issueLeaf({
      dir: p.kubeletCertDir,
      name: "kubelet-client",
      profile: {
        commonName: `system:node:${this.name}`,
        organizations: ["system:nodes"],
        extendedKeyUsage: ["clientAuth"],
      },
      days: 2,
      ca: { cert: this.#cp.caCertPath, key: caKeyPath },
    });
    await Deno.writeTextFile(
      p.kubeletKubeconfig,
      renderKubeconfig({
        server: this.#cp.apiServerUrl,
        caPem: await Deno.readTextFile(this.#cp.caCertPath),
        clientCertPem: await Deno.readTextFile(client.cert),
        clientKeyPem: await Deno.readTextFile(client.key),
        userName: `system:node:${this.name}`,
      }),
      { mode: 0o600 },
    );
    await this.#bindNodeRole();
    await Deno.writeTextFile(p.kubeletConfig, kubeletConfig(this.#layout));
  }

  /** Starts the kubelet and waits until it reports Ready (a heartbeat from `since` on). */
  async runKubelet(readyTimeoutMs: number, since = new Date(0)): Promise<void> {
    const p = nodePaths(this.#layout);
    this.#kubelet = startProcess({
      name: "kubelet",
      ...this.#ns!.enterArgs([`${this.binDir}/kubelet`, ...kubeletArgs(this.#layout)]),
      logPath: `${p.logDir}/kubelet.log`,
    });
    await this.#waitReady(readyTimeoutMs, since);
  }

  async reboot(
    options: { during?: () => Promise<unknown>; readyTimeoutMs?: number } = {},
  ): Promise<void> {
    if (this.#stopping) throw new Error(`node ${this.name} is stopping`);
    await this.#ns?.stop();
    await Promise.all([this.#kubelet?.exited, this.#containerd?.exited]);
    // Heartbeats carry whole seconds: one from the next whole second on is the new boot's.
    const since = new Date(Math.ceil(Date.now() / 1000) * 1000);
    const p = nodePaths(this.#layout);
    // What a real node keeps in /run (a tmpfs) is gone after a reboot.
    for (const d of [p.containerdState, p.runcRoot]) {
      await Deno.remove(d, { recursive: true }).catch(() => {});
    }
    await options.during?.();
    await this.startNamespaces();
    for (const e of this.#exposed) await this.#expose(e);
    if (this.#host) await this.installHost(this.#host);
    await this.startContainerd([]);
    await this.runKubelet(options.readyTimeoutMs ?? 120_000, since);
    this.reboots++;
  }

  /**
   * The test API server authorizes by RBAC only (no Node authorizer), so the node's user gets the
   * `system:node` ClusterRole, which is what the Node authorizer would allow and more.
   */
  async #bindNodeRole(): Promise<void> {
    await this.#cp.client.resource<IClusterRoleBinding & KubeObject>(Resources.clusterrolebindings)
      .create({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: `bootc-test-node-${this.name}` },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "system:node",
        },
        subjects: [{
          apiGroup: "rbac.authorization.k8s.io",
          kind: "User",
          name: `system:node:${this.name}`,
        }],
      });
  }

  async #waitReady(timeoutMs: number, since: Date): Promise<void> {
    const nodes = this.#cp.client.resource<Node>(Resources.nodes);
    let last: Node | undefined;
    await waitFor(async () => {
      last = await nodes.get(this.name).catch(() => undefined);
      return last?.status?.conditions?.some((c) =>
        c.type === "Ready" && c.status === "True" &&
        Date.parse(c.lastHeartbeatTime ?? "") >= since.getTime()
      );
    }, {
      timeoutMs,
      intervalMs: 250,
      message: () =>
        `node ${this.name} Ready; conditions: ${
          JSON.stringify(last?.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.message}`))
        }`,
      signal: abortOnExit(this.#kubelet!),
    }).catch(async (e) => {
      throw new Error(`${e}\nkubelet log tail:\n${await this.logTail("kubelet", 40)}`);
    });
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    // Every step runs even when an earlier one failed; the failures are reported together.
    const problems: string[] = [];
    const attempt = async (what: string, step: () => Promise<unknown>) => {
      await step().catch((e) => problems.push(`${what}: ${e}`));
    };
    // Ending the init ends every process of the node (kubelet, containerd, shims, containers)
    // at once, so no kubelet restarts a container that is being removed.
    await attempt("end the node's init", async () => await this.#ns?.stop());
    await attempt("wait for the node's processes", async () => {
      await Promise.all([this.#kubelet?.exited, this.#containerd?.exited]);
    });
    await attempt("sweep", async () => {
      problems.push(...await sweepNode({ dir: this.dir, cgroupRoot: this.#layout.cgroupRoot }));
    });
    if (this.#holdsMachineState) {
      this.#holdsMachineState = false;
      await attempt("put back the machine's state", releaseMachineState);
    }
    await attempt("delete the Node", () => this.#forgetInApi());
    if (problems.length) {
      // Keep the folder: something in it is still mounted or in use.
      throw new Error(`real node ${this.name} left behind:\n${problems.join("\n")}`);
    }
    await Deno.remove(this.dir, { recursive: true });
  }

  /** Removes the Node and its role binding while the control plane still runs (best effort). */
  async #forgetInApi(): Promise<void> {
    const attempts = [
      this.#cp.client.resource(Resources.nodes).delete(this.name),
      this.#cp.client.resource(Resources.clusterrolebindings).delete(
        `bootc-test-node-${this.name}`,
      ),
    ];
    await Promise.allSettled(attempts);
  }
}

/** Where the API server reaches a node's kubelet: its name when that is a loopback address. */
export function kubeletAddress(name: string): string {
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) ? name : "127.0.0.1";
}

/** Creates `cgroupRoot` in every v1 hierarchy; a new cpuset cgroup gets its parent's cpus and mems. */
async function createCgroupRoot(cgroupRoot: string): Promise<void> {
  for await (const e of Deno.readDir("/sys/fs/cgroup")) {
    const base = `/sys/fs/cgroup/${e.name}`;
    if (!e.isDirectory || e.name === "unified") continue;
    try {
      await Deno.stat(`${base}/cgroup.procs`);
    } catch {
      continue; // not a hierarchy (or a link to a co-mounted one)
    }
    await Deno.mkdir(`${base}${cgroupRoot}`, { recursive: true });
    if (e.name === "cpuset") {
      for (const f of ["cpuset.cpus", "cpuset.mems"]) {
        const value = await Deno.readTextFile(`${base}/${f}`);
        await Deno.writeTextFile(`${base}${cgroupRoot}/${f}`, value);
      }
    }
  }
}

function logDirFor(options: StartRealNodeOptions): string | undefined {
  if (options.logDir) return options.logDir;
  const root = Deno.env.get("BOOTC_TEST_LOG_DIR");
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return root ? `${root}/real-node-${stamp}-${Deno.pid}` : undefined;
}

/**
 * Kernel settings the kubelet sets at start-up unless `protectKernelDefaults` (which would make
 * it refuse to start on this machine instead): machine-wide, so stop() puts them back.
 */
export const KUBELET_KERNEL_SETTINGS = [
  "vm/overcommit_memory",
  "vm/panic_on_oom",
  "kernel/panic",
  "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys",
  "kernel/keys/root_maxbytes",
] as const;

/**
 * What the nodes of this process change on the machine as a whole: saved when the first node
 * starts, put back when the last one stops, whatever the order they stop in (a second node
 * would otherwise save the first kubelet's values, and removing /var/lib/cni under a running
 * node detaches its private copy). Test files that run real nodes at the same time (workers of
 * a parallel `deno test`, or other processes) take turns: the first node of a process takes
 * {@linkcode MACHINE_LOCK_PATH} (an exclusive flock) before saving, the last releases it after
 * putting things back, so one process's nodes never see another's restore.
 */
const machineState = {
  nodes: 0,
  /** The lock and the saved state, once the first node of this process has them. */
  held: undefined as Promise<HeldMachineState> | undefined,
};

interface HeldMachineState {
  lock: Deno.FsFile;
  kernelSettings: Map<string, string>;
  /** Whether /var/lib/cni existed before the first node (each node mounts its own over it). */
  hadCniCache: boolean;
}

/** The machine-wide lock file of real nodes (see {@linkcode machineState}). */
export const MACHINE_LOCK_PATH = "/tmp/bootc-operator-real-nodes.lock";

async function holdMachineState(): Promise<HeldMachineState> {
  const lock = await Deno.open(MACHINE_LOCK_PATH, { create: true, write: true });
  try {
    const waitStarted = performance.now();
    await lock.lock(true);
    const waited = performance.now() - waitStarted;
    if (waited > 1_000) note(`waited ${Math.round(waited / 1000)} s for another test's real nodes`);
    return {
      lock,
      kernelSettings: await readKernelSettings(),
      hadCniCache: await Deno.stat(CNI_CACHE_DIR).then(() => true, () => false),
    };
  } catch (error) {
    lock.close();
    throw error;
  }
}

/** Counts a node of this process in; the first takes the machine lock and saves the state. */
export async function acquireMachineState(): Promise<void> {
  machineState.nodes++;
  machineState.held ??= holdMachineState();
  try {
    await machineState.held;
  } catch (error) {
    machineState.nodes--;
    if (machineState.nodes === 0) machineState.held = undefined;
    throw error;
  }
  await Deno.mkdir(CNI_CACHE_DIR, { recursive: true });
}

/** Counts a node out; the last puts the machine's state back and releases the lock. */
export async function releaseMachineState(): Promise<void> {
  machineState.nodes--;
  if (machineState.nodes > 0 || !machineState.held) return;
  // Cleared before any await: a node starting meanwhile takes the lock afresh (and waits for it).
  const holding = machineState.held;
  machineState.held = undefined;
  const held = await holding;
  try {
    await restoreKernelSettings(held.kernelSettings);
    // Only when empty (non-recursive).
    if (!held.hadCniCache) await Deno.remove(CNI_CACHE_DIR).catch(() => {});
  } finally {
    held.lock.close(); // Closing the only descriptor releases the flock.
  }
}

async function readKernelSettings(): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  for (const key of KUBELET_KERNEL_SETTINGS) {
    values.set(key, (await Deno.readTextFile(`/proc/sys/${key}`)).trim());
  }
  return values;
}

async function restoreKernelSettings(values: Map<string, string> | undefined): Promise<void> {
  for (const [key, value] of values ?? []) {
    const now = (await Deno.readTextFile(`/proc/sys/${key}`)).trim();
    if (now !== value) await Deno.writeTextFile(`/proc/sys/${key}`, `${value}\n`);
  }
}

/**
 * Starts containerd and a kubelet registered with `options.controlPlane`, and resolves once the
 * Node is Ready. On failure it prints the logs' tails, cleans up and rethrows.
 */
export async function startRealNode(options: StartRealNodeOptions): Promise<RealNode> {
  const binDir = options.binDir ?? await resolveNodeBinDir();
  const cp = options.controlPlane;
  const dir = await Deno.makeTempDir({ prefix: "bootc-real-node-" });
  const layout: NodeLayout = {
    dir,
    name: options.name ?? "localhost",
    binDir,
    cgroupRoot: `/${dir.split("/").at(-1)}`,
    kubeletPort: freePort(),
    sandboxImage: PAUSE_IMAGE,
    logDir: logDirFor(options),
  };
  const node = new KubeletNode(layout, cp);
  const started = performance.now();
  try {
    await node.startNamespaces();
    await node.startContainerd([
      `${binDir}/pause-${IMAGES_VERSION}.oci.tar`,
      `${binDir}/busybox-${IMAGES_VERSION}.oci.tar`,
      ...(options.images ?? []),
    ]);
    const caKey = options.caKeyPath ?? `${dirname(cp.caCertPath)}/ca.key`;
    await node.prepareKubelet(caKey);
    await node.runKubelet(options.readyTimeoutMs ?? 120_000);
    note(`${layout.name} Ready in ${Math.round(performance.now() - started)} ms; folder ${dir}`);
    return node;
  } catch (error) {
    for (const c of ["containerd", "kubelet"] as const) {
      note(`${c} log tail:\n${await node.logTail(c, 30)}`);
    }
    await node.stop().catch((e) => note(`cleanup failed: ${e}`));
    throw error;
  }
}
