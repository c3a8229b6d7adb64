/**
 * The engine behind tag_resolution.ts and channel_checks.ts: registry work kept
 * off the reconcile path, keyed so that pools asking the same thing share it.
 *
 * - Work is keyed by what is fetched and the credentials (never the secret
 *   itself): a key has at most one attempt in flight, however many subscribers
 *   (pools) want it.
 * - Each subscriber states its schedule (its own type, `Sub`); the caller's
 *   {@linkcode KeyedPollOptions.nextAt} turns a key's schedules and outcomes
 *   into when it tries next. A key sleeps until then (in steps of at most
 *   {@linkcode MAX_WAIT_MS}, since timers overflow; with nothing due it holds no
 *   timer), and a changed schedule wakes it to re-plan.
 * - Each attempt has its own timeout; one that overruns it is aborted (not left
 *   running) and recorded as a failure naming the registry host.
 * - After a failure the retry delay grows exponentially with jitter
 *   ({@linkcode retryDelayMs}); {@linkcode KeyedPollOptions.nextAt} decides how
 *   it bounds the next attempt.
 * - Every recorded outcome calls {@linkcode KeyedPollOptions.onResult} with the
 *   key's subscribers, so the shell can wake exactly them.
 * - Optionally ({@linkcode KeyedPollOptions.concurrency}) at most so many keys
 *   of one group attempt at once; the others wait their turn, in order, before
 *   their timeout starts.
 * - A key no subscriber wants any more is dropped and its attempt aborted;
 *   {@linkcode KeyedPoll.close} leaves no timer or request behind.
 *
 * @module
 */
import { type Clock, systemClock } from "../../lib/clock.ts";
import { backoffDelay } from "../../lib/kube/backoff.ts";
import { type Logger, silentLogger } from "../../lib/log.ts";
import { parseImageReference } from "../../lib/registry/mod.ts";

/** Longest single wait; later times are waited for in steps (timers overflow at ~24 days). */
export const MAX_WAIT_MS = 60 * 60_000;

/** What one attempt produced: the caller's success shape, or a failure message for users. */
export type PollResult<Ok extends { ok: true }> = Ok | { ok: false; message: string };

/** The latest outcome of a key and when it was recorded. */
export interface PollOutcome<Ok extends { ok: true }> {
  at: Date;
  result: PollResult<Ok>;
}

/** What {@linkcode KeyedPollOptions.nextAt} sees of a key. */
export interface PollSchedule<Sub, Ok extends { ok: true }> {
  /** Subscriber → its schedule. */
  subscriptions: ReadonlyMap<string, Sub>;
  latest?: PollOutcome<Ok>;
  /** When the last outcome was recorded (ms since the epoch). */
  settledAt?: number;
  /** When the last success was recorded (ms since the epoch). */
  succeededAt?: number;
  /** Jittered retry delay chosen at the last failure (0 after a success). */
  retryDelayMs: number;
}

/** What one subscriber asks for. */
export interface PollRequest<Sub> {
  /** The identity of the work (see {@linkcode pollKey}). */
  key: string;
  /** What is fetched: a reference or a repository. */
  target: string;
  /** The pull Secret's `.dockerconfigjson`, to log in with. */
  dockerConfigJson?: string;
  /** This subscriber's schedule. */
  schedule: Sub;
}

/** The tunables the services built on the engine pass through (defaults in brackets). */
export interface KeyedPollTunables {
  clock?: Clock;
  logger?: Logger;
  /** How long one attempt may take before it is aborted (each service has its default). */
  timeoutMs?: number;
  /** Delay before the first retry after a failure (5 s); doubles per failure. */
  initialBackoffMs?: number;
  /** Longest retry delay before jitter (5 min). */
  maxBackoffMs?: number;
  /** Retry delays are stretched by a random fraction up to this (0.2). */
  jitter?: number;
  /** Source of randomness in [0, 1) for the jitter (tests pin it). */
  random?: () => number;
  /** Called after every recorded outcome with the key's subscribers (pools). */
  onResult?: (subscribers: string[], key: string) => void;
}

/** Options of {@linkcode KeyedPoll}. */
export interface KeyedPollOptions<Sub, Ok extends { ok: true }> extends KeyedPollTunables {
  /** Performs one attempt; must settle promptly when `signal` aborts. */
  attempt(
    target: string,
    options: { key: string; dockerConfigJson?: string; signal: AbortSignal },
  ): Promise<Ok>;
  /** When a key tries next (ms since the epoch; `Infinity`: not until a schedule changes). */
  nextAt(schedule: PollSchedule<Sub, Ok>): number;
  /** Whether two schedules of one subscriber plan the same (else the key re-plans). */
  sameSchedule(a: Sub, b: Sub): boolean;
  /** The failure message of an attempt that overran `timeout` (e.g. "10s"). */
  timeoutMessage(host: string, target: string, timeout: string): string;
  /** Log wording: the field naming the target, and the two messages. */
  log: { component: string; field: string; recovered: string; failed: string };
  timeoutMs: number;
  /** At most `max` attempts of the keys of one `group` in flight at once (default: no bound). */
  concurrency?: { group(key: string): string; max: number };
}

