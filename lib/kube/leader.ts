/**
 * Leader election on a coordination.k8s.io/v1 Lease, following client-go's
 * protocol: create the Lease if missing, take it over once it has not been
 * renewed for `leaseDurationSeconds` (measured on our own clock from when we
 * last saw it change, so clock skew between holders does not matter), renew
 * every `retryPeriodSeconds`, and step down when renewals keep failing for
 * `renewDeadlineSeconds`. Every write carries the resourceVersion that was
 * read, so two candidates can never both win.
 *
 * @module
 */

import { type Clock, systemClock } from "../clock.ts";
import { type Logger, silentLogger } from "../log.ts";
import type { KubeClient } from "./client.ts";
import { isAlreadyExists, isConflict, isNotFound } from "./errors.ts";
import { Resources } from "./resources.ts";
import type { KubeObject, ResourceClient } from "./types.ts";

/** The fields of a Lease the elector uses. */
export interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

/** Options of {@linkcode LeaderElector}. */
export interface LeaderElectorOptions {
  client: KubeClient;
  namespace: string;
  /** Lease name. */
  name: string;
  /** This candidate's identity (e.g. pod name + random suffix). */
  identity: string;
  /** How long a lease is valid without renewal (default 15). */
  leaseDurationSeconds?: number;
  /** How long the leader keeps retrying a failing renewal before stepping down (default 10). */
  renewDeadlineSeconds?: number;
  /** Interval between acquire/renew attempts (default 2). */
  retryPeriodSeconds?: number;
  clock?: Clock;
  logger?: Logger;
}

/** Callbacks of {@linkcode LeaderElector.run}. */
export interface LeaderCallbacks {
  /**
   * Called when leadership is acquired; `signal` aborts when it is lost or the
   * run stops. The work must stop promptly then: the lease is released only
   * after this promise settles. A rejection steps down.
   */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** Called after leadership ended (lost or released). */
  onStoppedLeading(): void;
}

/** Formats a Kubernetes MicroTime (RFC 3339 with microseconds). */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** Contends for a Lease and runs callbacks while holding it. */
export class LeaderElector {
  #leases: ResourceClient<Lease>;
  #name: string;
  #identity: string;
  #leaseDurationMs: number;
  #renewDeadlineMs: number;
  #retryPeriodMs: number;
  #leaseDurationSeconds: number;
  #clock: Clock;
  #log: Logger;
  #leader = false;
  /** When (our clock) the last successful acquire or renew attempt started. */
  #heldFrom = -Infinity;
  /** The last lease we read or wrote, and when (our clock) its spec last changed. */
  #observed?: Lease;
  #observedAt = 0;

  /** Creates an elector; nothing happens until {@linkcode LeaderElector.run}. */
  constructor(options: LeaderElectorOptions) {
    this.#leases = options.client.resource<Lease>(Resources.leases, options.namespace);
    this.#name = options.name;
    this.#identity = options.identity;
    this.#leaseDurationSeconds = options.leaseDurationSeconds ?? 15;
    this.#leaseDurationMs = this.#leaseDurationSeconds * 1000;
    this.#renewDeadlineMs = (options.renewDeadlineSeconds ?? 10) * 1000;
    this.#retryPeriodMs = (options.retryPeriodSeconds ?? 2) * 1000;
    if (this.#renewDeadlineMs >= this.#leaseDurationMs) {
      throw new Error("renewDeadlineSeconds must be less than leaseDurationSeconds");
    }
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({
      lease: options.name,
      identity: this.#identity,
    });
  }

  /** True while this candidate holds the lease. */
  isLeader(): boolean {
    return this.#leader;
  }

  /**
   * True while this candidate leads and its last acquire or renew started less than the renew
   * deadline ago (our clock). Writes that only the leader may make check this right before they
   * go out: a leader that was frozen (SIGSTOP, a long GC or VM pause) past its lease learns it
   * lost the lease only when its renew loop runs again, and its in-flight work could run first.
   * Another candidate takes over no sooner than the lease duration after it saw our last renew,
   * so this turns false at least (lease duration − renew deadline) before that.
   */
  holdsLease(): boolean {
    return this.#leader && this.#now() - this.#heldFrom < this.#renewDeadlineMs;
  }

