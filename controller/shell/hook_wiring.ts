/**
 * The reconciler's side of hooks (`controller/hooks/`): deliveries exist only
 * while this replica leads; a reconcile asks for the phases its plan reaches,
 * sends those whose writes went through, and folds the finished deliveries
 * into the pool's status. A delivery that finally fails is a Warning event on
 * the pool; every settled one wakes the pool so its status shows it.
 *
 * @module
 */
import type { BootcNode, BootcNodePool, BootcNodePoolStatus } from "../../lib/api/mod.ts";
import type { Clock } from "../../lib/clock.ts";
import type { KubeClient } from "../../lib/kube/mod.ts";
import type { Logger } from "../../lib/log.ts";
import { HookDeliveries } from "../hooks/deliveries.ts";
import type { RetryOptions } from "../hooks/delivery_policy.ts";
import { withHookStatus } from "../hooks/hook_status.ts";
import { type HookOccurrence, hookOccurrences, writtenOccurrences } from "../hooks/phases.ts";
import type { NodeSummary } from "../model/types.ts";
import type { Plan } from "../planner/planner.ts";
import type { Written } from "./cache_guard.ts";
import type { EventSink } from "./planned_events.ts";
import { webhookSecretReader } from "./webhook_secrets.ts";

/** Options of {@linkcode HookWiring}. */
export interface HookWiringOptions {
  client: KubeClient;
  /** The operator's namespace: hook Secrets live there. */
  namespace: string;
  retry?: RetryOptions;
  events?: EventSink;
  clock: Clock;
  logger: Logger;
  /** The pool by name, from the cache (gone: undefined). */
  pool: (name: string) => BootcNodePool | undefined;
  /** Reconciles `name` soon (a settled delivery joins its next status write). */
  wake: (name: string) => void;
}

/** See the module documentation. */
export class HookWiring {
  #o: HookWiringOptions;
  #deliveries?: HookDeliveries;

  constructor(options: HookWiringOptions) {
    this.#o = options;
  }

  /** Starts delivering (on taking the lead). */
  start(): void {
    this.#deliveries = this.#newDeliveries();
  }

  /** Stops delivering (on losing the lead): deliveries still waiting are dropped. */
  async stop(): Promise<void> {
    const deliveries = this.#deliveries;
    this.#deliveries = undefined;
    await deliveries?.close();
  }

  /** Forgets a deleted pool. */
  forget(name: string): void {
    this.#deliveries?.forget(name);
  }

  /**
   * The phases `plan` reaches (none unless leading and the pool has hooks), read
   * on the view before the plan's writes: a released node still shows its slot's time.
   */
  phases(
    pool: BootcNodePool,
    plan: Plan,
    view: () => {
      nodes: ReadonlyMap<string, NodeSummary>;
      bootcNodes: ReadonlyMap<string, BootcNode>;
    },
  ): HookOccurrence[] {
    if (!this.#deliveries || !pool.spec.hooks?.length) return [];
    // Built only for a pool with hooks: a view walks every cached Node.
    const { nodes, bootcNodes } = view();
    return hookOccurrences({ pool, plan, nodes, bootcNodes, now: this.#o.clock.now() });
  }

  /** Sends the phases whose writes went through; the rest are planned again (same ids, once). */
  send(pool: BootcNodePool, phases: readonly HookOccurrence[], written: readonly Written[]): void {
    this.#deliveries?.enqueue(pool, writtenOccurrences(phases, written));
  }

  /** `status` with `status.hooks`: the deliveries finished here, else those stored. */
  withStatus(pool: BootcNodePool, status: BootcNodePoolStatus): BootcNodePoolStatus {
    return withHookStatus(status, {
      hooks: pool.spec.hooks,
      stored: pool.status?.hooks,
      fresh: this.#deliveries?.results(pool.metadata.name ?? ""),
    });
  }

  #newDeliveries(): HookDeliveries {
    const { namespace, retry, events, clock, logger } = this.#o;
    return new HookDeliveries({
      secretData: webhookSecretReader(this.#o.client, namespace),
      retry,
      clock,
      logger,
      onSettled: (name, status) => {
        const pool = this.#o.pool(name);
        if (!pool) return;
        if (status.result === "Failed") {
          const what = status.node ? `${status.phase} of node ${status.node}` : status.phase;
          void events?.record(
            { apiVersion: pool.apiVersion, kind: "BootcNodePool", metadata: pool.metadata },
            "Warning",
            "HookDeliveryFailed",
            `hook ${status.name}: ${what} (revision ${status.revision}) not delivered after ` +
              `${status.attempts} attempt(s): ${status.message ?? ""}`.slice(0, 1024),
          ).catch(() => {});
        }
        this.#o.wake(name);
      },
    });
  }
}
