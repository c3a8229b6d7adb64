/**
 * A controller work queue: deduplicated keys, never the same key in two
 * workers at once, delayed and rate-limited re-adds, and a clean shutdown.
 *
 * Semantics (as client-go's workqueue): a key waiting in the queue is queued
 * once however often it is added; a key added while a worker processes it is
 * queued again when that run finishes, so it never runs twice concurrently.
 *
 * @module
 */

import { type Clock, systemClock } from "../clock.ts";
import { type Logger, silentLogger } from "../log.ts";
import { backoffDelay } from "./backoff.ts";

/** Options of {@linkcode WorkQueue}. */
export interface WorkQueueOptions {
  clock?: Clock;
  logger?: Logger;
  /** First rate-limited delay (default 50 ms); doubles per failure. */
  baseDelayMs?: number;
  /** Rate-limited delay cap (default 5 minutes). */
  maxDelayMs?: number;
}

/** Options of {@linkcode WorkQueue.run}. */
export interface RunOptions {
  /** Parallel workers (default 1). */
  concurrency?: number;
}

/** Processes one key; throwing re-adds the key rate-limited, returning forgets its failures. */
export type Worker<K> = (key: K) => Promise<void> | void;

/** A deduplicating, rate-limited work queue. */
export class WorkQueue<K = string> {
  #clock: Clock;
  #log: Logger;
  #baseDelayMs: number;
  #maxDelayMs: number;
  #queue: K[] = [];
  /** Keys that need processing (queued, or re-added while processing). */
  #dirty = new Set<K>();
  #processing = new Set<K>();
  #waiters: ((key: K | undefined) => void)[] = [];
  #delayed = new Map<K, { at: number; abort: AbortController }>();
  #failures = new Map<K, number>();
  #shuttingDown = false;
  #drain = false;
  #idleWaiters: (() => void)[] = [];

  /** Creates an empty queue. */
  constructor(options: WorkQueueOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#baseDelayMs = options.baseDelayMs ?? 50;
    this.#maxDelayMs = options.maxDelayMs ?? 5 * 60_000;
  }

  /** Keys waiting to be processed (not counting delayed ones). */
  get length(): number {
    return this.#queue.length;
  }

  /** True once {@linkcode WorkQueue.shutDown} was called. */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Queues `key` unless it is already queued; ignored after shutdown. */
  add(key: K): void {
    if (this.#shuttingDown) return;
    if (this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return; // re-queued by done()
    this.#push(key);
  }

  #push(key: K) {
    const waiter = this.#waiters.shift();
    if (waiter) {
      this.#take(key);
      waiter(key);
    } else {
      this.#queue.push(key);
    }
  }

  #take(key: K) {
    this.#dirty.delete(key);
    this.#processing.add(key);
  }

  /** Queues `key` after `ms` (an earlier pending delay for the same key wins). */
  addAfter(key: K, ms: number): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const at = this.#clock.now().getTime() + ms;
    const pending = this.#delayed.get(key);
    if (pending && pending.at <= at) return;
    pending?.abort.abort();
    const abort = new AbortController();
    this.#delayed.set(key, { at, abort });
    this.#clock.sleep(ms, abort.signal).then(
      () => {
        if (this.#delayed.get(key)?.abort === abort) this.#delayed.delete(key);
        this.add(key);
      },
      () => {/* cancelled */},
    );
  }

  /** Queues `key` after its per-key exponential backoff and counts the failure. */
  addRateLimited(key: K): void {
    const n = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, n);
    this.addAfter(
      key,
      backoffDelay(n, { initialMs: this.#baseDelayMs, maxMs: this.#maxDelayMs, factor: 2 }),
    );
  }

  /** Forgets the failures of `key` (its next rate-limited delay starts over). */
  forget(key: K): void {
    this.#failures.delete(key);
  }

  /** How many rate-limited re-adds `key` has had since it was last forgotten. */
  numRequeues(key: K): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Waits for the next key; undefined once shut down (and drained, if draining). */
  #get(): Promise<K | undefined> {
    const key = this.#queue.shift();
    if (key !== undefined) {
      this.#take(key);
      return Promise.resolve(key);
    }
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #done(key: K) {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) {
      // Re-added while it ran: queue it again now that it is free.
      if (this.#shuttingDown && !this.#drain) this.#dirty.delete(key);
      else this.#push(key);
    }
    if (this.#processing.size === 0) {
      for (const w of this.#idleWaiters.splice(0)) w();
    }
  }

  /**
   * Runs `worker` on keys with `concurrency` workers until shut down; resolves
   * once every worker has stopped. A throwing worker re-adds its key
   * rate-limited; a succeeding one forgets the key's failures.
   */
  async run(worker: Worker<K>, options: RunOptions = {}): Promise<void> {
    const concurrency = Math.max(1, options.concurrency ?? 1);
    const loop = async () => {
      while (true) {
        const key = await this.#get();
        if (key === undefined) return;
        try {
          await worker(key);
          this.forget(key);
        } catch (e) {
          this.#log.warn("work item failed, requeueing", {
            key: String(key),
            error: e,
            requeues: this.numRequeues(key) + 1,
          });
          // During shutdown the key is dropped (add is ignored); delayed timers are not started.
          if (!this.#shuttingDown) this.addRateLimited(key);
        } finally {
          this.#done(key);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, loop));
  }

  /**
   * Stops the queue: new adds are ignored, delayed adds are cancelled and idle
   * workers exit. With `drain: true` queued keys are still processed first;
   * otherwise they are dropped. Resolves when no key is being processed.
   */
  shutDown(options: { drain?: boolean } = {}): Promise<void> {
    this.#shuttingDown = true;
    this.#drain = !!options.drain;
    for (const { abort } of this.#delayed.values()) abort.abort();
    this.#delayed.clear();
    if (!this.#drain) {
      for (const k of this.#queue) this.#dirty.delete(k);
      this.#queue = [];
    }
    if (this.#queue.length === 0) {
      for (const w of this.#waiters.splice(0)) w(undefined);
    }
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}
