/**
 * The Pool Reconciler's imperative shell: informers keep caches of pools,
 * nodes, BootcNodes, pull Secrets and PDBs; watch events map to pool keys on a
 * work queue (one reconcile per pool at a time); each reconcile gathers the
 * planner's inputs from the caches (plus the pods of the nodes it drains, listed
 * fresh), calls {@linkcode planPool}, applies the actions in order, writes the
 * status when it changed, records events and requeues.
 *
 * Writes are level-triggered and idempotent: every in-flight fact lives in the
 * API (slot, prior cordon and drained-at annotations), so a new process picks
 * up where an old one stopped. After writing, a reconcile waits until its own
 * writes are visible in the caches, so the next one never plans on stale data
 * (which could hand out a slot twice).
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { ISecret } from "kubernetes-models/v1/Secret";
import {
  ANNOTATION_SLOT_POOL,
  type BootcDisruptionBudget,
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  CONTROLLER_FIELD_MANAGER,
  LABEL_POOL,
} from "../lib/api/mod.ts";
import { type Clock, systemClock } from "../lib/clock.ts";
import {
  Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeClient,
  type KubeObject,
  labelIndex,
  type ResourceClient,
  Resources,
  WorkQueue,
} from "../lib/kube/mod.ts";
import { type Logger, silentLogger } from "../lib/log.ts";
import { evictPods, type PodLike, summarizePod } from "./drain.ts";
import type { ControllerMetrics } from "./metrics.ts";
import {
  type Action,
  type Plan,
  type PlannedEvent,
  type PlannerOptions,
  planPool,
  pollIntervalMs,
  POOL_FINALIZER,
  type ResolutionMemo,
  resolutionNeed,
} from "./planner.ts";
import { applyStages, runStages } from "./apply_order.ts";
import { planGonePool } from "./membership.ts";
import { type CoalesceOptions, statusWriteDecision } from "./status_coalesce.ts";
import { daemonSecretNames } from "./daemon_access.ts";
import { DaemonAccessSync } from "./daemon_access_sync.ts";
import type { PoolIssue } from "./pool_status.ts";
import { needsLookup, pullSecretVerdict, type SecretLookup } from "./pull_secret.ts";
import { type ImageResolver, secretDataHash } from "./resolver.ts";
import { ChannelChecks, type ChannelChecksOptions, type TagLister } from "./channel_checks.ts";
import { type ChannelDecision, channelError, channelStep } from "./channel.ts";
import { circuitOpen, failureRecord } from "./failure_policy.ts";
import { TagResolution, type TagResolutionOptions } from "./tag_resolution.ts";
import {
  HealthQueries,
  type HealthQueriesOptions,
  type PrometheusCheck,
} from "./health_queries.ts";
import type { QueryVerdict } from "./health.ts";
import {
  bootcNodeEventPools,
  nodeEventPools,
  poolEventPools,
  poolsForNode,
  secretEventPools,
  type WatchCache,
} from "./watch_mapping.ts";
import type { NodeSummary, PdbSummary, PodSummary, PoolSummary } from "./types.ts";
import { allPools, nodeRecordWakes, poolStatusWakes } from "./cross_pool_mapping.ts";
import type { ClusterBudget } from "./gates/mod.ts";

/** One holder at a time; waiters run in arrival order. */
class Mutex {
  #tail: Promise<void> = Promise.resolve();