/** The keys of one concurrency group: attempts in flight, and the turns waiting in order. */
interface Group {
  running: number;
  waiting: (() => void)[];
}

interface KeyState<Sub, Ok extends { ok: true }> extends PollSchedule<Sub, Ok> {
  key: string;
  target: string;
  host: string;
  dockerConfigJson?: string;
  subscriptions: Map<string, Sub>;
  failures: number;
  inFlight: boolean;
  /** Aborted when the key is dropped: ends its loop and its attempt. */
  stop: AbortController;
  /** Aborted to cut the current wait short (a schedule changed). */
  wake?: AbortController;
}

/** The identity of a request: what is fetched and the credentials (never the secret itself). */
export function pollKey(target: string, credentials?: { hash: string }): string {
  return `${target} ${credentials?.hash ?? "anonymous"}`;
}

/** The `host[:port]` a reference or repository is fetched from (best effort for messages). */
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

/** Keyed background attempts with per-subscriber schedules; see the module documentation. */
export class KeyedPoll<Sub, Ok extends { ok: true }> {
  #options: KeyedPollOptions<Sub, Ok>;
  #backoff: { initialMs: number; maxMs: number; jitter: number };
  #clock: Clock;
  #log: Logger;
  #random: () => number;
  #keys = new Map<string, KeyState<Sub, Ok>>();
  /** Subscriber → the key it wants. */
  #subscribers = new Map<string, string>();
  /** Every key loop still running, including those of dropped keys still settling. */
  #loops = new Set<Promise<void>>();
  /** Concurrency group → its state (while any of its keys attempts or waits). */
  #groups = new Map<string, Group>();
  #attempts = 0;
  #closed = false;

