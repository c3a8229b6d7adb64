/**
 * The rollout invariant checker used by the end-to-end scenarios and the demo.
 *
 * {@linkcode InvariantTracker} is pure bookkeeping fed with every Node and
 * BootcNode event (and with reboots, from the fleet supervisor); it records a
 * violation the moment one happens, so a scenario fails on the first breach and
 * not only on the end state. {@linkcode watchInvariants} wires it to informers.
 *
 * The rules (issue 7): never more than `maxUnavailable` nodes of a pool cordoned by
 * us or rebooting; no node rebooted without a finished drain; at the end every node
 * runs the target, none is left cordoned by us, and prior cordons are preserved.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import { Informer, type KubeClient, Resources } from "../../lib/kube/mod.ts";
import {
  ANNOTATION_DRAINED_AT,
  type BootcNode,
  findCondition,
  holdsRebootSlot,
  IdleReason,
  LABEL_POOL,
  NodeConditionType,
} from "../../lib/api/mod.ts";

/** Per-pool limits the tracker enforces. */
export interface PoolLimit {
  /** Resolved number of reboot slots (the integer maxUnavailable). */
  maxUnavailable: number;
}

interface NodeView {
  unschedulable: boolean;
  pool?: string;
  inSlot: boolean;
  rebooting: boolean;
  drainedAt?: string;
  desiredImageState?: string;
}

/** One disruption interval of a node (cordoned by us or rebooting). */
export interface DisruptionInterval {
  node: string;
  pool?: string;
  start: number;
  end?: number;
}

/** Pure invariant bookkeeping; see the module doc. */
export class InvariantTracker {
  readonly violations: string[] = [];
  readonly intervals: DisruptionInterval[] = [];
  readonly reboots: { node: string; at: number }[] = [];
  /** The most nodes of any one pool disrupted at once. */
  maxDisrupted = 0;
  #limits: Map<string, PoolLimit>;
  #preCordoned: Set<string>;
  #views = new Map<string, NodeView>();
  #open = new Map<string, DisruptionInterval>();
  #now: () => number;

  /**
   * @param options.limits maxUnavailable per pool name
   * @param options.preCordoned nodes the user had cordoned before the rollout
   */
  constructor(options: {
    limits: Record<string, PoolLimit>;
    preCordoned?: Iterable<string>;
    now?: () => number;
  }) {
    this.#limits = new Map(Object.entries(options.limits));
    this.#preCordoned = new Set(options.preCordoned ?? []);
    this.#now = options.now ?? Date.now;
  }

  /** Records that the user cordoned `node` before the rollout. */
  markPreCordoned(node: string): void {
    this.#preCordoned.add(node);
  }

  /** Changes the limit of a pool (for scenarios that edit maxUnavailable). */
  setLimit(pool: string, limit: PoolLimit): void {
    this.#limits.set(pool, limit);
  }

