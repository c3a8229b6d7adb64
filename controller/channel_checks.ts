/**
 * Channel checks off the reconcile path. A pool that follows a channel needs
 * the tags of a repository once per scheduled check; listing them can take
 * several requests (pages) to a registry that may be slow, down, or never
 * answer. A reconcile must never wait for that, so listing runs here, beside
 * the work queue, the way tag_resolution.ts resolves tags:
 *
 * - Work is keyed by (repository, credentials): pools that follow the same
 *   repository with the same pull Secret share one key, and a key has at most
 *   one listing in flight.
 * - Each pool says when its next check is due (the lead's cron logic computes
 *   it). A pool's due time is met by the first successful listing recorded at or
 *   after it, so each due time costs one listing however often the pool is
 *   reconciled; a key lists at the earliest due time of its pools that is not
 *   met yet, and sleeps until then (in steps of at most an hour, since timers
 *   overflow; a `want` with a sooner due time re-plans the sleep).
 * - Each attempt has its own timeout; a listing that overruns it is aborted
 *   (not left running) and recorded as a failure naming the registry host.
 * - After a failure the key retries with exponential backoff and jitter, capped
 *   by {@linkcode ChannelChecksOptions.maxBackoffMs}, until a listing succeeds.
 * - Every recorded outcome calls {@linkcode ChannelChecksOptions.onResult} with
 *   the pools of the key, so the shell can wake exactly them.
 * - A key no pool wants any more is dropped and its request aborted;
 *   {@linkcode ChannelChecks.close} leaves no timer or request behind.
 *
 * {@linkcode registryTagLister} lists tags with lib/registry (paginated by the
 * `Link` header, authenticated with the pool's `.dockerconfigjson`).
 *
 * @module
 */
import { type Clock, systemClock } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/log.ts";
import { RegistryClient } from "../lib/registry/mod.ts";
import { failureMessage, formatDuration, registryHost, retryDelayMs } from "./tag_resolution.ts";

/** What one listing produced. */
export type ChannelListResult = { ok: true; tags: string[] } | { ok: false; message: string };

/** The latest outcome of a key and when it was recorded. */
export interface ChannelOutcome {
  at: Date;
  result: ChannelListResult;
}

/** What a pool asks of the service. */
export interface ChannelRequest {
  /** Repository without tag or digest, e.g. "127.0.0.1:5000/bootc/os" or "quay.io/org/os". */
  repository: string;
  /** The pull Secret: its hash identifies the credentials, its config is used to log in. */
  credentials?: { hash: string; dockerConfigJson?: string };
  /**
   * When the pool's next check is due (from its cron schedule; the lead computes it).
   * Met by the first successful listing recorded at or after it. An invalid date is
   * never due.
   */
  dueAt: Date;
}

/**
 * Lists every tag of `repository` (all pages), logging in with the
 * `.dockerconfigjson` if given. Must stop its requests and settle promptly when
 * `signal` aborts. Errors carry a message meant for users.
 */
export type TagLister = (
  repository: string,
  options: { dockerConfigJson?: string; signal: AbortSignal },
) => Promise<string[]>;

/** Options of {@linkcode ChannelChecks}. */
export interface ChannelChecksOptions {
  lister: TagLister;
  clock?: Clock;
  logger?: Logger;
  /**
   * How long one listing (every page of it) may take before it is aborted
   * (default 30 s: longer than a tag resolution, since a listing is several requests).
   */
  timeoutMs?: number;
  /** Delay before the first retry after a failure (default 5 s); doubles per failure. */
  initialBackoffMs?: number;
  /** Longest retry delay before jitter (default 5 min). */
  maxBackoffMs?: number;
  /** Retry delays are stretched by a random fraction up to this (default 0.2). */
  jitter?: number;
  /** Source of randomness in [0, 1) for the jitter (tests pin it). */
  random?: () => number;
  /** Called after every recorded outcome with the pools of the key. */
  onResult?: (pools: string[], key: string) => void;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_INITIAL_BACKOFF_MS = 5_000;
const DEFAULT_MAX_BACKOFF_MS = 5 * 60_000;
const DEFAULT_JITTER = 0.2;
/** Longest single wait; later due times are waited for in steps (timers overflow at ~24 days). */
export const MAX_WAIT_MS = 60 * 60_000;

interface KeyState {
  key: string;
  repository: string;
  host: string;
  dockerConfigJson?: string;
  /** Pool → its due time (ms since the epoch; NaN when invalid, never due). */
  pools: Map<string, number>;
  latest?: ChannelOutcome;
  /** When the last successful listing was recorded (ms): due times up to it are met. */
  succeededAt?: number;
  /** When the last listing (of either kind) was recorded (ms). */
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

/** The identity of a request: repository and credentials (never the secret itself). */
export function channelKey(request: Pick<ChannelRequest, "repository" | "credentials">): string {
  return `${request.repository} ${request.credentials?.hash ?? "anonymous"}`;
}

/**
 * When a key should list next (ms since the epoch; `Infinity` when every due
 * time is met): the earliest due time after the last success, but not before
 * the retry delay after a failure has passed. Pure.
 */
export function nextListingAt(state: {
  dueAts: Iterable<number>;
  succeededAt?: number;
  /** Set when the latest outcome is a failure. */
  failedAt?: number;
  retryDelayMs?: number;
}): number {
  const met = state.succeededAt ?? -Infinity;
  let due = Infinity;
  for (const d of state.dueAts) if (d > met && d < due) due = d;
  if (due === Infinity || state.failedAt === undefined) return due;
  return Math.max(due, state.failedAt + (state.retryDelayMs ?? 0));
}

/** Lists channel repositories' tags in the background; see the module documentation. */
export class ChannelChecks {
  #lister: TagLister;
  #clock: Clock;
  #log: Logger;
  #timeoutMs: number;
  #initialBackoffMs: number;
  #maxBackoffMs: number;
  #jitter: number;
  #random: () => number;
  #onResult?: (pools: string[], key: string) => void;
  #keys = new Map<string, KeyState>();
  /** Pool → the key it wants. */
  #subscriptions = new Map<string, string>();
  /** Every key loop still running, including those of dropped keys still settling. */
  #loops = new Set<Promise<void>>();
  #attempts = 0;
  #closed = false;

