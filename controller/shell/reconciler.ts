/**
 * The Pool Reconciler's imperative shell: informers keep caches of pools,
 * nodes, BootcNodes, pull Secrets and PDBs (`caches.ts`); watch events map to
 * pool keys on a work queue (one reconcile per pool at a time); each reconcile
 * gathers the planner's inputs from the caches and the pollers
 * (`pool_sources.ts`, plus the pods of the nodes it drains, listed fresh), calls
 * {@linkcode planPool}, applies the actions in order (`apply_order.ts`,
 * `action_writer.ts`), writes the status when it is due (`status_writer.ts`),
 * records events (`planned_events.ts`) and requeues (`requeue.ts`). It decides
 * nothing itself: every decision is the planner's.
 *
 * Writes are level-triggered and idempotent: every in-flight fact lives in the
 * API (slot, prior cordon and drained-at annotations), so a new process picks
 * up where an old one stopped. After writing, a reconcile waits until its own
 * writes are visible in the caches (`cache_guard.ts`), so the next one never
 * plans on stale data (which could hand out a slot twice).
 *
 * @module
 */
import {
  ANNOTATION_SLOT_POOL,
  type BootcDisruptionBudget,
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  findCondition,
  owningPool,
  PoolConditionType,
} from "../../lib/api/mod.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { externalDisruptions } from "../gates/cluster_budget.ts";
import {
  type Informer,
  type KubeClient,
  type KubeObject,
  Resources,
  WorkQueue,
} from "../../lib/kube/mod.ts";
import { type Logger, silentLogger } from "../../lib/log.ts";
import { ActionWriter, type FailedEviction, StalePlanError } from "./action_writer.ts";
import { applyStages, runStages } from "./apply_order.ts";
import { BudgetStatusSync } from "./budget_status_sync.ts";
import { CacheGuard, cacheWaitEvent, type Written } from "./cache_guard.ts";
import { ControllerCaches } from "./caches.ts";
import { DaemonAccessSync } from "./daemon_access_sync.ts";
import { type PodLike, summarizePod } from "../model/drain.ts";
import { listNodeAttachments } from "./volume_attachments.ts";
import { planGonePool } from "../planner/hand_back.ts";
import { livePool } from "../planner/deletion_end.ts";
import { unrecordedDisruptions } from "../planner/leaving.ts";
import { foldNodeAnnotations, withoutNodeInfo } from "../planner/node_annotations.ts";
import { foldBootcNodeDisplay } from "../planner/bootc_node_display.ts";
import { budgetView } from "../planner/gated_slots.ts";
import type { ControllerMetrics } from "./metrics.ts";
import { GrantAdmission } from "./grant_admission.ts";
import {
  clusterBudgets,
  clusterView,
  type Node,
  type Pdb,
  type Secret,
  summarizeNode,
  summarizePdb,
} from "./object_views.ts";
import {
  ALL_STATUS_PARTS,
  type EventSink,
  PlannedEvents,
  withoutEventsAbout,
  writesFailedEvent,
} from "./planned_events.ts";
import { type Plan, type PlannerOptions, planPool } from "../planner/planner.ts";
import { isSlotGrant } from "../planner/plan.ts";
import { PoolSources, type PoolSourcesOptions } from "./pool_sources.ts";
import type { ImageResolver } from "../pollers/resolver.ts";
import { nextRequeue } from "./requeue.ts";
import type { CoalesceOptions } from "./status_coalesce.ts";
import { StatusWriter } from "./status_writer.ts";
import { writesFailingStatus } from "./writes_failing.ts";
import { stallDeadlines } from "../planner/deadlines.ts";
import type { PodSummary } from "../model/types.ts";
import { poolsForNode } from "./watch_mapping.ts";
import type { RetryOptions } from "../hooks/delivery_policy.ts";
import { HookWiring } from "./hook_wiring.ts";

export type { Node, Pdb, Secret } from "./object_views.ts";
export type { EventSink } from "./planned_events.ts";