  /** Runs `fn` once every earlier holder has finished. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.#tail;
    let release!: () => void;
    this.#tail = new Promise<void>((r) => release = r);
    await before;
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

/** A Node as cached. */
export type Node = INode & KubeObject;
/** A Secret as cached. */
export type Secret = ISecret & KubeObject;
/** A PodDisruptionBudget as cached. */
export type Pdb = IPodDisruptionBudget & KubeObject;

/** Where events go (lib/kube's EventRecorder fits). */
export interface EventSink {
  record(
    involved: KubeObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): Promise<void>;
}

/** How long planning waits for earlier writes the caches still miss before going on. */
const MAX_UNSEEN_MS = 60_000;

/** Once-only event keys remembered (the oldest are forgotten first). */
const MAX_ONCE_KEYS = 10_000;

/** Options of {@linkcode PoolReconciler}. */
export interface PoolReconcilerOptions {
  client: KubeClient;
  resolver: ImageResolver;
  events?: EventSink;
  metrics?: ControllerMetrics;
  clock?: Clock;
  logger?: Logger;
  planner?: PlannerOptions;
  /** Pools reconciled in parallel (never the same pool twice; default 2). */
  workers?: number;
  /** How long a reconcile waits for the caches to show its own writes (default 10 s). */
  cacheWaitMs?: number;
  /**
   * Nodes whose planned writes are applied at the same time (default 16; see
   * controller/apply_order.ts for what still waits for what).
   */
  applyConcurrency?: number;
  /**
   * The operator's namespace (default "bootc-operator"): pull Secrets must live there, and the
   * daemon's pull-secret Role there is kept to the Secrets pools name.
   */
  namespace?: string;
  /** Longest back-off between drain passes whose evictions were refused (default 60 s). */
  maxDrainBackoffMs?: number;
  /** When progress-only status changes are written (controller/status_coalesce.ts). */
  statusCoalesce?: Partial<CoalesceOptions>;
  /** Tag resolution tunables: per-attempt timeout (default 10 s), retry backoff. */
  tagResolution?: Pick<
    TagResolutionOptions,
    "timeoutMs" | "initialBackoffMs" | "maxBackoffMs" | "jitter"
  >;
  /** Prometheus health-check polling: interval (default 5 s) and per-query timeout (default 5 s). */
  healthQueries?: Pick<HealthQueriesOptions, "intervalMs" | "timeoutMs">;
  /** Lists a channel's repository tags (default: none, so channel pools wait for one). */
  channelLister?: TagLister;
  /** Channel listing tunables: per-attempt timeout, retry backoff. */
  channelChecks?: Pick<
    ChannelChecksOptions,
    "timeoutMs" | "initialBackoffMs" | "maxBackoffMs" | "jitter"
  >;
}

/** Counts of the writes a reconciler made, by kind (for tests and reports). */
export type WriteCounts = Record<string, number>;

/** A write of this controller's, as the caches should come to show it. */
export interface Written {
  store: "bootcNodes" | "nodes" | "pools";
  name: string;
  resourceVersion?: string;
  deleted?: boolean;
}

/**
 * Whether the cache (`cached`: the object it holds now) shows write `w`. A delete
 * shows once the object is gone or terminating (a finalizer may hold it for long).
 */
export function writeVisible(w: Written, cached: KubeObject | undefined): boolean {
  if (w.deleted) return cached === undefined || Boolean(cached.metadata?.deletionTimestamp);
  return cached !== undefined && newerOrEqual(cached.metadata?.resourceVersion, w.resourceVersion);
}

/**
 * The earlier writes planning must still wait for: those the cache does not show yet.
 * A write whose object is no longer cached is not waited for (it was deleted since;
 * nothing to plan around).
 */
export function stillUnseen<W extends Written>(
  unseen: readonly W[],
  cached: (w: W) => KubeObject | undefined,
): W[] {
  return unseen.filter((w) => {
    const obj = cached(w);
    return !writeVisible(w, obj) && (w.deleted || obj !== undefined);
  });
}

const nodeSummaries = new WeakMap<Node, NodeSummary>();

/** Builds (and caches per object) the planner's view of a Node. */
export function summarizeNode(node: Node): NodeSummary {
  const cached = nodeSummaries.get(node);
  if (cached) return cached;
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  const summary: NodeSummary = {
    name: node.metadata?.name ?? "",
    uid: node.metadata?.uid,
    labels: node.metadata?.labels ?? {},
    annotations: node.metadata?.annotations,
    unschedulable: node.spec?.unschedulable === true,
    ready: ready?.status === "True",
    readySince: ready?.lastTransitionTime as string | undefined,
  };
  nodeSummaries.set(node, summary);
  return summary;
}

/** Summarises a PDB for the planner. */
export function summarizePdb(pdb: Pdb): PdbSummary {
  return {
    namespace: pdb.metadata?.namespace ?? "",
    name: pdb.metadata?.name ?? "",
    selector: pdb.spec?.selector as PdbSummary["selector"],
    disruptionsAllowed: pdb.status?.disruptionsAllowed ?? 0,
  };
}

// Which events wake which pools is decided in watch_mapping.ts (pure, unit-tested).
export { nodeChangeMatters, poolChangeMatters } from "./watch_mapping.ts";

function newerOrEqual(have: string | undefined, want: string | undefined): boolean {
  if (want === undefined) return true;
  if (have === undefined) return false;
  if (/^\d+$/.test(have) && /^\d+$/.test(want)) return BigInt(have) >= BigInt(want);
  return have === want;
}

/** Drops `metadata.managedFields`, which the controller never reads, from a cached object. */
export function withoutManagedFields<T extends KubeObject>(object: T): T {
  if (!object.metadata?.managedFields) return object;
  const { managedFields: _, ...metadata } = object.metadata;
  return { ...object, metadata };
}

/** Prefix of the operator's own labels and annotations. */
const OPERATOR_PREFIX = "bootc.dev/";

/**
 * Keeps only what the controller reads of a Node (identity, labels, the
 * operator's `bootc.dev/` annotations, `spec.unschedulable`, the Ready
 * condition's status and transition time), like a controller-runtime cache
 * transform. Nodes are the biggest objects in the cache (image lists, capacity,
 * nodeInfo, managedFields, other components' annotations, heartbeats); the
 * controller only ever patches them, never writes a cached copy back, so a
 * trimmed cache is safe. Labels stay whole: pool selectors may use any of them.
 */
export function trimNode(node: Node): Node {
  const m = node.metadata ?? {};
  let annotations: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(m.annotations ?? {})) {
    if (k.startsWith(OPERATOR_PREFIX)) (annotations ??= {})[k] = v;
  }
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  return {
    apiVersion: node.apiVersion,
    kind: node.kind,
    metadata: {
      name: m.name,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      labels: m.labels,
      ...(annotations ? { annotations } : {}),
    },
    spec: node.spec?.unschedulable === undefined ? {} : { unschedulable: node.spec.unschedulable },
    status: {
      conditions: ready
        ? [{ type: "Ready", status: ready.status, lastTransitionTime: ready.lastTransitionTime }]
        : [],
    },
  } as Node;
}

/** Keeps only what {@linkcode summarizePdb} reads of a PodDisruptionBudget. */
export function trimPdb(pdb: Pdb): Pdb {
  const m = pdb.metadata ?? {};
  return {
    apiVersion: pdb.apiVersion,
    kind: pdb.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
    },
    spec: { selector: pdb.spec?.selector },
    status: { disruptionsAllowed: pdb.status?.disruptionsAllowed ?? 0 },
  } as Pdb;
}

