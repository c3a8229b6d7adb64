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
 * The keys, timeouts, backoff and loops are keyed_poll.ts's, shared with
 * channel_checks.ts; this module says what is fetched and when.
 *
 * @module
 */
import type { PlatformDigest } from "../../lib/api/mod.ts";
import {
  KeyedPoll,
  type KeyedPollTunables,
  pollKey,
  type PollOutcome,
  type PollResult,
  type PollSchedule,
} from "./keyed_poll.ts";
import type { ImageResolver } from "./resolver.ts";

/** What one attempt produced (the planner's `ResolveResult`). */
export type TagResult = PollResult<TagSuccess>;

/** A resolved tag. */
export interface TagSuccess {
  ok: true;
  digest: string;
  platforms?: PlatformDigest[];
}

/** The latest result of a key and when it was recorded. */
export type TagOutcome = PollOutcome<TagSuccess>;

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
export interface TagResolutionOptions extends KeyedPollTunables {
  resolver: ImageResolver;
  /** How long one attempt may take before it is aborted (default 10 s). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** One pool's schedule: its poll interval and when its first attempt may be. */
interface Subscription {
  intervalMs: number;
  notBefore?: number;
}

/** The identity of a request: reference and credentials (never the secret itself). */
export function tagKey(request: Pick<TagRequest, "ref" | "credentials">): string {
  return pollKey(request.ref, request.credentials);
}

/**
 * When a key's next attempt is due (ms since the epoch): first at the earliest
 * `notBefore` (at once without one); after a success at the shortest interval;
 * after a failure at the retry delay, never later than the interval. Pure.
 */
export function nextResolutionAt(state: PollSchedule<Subscription, TagSuccess>): number {
  let interval = Infinity;
  let notBefore = Infinity;
  for (const s of state.subscriptions.values()) {
    interval = Math.min(interval, s.intervalMs);
    notBefore = Math.min(notBefore, s.notBefore ?? -Infinity);
  }
  if (state.settledAt === undefined) return notBefore;
  if (state.latest?.result.ok) return state.settledAt + interval;
  return state.settledAt + Math.min(state.retryDelayMs, interval);
}

/** Resolves pools' tags in the background; see the module documentation. */
export class TagResolution {
  #poll: KeyedPoll<Subscription, TagSuccess>;

  /** Creates an idle service; keys start when a subscriber wants them. */
  constructor(options: TagResolutionOptions) {
    const resolver = options.resolver;
    this.#poll = new KeyedPoll({
      ...options,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      attempt: async (ref, { dockerConfigJson, signal }) => {
        const r = await resolver.resolve(ref, { dockerConfigJson, signal });
        return { ok: true, digest: r.digest, ...(r.platforms ? { platforms: r.platforms } : {}) };
      },
      nextAt: nextResolutionAt,
      sameSchedule: (a, b) => a.intervalMs === b.intervalMs && a.notBefore === b.notBefore,
      timeoutMessage: (host, _ref, timeout) => `registry ${host} did not answer within ${timeout}`,
      log: {
        component: "tag-resolution",
        field: "ref",
        recovered: "tag resolved again",
        failed: "image resolution failed",
      },
    });
  }

  /** Keys currently kept (for tests and metrics). */
  get keys(): string[] {
    return this.#poll.keys;
  }

  /** Requests in flight right now. */
  get inFlight(): number {
    return this.#poll.inFlight;
  }

  /** Attempts started so far. */
  get attempts(): number {
    return this.#poll.attempts;
  }

  /**
   * Declares that `subscriber` (a pool) wants `request` resolved, replacing what
   * it wanted before, and returns the key's latest outcome, if any. Never waits.
   */
  want(subscriber: string, request: TagRequest): TagOutcome | undefined {
    return this.#poll.want(subscriber, {
      key: tagKey(request),
      target: request.ref,
      dockerConfigJson: request.credentials?.dockerConfigJson,
      schedule: {
        intervalMs: Math.max(1, request.intervalMs),
        ...(request.notBefore ? { notBefore: request.notBefore.getTime() } : {}),
      },
    });
  }

  /** The latest outcome for `subscriber`'s key, if any. */
  latest(subscriber: string): TagOutcome | undefined {
    return this.#poll.latest(subscriber);
  }

  /** `subscriber` wants nothing any more (its pool is gone or digest-pinned). */
  forget(subscriber: string): void {
    this.#poll.forget(subscriber);
  }

  /** Drops every key, aborting requests in flight; resolves once every loop ended. */
  async forgetAll(): Promise<void> {
    this.#poll.forgetAll();
    await this.#poll.settled();
  }
}
