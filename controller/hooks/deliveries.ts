/**
 * Hook deliveries beside the work queue (like the pollers): a reconcile hands
 * over the phases its plan reached and returns at once; deliveries never block
 * a reconcile, and a failing hook never blocks a rollout.
 *
 * - One lane per pool and hook: its events go out one at a time in the order
 *   they were planned (a node's pre-drain before its pre-reboot before its
 *   post-verification; a rollout's start before its nodes), lanes in parallel.
 * - Each attempt has the hook's timeout; a failed attempt is retried with
 *   exponential back-off and jitter up to `maxAttempts` (`delivery_policy.ts`:
 *   a 4xx refusal is final at once).
 * - Credentials are read from the Secret at each attempt (a fixed Secret helps
 *   the next attempt); they go into headers or the TLS client, never the body.
 * - An event is delivered once per process: a reconcile that plans the same
 *   write again (the same deterministic id) adds nothing.
 * - Each finished delivery (delivered or failed) is kept per pool and hook for
 *   `status.hooks`, and reported through `onSettled`.
 * - Deliveries live in memory: {@linkcode HookDeliveries.close} (shutdown, lost
 *   leadership) drops those still waiting.
 *
 * @module
 */
import type { BootcNodePool, HookDeliveryStatus, HookSpec } from "../../lib/api/mod.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { type Logger, silentLogger } from "../../lib/log.ts";
import { formatTime } from "../model/slots.ts";
import {
  DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
  postJson,
  type PostJsonOptions,
  resolveEndpoint,
  type WebhookEndpoint,
  type WebhookReply,
  type WebhookSecretReader,
} from "../webhook/client.ts";
import { cloudEvent, CLOUDEVENTS_CONTENT_TYPE } from "./cloud_event.ts";
import {
  type AttemptVerdict,
  attemptVerdict,
  retryDelayMs,
  type RetryOptions,
} from "./delivery_policy.ts";
import { type HookOccurrence, hooksFor } from "./phases.ts";

/** Default attempts per delivery (`spec.hooks[].maxAttempts`). */
export const DEFAULT_MAX_ATTEMPTS = 5;
/** Default per-attempt timeout (`spec.hooks[].timeoutSeconds`). */
export const DEFAULT_TIMEOUT_SECONDS = DEFAULT_WEBHOOK_TIMEOUT_SECONDS;
/** Event ids remembered as handed over (the oldest are forgotten first). */
const MAX_SEEN = 10_000;
/** Longest `status.hooks[].message`. */
const MAX_MESSAGE = 1024;

/** Options of {@linkcode HookDeliveries}. */
export interface HookDeliveriesOptions {
  /** The `data` (base64 values) of Secret `name` in the operator's namespace; undefined: none. */
  secretData: WebhookSecretReader;
  /** Sends one attempt (default: the shared webhook client's `postJson`). */
  send?: (
    endpoint: WebhookEndpoint,
    body: unknown,
    options: PostJsonOptions,
  ) => Promise<WebhookReply>;
  /** Called with each finished delivery. */
  onSettled?: (pool: string, status: HookDeliveryStatus) => void;
  /** Most deliveries waiting per pool and hook (default 64); more fail at once, named. */
  maxQueued?: number;
  retry?: RetryOptions;
  clock?: Clock;
  random?: () => number;
  logger?: Logger;
}

interface Delivery {
  pool: string;
  hook: HookSpec;
  occurrence: HookOccurrence;
}

/** See the module documentation. */
export class HookDeliveries {
  #o: HookDeliveriesOptions;
  #clock: Clock;
  #log: Logger;
  #closing = new AbortController();
  #lanes = new Map<string, { waiting: Delivery[]; running: Promise<void> }>();
  #seen = new Set<string>();
  #results = new Map<string, Map<string, HookDeliveryStatus>>();

