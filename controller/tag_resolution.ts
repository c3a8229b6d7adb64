/**
 * Tag resolution off the reconcile path. Pools name a tag; the registry that
 * serves it may be slow, down, or accept connections and never answer. A
 * reconcile must never wait for it, or one bad registry holds the workers every
 * other pool needs. So resolution runs here, beside the work queue:
 *
 * - Work is keyed by (reference, credentials): pools that share a tag and pull
 *   Secret share one key, and a key has at most one request in flight.
 * - Each attempt has its own timeout; a request that overruns it is aborted (not
 *   left running) and recorded as a failure naming the registry host.
 * - After a failure the key retries with exponential backoff and jitter (never
 *   slower than its poll interval); after a success it polls again at the
 *   shortest interval its pools ask for.
 * - Every recorded result calls {@linkcode TagResolutionOptions.onResult} with the
 *   pools that use the key, so the shell can wake exactly them.
 * - The shell declares what each pool wants ({@linkcode TagResolution.want}) on
 *   every reconcile and reads the latest result synchronously; a key no pool
 *   wants any more is dropped and its request aborted.
 *
 * @module
 */
import { type Clock, systemClock } from "../lib/clock.ts";
import { backoffDelay } from "../lib/kube/backoff.ts";
import { type Logger, silentLogger } from "../lib/log.ts";
import { parseImageReference } from "../lib/registry/mod.ts";
import type { PlatformDigest } from "../lib/api/mod.ts";
import type { ImageResolver } from "./resolver.ts";

/** What one attempt produced (the planner's `ResolveResult`). */
export type TagResult =
  | { ok: true; digest: string; platforms?: PlatformDigest[] }
  | { ok: false; message: string };

/** The latest result of a key and when it was recorded. */
export interface TagOutcome {
  at: Date;
  result: TagResult;
}

/** What a pool asks of the service. */
export interface TagRequest {
  /** The tag reference, as the pool spells it. */
  ref: string;
  /** The pull Secret: its hash identifies the credentials, its config is used to log in. */
  credentials?: { hash: string; dockerConfigJson?: string };
  /** Poll interval after a success; a key shared by pools polls at the shortest. */
  intervalMs: number;
  /**
   * Do not make the key's first attempt before this time (the pool's status says
   * its last resolution is still fresh, e.g. after a controller restart). Ignored
   * once the key has been tried, and when another pool wants it sooner.
   */
  notBefore?: Date;
}

/** Options of {@linkcode TagResolution}. */
export interface TagResolutionOptions {
  resolver: ImageResolver;
  clock?: Clock;
  logger?: Logger;
  /** How long one attempt may take before it is aborted (default 10 s). */
  timeoutMs?: number;
  /** Delay before the first retry after a failure (default 5 s); doubles per failure. */
  initialBackoffMs?: number;
  /** Longest retry delay before jitter (default 5 min); never beyond the poll interval. */
  maxBackoffMs?: number;
  /** Retry delays are stretched by a random fraction up to this (default 0.2). */
  jitter?: number;
  /** Source of randomness in [0, 1) for the jitter (tests pin it). */
  random?: () => number;
  /** Called after every recorded result with the subscribers (pools) of the key. */
  onResult?: (subscribers: string[], key: string) => void;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_INITIAL_BACKOFF_MS = 5_000;
const DEFAULT_MAX_BACKOFF_MS = 5 * 60_000;
const DEFAULT_JITTER = 0.2;
/** Longest single wait; longer schedules are waited for in steps (timers overflow at ~24 days). */
const MAX_WAIT_MS = 60 * 60_000;

interface Subscription {
  intervalMs: number;
  notBefore?: number;
}

interface KeyState {
  key: string;
  ref: string;
  host: string;
  dockerConfigJson?: string;
  subscribers: Map<string, Subscription>;
  latest?: TagOutcome;
  /** When the last attempt was recorded (ms). */
  settledAt?: number;
  failures: number;
  /** Jittered retry delay chosen at the last failure. */
  retryDelayMs: number;
  inFlight: boolean;
  /** Aborted when the key is dropped: ends its loop and its request. */
  stop: AbortController;
  /** Aborted to cut the current wait short (the schedule changed). */
  wake?: AbortController;
}

/** The identity of a request: reference and credentials (never the secret itself). */
export function tagKey(request: Pick<TagRequest, "ref" | "credentials">): string {
  return `${request.ref} ${request.credentials?.hash ?? "anonymous"}`;
}

/** The `host[:port]` a reference is fetched from (best effort for messages). */
export function registryHost(ref: string): string {
  try {
    return parseImageReference(ref).registry;
  } catch {
    return ref.split("/")[0];
  }
}

/** `10s`, `1.5s`, `250ms`: a duration for messages. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)}s`;
}

/** The failure message of a rejected attempt, naming the registry host if the error does not. */
export function failureMessage(error: unknown, host: string): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.includes(host) ? message : `registry ${host}: ${message}`;
}

