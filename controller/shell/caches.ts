/**
 * The controller's caches: one informer per resource it reads, each trimmed to
 * what the controller uses (`object_views.ts`), and the forwarding of their
 * events to the pools they wake (decided in `watch_mapping.ts` and
 * `cross_pool_mapping.ts`; this module only wires).
 *
 * @module
 */
import {
  type BootcDisruptionBudget,
  type BootcNode,
  type BootcNodePool,
  LABEL_POOL,
} from "../../lib/api/mod.ts";
import type { Clock } from "../../lib/clock.ts";
import {
  Informer,
  type KubeClient,
  type KubeObject,
  labelIndex,
  Resources,
} from "../../lib/kube/mod.ts";
import type { Logger } from "../../lib/log.ts";
import type { Written } from "./cache_guard.ts";
import {
  allPools,
  bootcNodeHoldWakes,
  nodeRecordWakes,
  poolStatusWakes,
} from "./cross_pool_mapping.ts";
import {
  type Node,
  type Pdb,
  type Secret,
  trimNode,
  trimPdb,
  withoutManagedFields,
} from "./object_views.ts";
import {
  bootcNodeEventPools,
  nodeEventPools,
  poolEventPools,
  secretEventPools,
  type WatchCache,
} from "./watch_mapping.ts";

/** Options of {@linkcode ControllerCaches}. */
export interface ControllerCachesOptions {
  client: KubeClient;
  /** The operator's namespace: the only one whose pull Secrets are cached. */
  namespace: string;
  clock: Clock;
  logger: Logger;
}

/** What the watch events call. */
export interface CacheHandlers {
  /** Wakes these pools. */
  enqueue: (pools: string[]) => void;
  /** A pool was deleted (after the pools it wakes were enqueued). */
  poolDeleted: (name: string) => void;
  /** A PodDisruptionBudget came, went, or allows more: drains it refused may go on now. */
  pdbChanged: () => void;
}

/** The informers; nothing runs until {@linkcode ControllerCaches.start}. */
export class ControllerCaches {
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

  /** Creates the informers. */
  constructor(options: ControllerCachesOptions) {
    const c = options.client;
    const common = { clock: options.clock, logger: options.logger };
    const trimmed = { transform: withoutManagedFields, ...common };
    this.pools = new Informer<BootcNodePool>({
      resource: c.resource<BootcNodePool>(Resources.bootcNodePools),
      ...trimmed,
    });
    this.nodes = new Informer<Node>({
      resource: c.resource<Node>(Resources.nodes),
      transform: trimNode,
      ...common,
    });
    this.bootcNodes = new Informer<BootcNode>({
      resource: c.resource<BootcNode>(Resources.bootcNodes),
      indexers: { pool: labelIndex<BootcNode>(LABEL_POOL) },
      ...trimmed,
    });
    this.secrets = new Informer<Secret>({
      resource: c.resource<Secret>(Resources.secrets, options.namespace),
      fieldSelector: "type=kubernetes.io/dockerconfigjson",
      ...trimmed,
    });
    this.pdbs = new Informer<Pdb>({
      resource: c.resource<Pdb>(Resources.poddisruptionbudgets),
      transform: trimPdb,
      ...common,
    });
    this.budgets = new Informer<BootcDisruptionBudget>({
      resource: c.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets),
      ...trimmed,
    });
  }

  /** All informers, for starting and sync checks. */
  all(): Informer<KubeObject>[] {
    return [
      this.pools,
      this.nodes,
      this.bootcNodes,
      this.secrets,
      this.pdbs,
      this.budgets,
    ] as unknown as Informer<KubeObject>[];
  }

  /** The caches as the watch mapping reads them. */
  watchCache(): WatchCache {
    return {
      pools: () => this.pools.store.list(),
      bootcNode: (name) => this.bootcNodes.store.get(name),
      node: (name) => this.nodes.store.get(name),
    };
  }

  /** Lists the caches the cache guard reads afresh (their watches may have stopped delivering). */
  resync(): void {
    for (const informer of [this.pools, this.nodes, this.bootcNodes]) informer.resync();
  }

  /** The object a cache holds under a write's name (what the cache guard reads). */
  cached(w: Written): KubeObject | undefined {
    const store = w.store === "pools"
      ? this.pools.store
      : w.store === "nodes"
      ? this.nodes.store
      : this.bootcNodes.store;
    return (store as { get(k: string): KubeObject | undefined }).get(w.name);
  }

  /** Forwards every watch event to the pools it wakes. */
  wire(h: CacheHandlers): void {
    const cache = this.watchCache();
    const { enqueue } = h;
    this.pools.onAdd((p) => enqueue(poolEventPools(cache, { type: "add", object: p })));
    this.pools.onUpdate((o, n) =>
      enqueue(poolEventPools(cache, { type: "update", old: o, object: n }))
    );
    this.pools.onDelete((p) => {
      enqueue(poolEventPools(cache, { type: "delete", object: p }));
      h.poolDeleted(p.metadata.name ?? "");
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
    // Only a change that may let a refused eviction through: a PDB's status churns often.
    this.pdbs.onAdd(h.pdbChanged);
    this.pdbs.onUpdate((o, n) => {
      const allowed = (p: Pdb) => p.status?.disruptionsAllowed ?? 0;
      const selector = (p: Pdb) => JSON.stringify(p.spec?.selector ?? null);
      if (allowed(n) > allowed(o) || selector(n) !== selector(o)) {
        h.pdbChanged();
      }
    });
    this.pdbs.onDelete(h.pdbChanged);
    this.#wireCrossPool(enqueue);
  }

  /** Cross-pool policies: ordering, and budgets that span pools. */
  #wireCrossPool(enqueue: (pools: string[]) => void): void {
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
    this.bootcNodes.onUpdate((o, n) =>
      enqueue(bootcNodeHoldWakes(o, n, this.pools.store.list(), budgetsExist()))
    );
    this.bootcNodes.onDelete((b) =>
      enqueue(bootcNodeHoldWakes(b, undefined, this.pools.store.list(), budgetsExist()))
    );
  }
}
