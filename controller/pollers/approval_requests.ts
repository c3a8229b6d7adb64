/**
 * The approval webhook (`spec.rollout.approval.mode: Webhook`) asked beside
 * the work queue, never inside a reconcile, on the engine tag resolution uses
 * (`keyed_poll.ts`):
 *
 * - After each plan the shell declares what the pool still wants asked
 *   ({@linkcode ApprovalRequests.wantOnly}, from `Plan.approvalAsks`): one key
 *   per pool, revision, image, node (scope Node) and endpoint. Keys no longer
 *   wanted are dropped and their request aborted.
 * - Each key POSTs once ({@linkcode approvalBody}): a 2xx approves, a 4xx
 *   other than 408 and 429 refuses with the reply's message; both are final
 *   (the key never asks again). A network or TLS error, a timeout, a 3xx, 408,
 *   429 or 5xx is retried with exponential back-off and jitter (the hooks'
 *   rule, `hooks/delivery_policy.ts`).
 * - At most {@linkcode ApprovalRequestsOptions.maxInFlightPerPool} asks of one
 *   pool are in flight at once (a pool of a thousand nodes does not POST a
 *   thousand times at once); the others wait their turn.
 * - Every outcome wakes the pool; the next reconcile reads the answers
 *   ({@linkcode ApprovalRequests.answers}) and the planner records verdicts in
 *   `status.approval`, after which it stops wanting the key. Only the leader
 *   reconciles, so only the leader calls; losing leadership closes the poller.
 *
 * @module
 */
import type { WebhookEndpointSpec } from "../../lib/api/mod.ts";
import {
  postJson,
  type PostJsonOptions,
  resolveEndpoint,
  type WebhookEndpoint,
  type WebhookReply,
  type WebhookSecretReader,
} from "../webhook/client.ts";
import type { ApprovalAnswer, ApprovalAsk, ApprovalAsks } from "../model/approval.ts";
import { attemptVerdict } from "../hooks/delivery_policy.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { KeyedPoll, type KeyedPollTunables, type PollSchedule } from "./keyed_poll.ts";

/** A final answer of the webhook. */
export interface ApprovalVerdict {
  ok: true;
  verdict: "Approved" | "Refused";
  message: string;
}

/** What one key asks. */
interface AskState {
  pool: string;
  ask: ApprovalAsk;
  scope: ApprovalAsks["scope"];
  webhook: WebhookEndpointSpec;
  /** Attempts made so far. */
  attempts: number;
  /** When the first failed attempt ended (a pending ask fails until it is answered). */
  failingSince?: Date;
}

/** Options of {@linkcode ApprovalRequests}. */
export interface ApprovalRequestsOptions extends Omit<KeyedPollTunables, "onResult"> {
  /** One POST (default `postJson` of `webhook/client.ts`). */
  post?: (endpoint: WebhookEndpoint, body: unknown, o: PostJsonOptions) => Promise<WebhookReply>;
  /** A Secret's data (base64 values) in the operator's namespace, for `secretRef`. */
  secretData?: WebhookSecretReader;
  /** Called with the pool after every answer or failed attempt. */
  onResult?: (pool: string) => void;
  /** Most asks of one pool in flight at once (default 4). */
  maxInFlightPerPool?: number;
}

/** Default most asks of one pool in flight at once. */
const DEFAULT_IN_FLIGHT_PER_POOL = 4;
/** Longest refusal message kept from a reply. */
const MAX_MESSAGE = 256;

/** The JSON body of an ask. */
export function approvalBody(pool: string, ask: ApprovalAsk, scope: string, attempt: number) {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "ApprovalRequest",
    pool,
    scope,
    revision: ask.revision,
    image: ask.image,
    ...(ask.node !== undefined ? { node: ask.node } : {}),
    attempt,
  };
}

/** The message of a reply body: its JSON `message` (or `reason`), else its text, one line. */
export function replyMessage(body: string): string {
  let text = body;
  try {
    const json = JSON.parse(body) as { message?: unknown; reason?: unknown };
    if (typeof json?.message === "string") text = json.message;
    else if (typeof json?.reason === "string") text = json.reason;
  } catch {
    // not JSON: the text itself
  }
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > MAX_MESSAGE ? `${line.slice(0, MAX_MESSAGE - 1)}…` : line;
}

/**
 * What a reply means, by the hooks' rule (`attemptVerdict`): 2xx approves, a
 * 4xx other than 408 and 429 refuses, anything else is an error to retry.
 */
export function interpretReply(reply: WebhookReply): ApprovalVerdict {
  const message = replyMessage(reply.body);
  const kind = attemptVerdict({ reply }).kind;
  if (kind === "delivered") {
    return { ok: true, verdict: "Approved", message: message || `HTTP ${reply.status}` };
  }
  if (kind === "refused") {
    return { ok: true, verdict: "Refused", message: message || `HTTP ${reply.status}` };
  }
  throw new Error(`HTTP ${reply.status}${message ? `: ${message}` : ""}`);
}

/** A failed attempt's cause for people, without the URL the messages already name. */
export function failureText(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  const text = raw.replace(/^error sending request for url \([^)]*\):\s*/, "")
    .replace(/\s+/g, " ").trim();
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

/** A short stable hash of the endpoint spec (a changed endpoint is a new key). */
function specHash(spec: WebhookEndpointSpec): string {
  let h = 0x811c9dc5;
  for (const ch of JSON.stringify(spec)) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16);
}

