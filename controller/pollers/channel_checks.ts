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
 * The keys, timeouts, backoff and loops are keyed_poll.ts's, shared with
 * tag_resolution.ts; this module says what is fetched and when.
 *
 * {@linkcode registryTagLister} lists tags with lib/registry (paginated by the
 * `Link` header, authenticated with the pool's `.dockerconfigjson`).
 *
 * @module
 */
import { RegistryClient } from "../../lib/registry/mod.ts";
import {
  KeyedPoll,
  type KeyedPollTunables,
  pollKey,
  type PollOutcome,
  type PollResult,
} from "./keyed_poll.ts";

/** A listing's tags. */
export interface ChannelListing {
  ok: true;
  tags: string[];
}

/** What one listing produced. */
export type ChannelListResult = PollResult<ChannelListing>;

/** The latest outcome of a key and when it was recorded. */
export type ChannelOutcome = PollOutcome<ChannelListing>;

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
export interface ChannelChecksOptions extends KeyedPollTunables {
  lister: TagLister;
  /**
   * How long one listing (every page of it) may take before it is aborted
   * (default 30 s: longer than a tag resolution, since a listing is several requests).
   */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/** The identity of a request: repository and credentials (never the secret itself). */
export function channelKey(request: Pick<ChannelRequest, "repository" | "credentials">): string {
  return pollKey(request.repository, request.credentials);
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
  #poll: KeyedPoll<number, ChannelListing>;

  /** Creates an idle service; keys start when a pool wants them. */
  constructor(options: ChannelChecksOptions) {
    const lister = options.lister;
    this.#poll = new KeyedPoll({
      ...options,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      attempt: async (repository, listOptions) => ({
        ok: true,
        tags: await lister(repository, listOptions),
      }),
      nextAt: (state) =>
        nextListingAt({
          dueAts: state.subscriptions.values(),
          succeededAt: state.succeededAt,
          ...(state.latest && !state.latest.result.ok
            ? { failedAt: state.settledAt, retryDelayMs: state.retryDelayMs }
            : {}),
        }),
      sameSchedule: Object.is,
      timeoutMessage: (host, repository, timeout) =>
        `registry ${host} did not list the tags of ${repository} within ${timeout}`,
      log: {
        component: "channel-checks",
        field: "repository",
        recovered: "channel tags listed again",
        failed: "channel tag listing failed",
      },
    });
  }

  /** Keys currently kept (for tests and metrics). */
  get keys(): string[] {
    return this.#poll.keys;
  }

  /** Listings in flight right now. */
  get inFlight(): number {
    return this.#poll.inFlight;
  }

  /** Listings started so far. */
  get attempts(): number {
    return this.#poll.attempts;
  }

  /**
   * Declares what `pool` wants, replacing what it wanted before, and returns
   * the latest outcome for its key, if any. Never waits. Does nothing once
   * {@linkcode close}d.
   */
  want(pool: string, request: ChannelRequest): ChannelOutcome | undefined {
    return this.#poll.want(pool, {
      key: channelKey(request),
      target: request.repository,
      dockerConfigJson: request.credentials?.dockerConfigJson,
      schedule: request.dueAt.getTime(),
    });
  }

  /** The latest outcome for `pool`'s key, if any. */
  latest(pool: string): ChannelOutcome | undefined {
    return this.#poll.latest(pool);
  }

  /** `pool` wants nothing any more (it is gone or no longer follows a channel). */
  forget(pool: string): void {
    this.#poll.forget(pool);
  }

  /** Drops every key and aborts every listing in flight (they settle shortly). */
  forgetAll(): void {
    this.#poll.forgetAll();
  }

  /**
   * Drops every key, refuses new ones, and resolves once every loop ended: no
   * timer or request is left behind.
   */
  async close(): Promise<void> {
    await this.#poll.close();
  }
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