/** The Pool Reconciler; see the module documentation. */
export class PoolReconciler {
  /** Cache of BootcNodePools. */
  readonly pools: Informer<BootcNodePool>;
  /** Cache of Nodes. */
  readonly nodes: Informer<Node>;
  /** Cache of BootcNodes (indexed by pool label). */
  readonly bootcNodes: Informer<BootcNode>;
  /** Cache of pull Secrets (type kubernetes.io/dockerconfigjson, operator namespace only). */
  readonly secrets: Informer<Secret>;
  /** Cache of PodDisruptionBudgets. */
  readonly pdbs: Informer<Pdb>;
  /** Cache of BootcDisruptionBudgets (cluster-wide caps across pools). */
  readonly budgets: Informer<BootcDisruptionBudget>;
  /** Writes made so far, by kind. */
  readonly writes: WriteCounts = {};

  #client: KubeClient;
  /** Resolves tags beside the work queue; a reconcile only reads its latest results. */
  #tags: TagResolution;
  /** Polls pools' Prometheus health checks beside the work queue; a reconcile reads verdicts. */
  #healthQueries: HealthQueries;
  /** Lists channel pools' repository tags beside the work queue, when their check is due. */
  #channels: ChannelChecks;
  #grantLock = new Mutex();
  #events?: EventSink;
  #metrics?: ControllerMetrics;
  #clock: Clock;
  #log: Logger;
  #plannerOptions: PlannerOptions;
  #workers: number;
  #cacheWaitMs: number;
  #applyConcurrency: number;
  #maxDrainBackoffMs: number;
  #namespace: string;
  #daemonAccess: DaemonAccessSync;
  #queue?: WorkQueue<string>;
  #onceKeys = new Set<string>();
  /** Writes the caches had not shown when a reconcile stopped waiting; see #cachesBehind. */
  #unseen: (Written & { since: number })[] = [];
  #drainRefusals = new Map<string, number>();
  /** Per pool: when this process last wrote its status, and since when a progress change waits. */
  #statusWrites = new Map<string, { at?: number; pendingSince?: number }>();
  #statusCoalesce?: Partial<CoalesceOptions>;
  #poolClient: ResourceClient<BootcNodePool>;
  #bootcNodeClient: ResourceClient<BootcNode>;
  #nodeClient: ResourceClient<Node>;

