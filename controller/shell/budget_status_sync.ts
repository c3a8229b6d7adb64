/**
 * Keeps every BootcDisruptionBudget's status current (the imperative shell of
 * `planner/budget_status.ts`): while this replica leads, a change of a budget,
 * of a Node's labels or disruption record, or of a pool (added, deleted, a new
 * spec) schedules a pass; a pass computes
 * each budget's status from the caches and writes, through the status
 * subresource, only those that changed.
 *
 * Coalesced like the pools' progress (`status_coalesce.ts`): the first change
 * waits `settleMs` (250 ms) for the rest of its burst (a slot released and
 * granted again), and passes are at least `windowMs` (1 s) apart, so a wave of
 * grants costs one write per budget, not one per node. A pass that fails is
 * retried with back-off; nothing is lost, as the next pass computes everything
 * again from the caches.
 *
 * @module
 */
import {
  type BootcDisruptionBudget,
  type BootcDisruptionBudgetStatus,
  type BootcNode,
  type BootcNodePool,
  CONTROLLER_FIELD_MANAGER,
  owningPool,
} from "../../lib/api/mod.ts";
import type { UnrecordedDisruption } from "../gates/mod.ts";
import { unrecordedSignal } from "./cross_pool_mapping.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import {
  type Informer,
  isNotFound,
  type KubeClient,
  type ResourceClient,
  Resources,
} from "../../lib/kube/mod.ts";
import { type Logger, silentLogger } from "../../lib/log.ts";
import { budgetStatus, budgetStatusChanged } from "../planner/budget_status.ts";
import type { NodeSummary } from "../model/types.ts";
import { type Node, summarizeNode } from "./object_views.ts";
import { nodeChangeMatters } from "./watch_mapping.ts";

/** Options of {@linkcode BudgetStatusSync}. */
export interface BudgetStatusSyncOptions {
  client: KubeClient;
  /** The controller's caches of budgets and Nodes. */
  budgets: Informer<BootcDisruptionBudget>;
  nodes: Informer<Node>;
  /** How long the first change of a burst waits for the rest (default 250 ms). */
  settleMs?: number;
  /** Least time between two passes (default 1 s). */
  windowMs?: number;
  /** Called after each status write (write counts, metrics). */
  onWrite?: () => void;
  /**
   * The nodes an External pool's orchestrator has down (`externalDisruptions`), counted
   * like the operator's; absent: none.
   */
  externalDisruptions?: (nodes: ReadonlyMap<string, NodeSummary>) => ReadonlySet<string>;
  /**
   * The nodes disrupted with no record on their Node (`unrecordedDisruptions`), counted
   * as the gate counts them; absent: none. With `bootcNodes`, whose changes of what makes
   * them count (`unrecordedSignal`) schedule a pass.
   */
  unrecordedDisruptions?: (
    nodes: ReadonlyMap<string, NodeSummary>,
  ) => readonly UnrecordedDisruption[];
  bootcNodes?: Informer<BootcNode>;
  /**
   * The pools: one added, deleted or with a new spec changes what counts (an External
   * pool's members, the reboot timeout an unrecorded disruption counts for).
   */
  pools?: Informer<BootcNodePool>;
  clock?: Clock;
  logger?: Logger;
}

/** What this process last wrote to a budget's status, and the resourceVersion it produced. */
interface Memo {
  json: string;
  resourceVersion: number;
}

/** See the module documentation. */
export class BudgetStatusSync {
  readonly #api: ResourceClient<BootcDisruptionBudget>;
  readonly #budgets: Informer<BootcDisruptionBudget>;
  readonly #nodes: Informer<Node>;
  readonly #settleMs: number;
  readonly #windowMs: number;
  readonly #onWrite?: () => void;
  readonly #external?: BudgetStatusSyncOptions["externalDisruptions"];
  readonly #unrecorded?: BudgetStatusSyncOptions["unrecordedDisruptions"];
  readonly #clock: Clock;
  readonly #log: Logger;
  #memo = new Map<string, Memo>();
  #dirty = true;
  #wake?: () => void;
  /** When a counted node stops counting by itself (its `until`): a pass is due then. */
  #due?: number;