  /** Creates an idle engine; keys start when a subscriber wants them. */
  constructor(options: KeyedPollOptions<Sub, Ok>) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: options.log.component });
    this.#random = options.random ?? Math.random;
    this.#backoff = {
      initialMs: options.initialBackoffMs ?? 5_000,
      maxMs: options.maxBackoffMs ?? 5 * 60_000,
      jitter: options.jitter ?? 0.2,
    };
  }

  /** Keys currently kept. */
  get keys(): string[] {
    return [...this.#keys.keys()];
  }

  /** Attempts in flight right now. */
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
   * Declares what `subscriber` wants, replacing what it wanted before, and
   * returns the key's latest outcome, if any. Never waits. Does nothing once
   * {@linkcode close}d.
   */
  want(subscriber: string, request: PollRequest<Sub>): PollOutcome<Ok> | undefined {
    if (this.#closed) return undefined;
    const { key, schedule } = request;
    const previous = this.#subscribers.get(subscriber);
    if (previous !== undefined && previous !== key) this.#unsubscribe(subscriber, previous);
    this.#subscribers.set(subscriber, key);
    const state = this.#keys.get(key);
    if (!state) {
      this.#start({
        key,
        target: request.target,
        host: registryHost(request.target),
        dockerConfigJson: request.dockerConfigJson,
        subscriptions: new Map([[subscriber, schedule]]),
        failures: 0,
        retryDelayMs: 0,
        inFlight: false,
        stop: new AbortController(),
      });
      return undefined;
    }
    // Same hash, same Secret data: the config can only be equal, but keep the newest.
    state.dockerConfigJson = request.dockerConfigJson;
    const before = state.subscriptions.get(subscriber);
    state.subscriptions.set(subscriber, schedule);
    if (before === undefined || !this.#options.sameSchedule(before, schedule)) {
      state.wake?.abort(); // the schedule moved: re-plan
    }
    return state.latest;
  }

  /** The latest outcome for `subscriber`'s key, if any. */
  latest(subscriber: string): PollOutcome<Ok> | undefined {
    const key = this.#subscribers.get(subscriber);
    return key === undefined ? undefined : this.#keys.get(key)?.latest;
  }

  /** `subscriber` wants nothing any more. */
  forget(subscriber: string): void {
    const key = this.#subscribers.get(subscriber);
    if (key === undefined) return;
    this.#subscribers.delete(subscriber);
    this.#unsubscribe(subscriber, key);
  }

  /** Drops every key and aborts every attempt in flight (they settle shortly). */
  forgetAll(): void {
    for (const state of this.#keys.values()) state.stop.abort();
    this.#keys.clear();
    this.#subscribers.clear();
  }

  /** Resolves once every loop ended, dropped keys' included. */
  async settled(): Promise<void> {
    while (this.#loops.size > 0) await Promise.all(this.#loops);
  }

  /** Drops every key, refuses new ones, and resolves once nothing is left running. */
  async close(): Promise<void> {
    this.#closed = true;
    this.forgetAll();
    await this.settled();
  }

  #start(state: KeyState<Sub, Ok>) {
    this.#keys.set(state.key, state);
    const loop = this.#run(state);
    this.#loops.add(loop);
    loop.finally(() => this.#loops.delete(loop));
  }

  #unsubscribe(subscriber: string, key: string) {
    const state = this.#keys.get(key);
    if (!state) return;
    state.subscriptions.delete(subscriber);
    if (state.subscriptions.size > 0) {
      state.wake?.abort(); // its schedule may have been the soonest
      return;
    }
    // Nobody wants the key: stop and abort what is in flight.
    this.#keys.delete(key);
    state.stop.abort();
  }

  async #run(state: KeyState<Sub, Ok>): Promise<void> {
    const stop = state.stop.signal;
    while (!stop.aborted) {
      const wait = this.#options.nextAt(state) - this.#clock.now().getTime();
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
      const group = this.#options.concurrency?.group(state.key);
      if (group === undefined) {
        await this.#attempt(state);
        continue;
      }
      if (!(await this.#turn(group, stop))) continue;
      try {
        // The schedule may have moved while it waited its turn.
        if (this.#options.nextAt(state) <= this.#clock.now().getTime()) await this.#attempt(state);
      } finally {
        this.#release(group);
      }
    }
  }

  /** Waits for a free place in `group`: true once taken, false when `stop` aborts first. */
  #turn(name: string, stop: AbortSignal): Promise<boolean> {
    if (stop.aborted) return Promise.resolve(false);
    let group = this.#groups.get(name);
    if (!group) this.#groups.set(name, group = { running: 0, waiting: [] });
    if (group.running < this.#options.concurrency!.max) {
      group.running++;
      return Promise.resolve(true);
    }
    const g = group;
    return new Promise((resolve) => {
      const dropped = () => {
        const at = g.waiting.indexOf(go);
        if (at >= 0) g.waiting.splice(at, 1);
        resolve(false);
      };
      const go = () => {
        stop.removeEventListener("abort", dropped);
        resolve(true);
      };
      g.waiting.push(go);
      stop.addEventListener("abort", dropped, { once: true });
    });
  }

  /** Hands a place in `group` to the next key waiting, else frees it. */
  #release(name: string): void {
    const group = this.#groups.get(name);
    if (!group) return;
    const next = group.waiting.shift();
    if (next) {
      next(); // the place passes on: `running` stays
      return;
    }
    group.running--;
    if (group.running === 0) this.#groups.delete(name);
  }

  async #attempt(state: KeyState<Sub, Ok>): Promise<void> {
    const { timeoutMs } = this.#options;
    this.#attempts++;
    state.inFlight = true;
    const abort = new AbortController();
    const signal = AbortSignal.any([state.stop.signal, abort.signal]);
    const request: Promise<PollResult<Ok>> = (async () => {
      try {
        return await this.#options.attempt(state.target, {
          key: state.key,
          ...(state.dockerConfigJson !== undefined
            ? { dockerConfigJson: state.dockerConfigJson }
            : {}),
          signal,
        });
      } catch (e) {
        return { ok: false, message: failureMessage(e, state.host) };
      }
    })();
    const timer = new AbortController();
    const timedOut = this.#clock.sleep(timeoutMs, timer.signal).then(() => true, () => false);
    try {
      const first = await Promise.race<PollResult<Ok> | "timeout">([
        request,
        timedOut.then((fired): Promise<PollResult<Ok> | "timeout"> | "timeout" =>
          fired ? "timeout" : request
        ),
      ]);
      timer.abort();
      let result: PollResult<Ok>;
      if (first === "timeout") {
        const message = this.#options.timeoutMessage(
          state.host,
          state.target,
          formatDuration(timeoutMs),
        );
        abort.abort(new DOMException(message, "TimeoutError"));
        result = { ok: false, message };
      } else {
        result = first;
      }
      if (!state.stop.signal.aborted) this.#record(state, result);
      // The aborted attempt settles promptly; waiting for it keeps one request per key.
      await request;
    } finally {
      timer.abort();
      await timedOut;
      state.inFlight = false;
    }
  }

  #record(state: KeyState<Sub, Ok>, result: PollResult<Ok>) {
    const { log } = this.#options;
    const now = this.#clock.now();
    state.settledAt = now.getTime();
    state.latest = { at: now, result };
    if (result.ok) {
      if (state.failures > 0) {
        this.#log.info(log.recovered, { [log.field]: state.target, after: state.failures });
      }
      state.succeededAt = now.getTime();
      state.failures = 0;
      state.retryDelayMs = 0;
    } else {
      state.failures++;
      state.retryDelayMs = retryDelayMs(state.failures, this.#backoff, this.#random);
      this.#log.warn(log.failed, {
        [log.field]: state.target,
        error: (result as { message: string }).message,
        failures: state.failures,
        retryInMs: state.retryDelayMs,
      });
    }
    this.#options.onResult?.([...state.subscriptions.keys()], state.key);
  }
}

/** Resolves when `signal` aborts (never rejects; holds no timer). */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true })
  );
}
