/**
 * A reflector/informer: lists a resource, then watches it from the list's
 * resourceVersion (with bookmarks), keeps a {@linkcode Store} current and calls
 * handlers. A 410 Gone relists; any other failure or a closed stream reconnects
 * with exponential backoff and jitter, resuming from the last seen
 * resourceVersion. It never gives up until its signal aborts.
 *
 * @module
 */

import { type Clock, systemClock } from "../clock.ts";
import { type Logger, silentLogger } from "../log.ts";
import { backoffDelay, type BackoffOptions } from "./backoff.ts";
import { isGone } from "./errors.ts";
import { type IndexFunc, objectKey, Store } from "./store.ts";
import type { KubeObject, ResourceClient, WatchEvent } from "./types.ts";

/** Options of {@linkcode Informer}. */
export interface InformerOptions<T extends KubeObject> {
  resource: ResourceClient<T>;
  labelSelector?: string;
  fieldSelector?: string;
  clock?: Clock;
  logger?: Logger;
  /** Named store indexes (see {@linkcode Store.byIndex}). */
  indexers?: Record<string, IndexFunc<T>>;
  /** Reconnect backoff (default 500 ms doubling to 30 s, 50% jitter). */
  backoff?: BackoffOptions;
  /** Random source for jitter and watch timeouts (a test seam). */
  random?: () => number;
  /** Page size of the initial list (default 500). */
  pageSize?: number;
  /**
   * Trims each object before it is stored and handed to handlers (e.g. drop
   * managedFields or a Node's image list), so a large cache costs less memory.
   */
  transform?: (object: T) => T;
}

/** Called for a new object. */
export type AddHandler<T> = (object: T) => void;
/** Called when an object changed. */
export type UpdateHandler<T> = (oldObject: T, newObject: T) => void;
/** Called with the last known state of a removed object. */
export type DeleteHandler<T> = (object: T) => void;

const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.5 };

/** What {@linkcode unlessAborted} settles with once its signal aborted. */
const ABORTED: unique symbol = Symbol("aborted");

/**
 * Settles like `p`, or with {@linkcode ABORTED} as soon as `signal` aborts. A call
 * that ignores its signal (a hung fetch, a stuck body reader) is then left to
 * itself, its outcome dropped: stopping never waits for it.
 */
function unlessAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) {
    p.catch(() => {});
    return Promise.resolve(ABORTED);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Thrown out of a list or watch that was stopped by its signal. */
function stopped(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("aborted", "AbortError");
}
/** A watch that ends sooner than this without events counts as a failure (avoids hot loops). */
const SHORT_WATCH_MS = 1_000;

/** Keeps a local cache of one resource in sync with the API server. */
export class Informer<T extends KubeObject> {
  /** The cache. */
  readonly store: Store<T>;
  #opts: InformerOptions<T>;
  #clock: Clock;
  #log: Logger;
  #random: () => number;
  #add: AddHandler<T>[] = [];
  #update: UpdateHandler<T>[] = [];
  #delete: DeleteHandler<T>[] = [];
  #synced = false;
  #syncWaiters: (() => void)[] = [];
  #resourceVersion?: string;
  #eventCount = 0;
  #running?: Promise<void>;
  /** Set by {@linkcode Informer.resync}: the next pass lists afresh. */
  #relist = false;
  /** Ends the current watch early (resync). */
  #endWatch?: AbortController;

  /** Creates an idle informer; call {@linkcode Informer.start}. */
  constructor(options: InformerOptions<T>) {
    this.#opts = options;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#random = options.random ?? Math.random;
    this.store = new Store<T>({ indexers: options.indexers });
  }

  /** Registers an add handler; returns a function that unregisters it. */
  onAdd(handler: AddHandler<T>): () => void {
    this.#add.push(handler);
    return () => (this.#add = this.#add.filter((h) => h !== handler));
  }

  /** Registers an update handler; returns a function that unregisters it. */
  onUpdate(handler: UpdateHandler<T>): () => void {
    this.#update.push(handler);
    return () => (this.#update = this.#update.filter((h) => h !== handler));
  }

  /** Registers a delete handler; returns a function that unregisters it. */
  onDelete(handler: DeleteHandler<T>): () => void {
    this.#delete.push(handler);
    return () => (this.#delete = this.#delete.filter((h) => h !== handler));
  }

  /** True once the first list has been stored. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** The resourceVersion the next watch resumes from. */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /** Resolves once synced; rejects with the signal's reason if it aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#syncWaiters = this.#syncWaiters.filter((w) => w !== done);
        reject(signal?.reason);
      };
      const done = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      this.#syncWaiters.push(done);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Ends the current watch and lists afresh: for a cache suspected stale (it still misses
   * writes the API server acknowledged long ago, as a watch that stopped delivering would).
   */
  resync(): void {
    this.#relist = true;
    this.#endWatch?.abort();
  }

  /** Runs until `signal` aborts; the promise resolves once stopped. */
  start(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error("informer already started");
    this.#running = this.#run(signal).finally(() => (this.#running = undefined));
    return this.#running;
  }

  #call<A extends unknown[]>(kind: string, handlers: ((...a: A) => void)[], ...args: A) {
    for (const h of handlers) {
      try {
        h(...args);
      } catch (e) {
        this.#log.error("informer handler failed", { handler: kind, error: e });
      }
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    // Page by page, each page trimmed as it arrives: the untrimmed objects of a large
    // list are never all in memory at once (a relist of 1,000 Nodes would be ~10x).
    const transform = this.#opts.transform;
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const page = await unlessAborted(
        this.#opts.resource.list({
          labelSelector: this.#opts.labelSelector,
          fieldSelector: this.#opts.fieldSelector,
          limit: this.#opts.pageSize ?? 500,
          continue: cont,
          singlePage: true,
          signal,
        }),
        signal,
      );
      if (page === ABORTED) throw stopped(signal);
      for (const item of page.items) items.push(transform ? transform(item) : item);
      cont = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (cont);
    const diff = this.store.replace(items);
    this.#resourceVersion = resourceVersion;
    for (const o of diff.deleted) this.#call("delete", this.#delete, o);
    for (const [o, n] of diff.updated) this.#call("update", this.#update, o, n);
    for (const o of diff.added) this.#call("add", this.#add, o);
    if (!this.#synced) {
      this.#synced = true;
      for (const w of this.#syncWaiters.splice(0)) w();
    }
  }

  /**
   * Watches once from the current resourceVersion; returns the number of events seen.
   * Ends as soon as `signal` aborts, even if the watch does not heed it (then the
   * stream is told to stop but not waited for).
   */
  async #watch(signal: AbortSignal): Promise<number> {
    let events = 0;
    const timeoutSeconds = Math.floor(300 + 300 * this.#random());
    const end = this.#endWatch = new AbortController();
    const outer = signal;
    signal = AbortSignal.any([outer, end.signal]);
    const stream = this.#opts.resource.watch({
      resourceVersion: this.#resourceVersion,
      labelSelector: this.#opts.labelSelector,
      fieldSelector: this.#opts.fieldSelector,
      allowWatchBookmarks: true,
      timeoutSeconds,
      signal,
    })[Symbol.asyncIterator]();
    let finished = false;
    try {
      while (!this.#relist) {
        const next = await unlessAborted(stream.next(), signal);
        if (next === ABORTED || next.done) {
          finished = next !== ABORTED;
          return events;
        }
        events++;
        this.#apply(next.value);
      }
      return events;
    } catch (e) {
      finished = true; // a stream that threw has ended
      if (this.#relist && !outer.aborted) return events; // ended by resync()
      throw e;
    } finally {
      this.#endWatch = undefined;
      if (!finished) void stream.return?.()?.catch(() => {});
    }
  }

  /** Applies one watch event to the store and calls the handlers. */
  #apply(ev: WatchEvent<T>): void {
    this.#eventCount++;
    const rv = ev.object?.metadata?.resourceVersion;
    if (ev.type !== "BOOKMARK") {
      const object = this.#opts.transform ? this.#opts.transform(ev.object) : ev.object;
      const key = objectKey(object);
      if (ev.type === "DELETED") {
        const old = this.store.delete(key);
        this.#call("delete", this.#delete, old ?? object);
      } else {
        const old = this.store.upsert(object);
        if (old) this.#call("update", this.#update, old, object);
        else this.#call("add", this.#add, object);
      }
    }
    if (rv) this.#resourceVersion = rv;
  }

  async #run(signal: AbortSignal): Promise<void> {
    let needList = true;
    let failures = 0;
    // Consecutive 410s with no watch event between them: back off instead of relisting in a loop.
    let goneStreak = 0;
    let eventsAtLastGone = -1;
    while (!signal.aborted) {
      const eventsBefore = this.#eventCount;
      try {
        if (this.#relist) {
          this.#relist = false;
          needList = true;
        }
        if (needList) {
          await this.#list(signal);
          needList = false;
        }
        const started = this.#clock.now().getTime();
        const events = await this.#watch(signal);
        if (signal.aborted) break;
        if (this.#relist) continue; // resync(): list again at once
        const lasted = this.#clock.now().getTime() - started;
        if (events === 0 && lasted < SHORT_WATCH_MS) {
          failures++;
          this.#log.debug("watch closed immediately", { failures });
          await this.#clock.sleep(this.#delay(failures), signal);
        } else {
          failures = 0;
        }
      } catch (e) {
        if (signal.aborted) break;
        if (isGone(e)) {
          // Our resourceVersion was compacted away: start over from a fresh list.
          this.#log.info("watch expired, relisting", { resourceVersion: this.#resourceVersion });
          needList = true;
          failures = 0;
          goneStreak = this.#eventCount === eventsAtLastGone ? goneStreak + 1 : 1;
          eventsAtLastGone = this.#eventCount;
          if (goneStreak > 1) {
            try {
              await this.#clock.sleep(this.#delay(goneStreak - 1), signal);
            } catch {
              break;
            }
          }
          continue;
        }
        // A watch that made progress before breaking starts the backoff over.
        failures = this.#eventCount > eventsBefore ? 1 : failures + 1;
        const delay = this.#delay(failures);
        this.#log.warn("informer list/watch failed, retrying", {
          error: e,
          failures,
          delayMs: delay,
          phase: needList ? "list" : "watch",
        });
        try {
          await this.#clock.sleep(delay, signal);
        } catch {
          break;
        }
      }
    }
  }

  #delay(failures: number): number {
    return backoffDelay(failures, this.#opts.backoff ?? DEFAULT_BACKOFF, this.#random);
  }
}