/** Options of {@linkcode PoolReconciler}. */
export interface PoolReconcilerOptions extends
  Pick<
    PoolSourcesOptions,
    "tagResolution" | "healthQueries" | "channelLister" | "channelChecks"
  > {
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
   * How long planning then waits for writes the caches still miss before it lists them
   * afresh, and again before it gives up on them (default 60 s).
   */
  cacheMaxUnseenMs?: number;
  /**
   * Nodes whose planned writes are applied at the same time (default 16; see
   * controller/shell/apply_order.ts for what still waits for what).
   */
  applyConcurrency?: number;
  /**
   * The operator's namespace (default "bootc-operator"): pull Secrets must live there, and the
   * daemon's pull-secret Role there is kept to the Secrets pools name.
   */
  namespace?: string;
  /**
   * The name of the pod this controller runs in, in `namespace` (its hostname in a pod):
   * drains leave that pod alone (`controller/model/drain_policy.ts`, "own").
   */
  ownPodName?: string;
  /** The node this controller runs on: its reboot slot comes last (planner/node_order.ts). */
  controllerNode?: string;
  /** Longest back-off between drain passes whose evictions were refused (default 60 s). */
  maxDrainBackoffMs?: number;
  /** When progress-only status changes are written (controller/shell/status_coalesce.ts). */
  statusCoalesce?: Partial<CoalesceOptions>;
  /** Back-off between a hook's attempts (controller/hooks/delivery_policy.ts). */
  hookRetry?: RetryOptions;
}

/** How soon a pool whose plan met a changed node (StalePlanError) is planned again. */
const STALE_PLAN_RETRY_MS = 1_000;
/** The longest a pool whose reconcile failed waits before it is tried again. */
const FAILED_RECONCILE_MAX_DELAY_MS = 60_000;

/** Counts of the writes a reconciler made, by kind (for tests and reports). */
export type WriteCounts = Record<string, number>;

/** Options of {@linkcode PoolReconciler.runWorkers}. */
export interface RunWorkersOptions {
  /**
   * Whether this replica still holds the leader's lease (`LeaderElector.holdsLease`), asked
   * right before every write: a leader frozen past its lease must not write what it planned
   * before the freeze once another replica may lead. Without it (no leader election) every
   * write goes out.
   */
  holdsLease?: () => boolean;
}

/** Thrown instead of a write by a replica that no longer holds the lease; the reconcile ends. */
export class NotLeadingError extends Error {
  /** An error naming why the write was refused. */
  constructor() {
    super("not writing: this replica no longer holds the leader's lease");
    this.name = "NotLeadingError";
  }
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
  #caches: ControllerCaches;
  #sources: PoolSources;
  #guard: CacheGuard;
  #writer: ActionWriter;
  #status: StatusWriter;
  #events: PlannedEvents;
  #metrics?: ControllerMetrics;
  #clock: Clock;
  #log: Logger;
  /** The pod this controller runs in (when it runs in one): left out of drains. */
  #ownPod?: { namespace: string; name: string };
  readonly #controllerNode?: string;
  #plannerOptions: PlannerOptions;
  #workers: number;
  /** While workers run under leader election: whether the lease is still held. */
  #holdsLease?: () => boolean;
  #applyConcurrency: number;
  #maxDrainBackoffMs: number;
  #daemonAccess: DaemonAccessSync;
  #budgetStatus: BudgetStatusSync;
  /** Per pool: since when its reconciles' writes have failed in a row (`writes_failing.ts`). */
  #failingSince = new Map<string, Date>();
  /** Reconciles in a row, per pool, in which some node's pods could not be listed. */
  #readFailures = new Map<string, number>();
  /** Nodes whose last pod list failed, with the error (by node: lists are per node). */
  #podListFailures = new Map<string, string>();
  #queue?: WorkQueue<string>;
  /** Hook deliveries while leading (controller/hooks/). */
  #hooks: HookWiring;
  /** Per pool: drain passes in a row whose evictions were refused. */
  #drainRefusals = new Map<string, number>();
  /** The check of every grant at its write, and the slot writes the caches do not show yet. */
  #admission!: GrantAdmission;

