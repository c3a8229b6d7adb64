/**
 * Writes a pool's computed status when it is due (`status_coalesce.ts` decides:
 * changes others act on at once, progress coalesced, `lastResolvedTime` alone
 * rarely) and remembers, per pool, when this process last wrote it and since
 * when a progress change waits. A deferred write requeues the pool for the time
 * it is due, so the last state is always written.
 *
 * @module
 */
import {
  type BootcNodePool,
  type BootcNodePoolStatus,
  CONTROLLER_FIELD_MANAGER,
} from "../../lib/api/mod.ts";
import type { Clock } from "../../lib/clock.ts";
import type { ResourceClient } from "../../lib/kube/mod.ts";
import { type Written, writtenObject } from "./cache_guard.ts";
import { type CoalesceOptions, statusWriteDecision } from "./status_coalesce.ts";

/** Options of {@linkcode StatusWriter}. */
export interface StatusWriterOptions {
  pools: ResourceClient<BootcNodePool>;
  clock: Clock;
  coalesce?: Partial<CoalesceOptions>;
  /** Counts one status write. */
  count: () => void;
  /** Asks for another reconcile of `pool` after `ms` (when a deferred write is due). */
  requeue: (pool: string, ms: number) => void;
}

/** See the module documentation. */
export class StatusWriter {
  #o: StatusWriterOptions;
  /** Per pool: when this process last wrote its status, and since when a progress change waits. */
  #memo = new Map<string, { at?: number; pendingSince?: number }>();

  /** A writer through `options.pools`. */
  constructor(options: StatusWriterOptions) {
    this.#o = options;
  }

  /**
   * Writes `next` as `pool`'s status if it is due now; the write joins `written`.
   * An earlier write of this reconcile to the pool (its finalizer) moved its
   * resourceVersion on: the update is conditional on that one.
   */
  async write(pool: BootcNodePool, next: BootcNodePoolStatus, written: Written[]): Promise<void> {
    const name = pool.metadata.name ?? "";
    if (!this.#due(name, pool, next)) return;
    const own = written.findLast((w) => w.store === "pools" && w.name === name);
    const metadata = own?.resourceVersion
      ? { ...pool.metadata, resourceVersion: own.resourceVersion }
      : pool.metadata;
    const updated = await this.#o.pools.updateStatus(
      { ...pool, metadata, status: next },
      { fieldManager: CONTROLLER_FIELD_MANAGER },
    );
    this.#o.count();
    this.#memo.set(name, { at: this.#o.clock.now().getTime() });
    written.push(writtenObject("pools", name, updated));
  }

  /** Forgets a deleted pool. */
  forget(name: string): void {
    this.#memo.delete(name);
  }

  #due(name: string, pool: BootcNodePool, next: BootcNodePoolStatus): boolean {
    const now = this.#o.clock.now().getTime();
    const memo = this.#memo.get(name);
    const decision = statusWriteDecision({
      stored: pool.status,
      next,
      now,
      lastWriteAt: memo?.at,
      pendingSince: memo?.pendingSince,
      options: this.#o.coalesce,
    });
    if (decision.kind === "defer") {
      this.#memo.set(name, { at: memo?.at, pendingSince: memo?.pendingSince ?? now });
      this.#o.requeue(name, decision.at - now);
      return false;
    }
    if (decision.kind === "skip" && memo?.pendingSince !== undefined) {
      this.#memo.set(name, { at: memo.at });
    }
    return decision.kind === "write";
  }
}