  /** A queue delivering through `options.send`. */
  constructor(options: HookDeliveriesOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "hooks" });
  }

  /** Hands over the phases a plan of `pool` reached, for every hook that wants each. */
  enqueue(pool: BootcNodePool, occurrences: readonly HookOccurrence[]): void {
    if (this.#closing.signal.aborted) return;
    const name = pool.metadata.name ?? "";
    for (const occurrence of occurrences) {
      for (const hook of hooksFor(pool.spec.hooks, occurrence.phase)) {
        if (!this.#firstTime(`${hook.name}|${occurrence.id}`)) continue;
        this.#add({ pool: name, hook, occurrence });
      }
    }
  }

  /** The last finished delivery per hook of `pool`, in this process. */
  results(pool: string): ReadonlyMap<string, HookDeliveryStatus> | undefined {
    return this.#results.get(pool);
  }

  /** Forgets a deleted pool's results. */
  forget(pool: string): void {
    this.#results.delete(pool);
  }

  /** Number of deliveries waiting or running (tests). */
  get pending(): number {
    let n = 0;
    for (const lane of this.#lanes.values()) n += lane.waiting.length;
    return n;
  }

  /** Drops the waiting deliveries, aborts those running and waits for them to stop. */
  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.all([...this.#lanes.values()].map((l) => l.running));
  }

  #firstTime(key: string): boolean {
    if (this.#seen.has(key)) return false;
    this.#seen.add(key);
    if (this.#seen.size > MAX_SEEN) this.#seen.delete(this.#seen.values().next().value!);
    return true;
  }

  #add(d: Delivery): void {
    const key = `${d.pool}/${d.hook.name}`;
    const lane = this.#lanes.get(key);
    if (!lane) {
      const fresh = { waiting: [d], running: Promise.resolve() };
      this.#lanes.set(key, fresh);
      fresh.running = this.#run(key, fresh.waiting);
      return;
    }
    const max = this.#o.maxQueued ?? 64;
    if (lane.waiting.length > max) { // the first is under way
      this.#settle(d, "Failed", 0, `not sent: ${max} deliveries already wait for this hook`);
      return;
    }
    lane.waiting.push(d);
  }

  /** Delivers `waiting` in order until it is empty (or the queue closes). */
  async #run(key: string, waiting: Delivery[]): Promise<void> {
    await Promise.resolve(); // the lane is registered before its first delivery starts
    try {
      for (let d = waiting[0]; d && !this.#closing.signal.aborted; d = waiting[0]) {
        await this.#deliver(d);
        waiting.shift();
      }
    } catch (err) {
      // Only an abort (close) ends a lane early; the rest are dropped with it.
      if (!this.#closing.signal.aborted) {
        this.#log.error("hook lane failed", { key, error: String(err) });
      }
    } finally {
      this.#lanes.delete(key);
    }
  }

  async #deliver(d: Delivery): Promise<void> {
    const max = d.hook.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    const body = cloudEvent(d.occurrence);
    let verdict: AttemptVerdict = { kind: "retry", message: "not attempted" };
    let attempt = 0;
    while (attempt < max) {
      attempt++;
      verdict = await this.#attempt(d.hook, body);
      if (this.#closing.signal.aborted) return;
      if (verdict.kind !== "retry" || attempt >= max) break;
      const delay = retryDelayMs(attempt, this.#o.retry, this.#o.random);
      await this.#clock.sleep(delay, this.#closing.signal);
    }
    const result = verdict.kind === "delivered" ? "Delivered" : "Failed";
    const why = verdict.kind === "refused" ? `refused: ${verdict.message}` : verdict.message;
    this.#settle(d, result, attempt, why);
  }

  async #attempt(hook: HookSpec, body: unknown): Promise<AttemptVerdict> {
    try {
      const endpoint = await this.#endpoint(hook);
      const send = this.#o.send ?? postJson;
      const reply = await send(endpoint, body, {
        headers: { "content-type": CLOUDEVENTS_CONTENT_TYPE },
        signal: this.#closing.signal,
      });
      return attemptVerdict({ reply });
    } catch (error) {
      return attemptVerdict({ error });
    }
  }

  #endpoint(hook: HookSpec): Promise<WebhookEndpoint> {
    return resolveEndpoint(hook, this.#o.secretData);
  }

  #settle(d: Delivery, result: "Delivered" | "Failed", attempts: number, message: string): void {
    const status: HookDeliveryStatus = {
      name: d.hook.name,
      phase: d.occurrence.phase,
      ...(d.occurrence.node ? { node: d.occurrence.node } : {}),
      revision: d.occurrence.revision,
      result,
      attempts,
      time: formatTime(this.#clock.now()),
      message: message.slice(0, MAX_MESSAGE),
    };
    const perPool = this.#results.get(d.pool) ?? new Map<string, HookDeliveryStatus>();
    perPool.set(d.hook.name, status);
    this.#results.set(d.pool, perPool);
    const fields = { pool: d.pool, hook: d.hook.name, id: d.occurrence.id, attempts, message };
    if (result === "Failed") this.#log.warn("hook delivery failed", fields);
    else this.#log.info("hook delivered", fields);
    this.#o.onSettled?.(d.pool, status);
  }
}