  /** Creates the informers; nothing runs until {@linkcode startCaches} / {@linkcode runWorkers}. */
  constructor(options: PoolReconcilerOptions) {
    const c = this.#client = options.client;
    this.#metrics = options.metrics;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "pool-reconciler" });
    this.#plannerOptions = options.planner ?? {};
    this.#workers = options.workers ?? 2;
    this.#applyConcurrency = options.applyConcurrency ?? 16;
    this.#maxDrainBackoffMs = options.maxDrainBackoffMs ?? 60_000;
    const namespace = options.namespace ?? "bootc-operator";
    if (options.ownPodName) this.#ownPod = { namespace, name: options.ownPodName };
    this.#controllerNode = options.controllerNode;
    this.#hooks = new HookWiring({
      client: options.client,
      namespace,
      retry: options.hookRetry,
      events: options.events,
      clock: this.#clock,
      logger: this.#log,
      pool: (name) => this.pools.store.get(name),
      wake: (name) => this.#queue?.addAfter(name, 1_000),
    });
    const common = { clock: this.#clock, logger: this.#log };
    const caches = this.#caches = new ControllerCaches({ client: c, namespace, ...common });
    ({ pools: this.pools, nodes: this.nodes, bootcNodes: this.bootcNodes } = caches);
    ({ secrets: this.secrets, pdbs: this.pdbs, budgets: this.budgets } = caches);
    const requeue = (pool: string, ms: number) => this.#queue?.addAfter(pool, ms);
    this.#sources = this.#newSources(options, namespace);
    this.#guard = new CacheGuard({
      cached: (w) => caches.cached(w),
      waitMs: options.cacheWaitMs,
      maxUnseenMs: options.cacheMaxUnseenMs,
      resync: () => caches.resync(),
    });
    const count = (kind: string) => this.#count(kind);
    this.#writer = new ActionWriter({
      client: c,
      ...common,
      metrics: this.#metrics,
      count,
      requeue,
      fence: () => this.#fence(),
      admission: this.#admission = new GrantAdmission({
        budgetsExist: () => this.budgets.store.list().length > 0,
        view: () => {
          const { nodes, bootcNodes } = this.#view();
          return budgetView({
            pools: this.pools.store.list(),
            nodes,
            bootcNodes,
            budgets: clusterBudgets(this.budgets.store.list()),
            now: this.#clock.now(),
          });
        },
        node: (name) => {
          const n = this.nodes.store.get(name);
          return n ? summarizeNode(n) : undefined;
        },
        now: () => this.#clock.now().getTime(),
      }),
    });
    this.#status = new StatusWriter({
      pools: c.resource<BootcNodePool>(Resources.bootcNodePools),
      clock: this.#clock,
      coalesce: options.statusCoalesce,
      count: () => count("poolStatus"),
      requeue,
    });
    this.#events = new PlannedEvents(
      options.events,
      (name) => this.bootcNodes.store.get(name)?.metadata.uid,
      (name) => this.nodes.store.get(name)?.metadata?.uid,
    );
    this.#daemonAccess = new DaemonAccessSync({
      client: c,
      namespace,
      desiredNames: () => this.#sources.daemonSecretNames(this.pools.store.list()),
      triggers: [this.pools, this.secrets] as unknown as Informer<KubeObject>[],
      onWrite: () => count("daemonRole"),
      ...common,
    });
    this.#budgetStatus = new BudgetStatusSync({
      client: c,
      budgets: this.budgets,
      nodes: this.nodes,
      onWrite: () => count("budgetStatus"),
      externalDisruptions: (nodes) => externalDisruptions(this.#poolMembers(), nodes),
      unrecordedDisruptions: (nodes) =>
        unrecordedDisruptions({
          pools: this.pools.store.list(),
          bootcNodes: this.bootcNodes.store.list(),
          nodes,
          now: this.#clock.now(),
        }),
      bootcNodes: this.bootcNodes,
      pools: this.pools,
      ...common,
    });
    caches.wire({
      enqueue: (pools) => pools.forEach((p) => p && this.#queue?.add(p)),
      poolDeleted: (name) => {
        this.#sources.forget(name);
        this.#metrics?.forgetPool(name);
        this.#status.forget(name);
        this.#failingSince.delete(name);
        this.#readFailures.delete(name);
        this.#hooks.forget(name);
      },
      // A drain backing off from refused evictions looks again at once, not after its back-off.
      pdbChanged: () => [...this.#drainRefusals.keys()].forEach((p) => this.#queue?.add(p)),
    });
  }

  /** What a reconcile learns beside the caches; a new result wakes its pool. */
  #newSources(options: PoolReconcilerOptions, namespace: string): PoolSources {
    return new PoolSources({
      client: options.client,
      resolver: options.resolver,
      tagResolution: options.tagResolution,
      healthQueries: options.healthQueries,
      channelLister: options.channelLister,
      channelChecks: options.channelChecks,
      namespace,
      secrets: this.secrets,
      planner: this.#plannerOptions,
      clock: this.#clock,
      logger: this.#log,
      allowDaemons: () => this.#daemonAccess.ensure(),
      wake: (pool) => this.#queue?.add(pool),
      resolved: (pool, outcome) => {
        if (this.pools.store.get(pool)) this.#metrics?.observeResolution(pool, outcome);
      },
    });
  }

  /** Pools whose selector matches the node's labels, plus the pool owning its BootcNode. */
  poolsForNode(nodeName: string, labels: Record<string, string> | undefined): string[] {
    return poolsForNode(this.#caches.watchCache(), {
      name: nodeName,
      labels,
      annotations: this.nodes.store.get(nodeName)?.metadata?.annotations,
    });
  }

  /** Runs the informers until `signal` aborts; resolves once they stopped. */
  async startCaches(signal: AbortSignal): Promise<void> {
    await Promise.all(this.#caches.all().map((i) => i.start(signal)));
  }

  /** True once every cache has done its first list. */
  hasSynced(): boolean {
    return this.#caches.all().every((i) => i.hasSynced());
  }

  /** Resolves once every cache is synced. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all(this.#caches.all().map((i) => i.waitForSync(signal)));
  }

  /**
   * Processes pools until `signal` aborts (run it while leading). Waits for the
   * caches, enqueues every pool, and on abort lets in-flight reconciles finish.
   */
  async runWorkers(signal: AbortSignal, options: RunWorkersOptions = {}): Promise<void> {
    if (this.#queue) throw new Error("workers already running");
    this.#holdsLease = options.holdsLease;
    await this.waitForSync(signal);
    // A pool whose writes fail is tried again within a minute at the latest: its nodes may
    // hold slots meanwhile, and nothing else may wake it once the API takes them again.
    const queue = new WorkQueue<string>({
      clock: this.#clock,
      logger: this.#log,
      maxDelayMs: FAILED_RECONCILE_MAX_DELAY_MS,
    });
    this.#queue = queue;
    // A streak of failing writes is this term's: another leader may have written since.
    this.#failingSince.clear();
    this.#metrics?.setLeading(true);
    const stop = () => void queue.shutDown();
    signal.addEventListener("abort", stop, { once: true });
    // The daemon's pull-secret Role follows the pools while this replica leads.
    const accessStop = new AbortController();
    const access = this.#daemonAccess.run(accessStop.signal);
    // So does every BootcDisruptionBudget's status.
    const budgetStatus = this.#budgetStatus.run(accessStop.signal);
    // Only the leader calls hooks; deliveries still waiting when it stops are dropped.
    this.#hooks.start();
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
      this.#holdsLease = undefined;
      accessStop.abort();
      await Promise.all([access, budgetStatus, this.#hooks.stop()]);
      this.#metrics?.setLeading(false);
      // A replica that does not lead polls no registry.
      await this.#sources.stop();
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

  /**
   * One reconcile of pool `name` (what the work queue runs). Pools are planned side by
   * side: each grant is checked against the cluster budgets as it is written
   * (`grant_admission.ts`), whatever the view it was planned on.
   */
  async reconcile(name: string): Promise<void> {
    const log = this.#log.with({ pool: name });
    // Writes of an earlier reconcile the caches still miss: planning (a gone pool's
    // restores included) waits for them rather than redo or outrun them.
    if (this.#guard.behind(log)) {
      this.#queue?.addAfter(name, 500);
      const wait = this.#guard.waiting();
      const held = this.pools.store.get(name);
      if (wait && held) await this.#events.record(held, [cacheWaitEvent(name, wait)]);
      return;
    }
    const pool = this.pools.store.get(name);
    if (!pool) {
      this.#sources.forget(name);
      await this.#releaseGonePool(name, log);
      return;
    }
    const t0 = performance.now();
    const { plan, failedReads } = await this.#plan(pool);
    // A node whose pods could not be listed waits on no event: its pods are asked for again,
    // backing off while they keep failing.
    const readRetryMs = failedReads.length > 0 ? this.#readRetryMs(name) : undefined;
    const tPlanned = performance.now();
    let tApplied = tPlanned, tStatus = tPlanned, tEvents = tPlanned;
    const hookPhases = this.#hooks.phases(pool, plan, () => this.#view());
    // The approval webhook is asked beside the work queue; its answers wake the pool.
    this.#sources.wantApprovals(
      livePool(pool, this.bootcNodes.store.list(), this.#clock.now()),
      plan.approvalAsks,
    );
    const written: Written[] = [];
    let refused = 0;
    let stale: StalePlanError | undefined;
    let failed: unknown;
    // Nodes whose planned writes did not all happen: what the plan says of them did not either.
    const unapplied = new Set<string>();
    // Evictions that failed (not by a budget), and pod lists that failed (those nodes wait
    // with their pods unknown): said like failed writes, the rest goes on.
    const failedEvictions: FailedEviction[] = [...failedReads];
    let evictionsFailing = false;
    try {
      const refusals = await runStages(
        applyStages(foldBootcNodeDisplay(
          foldNodeAnnotations(plan.actions, plan.nodeAnnotations),
          plan.bootcNodeDisplay,
        )),
        async (action) => {
          try {
            return await this.#writer.apply(pool, action, written, log, failedEvictions);
          } catch (e) {
            if ("node" in action) unapplied.add(action.node);
            throw e;
          }
        },
        {
          concurrency: this.#applyConcurrency,
          // A failed write says more than a node that changed under the plan.
          minor: (e) => e instanceof StalePlanError,
          skipped: (lane) => lane.forEach((a) => "node" in a && unapplied.add(a.node)),
        },
      );
      refused = refusals.reduce((sum, n) => sum + n, 0);
      tApplied = performance.now();
      // The lease lost during an eviction: this replica says nothing more.
      const lost = failedEvictions.find((f) => f.error instanceof NotLeadingError);
      if (lost) throw lost.error;
      if (plan.status) {
        let status = this.#hooks.withStatus(pool, plan.status);
        if (failedEvictions.length > 0) {
          const failing = this.#writesFailingStatus(pool, status, failedEvictions[0].error, {
            nodes: new Set(failedEvictions.map((f) => f.node)),
            read: failedEvictions.every((f) => f.read),
          });
          const reason = (s?: BootcNodePoolStatus) =>
            findCondition(s?.conditions, PoolConditionType.Degraded)?.reason;
          // The plan's own Degraded is not what is written: its events wait.
          evictionsFailing = failing !== undefined && reason(failing) !== reason(status);
          status = failing ?? status;
        }
        this.#fence();
        await this.#status.write(pool, status, written);
      }
      tStatus = performance.now();
    } catch (e) {
      if (!(e instanceof StalePlanError)) failed = e;
      else stale = e;
    } finally {
      // A write that failed, or the plan's view of a node no longer allowed, did not happen:
      // nor did its events. A failure is said on the pool (the status is not written then).
      if (stale) unapplied.add(stale.node);
      // Nor did its status: the events telling of it wait for the plan that writes it.
      const events = withoutEventsAbout(
        plan.events,
        unapplied,
        failed !== undefined || stale
          ? ALL_STATUS_PARTS
          : new Set(evictionsFailing ? ["Degraded" as const] : []),
      );
      if (failed !== undefined && !(failed instanceof NotLeadingError)) {
        const said = writesFailedEvent(name, failed, unapplied, FAILED_RECONCILE_MAX_DELAY_MS);
        if (said) {
          events.push(said);
          await this.#sayWritesFailing(pool, failed, unapplied, written, log);
        }
      } else if (failed === undefined && !stale && failedEvictions.length > 0) {
        const nodes = new Set(failedEvictions.map((f) => f.node));
        const retry = Math.min(
          plan.requeueAfterMs ?? FAILED_RECONCILE_MAX_DELAY_MS,
          plan.pollAfterMs ?? FAILED_RECONCILE_MAX_DELAY_MS,
          readRetryMs ?? FAILED_RECONCILE_MAX_DELAY_MS,
        );
        const said = writesFailedEvent(name, failedEvictions[0].error, nodes, retry, {
          read: failedEvictions.every((f) => f.read),
        });
        if (said) events.push(said);
      } else if (failed === undefined && !stale) {
        this.#failingSince.delete(name);
      }
      await this.#events.record(pool, events);
      tEvents = performance.now();
      this.#hooks.send(pool, hookPhases, written);
      this.#observe(name, plan);
      await this.#guard.settle(written, log);
      log.debug("reconciled", {
        actions: plan.actions.length,
        grants: plan.actions.filter(isSlotGrant).length,
        inUse: plan.status?.slots?.inUse,
        waiting: plan.status?.slots?.waiting,
        events: plan.events.length,
        planMs: Math.round(tPlanned - t0),
        applyMs: Math.round(tApplied - tPlanned),
        statusMs: Math.round(tStatus - tApplied),
        eventsMs: Math.round(tEvents - tStatus),
        settleMs: Math.round(performance.now() - tEvents),
      });
    }
    if (failed !== undefined) throw failed;
    if (stale) {
      log.info("a node changed under the plan; planning again", { reason: stale.message });
      this.#queue?.addAfter(name, STALE_PLAN_RETRY_MS);
      return;
    }
    this.#requeue(name, plan, refused);
    if (readRetryMs !== undefined) this.#queue?.addAfter(name, readRetryMs);
    else this.#readFailures.delete(name);
  }

  /**
   * A failed reconcile's writes: past the pool's progress timeout of failures in a row,
   * its status says so (`writes_failing.ts`); a failure to say it is only logged.
   */
  async #sayWritesFailing(
    pool: BootcNodePool,
    error: unknown,
    nodes: ReadonlySet<string>,
    written: Written[],
    log: Logger,
  ): Promise<void> {
    // The status as last written: the plan's tells of writes that did not happen.
    const status = this.#writesFailingStatus(pool, pool.status, error, { nodes });
    if (!status) return;
    try {
      this.#fence();
      await this.#status.write(pool, status, written);
    } catch (e) {
      log.warn("cannot say in the pool's status that its writes fail", {
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }

  /**
   * `base` with the pool's streak of failing writes said (`writes_failing.ts`) once it is
   * past the pool's progress timeout; the streak starts now if none runs.
   */
  #writesFailingStatus(
    pool: BootcNodePool,
    base: BootcNodePoolStatus | undefined,
    error: unknown,
    { nodes, read }: { nodes: ReadonlySet<string>; read?: boolean },
  ): BootcNodePoolStatus | undefined {
    const name = pool.metadata.name ?? "";
    const now = this.#clock.now();
    const since = this.#failingSince.get(name) ?? now;
    this.#failingSince.set(name, since);
    return writesFailingStatus(
      base,
      {
        since,
        error: error instanceof Error ? error.message : String(error),
        nodes: [...nodes],
        read,
      },
      now,
      stallDeadlines(pool.spec.rollout as Record<string, unknown> | undefined).progressMs,
      pool.status,
    );
  }

  /**
   * Gathers the planner's inputs from the caches and the pollers, and plans the pool. A
   * node whose pods cannot be listed is planned with its pods unknown (it waits, judged
   * once they are known) and its failure returned, so the rest of the pool goes on.
   */
  async #plan(pool: BootcNodePool): Promise<{ plan: Plan; failedReads: FailedEviction[] }> {
    const now = this.#clock.now();
    const secret = await this.#sources.pullSecret(pool);
    // A channel pool plans with the version its channel chose as its ref.
    const { planned, channel } = await this.#sources.channel(pool, secret, now);
    // A deleted pool finishing its rollout first keeps its pollers as a live pool has them.
    const live = livePool(planned, this.bootcNodes.store.list(), now);
    const resolution = await this.#sources.resolution(live, secret, now);
    const baseInput = {
      ...this.#view(),
      pool: planned,
      channel,
      poolObjects: this.pools.store.list(),
      budgets: clusterBudgets(this.budgets.store.list()),
      unseen: this.#admission.unseen(),
      pdbs: this.pdbs.store.list().map(summarizePdb),
      resolution,
      ...await this.#sources.signatures(
        live,
        secret,
        resolution,
        now,
        this.bootcNodes.store.list(),
      ),
      healthQueries: this.#sources.healthVerdicts(live, this.nodes.store.list()),
      alerts: this.#sources.alertsVerdict(live),
      objectChecks: this.#sources.objectVerdicts(live),
      approvalAnswers: this.#sources.approvalAnswers(live),
      pullSecretHash: secret.hash,
      pullSecretIssue: secret.issue,
      ...(this.#controllerNode ? { controllerNode: this.#controllerNode } : {}),
      now,
      options: this.#plannerOptions,
    };
    // The lists that failed last time: those candidates are asked for again without
    // holding back the ones after them (`grantSlots`).
    const plan = planPool({
      ...baseInput,
      podsByNode: new Map(),
      podsListed: new Set(),
      podsFailed: this.#podListFailures,
    });
    if (plan.needPods.length === 0) return { plan, failedReads: [] };
    const listed = await this.#listPods(plan.needPods);
    const pods = listed.pods;
    const volumes = pool.spec.rollout?.drain?.waitForVolumeDetach
      ? await listNodeAttachments(this.#client, plan.needPods)
      : undefined;
    const failed = [...listed.failed, ...volumes?.failed ?? []];
    const podsFailed = new Map(failed.map((f) => [f.node, (f.error as Error).message]));
    for (const n of pods.keys()) this.#podListFailures.delete(n);
    for (const [n, why] of podsFailed) this.#podListFailures.set(n, why);
    for (const n of this.#podListFailures.keys()) {
      if (!this.nodes.store.get(n)) this.#podListFailures.delete(n); // a Node gone
    }
    return {
      plan: planPool({
        ...baseInput,
        podsByNode: pods,
        podsListed: new Set(pods.keys()),
        podsFailed,
        ...(volumes ? { attachmentsByNode: volumes.attachments } : {}),
      }),
      failedReads: failed,
    };
  }

  /** Every pool with its members (BootcNode ownership), as the cluster budgets read them. */
  #poolMembers(): { pool: BootcNodePool; members: string[] }[] {
    const members = new Map<string, string[]>();
    for (const bn of this.bootcNodes.store.list()) {
      const owner = owningPool(bn);
      if (owner !== undefined) {
        members.set(owner, [...members.get(owner) ?? [], bn.metadata.name ?? ""]);
      }
    }
    return this.pools.store.list().map((pool) => ({
      pool,
      members: members.get(pool.metadata.name ?? "") ?? [],
    }));
  }

  #view() {
    return clusterView({
      pools: this.pools.store.list(),
      nodes: this.nodes.store.list(),
      bootcNodes: this.bootcNodes.store.list(),
    });
  }

  async #listPods(
    nodes: readonly string[],
  ): Promise<{ pods: Map<string, PodSummary[]>; failed: FailedEviction[] }> {
    const pods = this.#client.resource<PodLike>(Resources.pods);
    const out = new Map<string, PodSummary[]>();
    const failed: FailedEviction[] = [];
    await Promise.all(nodes.map(async (n) => {
      try {
        const list = await pods.list({ fieldSelector: `spec.nodeName=${n}` });
        out.set(n, list.items.map((p) => summarizePod(p, { ownPod: this.#ownPod })));
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        const error = new Error(`listing the pods of node ${n} failed: ${why}`);
        failed.push({ node: n, error, read: true });
      }
    }));
    return { pods: out, failed };
  }

  /** Hands back nodes still carrying the record of a pool that no longer exists. */
  async #releaseGonePool(name: string, log: Logger): Promise<void> {
    const view = this.#view();
    const plan = planGonePool(name, { ...view, now: this.#clock.now() });
    const written: Written[] = [];
    // Handed back: the Node annotations for people go with the record.
    const restores = withoutNodeInfo(
      plan.actions.filter((a) => a.kind === "patchNode"),
      view.nodes,
    );
    // Only its name is known of the pool.
    const gone = { metadata: { name } } as BootcNodePool;
    try {
      await runStages(applyStages(restores), (action) => {
        log.warn("restoring a node whose pool is gone", {
          node: "node" in action ? action.node : "",
        });
        return this.#writer.apply(gone, action, written, log);
      }, { concurrency: this.#applyConcurrency });
    } finally {
      await this.#guard.settle(written, log);
    }
  }

  /** Throws {@linkcode NotLeadingError} once this replica no longer holds the lease. */
  #fence(): void {
    if (this.#holdsLease && !this.#holdsLease()) throw new NotLeadingError();
  }

  #count(kind: string) {
    this.writes[kind] = (this.writes[kind] ?? 0) + 1;
    this.#metrics?.apiWrites.inc({ kind });
  }

  #observe(name: string, plan: Plan) {
    if (!this.#metrics || !plan.status) return;
    this.#metrics.observePool(name, plan, {
      bootcNodes: this.bootcNodes.store.list(),
      nodes: this.nodes.store.list(),
      spec: this.pools.store.get(name)?.spec,
    });
  }

  /** The delay before the pods that could not be listed are asked for again. */
  #readRetryMs(name: string): number {
    const n = this.#readFailures.get(name) ?? 0;
    this.#readFailures.set(name, n + 1);
    const base = this.#plannerOptions.drainPollMs ?? 5_000;
    return Math.min(base * 2 ** n, FAILED_RECONCILE_MAX_DELAY_MS);
  }

  #requeue(name: string, plan: Plan, refused: number) {
    const next = nextRequeue({
      planned: plan.requeueAfterMs,
      poll: plan.pollAfterMs,
      draining: plan.draining,
      refused,
      streak: this.#drainRefusals.get(name) ?? 0,
      baseMs: this.#plannerOptions.drainPollMs ?? 5_000,
      maxMs: this.#maxDrainBackoffMs,
    });
    if (next.streak > 0) this.#drainRefusals.set(name, next.streak);
    else this.#drainRefusals.delete(name);
    if (next.delayMs !== undefined) this.#queue?.addAfter(name, next.delayMs);
  }
}
