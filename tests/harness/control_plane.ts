/**
 * A real Kubernetes control plane for tests and the demo: etcd,
 * kube-apiserver, kube-controller-manager, kube-scheduler and kwok (fake
 * nodes and a fake kubelet) on free loopback ports, with generated PKI.
 *
 * A test file starts one control plane and runs its cases as `t.step`s:
 *
 * ```ts
 * Deno.test("suite", async (t) => {
 *   const cp = await startControlPlane();
 *   try {
 *     await t.step("case", async () => { await cp.createNode("n1"); });
 *   } finally {
 *     await cp.stop();
 *   }
 * });
 * ```
 *
 * Binaries come from `tests/kube/build.sh` (built once and cached), or from
 * `options.binDir` / `BOOTC_KUBE_BIN_DIR`. Logs go to `options.logDir`, or a
 * fresh folder under `BOOTC_TEST_LOG_DIR` when set; otherwise they live in the
 * temp folder and disappear with stop().
 *
 * @module
 */

import {
  isNotFound,
  KubeClient,
  type KubeObject,
  loadKubeConfig,
  Resources,
} from "../../lib/kube/mod.ts";
import type { INode } from "kubernetes-models/v1/Node";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { INamespace } from "kubernetes-models/v1/Namespace";
import type { IServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { IDaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import {
  apiServerArgs,
  apiServerUrl,
  controllerManagerArgs,
  type ControlPlaneLayout,
  DEFAULT_CONTROLLERS,
  etcdArgs,
  etcdUrl,
  renderKubeconfig,
  schedulerArgs,
} from "./control_plane_args.ts";
import {
  FAST_POD_ANNOTATIONS,
  KWOK_MANAGED_ANNOTATION,
  KWOK_MANAGED_VALUE,
  kwokArgs,
  kwokStageFiles,
  NOT_READY_ANNOTATION,
} from "./kwok.ts";
import { cachedBuildOutput } from "./cached_build.ts";
import { generatePki } from "./pki.ts";
import { freePort, type ManagedProcess, startProcess, tailFile } from "./process.ts";
import { waitFor } from "./wait.ts";

/** Kubernetes objects as the harness passes them around (wire types plus our metadata contract). */
export type Node = INode & KubeObject;
/** A Pod. */
export type Pod = IPod & KubeObject;
/** A Namespace. */
export type Namespace = INamespace & KubeObject;
/** A PodDisruptionBudget. */
export type PodDisruptionBudget = IPodDisruptionBudget & KubeObject;
/** A DaemonSet. */
export type DaemonSet = IDaemonSet & KubeObject;

/** Options of {@linkcode startControlPlane}. */
export interface StartControlPlaneOptions {
  /** Run kwok to simulate nodes and their kubelets (default true). */
  kwok?: boolean;
  /** Run kube-controller-manager (default true). */
  controllerManager?: boolean;
  /** Controllers of kube-controller-manager (default {@linkcode DEFAULT_CONTROLLERS}). */
  controllers?: readonly string[];
  /** Run kube-scheduler (default true). */
  scheduler?: boolean;
  /** Keep process logs here (created; not removed by stop()). */
  logDir?: string;
  /** Folder with the binaries (default: `BOOTC_KUBE_BIN_DIR`, else tests/kube/build.sh's output). */
  binDir?: string;
  /** Give up starting after this long (default 90 s). */
  startTimeoutMs?: number;
  /** Do not print the startup line on stderr. */
  quiet?: boolean;
  /** Parent of the control plane's folder (default: the system's temp folder). */
  tmpDir?: string;
}

/** Result of {@linkcode ControlPlane.kubectl}. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@linkcode ControlPlane.createNode}. */
export interface CreateNodeOptions {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  unschedulable?: boolean;
  /** Wait until Ready (default true); false makes the node NotReady after it first became Ready. */
  ready?: boolean;
}

/** Options of {@linkcode ControlPlane.createPod}. */
export interface CreatePodOptions {
  nodeName: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /**
   * Makes it a DaemonSet pod: the pod is created, then DaemonSet
   * `ownerDaemonSet` (created if missing, `updateStrategy: OnDelete`) is made
   * to select its node, so the real DaemonSet controller adopts it (controller
   * ownerReference) instead of creating a second pod there.
   */
  ownerDaemonSet?: string;
  /** Makes it a static pod's mirror (annotation `kubernetes.io/config.mirror`, owned by the Node). */
  mirror?: boolean;
  /** Default 1, so kwok finishes deletions within about a second. */
  terminationGracePeriodSeconds?: number;
  /** Wait until the pod is Running (default true). */
  waitRunning?: boolean;
}

/** Options of {@linkcode ControlPlane.createPdb}. */
export interface CreatePdbOptions {
  /** `matchLabels` of the selector. */
  selector: Record<string, string>;
  minAvailable?: number | string;
  maxUnavailable?: number | string;
}

/** Options of {@linkcode ControlPlane.mintToken}. */
export interface MintTokenOptions {
  namespace: string;
  serviceAccount: string;
  /** Binds the token to an object; the uid is looked up when omitted. */
  boundObject?: { kind: "Node" | "Pod"; name: string; namespace?: string; uid?: string };
  /** Minimum 600 (API server rule); default one hour. */
  expirationSeconds?: number;
  audiences?: string[];
}

/** The names of the processes a control plane may run. */
export type ComponentName =
  | "etcd"
  | "kube-apiserver"
  | "kube-controller-manager"
  | "kube-scheduler"
  | "kwok";

/** A running control plane. */
export interface ControlPlane {
  /** Admin kubeconfig (client certificate in `system:masters`). */
  readonly kubeconfigPath: string;
  /** Admin client (lib/kube). */
  readonly client: KubeClient;
  /** Folder with the binaries. */
  readonly binDir: string;
  /** e.g. https://127.0.0.1:40123 */
  readonly apiServerUrl: string;
  /** e.g. http://127.0.0.1:40125 */
  readonly etcdUrl: string;
  /** CA certificate (PEM file) the API server's certificate chains to. */
  readonly caCertPath: string;
  /** Milliseconds from the call to startControlPlane until the control plane was usable. */
  readonly startupMs: number;
  /** Log file of each started component. */
  readonly logPaths: Partial<Record<ComponentName, string>>;
  /** Process id of each started component (the latest one after a restart). */
  readonly pids: Partial<Record<ComponentName, number>>;
  /** The last lines of a component's log. */
  logTail(component: ComponentName, lines?: number): Promise<string>;
  /** Runs kubectl against this control plane (never throws on a non-zero exit). */
  kubectl(args: string[], options?: { stdin?: string }): Promise<CommandResult>;
  /** Creates a kwok-managed fake node and waits until it is Ready (or NotReady, see options). */
  createNode(name: string, options?: CreateNodeOptions): Promise<Node>;
  /** Makes a fake node Ready or NotReady (kwok holds it there) and waits for the condition. */
  setNodeReady(name: string, ready: boolean): Promise<Node>;
  /** Deletes a node and waits until it is gone. */
  deleteNode(name: string): Promise<void>;
  /** Creates a pod bound to a node (no scheduler involved) and waits until it is Running. */
  createPod(namespace: string, name: string, options: CreatePodOptions): Promise<Pod>;
  /** Creates a PodDisruptionBudget and waits until the disruption controller has computed its status. */
  createPdb(
    namespace: string,
    name: string,
    options: CreatePdbOptions,
  ): Promise<PodDisruptionBudget>;
  /** Creates a namespace and waits for its default service account. */
  createNamespace(name: string): Promise<Namespace>;
  /** Issues a service-account token through the TokenRequest API. */
  mintToken(options: MintTokenOptions): Promise<string>;
  /** Writes a kubeconfig that authenticates with `token`; returns its path. */
  kubeconfigForToken(token: string): Promise<string>;
  /** Server-side applies one or more YAML documents (a file path or the text itself). */
  applyYaml(pathOrText: string): Promise<string>;
  /** Stops kube-apiserver and starts it again on the same port; resolves once it is ready. */
  restartApiServer(): Promise<void>;
  /** Compacts etcd up to its current revision; returns that revision. */
  compactEtcd(): Promise<number>;
  /** Stops every process, waits for them to exit and removes the temp folder. */
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

function note(message: string): void {
  Deno.stderr.writeSync(encoder.encode(`[control-plane] ${message}\n`));
}

/** The repository's build script. */
const BUILD_SCRIPT = new URL("../kube/build.sh", import.meta.url).pathname;

/**
 * The folder with the control plane binaries: `BOOTC_KUBE_BIN_DIR`, else the
 * last stdout line of tests/kube/build.sh (instant when cached; builds once).
 */
export async function resolveBinDir(): Promise<string> {
  return await cachedBuildOutput({ script: BUILD_SCRIPT, override: "BOOTC_KUBE_BIN_DIR" });
}

/** Picks `count` distinct free loopback ports. */
function distinctFreePorts(count: number): number[] {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(freePort());
  return [...ports];
}

/** A signal that aborts (with an error naming the log) when `process` exits: stops waiting for it early. */
function abortOnExit(process: ManagedProcess): AbortSignal {
  const controller = new AbortController();
  process.exited.then((status) =>
    controller.abort(
      new Error(
        `${process.name} exited (code ${status.code}${
          status.signal ? `, ${status.signal}` : ""
        }); log: ${process.logPath}`,
      ),
    )
  );
  return controller.signal;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function nodeReadyStatus(node: Node): string | undefined {
  return node.status?.conditions?.find((c) => c.type === "Ready")?.status;
}

class KubeControlPlane implements ControlPlane {
  readonly kubeconfigPath: string;
  readonly binDir: string;
  readonly apiServerUrl: string;
  readonly etcdUrl: string;
  readonly caCertPath: string;
  readonly logPaths: Partial<Record<ComponentName, string>> = {};
  startupMs = 0;
  #client?: KubeClient;
  #layout: ControlPlaneLayout;
  #logDir: string;
  #options: StartControlPlaneOptions;
  #processes = new Map<ComponentName, ManagedProcess>();
  #tokenFiles = 0;
  #stopping?: Promise<void>;

  constructor(
    binDir: string,
    layout: ControlPlaneLayout,
    logDir: string,
    options: StartControlPlaneOptions,
  ) {
    this.binDir = binDir;
    this.#layout = layout;
    this.#logDir = logDir;
    this.#options = options;
    this.kubeconfigPath = layout.kubeconfigPath;
    this.apiServerUrl = apiServerUrl(layout);
    this.etcdUrl = etcdUrl(layout);
    this.caCertPath = layout.pki.caCert;
  }

  get pids(): Partial<Record<ComponentName, number>> {
    return Object.fromEntries([...this.#processes].map(([name, p]) => [name, p.pid]));
  }

  get client(): KubeClient {
    if (!this.#client) throw new Error("the control plane is not started");
    return this.#client;
  }

  #start(name: ComponentName, args: string[]): ManagedProcess {
    const logPath = `${this.#logDir}/${name}.log`;
    this.logPaths[name] = logPath;
    const process = startProcess({ name, command: `${this.binDir}/${name}`, args, logPath });
    this.#processes.set(name, process);
    return process;
  }

  logTail(component: ComponentName, lines = 40): Promise<string> {
    const path = this.logPaths[component];
    return path ? tailFile(path, lines) : Promise.resolve(`(${component} was not started)`);
  }

  /** Starts everything; on failure prints the logs' tails and cleans up. */
  async boot(started: number): Promise<void> {
    const etcd = this.#start("etcd", etcdArgs(this.#layout));
    await waitFor(async () => {
      const res = await fetch(`${this.etcdUrl}/health`, { signal: AbortSignal.timeout(1000) });
      const body = await res.json() as { health?: string };
      return body.health === "true";
    }, {
      timeoutMs: 20_000,
      intervalMs: 50,
      message: "etcd to be healthy",
      signal: abortOnExit(etcd),
    });
    const etcdMs = performance.now() - started;
    await this.#startApiServer();
    const apiServerMs = performance.now() - started;
    // The rest only need a serving API server; start them together.
    const layout = this.#layout;
    if (this.#options.controllerManager ?? true) {
      this.#start(
        "kube-controller-manager",
        controllerManagerArgs(layout, this.#options.controllers ?? DEFAULT_CONTROLLERS),
      );
    }
    if (this.#options.scheduler ?? true) this.#start("kube-scheduler", schedulerArgs(layout));
    if (this.#options.kwok ?? true) {
      const stageDir = `${this.binDir}/kwok-stages`;
      const names = [...Deno.readDirSync(stageDir)].map((e) => e.name);
      this.#start(
        "kwok",
        kwokArgs({
          kubeconfigPath: layout.kubeconfigPath,
          stageFiles: kwokStageFiles(stageDir, names),
        }),
      );
    }
    this.#client = await KubeClient.fromConfig(await loadKubeConfig({ path: this.kubeconfigPath }));
    if (this.#options.controllerManager ?? true) {
      // Pods need their namespace's default service account (ServiceAccount admission).
      await this.#waitDefaultServiceAccount("default", 60_000);
    }
    this.startupMs = Math.round(performance.now() - started);
    if (!this.#options.quiet) {
      note(
        `ready in ${this.startupMs} ms (etcd ${Math.round(etcdMs)}, apiserver ${
          Math.round(apiServerMs)
        }) at ${this.apiServerUrl}; logs: ${this.#logDir}`,
      );
    }
  }

  async #startApiServer(): Promise<void> {
    const apiServer = this.#start("kube-apiserver", apiServerArgs(this.#layout));
    const pki = this.#layout.pki;
    const http = Deno.createHttpClient({
      caCerts: [await Deno.readTextFile(pki.caCert)],
      cert: await Deno.readTextFile(pki.adminCert),
      key: await Deno.readTextFile(pki.adminKey),
    });
    try {
      await waitFor(async () => {
        const res = await fetch(`${this.apiServerUrl}/readyz`, {
          client: http,
          signal: AbortSignal.timeout(2000),
        });
        const body = await res.text();
        if (res.ok) return true;
        throw new Error(`/readyz ${res.status}: ${body.split("\n").filter((l) => /fail/.test(l))}`);
      }, {
        timeoutMs: this.#options.startTimeoutMs ?? 90_000,
        intervalMs: 100,
        message: "kube-apiserver /readyz",
        signal: abortOnExit(apiServer),
      });
    } finally {
      http.close();
    }
  }

  async #waitDefaultServiceAccount(namespace: string, timeoutMs: number): Promise<void> {
    const accounts = this.client.resource<IServiceAccount & KubeObject>(
      Resources.serviceaccounts,
      namespace,
    );
    await waitFor(() => accounts.get("default").then(() => true), {
      timeoutMs,
      intervalMs: 100,
      message: `service account ${namespace}/default (serviceaccount controller)`,
    });
  }

  async kubectl(args: string[], options: { stdin?: string } = {}): Promise<CommandResult> {
    const child = new Deno.Command(`${this.binDir}/kubectl`, {
      args: [`--kubeconfig=${this.kubeconfigPath}`, ...args],
      stdin: options.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let writeError: unknown;
    if (options.stdin !== undefined) {
      const writer = child.stdin.getWriter();
      // kubectl may exit before reading everything (bad flags); its stderr says why.
      await writer.write(encoder.encode(options.stdin)).then(() => writer.close()).catch((e) => {
        writeError = e;
      });
    }
    const out = await child.output();
    if (writeError !== undefined && out.success) throw writeError;
    const decoder = new TextDecoder();
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
  }

  async createNode(name: string, options: CreateNodeOptions = {}): Promise<Node> {
    if (!this.#processes.has("kwok")) {
      throw new Error("createNode needs kwok (started with kwok: false)");
    }
    const nodes = this.client.resource<Node>(Resources.nodes);
    await nodes.create({
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name,
        labels: {
          "kubernetes.io/hostname": name,
          "kubernetes.io/os": "linux",
          "kubernetes.io/arch": "amd64",
          "type": "kwok",
          ...options.labels,
        },
        annotations: { ...options.annotations, [KWOK_MANAGED_ANNOTATION]: KWOK_MANAGED_VALUE },
      },
      spec: { unschedulable: options.unschedulable || undefined },
    });
    const node = await this.#waitNodeReady(name, "True");
    return options.ready === false ? await this.setNodeReady(name, false) : node;
  }

  #waitNodeReady(name: string, status: "True" | "False"): Promise<Node> {
    const nodes = this.client.resource<Node>(Resources.nodes);
    let last: Node | undefined;
    return waitFor(async () => {
      last = await nodes.get(name);
      return nodeReadyStatus(last) === status ? last : undefined;
    }, {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: () =>
        `node ${name} Ready=${status} (kwok); conditions: ${
          JSON.stringify(last?.status?.conditions?.map((c) => `${c.type}=${c.status}`))
        }`,
    });
  }

  async setNodeReady(name: string, ready: boolean): Promise<Node> {
    await this.client.resource<Node>(Resources.nodes).patch(
      name,
      { metadata: { annotations: { [NOT_READY_ANNOTATION]: ready ? null : "true" } } },
      { type: "merge" },
    );
    return await this.#waitNodeReady(name, ready ? "True" : "False");
  }

  async deleteNode(name: string): Promise<void> {
    const nodes = this.client.resource<Node>(Resources.nodes);
    await nodes.delete(name);
    await waitFor(
      () => nodes.get(name).then(() => false, (e) => isNotFound(e) || Promise.reject(e)),
      {
        timeoutMs: 30_000,
        message: `node ${name} to be deleted`,
      },
    );
  }

  async createPod(namespace: string, name: string, options: CreatePodOptions): Promise<Pod> {
    const pods = this.client.resource<Pod>(Resources.pods, namespace);
    const labels = { ...options.labels };
    const annotations = { ...FAST_POD_ANNOTATIONS, ...options.annotations };
    let ownerReferences: NonNullable<KubeObject["metadata"]>["ownerReferences"];
    if (options.ownerDaemonSet) labels["bootc-test/daemonset"] = options.ownerDaemonSet;
    if (options.mirror) {
      const node = await this.client.resource<Node>(Resources.nodes).get(options.nodeName);
      annotations["kubernetes.io/config.mirror"] = `mirror-${name}`;
      ownerReferences = [{
        apiVersion: "v1",
        kind: "Node",
        name: options.nodeName,
        uid: node.metadata!.uid!,
        controller: true,
      }];
    }
    const spec = podSpec(options.terminationGracePeriodSeconds ?? 1);
    let pod = await pods.create({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace, labels, annotations, ownerReferences },
      spec: { ...spec, nodeName: options.nodeName },
    });
    if (options.ownerDaemonSet) {
      await this.#adoptIntoDaemonSet(namespace, options.ownerDaemonSet, options.nodeName);
      pod = await waitFor(async () => {
        const current = await pods.get(name);
        const ref = current.metadata?.ownerReferences?.find((r) => r.controller);
        return ref?.kind === "DaemonSet" && ref.name === options.ownerDaemonSet
          ? current
          : undefined;
      }, { timeoutMs: 30_000, message: `pod ${namespace}/${name} adopted by its DaemonSet` });
    }
    if (options.waitRunning === false) return pod;
    let last: Pod | undefined;
    return await waitFor(async () => {
      last = await pods.get(name);
      return last.status?.phase === "Running" ? last : undefined;
    }, {
      timeoutMs: 30_000,
      message: () => `pod ${namespace}/${name} Running (kwok); phase ${last?.status?.phase}`,
    });
  }

  /** Creates or extends DaemonSet `dsName` so that it selects `nodeName` (see CreatePodOptions). */
  async #adoptIntoDaemonSet(namespace: string, dsName: string, nodeName: string): Promise<void> {
    const daemonSets = this.client.resource<DaemonSet>(Resources.daemonsets, namespace);
    const selector = { "bootc-test/daemonset": dsName };
    const affinity = (nodes: string[]) => ({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{
            matchFields: [{ key: "metadata.name", operator: "In" as const, values: nodes }],
          }],
        },
      },
    });
    let existing: DaemonSet | undefined;
    try {
      existing = await daemonSets.get(dsName);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (!existing) {
      await daemonSets.create({
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: { name: dsName, namespace },
        spec: {
          selector: { matchLabels: selector },
          updateStrategy: { type: "OnDelete" },
          template: {
            metadata: { labels: selector, annotations: { ...FAST_POD_ANNOTATIONS } },
            spec: { ...podSpec(1), affinity: affinity([nodeName]) },
          },
        },
      });
      return;
    }
    const terms = existing.spec?.template.spec?.affinity?.nodeAffinity
      ?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    const current = terms?.[0]?.matchFields?.[0]?.values ?? [];
    if (current.includes(nodeName)) return;
    await daemonSets.patch(
      dsName,
      { spec: { template: { spec: { affinity: affinity([...current, nodeName]) } } } },
      { type: "merge" },
    );
  }

  async createPdb(
    namespace: string,
    name: string,
    options: CreatePdbOptions,
  ): Promise<PodDisruptionBudget> {
    const pdbs = this.client.resource<PodDisruptionBudget>(
      Resources.poddisruptionbudgets,
      namespace,
    );
    const created = await pdbs.create({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name, namespace },
      spec: {
        selector: { matchLabels: options.selector },
        minAvailable: options.minAvailable,
        maxUnavailable: options.maxUnavailable,
      },
    });
    if (!this.#processes.has("kube-controller-manager")) return created;
    let last: PodDisruptionBudget | undefined;
    return await waitFor(async () => {
      last = await pdbs.get(name);
      const observed = last.status?.observedGeneration ?? 0;
      return observed >= (last.metadata?.generation ?? 1) ? last : undefined;
    }, {
      timeoutMs: 30_000,
      message: () =>
        `PDB ${namespace}/${name} status (disruption controller): ${JSON.stringify(last?.status)}`,
    });
  }

  async createNamespace(name: string): Promise<Namespace> {
    const ns = await this.client.resource<Namespace>(Resources.namespaces).create({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name },
    });
    if (this.#processes.has("kube-controller-manager")) {
      await this.#waitDefaultServiceAccount(name, 30_000);
    }
    return ns;
  }

  async mintToken(options: MintTokenOptions): Promise<string> {
    let boundObjectRef;
    if (options.boundObject) {
      const { kind, name } = options.boundObject;
      let uid = options.boundObject.uid;
      if (!uid) {
        const object = kind === "Node"
          ? await this.client.resource<Node>(Resources.nodes).get(name)
          : await this.client.resource<Pod>(
            Resources.pods,
            options.boundObject.namespace ?? options.namespace,
          ).get(name);
        uid = object.metadata?.uid;
      }
      boundObjectRef = { apiVersion: "v1", kind, name, uid };
    }
    const status = await this.client.createTokenRequest(options.namespace, options.serviceAccount, {
      boundObjectRef,
      expirationSeconds: options.expirationSeconds ?? 3600,
      audiences: options.audiences,
    });
    return status.token;
  }

  async kubeconfigForToken(token: string): Promise<string> {
    const path = `${this.#layout.dir}/token-${++this.#tokenFiles}.kubeconfig`;
    await Deno.writeTextFile(
      path,
      renderKubeconfig({
        server: this.apiServerUrl,
        caPem: await Deno.readTextFile(this.caCertPath),
        token,
        userName: "token",
      }),
      { mode: 0o600 },
    );
    return path;
  }

  async applyYaml(pathOrText: string): Promise<string> {
    const isText = pathOrText.includes("\n") || pathOrText.trimStart().startsWith("apiVersion:");
    const result = await this.kubectl(
      [
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=bootc-test",
        "-f",
        isText ? "-" : pathOrText,
      ],
      isText ? { stdin: pathOrText } : {},
    );
    if (result.code !== 0) {
      throw new Error(`kubectl apply failed (${result.code}): ${result.stderr || result.stdout}`);
    }
    return result.stdout;
  }

  async restartApiServer(): Promise<void> {
    const apiServer = this.#processes.get("kube-apiserver");
    if (apiServer) await apiServer.stop({ graceMs: 10_000 });
    await this.#startApiServer();
  }

  async compactEtcd(): Promise<number> {
    // etcd's gRPC gateway: a range read tells the current revision, then compact to it.
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${this.etcdUrl}${path}`, {
        method: "POST",
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${text}`);
      return JSON.parse(text);
    };
    const range = await post("/v3/kv/range", { key: btoa("/"), keys_only: true, limit: 1 });
    const revision = Number(range.header?.revision);
    if (!Number.isSafeInteger(revision) || revision <= 0) {
      throw new Error(`etcd returned no revision: ${JSON.stringify(range)}`);
    }
    try {
      await post("/v3/kv/compaction", { revision: String(revision), physical: true });
    } catch (e) {
      // Nothing was written since the last compaction: already compacted to here.
      if (!/required revision has been compacted/.test(errorText(e))) throw e;
    }
    return revision;
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#client?.close();
    const stopAll = (names: ComponentName[]) =>
      Promise.all(names.map((n) => this.#processes.get(n)?.stop({ graceMs: 5000 })));
    // Clients first, then the API server, then its storage.
    await stopAll(["kwok", "kube-scheduler", "kube-controller-manager"]);
    await stopAll(["kube-apiserver"]);
    await stopAll(["etcd"]);
    await Deno.remove(this.#layout.dir, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
}

/** The pod spec the harness uses: one container with an image that is never pulled (kwok). */
function podSpec(terminationGracePeriodSeconds: number): NonNullable<Pod["spec"]> {
  return {
    containers: [{ name: "app", image: "registry.invalid/bootc-test/pause:1" }],
    terminationGracePeriodSeconds,
  };
}

async function logDirFor(options: StartControlPlaneOptions, tempDir: string): Promise<string> {
  let dir = options.logDir;
  if (!dir) {
    const root = Deno.env.get("BOOTC_TEST_LOG_DIR");
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    dir = root ? `${root}/control-plane-${stamp}-${Deno.pid}` : `${tempDir}/logs`;
  }
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

/**
 * Starts a control plane and resolves once it serves requests (and, with the
 * controller manager, once the default service account exists). On failure it
 * prints the tail of the API server's (and etcd's) log, stops what it started
 * and rethrows.
 */
export async function startControlPlane(
  options: StartControlPlaneOptions = {},
): Promise<ControlPlane> {
  const started = performance.now();
  const binDir = options.binDir ?? await resolveBinDir();
  const dir = await Deno.makeTempDir({ dir: options.tmpDir, prefix: "bootc-control-plane-" });
  let plane: KubeControlPlane | undefined;
  try {
    const [etcdClientPort, etcdPeerPort, apiServerPort] = distinctFreePorts(3);
    const pki = await generatePki({ dir: `${dir}/pki` });
    const layout: ControlPlaneLayout = {
      dir,
      pki,
      etcdDataDir: `${dir}/etcd`,
      etcdClientPort,
      etcdPeerPort,
      apiServerPort,
      kubeconfigPath: `${dir}/admin.kubeconfig`,
    };
    await Deno.writeTextFile(
      layout.kubeconfigPath,
      renderKubeconfig({
        server: apiServerUrl(layout),
        caPem: await Deno.readTextFile(pki.caCert),
        clientCertPem: await Deno.readTextFile(pki.adminCert),
        clientKeyPem: await Deno.readTextFile(pki.adminKey),
        userName: "admin",
      }),
      { mode: 0o600 },
    );
    plane = new KubeControlPlane(binDir, layout, await logDirFor(options, dir), options);
    await plane.boot(started);
    return plane;
  } catch (error) {
    if (plane) {
      for (const name of ["kube-apiserver", "etcd"] as const) {
        note(`${name} log tail:\n${await plane.logTail(name, 30)}`);
      }
      await plane.stop().catch((e) => note(`cleanup failed: ${errorText(e)}`));
    } else {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    throw error;
  }
}