  /** Subscribes to the informers; nothing is written until {@linkcode run} or {@linkcode sync}. */
  constructor(options: BudgetStatusSyncOptions) {
    this.#api = options.client.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets);
    this.#budgets = options.budgets;
    this.#nodes = options.nodes;
    this.#settleMs = options.settleMs ?? 250;
    this.#windowMs = options.windowMs ?? 1_000;
    this.#onWrite = options.onWrite;
    this.#external = options.externalDisruptions;
    this.#unrecorded = options.unrecordedDisruptions;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "budget-status" });
    const notify = () => this.notify();
    this.#budgets.onAdd(notify);
    this.#budgets.onUpdate(notify);
    this.#budgets.onDelete((b) => {
      this.#memo.delete(b.metadata.name ?? "");
    });
    this.#nodes.onAdd(notify);
    this.#nodes.onDelete(notify);
    // Heartbeats and the annotations for people change no budget's count.
    this.#nodes.onUpdate((old, node) => {
      if (nodeChangeMatters(old, node)) this.notify();
    });
    // What makes a BootcNode count: its disruption signal, and its pool (an External
    // pool's members count as its orchestrator has them).
    const signalChanged = (old?: BootcNode, bn?: BootcNode) => {
      if (unrecordedSignal(old) !== unrecordedSignal(bn) || owningPool(old) !== owningPool(bn)) {
        this.notify();
      }
    };
    options.bootcNodes?.onAdd((bn) => signalChanged(undefined, bn));
    options.bootcNodes?.onUpdate(signalChanged);
    options.bootcNodes?.onDelete((bn) => signalChanged(bn, undefined));
    options.pools?.onAdd(notify);
    options.pools?.onDelete(notify);
    options.pools?.onUpdate((old, pool) => {
      if (old.metadata?.generation !== pool.metadata?.generation) this.notify();
    });
  }

  /** Says a status may have changed; a running {@linkcode run} passes soon. */
  notify(): void {
    this.#dirty = true;
    this.#wake?.();
  }

  /** One pass: every budget's status computed from the caches, the changed ones written. */
  async sync(): Promise<void> {
    this.#due = undefined;
    const budgets = this.#budgets.store.list();
    if (budgets.length === 0) return;
    const nodes = new Map<string, NodeSummary>();
    for (const n of this.#nodes.store.list()) nodes.set(n.metadata?.name ?? "", summarizeNode(n));
    const now = this.#clock.now();
    const external = this.#external?.(nodes);
    const unrecorded = this.#unrecorded?.(nodes);
    // A node counted until a time no write marks: pass again then.
    const untils = (unrecorded ?? []).flatMap((u) => u.until ? [u.until.getTime()] : []);
    this.#due = untils.length > 0 ? Math.min(...untils) : undefined;
    for (const budget of budgets) {
      const next = budgetStatus({
        budget,
        nodes,
        now,
        ...(external ? { external } : {}),
        ...(unrecorded ? { unrecorded } : {}),
      });
      if (!budgetStatusChanged(budget.status, next) || this.#behind(budget, next)) continue;
      await this.#write(budget, next);
    }
  }

  /** True when this process wrote exactly `next` already and the cache has not caught up. */
  #behind(budget: BootcDisruptionBudget, next: BootcDisruptionBudgetStatus): boolean {
    const memo = this.#memo.get(budget.metadata.name ?? "");
    return memo !== undefined && memo.json === JSON.stringify(next) &&
      Number(budget.metadata.resourceVersion) < memo.resourceVersion;
  }

  async #write(budget: BootcDisruptionBudget, status: BootcDisruptionBudgetStatus) {
    const name = budget.metadata.name ?? "";
    try {
      const updated = await this.#api.patch(name, { status }, {
        type: "merge",
        subresource: "status",
        fieldManager: CONTROLLER_FIELD_MANAGER,
      });
      this.#onWrite?.();
      this.#memo.set(name, {
        json: JSON.stringify(status),
        resourceVersion: Number(updated.metadata?.resourceVersion),
      });
      this.#log.debug("budget status written", {
        budget: name,
        disrupted: status.disruptedNodes,
        allowed: status.allowed,
      });
    } catch (e) {
      if (!isNotFound(e)) throw e; // deleted meanwhile: nothing to say
    }
  }

  /**
   * Passes until `signal` aborts: at once, then after each notification (settled
   * and at least `windowMs` after the last pass). A failed pass is retried with
   * back-off (1 s doubling to 1 min).
   */
  async run(signal: AbortSignal): Promise<void> {
    let last = -Infinity;
    let failures = 0;
    while (!signal.aborted) {
      if (!this.#dirty) {
        const due = this.#due;
        await this.#sleep(
          due === undefined ? Infinity : Math.max(0, due - this.#clock.now().getTime()),
          signal,
        );
        if (due !== undefined && this.#clock.now().getTime() >= due) this.#dirty = true;
        if (!this.#dirty) continue;
      }
      if (signal.aborted) break;
      const now = this.#clock.now().getTime();
      const backoff = failures > 0 ? Math.min(1000 * 2 ** (failures - 1), 60_000) : 0;
      await this.#pause(Math.max(this.#settleMs, last + this.#windowMs - now, backoff), signal);
      if (signal.aborted) break;
      this.#dirty = false;
      try {
        await this.sync();
        failures = 0;
      } catch (e) {
        failures++;
        this.#dirty = true;
        this.#log.warn("cannot write BootcDisruptionBudget status", {
          error: e instanceof Error ? e.message : String(e),
        });
      }
      last = this.#clock.now().getTime();
    }
  }

  /** Sleeps `ms`, or until aborted. */
  async #pause(ms: number, signal: AbortSignal): Promise<void> {
    try {
      await this.#clock.sleep(ms, signal);
    } catch {
      // aborted
    }
  }

  /** Sleeps until notified or aborted (`ms`: at most). */
  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#dirty || signal.aborted) return;
    const ac = new AbortController();
    const stop = () => ac.abort();
    signal.addEventListener("abort", stop, { once: true });
    this.#wake = stop;
    try {
      // A timer longer than 2^31-1 ms fires at once: a far `#due` would spin.
      await this.#clock.sleep(Math.min(ms, 2 ** 31 - 1), ac.signal);
    } catch {
      // woken or aborted
    } finally {
      this.#wake = undefined;
      signal.removeEventListener("abort", stop);
    }
  }
}