  #view(name: string): NodeView {
    let v = this.#views.get(name);
    if (!v) {
      v = { unschedulable: false, inSlot: false, rebooting: false };
      this.#views.set(name, v);
    }
    return v;
  }

  /** Feeds a Node add/update. */
  observeNode(node: INode): void {
    const name = node.metadata?.name;
    if (!name) return;
    this.#view(name).unschedulable = node.spec?.unschedulable === true;
    this.#evaluate(name);
  }

  /** Feeds a Node deletion. */
  deleteNode(name: string): void {
    const v = this.#view(name);
    v.unschedulable = false;
    this.#evaluate(name);
  }

  /** Feeds a BootcNode add/update. */
  observeBootcNode(bn: BootcNode): void {
    const name = bn.metadata.name;
    if (!name) return;
    const v = this.#view(name);
    const annotations = bn.metadata.annotations ?? {};
    v.pool = bn.metadata.labels?.[LABEL_POOL] ?? bn.metadata.ownerReferences?.[0]?.name ?? v.pool;
    v.inSlot = holdsRebootSlot(bn);
    v.drainedAt = annotations[ANNOTATION_DRAINED_AT];
    v.desiredImageState = bn.spec.desiredImageState;
    const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
    v.rebooting = idle?.status === "False" && idle.reason === IdleReason.Rebooting;
    this.#evaluate(name);
  }

  /** Feeds a BootcNode deletion. */
  deleteBootcNode(name: string): void {
    const v = this.#view(name);
    v.inSlot = false;
    v.rebooting = false;
    this.#evaluate(name);
  }

  /**
   * Records that a host is about to reboot, with whether its node still has pods a
   * drain should have evicted. A reboot is legal only after a finished drain.
   * `current` is the BootcNode read from the API at reboot time: the informer feeding
   * this tracker may lag (it backs off while the API server restarts), so the drain
   * check uses the authoritative read when there is one.
   */
  observeReboot(node: string, evictablePods: string[], current?: BootcNode): void {
    this.reboots.push({ node, at: this.#now() });
    const v = this.#view(node);
    const desiredImageState = current ? current.spec.desiredImageState : v.desiredImageState;
    const drainedAt = current ? current.metadata.annotations?.[ANNOTATION_DRAINED_AT] : v.drainedAt;
    if (desiredImageState !== "Booted" || !drainedAt) {
      this.violations.push(
        `${node} rebooted without a finished drain (desiredImageState=${desiredImageState}, ` +
          `drained-at=${drainedAt ?? "unset"})`,
      );
    }
    if (evictablePods.length > 0) {
      this.violations.push(`${node} rebooted with pods still on it: ${evictablePods.join(", ")}`);
    }
  }

  #disrupted(name: string, v: NodeView): boolean {
    const cordonedByUs = v.unschedulable && !this.#preCordoned.has(name);
    return cordonedByUs || v.rebooting || v.inSlot;
  }

  #evaluate(name: string): void {
    const v = this.#view(name);
    const now = this.#now();
    const disrupted = this.#disrupted(name, v);
    const open = this.#open.get(name);
    if (disrupted && !open) {
      const interval = { node: name, pool: v.pool, start: now };
      this.#open.set(name, interval);
      this.intervals.push(interval);
    } else if (!disrupted && open) {
      open.end = now;
      this.#open.delete(name);
    }
    const perPool = new Map<string, number>();
    for (const [n, view] of this.#views) {
      if (!this.#disrupted(n, view) || !view.pool) continue;
      perPool.set(view.pool, (perPool.get(view.pool) ?? 0) + 1);
    }
    for (const [pool, count] of perPool) {
      this.maxDisrupted = Math.max(this.maxDisrupted, count);
      const limit = this.#limits.get(pool);
      if (limit && count > limit.maxUnavailable) {
        const who = [...this.#views].filter(([n, w]) => w.pool === pool && this.#disrupted(n, w))
          .map(([n]) => n);
        this.violations.push(
          `pool ${pool}: ${count} nodes disrupted at once (${who.join(", ")}), ` +
            `maxUnavailable is ${limit.maxUnavailable}`,
        );
      }
    }
  }

  /**
   * End-state checks: no node of ours left cordoned or in a slot, prior cordons kept.
   * `nodes` are the final Node objects; returns the violations found now.
   */
  checkFinal(nodes: INode[], bootcNodes: BootcNode[]): string[] {
    const problems: string[] = [];
    for (const node of nodes) {
      const name = node.metadata?.name ?? "";
      const unschedulable = node.spec?.unschedulable === true;
      if (this.#preCordoned.has(name) && !unschedulable) {
        problems.push(`${name} was cordoned before the rollout but is schedulable now`);
      }
      if (!this.#preCordoned.has(name) && unschedulable) {
        problems.push(`${name} is left cordoned`);
      }
    }
    for (const bn of bootcNodes) {
      if (holdsRebootSlot(bn)) {
        problems.push(`${bn.metadata.name} still holds a reboot slot`);
      }
    }
    return problems;
  }

  /**
   * Delays between a slot being freed (a disruption interval ending) and the next
   * node of the same pool being disrupted, in milliseconds.
   */
  handoffDelays(): number[] {
    const delays: number[] = [];
    const sorted = [...this.intervals].sort((a, b) => a.start - b.start);
    for (const interval of sorted) {
      if (interval.end === undefined) continue;
      const next = sorted.find((o) =>
        o.pool === interval.pool && o.node !== interval.node && o.start >= interval.end!
      );
      if (next) delays.push(next.start - interval.end);
    }
    return delays;
  }
}

/** A running invariant watch; `stop()` ends it. */
export interface InvariantWatch {
  /** Resolves once both informers have listed. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

/** Feeds every Node and BootcNode event to `tracker` until stopped. */
export function watchInvariants(client: KubeClient, tracker: InvariantTracker): InvariantWatch {
  const ac = new AbortController();
  // Reconnect faster than the operator does after an API server restart, so the
  // tracker's view does not lag behind what the controller and daemons act on.
  const backoff = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.2 };
  const nodes = new Informer<INode>({ resource: client.resource<INode>(Resources.nodes), backoff });
  nodes.onAdd((n) => tracker.observeNode(n));
  nodes.onUpdate((_, n) => tracker.observeNode(n));
  nodes.onDelete((n) => tracker.deleteNode(n.metadata?.name ?? ""));
  const bootcNodes = new Informer<BootcNode>({
    resource: client.resource<BootcNode>(Resources.bootcNodes),
    backoff,
  });
  bootcNodes.onAdd((bn) => tracker.observeBootcNode(bn));
  bootcNodes.onUpdate((_, bn) => tracker.observeBootcNode(bn));
  bootcNodes.onDelete((bn) => tracker.deleteBootcNode(bn.metadata.name ?? ""));
  const running = Promise.all([nodes.start(ac.signal), bootcNodes.start(ac.signal)]);
  return {
    synced: Promise.all([nodes.waitForSync(ac.signal), bootcNodes.waitForSync(ac.signal)])
      .then(() => {}),
    async stop() {
      ac.abort();
      await running;
    },
  };
}