/**
 * Delay before the next attempt after `failures` consecutive failures:
 * exponential from `initialMs`, capped at `maxMs`, stretched by up to `jitter`.
 */
export function retryDelayMs(
  failures: number,
  options: { initialMs: number; maxMs: number; jitter: number },
  random: () => number = Math.random,
): number {
  return backoffDelay(failures, { ...options, factor: 2 }, random);
}

/** Resolves pools' tags in the background; see the module documentation. */
export class TagResolution {
  #resolver: ImageResolver;
  #clock: Clock;
  #log: Logger;
  #timeoutMs: number;
  #initialBackoffMs: number;
  #maxBackoffMs: number;
  #jitter: number;
  #random: () => number;
  #onResult?: (subscribers: string[], key: string) => void;
  #keys = new Map<string, KeyState>();
  /** Subscriber → the key it wants. */
  #subscriptions = new Map<string, string>();
  /** Every key loop still running, including those of dropped keys still settling. */
  #loops = new Set<Promise<void>>();
  #attempts = 0;

  /** Creates an idle service; keys start when a subscriber wants them. */
  constructor(options: TagResolutionOptions) {
    this.#resolver = options.resolver;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "tag-resolution" });
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#initialBackoffMs = options.initialBackoffMs ?? DEFAULT_INITIAL_BACKOFF_MS;
    this.#maxBackoffMs = options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
    this.#jitter = options.jitter ?? DEFAULT_JITTER;
    this.#random = options.random ?? Math.random;
    this.#onResult = options.onResult;
  }