  /** Creates the informers; nothing runs until {@linkcode startCaches} / {@linkcode runWorkers}. */
  constructor(options: PoolReconcilerOptions) {
    this.#client = options.client;
    this.#events = options.events;
    this.#metrics = options.metrics;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "pool-reconciler" });
    this.#plannerOptions = options.planner ?? {};
    this.#workers = options.workers ?? 2;
    this.#cacheWaitMs = options.cacheWaitMs ?? 10_000;
    this.#applyConcurrency = options.applyConcurrency ?? 16;
    this.#maxDrainBackoffMs = options.maxDrainBackoffMs ?? 60_000;
    this.#namespace = options.namespace ?? "bootc-operator";
    this.#statusCoalesce = options.statusCoalesce;
    const c = options.client;
    this.#poolClient = c.resource<BootcNodePool>(Resources.bootcNodePools);
    this.#bootcNodeClient = c.resource<BootcNode>(Resources.bootcNodes);
    this.#nodeClient = c.resource<Node>(Resources.nodes);
    const common = { clock: this.#clock, logger: this.#log };
    this.#tags = new TagResolution({
      resolver: options.resolver,
      ...options.tagResolution,
      ...common,
      // A result (or a failure) wakes exactly the pools that use the tag.
      onResult: (pools) => {
        for (const p of pools) {
          if (this.pools.store.get(p)) this.#metrics?.observeResolution(p, this.#tags.latest(p));
          this.#enqueue(p);
        }
      },
    });
    this.#channels = new ChannelChecks({
      lister: options.channelLister ??
        (() => Promise.reject(new Error("this controller cannot list tags"))),
      ...options.channelChecks,
      ...common,
      onResult: (pools) => {
        for (const p of pools) this.#enqueue(p);
      },
    });
    this.#healthQueries = new HealthQueries({
      ...options.healthQueries,
      ...common,
      // A changed verdict (or a streak long enough to pass) wakes the pool.
      onResult: (pool) => this.#enqueue(pool),
    });
    this.pools = new Informer<BootcNodePool>({
      resource: this.#poolClient,
      transform: withoutManagedFields,
      ...common,
    });
    this.nodes = new Informer<Node>({ resource: this.#nodeClient, transform: trimNode, ...common });
    this.bootcNodes = new Informer<BootcNode>({
      resource: this.#bootcNodeClient,
      indexers: { pool: labelIndex<BootcNode>(LABEL_POOL) },
      transform: withoutManagedFields,
      ...common,
    });
    this.secrets = new Informer<Secret>({
      resource: c.resource<Secret>(Resources.secrets, this.#namespace),
      fieldSelector: "type=kubernetes.io/dockerconfigjson",
      transform: withoutManagedFields,
      ...common,
    });
    this.pdbs = new Informer<Pdb>({
      resource: c.resource<Pdb>(Resources.poddisruptionbudgets),
      transform: trimPdb,
      ...common,
    });
    this.budgets = new Informer<BootcDisruptionBudget>({
      resource: c.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets),
      transform: withoutManagedFields,
      ...common,
    });
    this.#daemonAccess = new DaemonAccessSync({
      client: c,
      namespace: this.#namespace,
      desiredNames: () => this.#daemonSecretNames(),
      triggers: [this.pools, this.secrets] as unknown as Informer<KubeObject>[],
      onWrite: () => this.#count("daemonRole"),
      ...common,
    });
    this.#wireHandlers();
  }

  #enqueue(name: string | undefined) {
    if (name) this.#queue?.add(name);
  }

  /** Pools whose selector matches the node's labels, plus the pool owning its BootcNode. */
  poolsForNode(nodeName: string, labels: Record<string, string> | undefined): string[] {
    return poolsForNode(this.#watchCache(), {
      name: nodeName,
      labels,
      annotations: this.nodes.store.get(nodeName)?.metadata?.annotations,
    });
  }

  /** The caches as the watch mapping reads them. */
  #watchCache(): WatchCache {
    return {
      pools: () => this.pools.store.list(),
      bootcNode: (name) => this.bootcNodes.store.get(name),
      node: (name) => this.nodes.store.get(name),
    };
  }

  #wireHandlers() {
    // Which pools an event wakes is decided in watch_mapping.ts; this only forwards.
    const cache = this.#watchCache();
    const enqueue = (pools: string[]) => {
      for (const p of pools) this.#enqueue(p);
    };
    this.pools.onAdd((p) => enqueue(poolEventPools(cache, { type: "add", object: p })));
    this.pools.onUpdate((o, n) =>
      enqueue(poolEventPools(cache, { type: "update", old: o, object: n }))
    );
    this.pools.onDelete((p) => {
      enqueue(poolEventPools(cache, { type: "delete", object: p }));
      this.#tags.forget(p.metadata.name ?? "");
      this.#healthQueries.forget(p.metadata.name ?? "");
      this.#metrics?.forgetPool(p.metadata.name ?? "");
      this.#statusWrites.delete(p.metadata.name ?? "");
    });
    this.nodes.onAdd((n) => enqueue(nodeEventPools(cache, { type: "add", object: n })));
    this.nodes.onUpdate((o, n) =>
      enqueue(nodeEventPools(cache, { type: "update", old: o, object: n }))
    );
    this.nodes.onDelete((n) => enqueue(nodeEventPools(cache, { type: "delete", object: n })));
    this.bootcNodes.onAdd((bn) => enqueue(bootcNodeEventPools(cache, { type: "add", object: bn })));
    this.bootcNodes.onUpdate((o, n) =>
      enqueue(bootcNodeEventPools(cache, { type: "update", old: o, object: n }))
    );
    this.bootcNodes.onDelete((bn) =>
      enqueue(bootcNodeEventPools(cache, { type: "delete", object: bn }))
    );
    this.secrets.onAdd((s) => enqueue(secretEventPools(cache, { type: "add", object: s })));
    this.secrets.onUpdate((o, n) =>
      enqueue(secretEventPools(cache, { type: "update", old: o, object: n }))
    );
    this.secrets.onDelete((s) => enqueue(secretEventPools(cache, { type: "delete", object: s })));
    // Cross-pool policies: ordering, and budgets that span pools.
    const budgetsExist = () => this.budgets.store.list().length > 0;
    const everyPool = () => enqueue(allPools(this.pools.store.list()));
    this.budgets.onAdd(everyPool);
    this.budgets.onUpdate(everyPool);
    this.budgets.onDelete(everyPool);
    this.pools.onUpdate((o, n) =>
      enqueue(poolStatusWakes(o, n, this.pools.store.list(), budgetsExist()))
    );
    this.nodes.onUpdate((o, n) =>
      enqueue(nodeRecordWakes(o, n, this.pools.store.list(), budgetsExist()))
    );
    this.nodes.onDelete((n) =>
      enqueue(nodeRecordWakes(n, undefined, this.pools.store.list(), budgetsExist()))
    );
  }

  /** All informers, for starting and sync checks. */
  #informers(): Informer<KubeObject>[] {
    return [
      this.pools,
      this.nodes,
      this.bootcNodes,
      this.secrets,
      this.pdbs,
      this.budgets,
    ] as unknown as Informer<KubeObject>[];
  }

  /** Runs the informers until `signal` aborts; resolves once they stopped. */
  async startCaches(signal: AbortSignal): Promise<void> {
    await Promise.all(this.#informers().map((i) => i.start(signal)));
  }

  /** True once every cache has done its first list. */
  hasSynced(): boolean {
    return this.#informers().every((i) => i.hasSynced());
  }

  /** Resolves once every cache is synced. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all(this.#informers().map((i) => i.waitForSync(signal)));
  }

  /**
   * Processes pools until `signal` aborts (run it while leading). Waits for the
   * caches, enqueues every pool, and on abort lets in-flight reconciles finish.
   */
  async runWorkers(signal: AbortSignal): Promise<void> {
    if (this.#queue) throw new Error("workers already running");
    await this.waitForSync(signal);
    const queue = new WorkQueue<string>({ clock: this.#clock, logger: this.#log });
    this.#queue = queue;
    this.#metrics?.setLeading(true);
    const stop = () => void queue.shutDown();
    signal.addEventListener("abort", stop, { once: true });
    // The daemon's pull-secret Role follows the pools while this replica leads.
    const accessStop = new AbortController();
    const access = this.#daemonAccess.run(accessStop.signal);
    try {
      for (const p of this.pools.store.list()) queue.add(p.metadata.name ?? "");
      // Records left by pools that are gone (deleted while this controller was down).
      for (const n of this.nodes.store.list()) {
        const recordPool = n.metadata?.annotations?.[ANNOTATION_SLOT_POOL];
        if (recordPool && !this.pools.store.get(recordPool)) queue.add(recordPool);
      }
      await queue.run((key) => this.#timedReconcile(key), { concurrency: this.#workers });
    } finally {
      signal.removeEventListener("abort", stop);
      this.#queue = undefined;
      accessStop.abort();
      await access;
      this.#metrics?.setLeading(false);
      // A replica that does not lead polls no registry.
      await this.#tags.forgetAll();
      this.#channels.forgetAll();
      await this.#healthQueries.close();
    }
  }

  async #timedReconcile(name: string): Promise<void> {
    const started = performance.now();
    try {
      await this.reconcile(name);
    } catch (e) {
      if (this.pools.store.get(name)) this.#metrics?.reconcileErrors.inc({ pool: name });
      throw e;
    } finally {
      // A deleted pool's series went with its delete event: a late reconcile brings none back.
      if (this.pools.store.get(name)) {
        this.#metrics?.reconcileDuration.observe(
          { pool: name },
          (performance.now() - started) / 1000,
        );
      }
    }
  }

  /** The pull Secrets the daemons may read: named by a pool and usable (see daemon_access.ts). */
  #daemonSecretNames(): string[] {
    const namespace = this.#namespace;
    return daemonSecretNames(
      this.pools.store.list().map((p) => ({ pullSecretRef: p.spec.pullSecretRef })),
      namespace,
      (name) => {
        const cached = this.secrets.store.getByName(name, namespace);
        return cached !== undefined &&
          pullSecretVerdict({ name, namespace }, namespace, { found: true, secret: cached }).grant;
      },
    );
  }

  /** Finds a Secret in the operator namespace: in the cache, else with a GET. */
  async #lookupSecret(name: string): Promise<SecretLookup> {
    const cached = this.secrets.store.getByName(name, this.#namespace);
    if (cached) return { found: true, secret: cached };
    // The cache holds kubernetes.io/dockerconfigjson Secrets only: a GET tells a missing
    // Secret from one of another type, so the pool's message can say which.
    try {
      const secret = await this.#client.resource<Secret>(Resources.secrets, this.#namespace).get(
        name,
      );
      return { found: true, secret };
    } catch (e) {
      if (isNotFound(e)) return { found: false };
      throw e;
    }
  }

  /**
   * The pool's pull Secret: its hash for the BootcNodes, its `.dockerconfigjson` for tag
   * resolution and any problem with it (controller/pull_secret.ts). Before the plan writes
   * the reference into BootcNodes, the daemons are allowed to read the Secret.
   */
  async #pullSecret(
    pool: BootcNodePool,
  ): Promise<{ hash?: string; dockerConfig?: string; issue?: PoolIssue }> {
    const ref = pool.spec.pullSecretRef;
    if (!ref) return {};
    const lookup: SecretLookup = needsLookup(ref, this.#namespace)
      ? await this.#lookupSecret(ref.name)
      : { found: false };
    const verdict = pullSecretVerdict(ref, this.#namespace, lookup);
    if (verdict.grant) {
      try {
        await this.#daemonAccess.ensure();
      } catch (e) {
        // The daemons will report the refused read on their BootcNodes; the loop retries.
        this.#log.warn("cannot allow the daemons to read the pull secret", {
          pool: pool.metadata.name,
          error: e instanceof Error ? e.message : String(e),
        });
      }
    }
    return {
      hash: verdict.grant && lookup.found
        ? await secretDataHash(lookup.secret.data as Record<string, string> | undefined)
        : undefined,
      dockerConfig: verdict.dockerConfigJson,
      issue: verdict.issue,
    };
  }

  async #listPods(nodes: readonly string[]): Promise<Map<string, PodSummary[]>> {
    const pods = this.#client.resource<PodLike>(Resources.pods);
    const out = new Map<string, PodSummary[]>();
    await Promise.all(nodes.map(async (n) => {
      const list = await pods.list({ fieldSelector: `spec.nodeName=${n}` });
      out.set(n, list.items.map(summarizePod));
    }));
    return out;
  }

  /**
   * The channel step for a pool that follows a channel: what its latest tag listing
   * says, and the pool as the planner sees it (its ref the chosen version). The
   * listing is asked for when the check is due and never waited for.
   */
  async #channel(
    pool: BootcNodePool,
    secret: { hash?: string; dockerConfig?: string },
    now: Date,
  ): Promise<{ planned: BootcNodePool; channel?: ChannelDecision }> {
    const name = pool.metadata.name ?? "";
    const spec = pool.spec.image.channel;
    if (!spec || pool.metadata.deletionTimestamp || channelError(spec)) {
      this.#channels.forget(name);
      return { planned: pool };
    }
    const open = circuitOpen(pool, failureRecord(pool));
    const intervalMs = pollIntervalMs(pool, this.#plannerOptions);
    const due = channelStep({ pool, circuitOpen: open, now, intervalMs })!;
    const credentialsHash = secret.hash ??
      (secret.dockerConfig === undefined
        ? undefined
        : await secretDataHash({ ".dockerconfigjson": secret.dockerConfig }));
    const listing = this.#channels.want(name, {
      repository: spec.repository,
      ...(credentialsHash === undefined
        ? {}
        : { credentials: { hash: credentialsHash, dockerConfigJson: secret.dockerConfig } }),
      dueAt: due.dueAt,
    });
    const channel = channelStep({ pool, listing, circuitOpen: open, now, intervalMs })!;
    const planned = channel.ref
      ? { ...pool, spec: { ...pool.spec, image: { ...pool.spec.image, ref: channel.ref } } }
      : pool;
    return { planned, channel };
  }

  /**
   * The latest resolution of the pool's tag, never waiting for a registry: the
   * pool tells {@linkcode TagResolution} what it wants and reads what is known.
   * Until a first result arrives there is none (the planner keeps the last target
   * and reports no failure); the result wakes the pool.
   */
  async #resolution(
    pool: BootcNodePool,
    secret: { hash?: string; dockerConfig?: string },
    now: Date,
  ): Promise<ResolutionMemo | undefined> {
    const name = pool.metadata.name ?? "";
    // Without a memo the need comes from the status alone: "fresh" means the status
    // already holds a recent enough resolution (e.g. after a restart), so the first
    // attempt can wait until it is due.
    const need = resolutionNeed(pool, now, undefined, this.#plannerOptions);
    if ((need.kind !== "resolve" && need.kind !== "fresh") || pool.metadata.deletionTimestamp) {
      this.#tags.forget(name);
      return undefined;
    }
    const credentialsHash = secret.hash ??
      (secret.dockerConfig === undefined
        ? undefined
        : await secretDataHash({ ".dockerconfigjson": secret.dockerConfig }));
    const latest = this.#tags.want(name, {
      ref: pool.spec.image.ref ?? "",
      ...(credentialsHash === undefined
        ? {}
        : { credentials: { hash: credentialsHash, dockerConfigJson: secret.dockerConfig } }),
      intervalMs: pollIntervalMs(pool, this.#plannerOptions),
      ...(need.kind === "fresh" ? { notBefore: need.nextAt } : {}),
    });
    // The key is the pool's current ref and credentials, so the result is for this generation.
    return latest && { generation: pool.metadata.generation, at: latest.at, result: latest.result };
  }

  /**
   * The latest Prometheus health-check verdicts of the pool's nodes, never waiting
   * for Prometheus: the nodes holding the pool's reboot slot are polled by
   * {@linkcode HealthQueries}, every other key of the pool is dropped.
   */
  #healthQueryVerdicts(pool: BootcNodePool): Map<string, QueryVerdict> | undefined {
    const name = pool.metadata.name ?? "";
    const check = pool.spec.rollout?.health?.prometheus;
    if (!check || pool.metadata.deletionTimestamp) {
      this.#healthQueries.forget(name);
      return undefined;
    }
    const wanted = new Map<string, PrometheusCheck>();
    for (const n of this.nodes.store.list()) {
      if (n.metadata?.annotations?.[ANNOTATION_SLOT_POOL] === name) {
        wanted.set(n.metadata.name ?? "", check);
      }
    }
    return this.#healthQueries.wantOnly(name, wanted);
  }

  /** One reconcile of pool `name` (what the work queue runs). */
  async reconcile(name: string): Promise<void> {
    // Slot grants under a cluster-wide budget must see every grant before them: pools
    // are then planned and applied one at a time, each after the caches show the last.
    if (this.budgets.store.list().length > 0) {
      return await this.#grantLock.run(() => this.#reconcile(name));
    }
    return await this.#reconcile(name);
  }

  async #reconcile(name: string): Promise<void> {
    const log = this.#log.with({ pool: name });
    // Writes of an earlier reconcile the caches still miss: planning (a gone pool's
    // restores included) waits for them rather than redo or outrun them.
    if (this.#cachesBehind(log)) {
      this.#queue?.addAfter(name, 500);
      return;
    }
    const pool = this.pools.store.get(name);
    if (!pool) {
      this.#tags.forget(name);
      this.#channels.forget(name);
      this.#healthQueries.forget(name);
      await this.#releaseGonePool(name, log);
      return;
    }
    const now = this.#clock.now();
    const secret = await this.#pullSecret(pool);
    // A channel pool plans with the version its channel chose as its ref.
    const { planned, channel } = await this.#channel(pool, secret, now);
    const resolution = await this.#resolution(planned, secret, now);

    const pools: PoolSummary[] = this.pools.store.list().map((p) => ({
      name: p.metadata.name ?? "",
      uid: p.metadata.uid,
      selector: p.spec.nodeSelector,
    }));
    const nodes = new Map<string, NodeSummary>();
    for (const n of this.nodes.store.list()) nodes.set(n.metadata?.name ?? "", summarizeNode(n));
    const bootcNodes = new Map<string, BootcNode>();
    for (const bn of this.bootcNodes.store.list()) bootcNodes.set(bn.metadata.name ?? "", bn);
    const pdbs = this.pdbs.store.list().map(summarizePdb);
    const baseInput = {
      pool: planned,
      channel,
      pools,
      poolObjects: this.pools.store.list(),
      budgets: this.budgets.store.list().map((b) => ({
        name: b.metadata.name ?? "",
        spec: b.spec as ClusterBudget["spec"],
      })),
      nodes,
      bootcNodes,
      pdbs,
      resolution,
      healthQueries: this.#healthQueryVerdicts(pool),
      pullSecretHash: secret.hash,
      pullSecretIssue: secret.issue,
      now,
      options: this.#plannerOptions,
    };
    let podsByNode = new Map<string, PodSummary[]>();
    let plan = planPool({ ...baseInput, podsByNode, podsListed: new Set() });
    if (plan.needPods.length > 0) {
      podsByNode = await this.#listPods(plan.needPods);
      plan = planPool({ ...baseInput, podsByNode, podsListed: new Set(podsByNode.keys()) });
    }

    const written: Written[] = [];
    let refused = 0;
    try {
      const refusals = await runStages(
        applyStages(plan.actions),
        (action) => this.#apply(pool, action, written, log),
        this.#applyConcurrency,
      );
      refused = refusals.reduce((sum, n) => sum + n, 0);
      if (plan.status && this.#statusDue(name, pool, plan.status)) {
        // Our own finalizer patch in this reconcile moved the resourceVersion on.
        const own = written.findLast((w) => w.store === "pools" && w.name === name);
        const metadata = own?.resourceVersion
          ? { ...pool.metadata, resourceVersion: own.resourceVersion }
          : pool.metadata;
        const updated = await this.#poolClient.updateStatus(
          { ...pool, metadata, status: plan.status },
          { fieldManager: CONTROLLER_FIELD_MANAGER },
        );
        this.#count("poolStatus");
        this.#statusWrites.set(name, { at: this.#clock.now().getTime() });
        written.push({
          store: "pools",
          name,
          resourceVersion: updated.metadata?.resourceVersion,
        });
      }
    } finally {
      await this.#recordEvents(pool, plan.events);
      this.#observe(name, plan);
      await this.#awaitCaches(written, log);
    }
    this.#requeue(name, plan, refused);
  }

  /** Hands back nodes still carrying the record of a pool that no longer exists. */
  async #releaseGonePool(name: string, log: Logger): Promise<void> {
    const nodes = new Map<string, NodeSummary>();
    for (const n of this.nodes.store.list()) nodes.set(n.metadata?.name ?? "", summarizeNode(n));
    const bootcNodes = new Map<string, BootcNode>();
    for (const bn of this.bootcNodes.store.list()) bootcNodes.set(bn.metadata.name ?? "", bn);
    const pools: PoolSummary[] = this.pools.store.list().map((p) => ({
      name: p.metadata.name ?? "",
      uid: p.metadata.uid,
      selector: p.spec.nodeSelector,
    }));
    const plan = planGonePool(name, { pools, nodes, bootcNodes, now: this.#clock.now() });
    const written: Written[] = [];
    const restores = plan.actions.filter((a) => a.kind === "patchNode");
    try {
      await runStages(applyStages(restores), (action) => {
        log.warn("restoring a node whose pool is gone", {
          node: "node" in action ? action.node : "",
        });
        return this.#apply({ metadata: { name } } as BootcNodePool, action, written, log);
      }, this.#applyConcurrency);
    } finally {
      await this.#awaitCaches(written, log);
    }
  }

  /**
   * True when the computed status should be written now (controller/status_coalesce.ts):
   * changes others act on at once, progress coalesced (the pool is requeued for the time
   * it is due, so the last state is always written), lastResolvedTime alone rarely.
   */
  #statusDue(name: string, pool: BootcNodePool, next: BootcNodePoolStatus): boolean {
    const now = this.#clock.now().getTime();
    const memo = this.#statusWrites.get(name);
    const decision = statusWriteDecision({
      stored: pool.status,
      next,
      now,
      lastWriteAt: memo?.at,
      pendingSince: memo?.pendingSince,
      options: this.#statusCoalesce,
    });
    if (decision.kind === "defer") {
      this.#statusWrites.set(name, { at: memo?.at, pendingSince: memo?.pendingSince ?? now });
      this.#queue?.addAfter(name, decision.at - now);
      return false;
    }
    if (decision.kind === "skip" && memo?.pendingSince !== undefined) {
      this.#statusWrites.set(name, { at: memo.at });
    }
    return decision.kind === "write";
  }

  #count(kind: string) {
    this.writes[kind] = (this.writes[kind] ?? 0) + 1;
    this.#metrics?.apiWrites.inc({ kind });
  }

  /** Applies one action; returns how many evictions were refused. */
  async #apply(
    pool: BootcNodePool,
    action: Action,
    written: Written[],
    log: Logger,
  ): Promise<number> {
    const opts = { fieldManager: CONTROLLER_FIELD_MANAGER };
    const poolName = pool.metadata.name ?? "";
    switch (action.kind) {
      case "createBootcNode": {
        try {
          const created = await this.#bootcNodeClient.create(action.object, opts);
          this.#count("createBootcNode");
          written.push({
            store: "bootcNodes",
            name: action.node,
            resourceVersion: created.metadata?.resourceVersion,
          });
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
        }
        return 0;
      }
      case "patchBootcNode": {
        const updated = await this.#bootcNodeClient.patch(action.node, action.patch, {
          type: "merge",
          ...opts,
        });
        this.#count("patchBootcNode");
        written.push({
          store: "bootcNodes",
          name: action.node,
          resourceVersion: updated.metadata?.resourceVersion,
        });
        log.info(action.why, { node: action.node });
        this.#observeAction(poolName, action);
        return 0;
      }
      case "patchBootcNodeStatus": {
        try {
          const updated = await this.#bootcNodeClient.patch(action.node, action.patch, {
            type: "merge",
            subresource: "status",
            ...opts,
          });
          this.#count("patchBootcNodeStatus");
          written.push({
            store: "bootcNodes",
            name: action.node,
            resourceVersion: updated.metadata?.resourceVersion,
          });
          log.info(action.why, { node: action.node });
        } catch (e) {
          // The daemon wrote in between (or the object is gone): the next reconcile sees it.
          if (!isConflict(e) && !isNotFound(e)) throw e;
          this.#queue?.addAfter(poolName, 1_000);
        }
        return 0;
      }
      case "deleteBootcNode": {
        try {
          await this.#bootcNodeClient.delete(action.node, {
            preconditions: action.uid ? { uid: action.uid } : undefined,
          });
          this.#count("deleteBootcNode");
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
        written.push({ store: "bootcNodes", name: action.node, deleted: true });
        log.info("released node", { node: action.node });
        return 0;
      }
      case "patchNode": {
        try {
          const updated = await this.#nodeClient.patch(action.node, action.patch, {
            type: "merge",
            ...opts,
          });
          this.#count("patchNode");
          written.push({
            store: "nodes",
            name: action.node,
            resourceVersion: updated.metadata?.resourceVersion,
          });
          log.info(action.why, { node: action.node });
          this.#observeAction(poolName, action);
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
        return 0;
      }
      case "evict": {
        const outcomes = await evictPods((ns, pod) => {
          this.#count("evict");
          return this.#client.evict(ns, pod);
        }, action.pods);
        this.#metrics?.observeEvictions(poolName, action.node, outcomes, this.#clock.now());
        let refused = 0;
        for (const o of outcomes) {
          if (o.result === "refused") {
            refused++;
            log.info("eviction refused", { node: action.node, pod: o.pod, reason: o.message });
          } else if (o.result === "failed") {
            log.warn("eviction failed", { node: action.node, pod: o.pod, error: o.error });
          }
        }
        const evicted = outcomes.filter((o) => o.result === "evicted").length;
        if (evicted > 0) log.info("evicted pods", { node: action.node, count: evicted });
        return refused;
      }
      case "addFinalizer":
      case "removeFinalizer": {
        const current = pool.metadata.finalizers ?? [];
        const finalizers = action.kind === "addFinalizer"
          ? [...current, POOL_FINALIZER]
          : current.filter((f) => f !== POOL_FINALIZER);
        try {
          const updated = await this.#poolClient.patch(poolName, {
            metadata: { finalizers, resourceVersion: pool.metadata.resourceVersion },
          }, { type: "merge", ...opts });
          this.#count("poolFinalizer");
          written.push({
            store: "pools",
            name: poolName,
            resourceVersion: updated.metadata?.resourceVersion,
          });
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
        return 0;
      }
    }
  }

  #observeAction(pool: string, action: Action) {
    this.#metrics?.observeAction(pool, action, this.#clock.now());
  }

  async #recordEvents(pool: BootcNodePool, events: readonly PlannedEvent[]) {
    if (!this.#events) return;
    const records: Promise<void>[] = [];
    for (const e of events) {
      if (e.onceKey) {
        if (this.#onceKeys.has(e.onceKey)) continue;
        this.#onceKeys.add(e.onceKey);
        // Bounded: keys name nodes and times, so a long-lived controller would collect them.
        if (this.#onceKeys.size > MAX_ONCE_KEYS) {
          this.#onceKeys.delete(this.#onceKeys.values().next().value!);
        }
      }
      const involved: KubeObject = e.regarding.kind === "BootcNodePool"
        ? { apiVersion: pool.apiVersion, kind: "BootcNodePool", metadata: pool.metadata }
        : {
          apiVersion: pool.apiVersion,
          kind: "BootcNode",
          metadata: {
            name: e.regarding.name,
            uid: this.bootcNodes.store.get(e.regarding.name)?.metadata.uid,
          },
        };
      records.push(this.#events.record(involved, e.type, e.reason, e.message));
    }
    await Promise.all(records);
  }

  #observe(name: string, plan: Plan) {
    if (!this.#metrics || !plan.status) return;
    this.#metrics.observePool(name, plan, {
      bootcNodes: this.bootcNodes.store.list(),
      nodes: this.nodes.store.list(),
    });
  }

  #requeue(name: string, plan: Plan, refused: number) {
    let delay = plan.requeueAfterMs;
    if (refused > 0) {
      // Evictions refused by a PDB: back off exponentially between passes.
      const n = (this.#drainRefusals.get(name) ?? 0) + 1;
      this.#drainRefusals.set(name, n);
      const base = this.#plannerOptions.drainPollMs ?? 5_000;
      const backoff = Math.min(base * 2 ** (n - 1), this.#maxDrainBackoffMs);
      delay = delay === undefined ? backoff : Math.max(delay, backoff);
    } else if (!plan.draining) {
      this.#drainRefusals.delete(name);
    }
    if (delay !== undefined) this.#queue?.addAfter(name, delay);
  }

  /** Waits until the caches show this reconcile's writes (bounded). */
  #cached(w: Written): KubeObject | undefined {
    const store = w.store === "pools"
      ? this.pools.store
      : w.store === "nodes"
      ? this.nodes.store
      : this.bootcNodes.store;
    return (store as { get(k: string): KubeObject | undefined }).get(w.name);
  }

  #visible(w: Written): boolean {
    return writeVisible(w, this.#cached(w));
  }

  /**
   * True when writes of an earlier reconcile are still not in the caches (the wait for
   * them timed out): planning now could miss a slot granted then and grant one more.
   * A write whose object left the cache no longer counts; after
   * {@linkcode MAX_UNSEEN_MS} the writes are given up on (said in a warning).
   */
  #cachesBehind(log: Logger): boolean {
    if (this.#unseen.length === 0) return false;
    const now = Date.now();
    const pending = stillUnseen(this.#unseen, (w) => this.#cached(w));
    const givenUp = pending.filter((w) => now - w.since >= MAX_UNSEEN_MS);
    if (givenUp.length > 0) {
      log.warn("planning although the caches still miss earlier writes", {
        pending: givenUp.map((w) => `${w.store}/${w.name}`),
      });
    }
    this.#unseen = pending.filter((w) => now - w.since < MAX_UNSEEN_MS);
    return this.#unseen.length > 0;
  }

  async #awaitCaches(written: readonly Written[], log: Logger) {
    if (written.length === 0) return;
    const deadline = Date.now() + this.#cacheWaitMs;
    const visible = (w: Written) => this.#visible(w);
    let pending = written.filter((w) => !visible(w));
    while (pending.length > 0) {
      if (Date.now() >= deadline) {
        log.warn("caches did not catch up with our writes; planning waits for them", {
          pending: pending.map((w) => `${w.store}/${w.name}`),
        });
        const since = Date.now();
        this.#unseen.push(...pending.map((w) => ({ ...w, since })));
        return;
      }
      await new Promise((r) => setTimeout(r, 10));
      pending = pending.filter((w) => !visible(w));
    }
  }
}