/** The key of one ask: the URL first (the engine names the host from it), then the rest. */
export function askKey(pool: string, ask: ApprovalAsk, webhook: WebhookEndpointSpec): string {
  return `${webhook.url} ${specHash(webhook)} ${pool} ${ask.revision} ${ask.image} ${
    ask.node ?? ""
  }`;
}

/** Asks pools' approval webhooks in the background; see the module documentation. */
export class ApprovalRequests {
  #poll: KeyedPoll<true, ApprovalVerdict>;
  #o: ApprovalRequestsOptions;
  #clock: Clock;
  /** Key → what it asks. */
  #asks = new Map<string, AskState>();
  /** Pool → its keys. */
  #pools = new Map<string, Set<string>>();

  /** Creates an idle poller; keys start when a pool wants them. */
  constructor(options: ApprovalRequestsOptions = {}) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#poll = new KeyedPoll<true, ApprovalVerdict>({
      ...options,
      initialBackoffMs: options.initialBackoffMs ?? 2_000,
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
      // Each endpoint's own timeoutSeconds (at most 300) bounds an attempt first.
      timeoutMs: options.timeoutMs ?? 310_000,
      attempt: (key, { signal }) => this.#attempt(key, signal),
      // A key belongs to one pool: bound each pool's asks in flight (and Secret reads).
      concurrency: {
        group: (key) => this.#asks.get(key)?.pool ?? key,
        max: Math.max(1, options.maxInFlightPerPool ?? DEFAULT_IN_FLIGHT_PER_POOL),
      },
      nextAt: nextAttemptAt,
      sameSchedule: () => true,
      timeoutMessage: (_host, _key, timeout) => `no reply within ${timeout}`,
      log: {
        component: "approval-requests",
        field: "ask",
        recovered: "approval webhook answered",
        failed: "approval webhook attempt failed",
      },
      onResult: (subscribers) => {
        for (const key of subscribers) {
          const pool = this.#asks.get(key)?.pool;
          if (pool !== undefined) this.#o.onResult?.(pool);
        }
      },
    });
  }

  /** Keys currently kept (tests). */
  get keys(): string[] {
    return this.#poll.keys;
  }

  /** POSTs started so far. */
  get attempts(): number {
    return this.#poll.attempts;
  }

  /** Declares everything `pool` wants asked now (nothing: undefined), dropping the rest. */
  wantOnly(pool: string, wanted: ApprovalAsks | undefined): void {
    const keys = new Set<string>();
    for (const ask of wanted?.asks ?? []) {
      const key = askKey(pool, ask, wanted!.webhook);
      keys.add(key);
      if (!this.#asks.has(key)) {
        this.#asks.set(key, {
          pool,
          ask,
          scope: wanted!.scope,
          webhook: wanted!.webhook,
          attempts: 0,
        });
      }
      this.#poll.want(key, { key, target: key, schedule: true });
    }
    for (const key of this.#pools.get(pool) ?? []) {
      if (!keys.has(key)) this.#drop(key);
    }
    if (keys.size > 0) this.#pools.set(pool, keys);
    else this.#pools.delete(pool);
  }

  /** What is known of `pool`'s asks: verdicts, and the last failure of pending ones. */
  answers(pool: string): ApprovalAnswer[] {
    const out: ApprovalAnswer[] = [];
    for (const key of this.#pools.get(pool) ?? []) {
      const state = this.#asks.get(key);
      const latest = this.#poll.latest(key);
      if (!state || !latest) continue;
      const r = latest.result;
      out.push(
        r.ok ? { ...state.ask, verdict: r.verdict, message: r.message } : {
          ...state.ask,
          message: `attempt ${state.attempts} failed: ${
            r.message.startsWith(`${state.webhook.url}: `)
              ? r.message.slice(state.webhook.url.length + 2)
              : r.message
          }`,
          failingSince: (state.failingSince ?? latest.at).toISOString(),
        },
      );
    }
    return out;
  }

  /** Drops everything `pool` wanted (it is gone). */
  forget(pool: string): void {
    this.wantOnly(pool, undefined);
  }

  /**
   * Drops every key and waits until no request is left (leadership lost). The
   * poller stays usable: a new leader term declares its asks again.
   */
  async close(): Promise<void> {
    this.#poll.forgetAll();
    this.#asks.clear();
    this.#pools.clear();
    await this.#poll.settled();
  }

  #drop(key: string) {
    this.#poll.forget(key);
    this.#asks.delete(key);
  }

  async #attempt(key: string, signal: AbortSignal): Promise<ApprovalVerdict> {
    const state = this.#asks.get(key);
    if (!state) throw new Error("no longer wanted");
    state.attempts++;
    try {
      const endpoint = await this.#endpoint(state.webhook);
      const post = this.#o.post ?? postJson;
      const body = approvalBody(state.pool, state.ask, state.scope, state.attempts);
      return interpretReply(await post(endpoint, body, { signal }));
    } catch (e) {
      state.failingSince ??= this.#clock.now();
      // The engine names the endpoint by its URL (the key's start): keep only the cause.
      throw new Error(`${state.webhook.url}: ${failureText(e)}`);
    }
  }

  #endpoint(spec: WebhookEndpointSpec): Promise<WebhookEndpoint> {
    return resolveEndpoint(spec, this.#o.secretData ?? (() => Promise.resolve(undefined)));
  }
}

/** A decided key never asks again; a pending one retries after its back-off. */
export function nextAttemptAt(s: PollSchedule<true, ApprovalVerdict>): number {
  if (!s.latest) return 0;
  if (s.latest.result.ok) return Infinity;
  return (s.settledAt ?? 0) + s.retryDelayMs;
}