  /** Keys currently kept (for tests and metrics). */
  get keys(): string[] {
    return [...this.#keys.keys()];
  }

  /** Requests in flight right now. */
  get inFlight(): number {
    let n = 0;
    for (const s of this.#keys.values()) if (s.inFlight) n++;
    return n;
  }

  /** Attempts started so far. */
  get attempts(): number {
    return this.#attempts;
  }

  /**
   * Declares that `subscriber` (a pool) wants `request` resolved, replacing what
   * it wanted before, and returns the key's latest outcome, if any. Never waits.
   */
  want(subscriber: string, request: TagRequest): TagOutcome | undefined {
    const key = tagKey(request);
    const previous = this.#subscriptions.get(subscriber);
    if (previous !== undefined && previous !== key) this.#unsubscribe(subscriber, previous);
    this.#subscriptions.set(subscriber, key);
    const subscription: Subscription = {
      intervalMs: Math.max(1, request.intervalMs),
      ...(request.notBefore ? { notBefore: request.notBefore.getTime() } : {}),
    };
    let state = this.#keys.get(key);
    if (!state) {
      state = {
        key,
        ref: request.ref,
        host: registryHost(request.ref),
        dockerConfigJson: request.credentials?.dockerConfigJson,
        subscribers: new Map([[subscriber, subscription]]),
        failures: 0,
        retryDelayMs: 0,
        inFlight: false,
        stop: new AbortController(),
      };
      this.#keys.set(key, state);
      const loop = this.#run(state);
      this.#loops.add(loop);
      loop.finally(() => this.#loops.delete(loop));
      return undefined;
    }
    // Same hash, same Secret data: the config can only be equal, but keep the newest.
    state.dockerConfigJson = request.credentials?.dockerConfigJson;
    const before = state.subscribers.get(subscriber);
    state.subscribers.set(subscriber, subscription);
    if (
      before?.intervalMs !== subscription.intervalMs ||
      before?.notBefore !== subscription.notBefore
    ) {
      state.wake?.abort(); // the schedule may have moved: recompute it
    }
    return state.latest;
  }

  /** The latest outcome for `subscriber`'s key, if any. */
  latest(subscriber: string): TagOutcome | undefined {
    const key = this.#subscriptions.get(subscriber);
    return key === undefined ? undefined : this.#keys.get(key)?.latest;
  }

  /** `subscriber` wants nothing any more (its pool is gone or digest-pinned). */
  forget(subscriber: string): void {
    const key = this.#subscriptions.get(subscriber);
    if (key === undefined) return;
    this.#subscriptions.delete(subscriber);
    this.#unsubscribe(subscriber, key);
  }

  /** Drops every key, aborting requests in flight; resolves once every loop ended. */
  async forgetAll(): Promise<void> {
    for (const state of this.#keys.values()) state.stop.abort();
    this.#keys.clear();
    this.#subscriptions.clear();
    await Promise.all(this.#loops);
  }

  #unsubscribe(subscriber: string, key: string) {
    const state = this.#keys.get(key);
    if (!state) return;
    state.subscribers.delete(subscriber);
    if (state.subscribers.size > 0) {
      state.wake?.abort();
      return;
    }
    // No pool uses the key: stop polling and abort what is in flight.
    this.#keys.delete(key);
    state.stop.abort();
  }

  /** When the key's next attempt is due (ms since the epoch). */
  #dueAt(state: KeyState): number {
    let interval = Infinity;
    let notBefore = Infinity;
    for (const s of state.subscribers.values()) {
      interval = Math.min(interval, s.intervalMs);
      notBefore = Math.min(notBefore, s.notBefore ?? -Infinity);
    }
    if (state.settledAt === undefined) return notBefore;
    if (state.latest?.result.ok) return state.settledAt + interval;
    return state.settledAt + Math.min(state.retryDelayMs, interval);
  }

  async #run(state: KeyState): Promise<void> {
    const stop = state.stop.signal;
    while (!stop.aborted) {
      const wait = Math.min(this.#dueAt(state) - this.#clock.now().getTime(), MAX_WAIT_MS);
      if (wait > 0) {
        const wake = new AbortController();
        state.wake = wake;
        try {
          await this.#clock.sleep(wait, AbortSignal.any([stop, wake.signal]));
        } catch {
          // Woken early or stopped: look at the schedule again.
        } finally {
          if (state.wake === wake) state.wake = undefined;
        }
        continue;
      }
      await this.#attempt(state);
    }
  }

  async #attempt(state: KeyState): Promise<void> {
    this.#attempts++;
    state.inFlight = true;
    const abort = new AbortController();
    const signal = AbortSignal.any([state.stop.signal, abort.signal]);
    const request: Promise<TagResult> = (async () => {
      try {
        const r = await this.#resolver.resolve(state.ref, {
          dockerConfigJson: state.dockerConfigJson,
          signal,
        });
        return { ok: true, digest: r.digest, ...(r.platforms ? { platforms: r.platforms } : {}) };
      } catch (e) {
        return { ok: false, message: failureMessage(e, state.host) };
      }
    })();
    const timer = new AbortController();
    const timedOut = this.#clock.sleep(this.#timeoutMs, timer.signal).then(() => true, () => false);
    try {
      const first = await Promise.race<TagResult | "timeout">([
        request,
        timedOut.then((fired): Promise<TagResult | "timeout"> | "timeout" =>
          fired ? "timeout" : request
        ),
      ]);
      timer.abort();
      let result: TagResult;
      if (first === "timeout") {
        const message = `registry ${state.host} did not answer within ${
          formatDuration(this.#timeoutMs)
        }`;
        abort.abort(new DOMException(message, "TimeoutError"));
        result = { ok: false, message };
      } else {
        result = first;
      }
      if (!state.stop.signal.aborted) this.#record(state, result);
      // The aborted request settles promptly; waiting for it keeps one request per key.
      await request;
    } finally {
      timer.abort();
      await timedOut;
      state.inFlight = false;
    }
  }

  #record(state: KeyState, result: TagResult) {
    const now = this.#clock.now();
    state.settledAt = now.getTime();
    state.latest = { at: now, result };
    if (result.ok) {
      if (state.failures > 0) {
        this.#log.info("tag resolved again", { ref: state.ref, after: state.failures });
      }
      state.failures = 0;
      state.retryDelayMs = 0;
    } else {
      state.failures++;
      state.retryDelayMs = retryDelayMs(state.failures, {
        initialMs: this.#initialBackoffMs,
        maxMs: this.#maxBackoffMs,
        jitter: this.#jitter,
      }, this.#random);
      this.#log.warn("image resolution failed", {
        ref: state.ref,
        error: result.message,
        failures: state.failures,
        retryInMs: state.retryDelayMs,
      });
    }
    this.#onResult?.([...state.subscribers.keys()], state.key);
  }
}
