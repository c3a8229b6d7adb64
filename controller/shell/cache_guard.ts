/**
 * The cache guard: after its writes a reconcile waits until the informers show
 * them, so the next reconcile never plans on stale data (which could hand out a
 * slot twice). Writes the caches still miss when that wait ends hold back all
 * planning until they show, for at most a bound.
 *
 * A write is recognised by the identity of the object written (its uid) and the
 * resourceVersion the write produced, never by its name alone: when one pool
 * deletes a node's BootcNode and another pool creates one of the same name, the
 * cache holding the new object (another uid) shows that the delete happened.
 * Waiting for "no object of that name" there would never end.
 *
 * @module
 */
import type { KubeObject } from "../../lib/kube/mod.ts";
import type { Logger } from "../../lib/log.ts";

/** The caches the controller writes through. */
export type CacheName = "bootcNodes" | "nodes" | "pools";

/** A write of this controller's, as the caches should come to show it. */
export interface Written {
  store: CacheName;
  name: string;
  /** The uid of the object written; for a delete, of the object deleted. */
  uid?: string;
  /** The resourceVersion the write produced (unset for a delete). */
  resourceVersion?: string;
  deleted?: boolean;
}

/** The record of a create, patch or update to `store` that returned `object`. */
export function writtenObject(store: CacheName, name: string, object: KubeObject): Written {
  return {
    store,
    name,
    uid: object.metadata?.uid,
    resourceVersion: object.metadata?.resourceVersion,
  };
}

/**
 * Whether the cache (`cached`: the object it holds under the write's name now)
 * shows write `w`.
 * - A delete shows once the object deleted is gone, terminating (a finalizer may
 *   hold it for long) or replaced: another object (another uid) holds the name.
 * - Any other write shows once the cache holds a resourceVersion at or after the
 *   write's: the object as written or changed since, or an object that took the
 *   name after it. An object cached from before the write (an older one of that
 *   name included) does not show it.
 */
export function writeVisible(w: Written, cached: KubeObject | undefined): boolean {
  if (w.deleted) {
    if (cached === undefined || cached.metadata?.deletionTimestamp) return true;
    const uid = cached.metadata?.uid;
    return w.uid !== undefined && uid !== undefined && uid !== w.uid;
  }
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

/** Orders resourceVersions: numeric ones (every API server's) as numbers, others only if equal. */
function newerOrEqual(have: string | undefined, want: string | undefined): boolean {
  if (want === undefined) return true;
  if (have === undefined) return false;
  if (/^\d+$/.test(have) && /^\d+$/.test(want)) return BigInt(have) >= BigInt(want);
  return have === want;
}

/** Options of {@linkcode CacheGuard}. */
export interface CacheGuardOptions {
  /** The object a cache holds under the write's name now. */
  cached: (w: Written) => KubeObject | undefined;
  /** How long a reconcile waits for the caches to show its own writes (default 10 s). */
  waitMs?: number;
  /** How long planning waits for writes still unseen after that (default 60 s). */
  maxUnseenMs?: number;
  /**
   * Lists every cache afresh (ControllerCaches.resync): called once when writes are still
   * unseen after `maxUnseenMs` (a watch that stopped delivering), before they are given up
   * on after another `maxUnseenMs`.
   */
  resync?: () => void;
  /** Real time in ms (default `Date.now`: cache lag is real, whatever the reconciler's clock says). */
  now?: () => number;
  /** Waits between looks at the caches (default 10 ms of real time). */
  sleep?: () => Promise<void>;
}

/** Remembers the writes the caches still miss; see the module documentation. */
export class CacheGuard {
  #cached: (w: Written) => KubeObject | undefined;
  #waitMs: number;
  #maxUnseenMs: number;
  #now: () => number;
  #sleep: () => Promise<void>;
  #resync?: () => void;
  /** Writes the caches had not shown when a reconcile stopped waiting. */
  #unseen: Unseen[] = [];

  /** A guard over the caches `options.cached` reads. */
  constructor(options: CacheGuardOptions) {
    this.#cached = options.cached;
    this.#waitMs = options.waitMs ?? 10_000;
    this.#maxUnseenMs = options.maxUnseenMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? (() => new Promise((r) => setTimeout(r, 10)));
    this.#resync = options.resync;
  }

  /**
   * True when writes of an earlier reconcile are still not in the caches (the wait for
   * them timed out): planning now could miss a slot granted then and grant one more.
   * A write whose object left the cache no longer counts; after `maxUnseenMs` the caches
   * are listed afresh (`resync`), and after another `maxUnseenMs` the writes are given up
   * on (each said in a warning).
   */
  behind(log: Logger): boolean {
    if (this.#unseen.length === 0) return false;
    const now = this.#now();
    const kept: Unseen[] = [];
    const relist: Unseen[] = [];
    const givenUp: Unseen[] = [];
    for (const w of stillUnseen(this.#unseen, this.#cached)) {
      if (now - w.since < this.#maxUnseenMs) kept.push(w);
      else if (this.#resync && !w.relisted) relist.push(w);
      else givenUp.push(w);
    }
    if (relist.length > 0) {
      // A watch that stopped delivering: a fresh list shows what the API server holds.
      log.warn("the caches still miss earlier writes; listing afresh", {
        pending: relist.map(describe),
      });
      this.#resync?.();
      kept.push(...relist.map((w) => ({ ...w, since: now, relisted: true })));
    }
    if (givenUp.length > 0) {
      log.warn("planning although the caches still miss earlier writes", {
        pending: givenUp.map(describe),
      });
    }
    this.#unseen = kept;
    return kept.length > 0;
  }

  /** Waits until the caches show `written` (bounded by `waitMs`; what is left is remembered). */
  async settle(written: readonly Written[], log: Logger): Promise<void> {
    if (written.length === 0) return;
    const deadline = this.#now() + this.#waitMs;
    let pending = written.filter((w) => !writeVisible(w, this.#cached(w)));
    while (pending.length > 0) {
      if (this.#now() >= deadline) {
        log.warn("caches did not catch up with our writes; planning waits for them", {
          pending: pending.map(describe),
        });
        const since = this.#now();
        this.#unseen.push(...pending.map((w) => ({ ...w, since })));
        return;
      }
      await this.#sleep();
      pending = pending.filter((w) => !writeVisible(w, this.#cached(w)));
    }
  }
}

/** A write the caches missed when a reconcile stopped waiting for it. */
type Unseen = Written & { since: number; relisted?: boolean };

function describe(w: Written): string {
  return `${w.store}/${w.name}`;
}
