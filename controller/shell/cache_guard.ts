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
import type { PlannedEvent } from "../planner/plan.ts";

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

/** What planning waits for while the caches miss earlier writes (see {@linkcode CacheGuard.waiting}). */
export interface CacheWait {
  /** When this stretch of the wait began (real time, ms): the oldest unseen write's. */
  since: number;
  /** When the wait ends at the latest (ms): the writes are given up on then. */
  endsBy: number;
  /** A fresh list of the caches was asked for (some writes stayed unseen a whole stretch). */
  relisted: boolean;
  /** The writes waited for, as `store/name`. */
  pending: string[];
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

  /**
   * What planning waits for right now (after {@linkcode behind} said true), so the pool
   * can say it; undefined when nothing is waited for.
   */
  waiting(): CacheWait | undefined {
    if (this.#unseen.length === 0) return undefined;
    const since = Math.min(...this.#unseen.map((w) => w.since));
    const relisted = this.#unseen.some((w) => w.relisted);
    // Each write is given up on by its own time: a relist after one stretch, if any, then one more.
    const endsBy = Math.max(
      ...this.#unseen.map((w) =>
        w.since + (this.#resync && !w.relisted ? 2 : 1) * this.#maxUnseenMs
      ),
    );
    return { since, endsBy, relisted, pending: this.#unseen.map(describe) };
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

/**
 * The pool's Warning event for a wait on the caches: planning holds back, so no
 * condition changes; the event says why nothing moves and until when at the latest.
 * One per stretch of the wait (`onceKey`): when it starts, and when the caches are
 * listed afresh.
 */
export function cacheWaitEvent(pool: string, wait: CacheWait): PlannedEvent {
  const objects = wait.pending.slice(0, 5).join(", ") +
    (wait.pending.length > 5 ? ` and ${wait.pending.length - 5} more` : "");
  const until = new Date(wait.endsBy).toISOString();
  const what = wait.relisted
    ? "the controller's caches still miss its earlier writes; it is listing them afresh"
    : "the controller's caches do not show its earlier writes yet (a watch may have stopped delivering)";
  return {
    regarding: { kind: "BootcNodePool", name: pool },
    type: "Warning",
    reason: "CachesBehind",
    message: `Planning waits: ${what} (${objects}); it resumes by ${until} at the latest`,
    onceKey: `caches-behind/${pool}/${wait.since}`,
  };
}