  /** Creates an idle service; keys start when a pool wants them. */
  constructor(options: ChannelChecksOptions) {
    this.#lister = options.lister;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "channel-checks" });
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

  /** Listings in flight right now. */
  get inFlight(): number {
    let n = 0;
    for (const s of this.#keys.values()) if (s.inFlight) n++;
    return n;
  }

  /** Listings started so far. */
  get attempts(): number {
    return this.#attempts;
  }

  /**
   * Declares what `pool` wants, replacing what it wanted before, and returns
   * the latest outcome for its key, if any. Never waits. Does nothing once
   * {@linkcode close}d.
   */
  want(pool: string, request: ChannelRequest): ChannelOutcome | undefined {
    if (this.#closed) return undefined;
    const key = channelKey(request);
    const previous = this.#subscriptions.get(pool);
    if (previous !== undefined && previous !== key) this.#unsubscribe(pool, previous);
    this.#subscriptions.set(pool, key);
    const dueAt = request.dueAt.getTime();
    let state = this.#keys.get(key);
    if (!state) {
      state = {
        key,
        repository: request.repository,
        host: registryHost(request.repository),
        dockerConfigJson: request.credentials?.dockerConfigJson,
        pools: new Map([[pool, dueAt]]),
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
    const before = state.pools.get(pool);
    state.pools.set(pool, dueAt);
    if (!Object.is(before, dueAt)) state.wake?.abort(); // the schedule moved: re-plan
    return state.latest;
  }

  /** The latest outcome for `pool`'s key, if any. */
  latest(pool: string): ChannelOutcome | undefined {
    const key = this.#subscriptions.get(pool);
    return key === undefined ? undefined : this.#keys.get(key)?.latest;
  }

  /** `pool` wants nothing any more (it is gone or no longer follows a channel). */
  forget(pool: string): void {
    const key = this.#subscriptions.get(pool);
    if (key === undefined) return;
    this.#subscriptions.delete(pool);
    this.#unsubscribe(pool, key);
  }

  /** Drops every key and aborts every listing in flight (they settle shortly). */
  forgetAll(): void {
    for (const state of this.#keys.values()) state.stop.abort();
    this.#keys.clear();
    this.#subscriptions.clear();
  }

  /**
   * Drops every key, refuses new ones, and resolves once every loop ended: no
   * timer or request is left behind.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.forgetAll();
    while (this.#loops.size > 0) await Promise.all(this.#loops);
  }

  #unsubscribe(pool: string, key: string) {
    const state = this.#keys.get(key);
    if (!state) return;
    state.pools.delete(pool);
    if (state.pools.size > 0) {
      state.wake?.abort(); // its due time may have been the earliest
      return;
    }
    // No pool uses the key: stop and abort what is in flight.
    this.#keys.delete(key);
    state.stop.abort();
  }

  #nextAt(state: KeyState): number {
    return nextListingAt({
      dueAts: state.pools.values(),
      succeededAt: state.succeededAt,
      ...(state.latest && !state.latest.result.ok
        ? { failedAt: state.settledAt, retryDelayMs: state.retryDelayMs }
        : {}),
    });
  }

  async #run(state: KeyState): Promise<void> {
    const stop = state.stop.signal;
    while (!stop.aborted) {
      const wait = this.#nextAt(state) - this.#clock.now().getTime();
      if (wait > 0) {
        const wake = new AbortController();
        state.wake = wake;
        const signal = AbortSignal.any([stop, wake.signal]);
        try {
          if (wait === Infinity) await aborted(signal); // nothing due: no timer until a want
          else await this.#clock.sleep(Math.min(wait, MAX_WAIT_MS), signal);
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
    const request: Promise<ChannelListResult> = (async () => {
      try {
        const tags = await this.#lister(state.repository, {
          ...(state.dockerConfigJson !== undefined
            ? { dockerConfigJson: state.dockerConfigJson }
            : {}),
          signal,
        });
        return { ok: true, tags };
      } catch (e) {
        return { ok: false, message: failureMessage(e, state.host) };
      }
    })();
    const timer = new AbortController();
    const timedOut = this.#clock.sleep(this.#timeoutMs, timer.signal).then(() => true, () => false);
    try {
      const first = await Promise.race<ChannelListResult | "timeout">([
        request,
        timedOut.then((fired): Promise<ChannelListResult | "timeout"> | "timeout" =>
          fired ? "timeout" : request
        ),
      ]);
      timer.abort();
      let result: ChannelListResult;
      if (first === "timeout") {
        const message =
          `registry ${state.host} did not list the tags of ${state.repository} within ${
            formatDuration(this.#timeoutMs)
          }`;
        abort.abort(new DOMException(message, "TimeoutError"));
        result = { ok: false, message };
      } else {
        result = first;
      }
      if (!state.stop.signal.aborted) this.#record(state, result);
      // The aborted listing settles promptly; waiting for it keeps one request per key.
      await request;
    } finally {
      timer.abort();
      await timedOut;
      state.inFlight = false;
    }
  }

  #record(state: KeyState, result: ChannelListResult) {
    const now = this.#clock.now();
    state.settledAt = now.getTime();
    state.latest = { at: now, result };
    if (result.ok) {
      if (state.failures > 0) {
        this.#log.info("channel tags listed again", {
          repository: state.repository,
          after: state.failures,
        });
      }
      state.succeededAt = now.getTime();
      state.failures = 0;
      state.retryDelayMs = 0;
    } else {
      state.failures++;
      state.retryDelayMs = retryDelayMs(state.failures, {
        initialMs: this.#initialBackoffMs,
        maxMs: this.#maxBackoffMs,
        jitter: this.#jitter,
      }, this.#random);
      this.#log.warn("channel tag listing failed", {
        repository: state.repository,
        error: result.message,
        failures: state.failures,
        retryInMs: state.retryDelayMs,
      });
    }
    this.#onResult?.([...state.pools.keys()], state.key);
  }
}

/** Resolves when `signal` aborts (never rejects; holds no timer). */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true })
  );
}

/** Options of {@linkcode registryTagLister}: the registry settings the resolver uses. */
export interface RegistryTagListerOptions {
  /** `host[:port]` of registries spoken to over plain HTTP. */
  insecureRegistries?: string[];
  /** Extra CA certificate (PEM). */
  caCertPem?: string;
  /** Per-request timeout (default: the registry client's). */
  timeoutMs?: number;
  /**
   * Page size asked for with `n=` (default: none, the registry's own). Registries
   * may ignore it, and some reject sizes above their maximum, so leave it unset
   * unless a registry needs it.
   */
  pageSize?: number;
  /** The `fetch` to use (tests); every request also follows the listing's signal. */
  fetch?: typeof fetch;
}

/**
 * A {@linkcode TagLister} on lib/registry: one short-lived client per listing,
 * following every `Link` page, logging in with the pool's `.dockerconfigjson`
 * (Basic or a Bearer token, as for resolution), and stopping every request
 * when the listing's signal aborts.
 */
export function registryTagLister(options: RegistryTagListerOptions = {}): TagLister {
  return async (repository, { dockerConfigJson, signal }) => {
    signal.throwIfAborted();
    const problem = repositoryProblem(repository);
    if (problem) throw new Error(problem);
    const base = options.fetch ?? globalThis.fetch;
    // The registry client has its own per-request timeout; the listing's signal must
    // also cut every request short, so it is joined to each request's own signal.
    const fetchWithSignal: typeof fetch = (input, init) =>
      base(input, {
        ...init,
        signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal,
      });
    const client = new RegistryClient({
      ...(dockerConfigJson !== undefined ? { dockerConfigJson } : {}),
      insecureRegistries: options.insecureRegistries,
      caCertPem: options.caCertPem,
      timeoutMs: options.timeoutMs,
      fetch: fetchWithSignal,
    });
    try {
      return await client.listTags(
        repository,
        options.pageSize !== undefined ? { pageSize: options.pageSize } : {},
      );
    } finally {
      client.close();
    }
  };
}

/**
 * Why `repository` cannot be listed as a channel (it names a tag or digest), or
 * undefined. The reference parser would quietly read `os:1.0` as the repository
 * `os`, listing something other than what the user may think they named.
 */
export function repositoryProblem(repository: string): string | undefined {
  const last = repository.slice(repository.lastIndexOf("/") + 1);
  if (repository.includes("@") || last.includes(":")) {
    return `channel repository ${
      JSON.stringify(repository)
    } must name a repository without a tag or digest`;
  }
  return undefined;
}