  #now(): number {
    return this.#clock.now().getTime();
  }

  #observe(lease: Lease) {
    const prev = this.#observed?.spec;
    const next = lease.spec;
    if (
      !prev || prev.holderIdentity !== next?.holderIdentity || prev.renewTime !== next?.renewTime
    ) {
      this.#observedAt = this.#now();
    }
    this.#observed = lease;
  }

  /** One acquire-or-renew attempt; true when we hold the lease afterwards. */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    const now = this.#clock.now();
    let current: Lease;
    try {
      current = await this.#leases.get(this.#name, { signal });
    } catch (e) {
      if (!isNotFound(e)) throw e;
      try {
        const created = await this.#leases.create({
          metadata: { name: this.#name },
          spec: {
            holderIdentity: this.#identity,
            leaseDurationSeconds: this.#leaseDurationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        }, { signal });
        this.#observe(created);
        this.#heldFrom = now.getTime();
        return true;
      } catch (e2) {
        if (isAlreadyExists(e2)) return false;
        throw e2;
      }
    }
    this.#observe(current);
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const ours = holder === this.#identity;
    const duration = (spec.leaseDurationSeconds ?? this.#leaseDurationSeconds) * 1000;
    if (!ours && holder !== "" && this.#observedAt + duration > now.getTime()) {
      return false; // held by someone else and not expired
    }
    const next: Lease = {
      ...current,
      spec: {
        ...spec,
        holderIdentity: this.#identity,
        leaseDurationSeconds: this.#leaseDurationSeconds,
        renewTime: microTime(now),
        acquireTime: ours ? spec.acquireTime : microTime(now),
        leaseTransitions: ours ? spec.leaseTransitions ?? 0 : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      // resourceVersion from the read makes this a compare-and-swap.
      const updated = await this.#leases.update(next, { signal });
      this.#observe(updated);
      this.#heldFrom = now.getTime();
      return true;
    } catch (e) {
      if (isConflict(e)) return false;
      throw e;
    }
  }

  /** One attempt, abandoned after `timeoutMs` (on the injected clock) so a hung request cannot outlive the renew deadline. */
  async #attempt(signal: AbortSignal, timeoutMs?: number): Promise<boolean> {
    const request = new AbortController();
    const onAbort = () => request.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const timer = new AbortController();
    if (timeoutMs !== undefined) {
      this.#clock.sleep(Math.max(0, timeoutMs), timer.signal).then(
        () => request.abort(new Error("lease request timed out")),
        () => {/* finished first */},
      );
    }
    try {
      return await this.tryAcquireOrRenew(request.signal);
    } catch (e) {
      if (!signal.aborted) this.#log.warn("lease acquire/renew failed", { error: e });
      return false;
    } finally {
      timer.abort();
      signal.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Clears holderIdentity so another candidate can take over at once. Reads
   * the lease first: an aborted renewal may have been committed without us
   * seeing its new resourceVersion.
   */
  async #release() {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const lease = await this.#leases.get(this.#name);
        if (lease.spec?.holderIdentity !== this.#identity) return;
        const now = microTime(this.#clock.now());
        this.#observed = await this.#leases.update({
          ...lease,
          spec: {
            ...lease.spec,
            holderIdentity: null,
            leaseDurationSeconds: 1,
            acquireTime: now,
            renewTime: now,
          },
        });
        this.#log.info("released leadership");
        return;
      } catch (e) {
        if (isConflict(e)) continue;
        this.#log.warn("releasing the lease failed", { error: e });
        return;
      }
    }
    this.#log.warn("releasing the lease failed: repeated conflicts");
  }

  /** Sleeps a retry period with up to 20% jitter; false when aborted. */
  async #wait(signal: AbortSignal, jitter: boolean): Promise<boolean> {
    const ms = jitter ? this.#retryPeriodMs * (1 + 0.2 * Math.random()) : this.#retryPeriodMs;
    try {
      await this.#clock.sleep(ms, signal);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Contends until leader, runs `onStartedLeading`, renews, and returns when
   * leadership is lost or `signal` aborts (then the lease is released so
   * another candidate takes over at once). Call again to contend anew.
   */
  async run(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<void> {
    // Acquire.
    while (!signal.aborted) {
      if (await this.#attempt(signal)) break;
      if (!await this.#wait(signal, true)) return;
    }
    if (signal.aborted) return;
    this.#leader = true;
    this.#log.info("became leader");
    const leading = new AbortController();
    let workFailed = false;
    const work = (async () => {
      try {
        await callbacks.onStartedLeading(leading.signal);
      } catch (e) {
        if (!leading.signal.aborted) {
          this.#log.error("leader work failed, stepping down", { error: e });
          workFailed = true;
          leading.abort();
        }
      }
    })();
    // Renew.
    let lastRenew = this.#now();
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    leading.signal.addEventListener("abort", onAbort, { once: true });
    let lost = false;
    while (!stop.signal.aborted) {
      if (!await this.#wait(stop.signal, false)) break;
      const left = this.#renewDeadlineMs - (this.#now() - lastRenew);
      if (await this.#attempt(stop.signal, left)) {
        lastRenew = this.#now();
      } else if (this.#now() - lastRenew >= this.#renewDeadlineMs) {
        lost = true;
        break;
      } else if (this.#observed?.spec?.holderIdentity !== this.#identity) {
        lost = true; // someone else holds it now
        break;
      }
    }
    signal.removeEventListener("abort", onAbort);
    this.#leader = false;
    leading.abort();
    await work;
    if (lost) this.#log.warn("lost leadership");
    else if (signal.aborted || workFailed) await this.#release();
    try {
      callbacks.onStoppedLeading();
    } catch (e) {
      this.#log.error("onStoppedLeading failed", { error: e });
    }
  }
}
