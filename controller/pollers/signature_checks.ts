/**
 * Signature verification off the reconcile path, like tag resolution: a pool
 * with `spec.image.verification` says which digest-pinned images it needs a
 * verdict for (its candidate target and its current one), and reads the latest
 * verdicts without waiting for the registry.
 *
 * Work is keyed by (image, keys, credentials), so a verdict is computed once per
 * digest and policy however many pools share it, and a key no pool wants any
 * more is dropped: memory is bounded by what the pools name now. A verified
 * image is checked again every hour (a signature can be deleted); one that did
 * not verify at the pool's poll interval (it may be signed since); a registry
 * failure is retried with the shared back-off. A registry failure does not undo
 * a verdict: the last verdict of the key stands for up to a day, so a registry
 * blip on a recheck neither refuses a verified image nor trusts a refused one.
 *
 * @module
 */
import { type Clock, systemClock } from "../../lib/clock.ts";
import type { SignatureVerdict, TrustedKey } from "../../lib/registry/signatures.ts";
import {
  KeyedPoll,
  type KeyedPollTunables,
  pollKey,
  type PollOutcome,
  type PollSchedule,
} from "./keyed_poll.ts";
import type { ImageResolver } from "./resolver.ts";

/** A finished verification: the verdict (a registry failure is `ok: false`). */
export interface SignatureSuccess {
  ok: true;
  verdict: SignatureVerdict;
}

/** The latest outcome of one image's check. */
export type SignatureOutcome = PollOutcome<SignatureSuccess>;

/** What a pool asks to have verified. */
export interface SignatureRequest {
  /** The digest-pinned image. */
  image: string;
  keys: readonly TrustedKey[];
  /** The pull Secret, as for tag resolution. */
  credentials?: { hash: string; dockerConfigJson?: string };
  /** How soon an image that did not verify is checked again (the pool's poll interval). */
  retryMs: number;
}

/** One subscriber's schedule. */
interface Schedule {
  retryMs: number;
}

/** Options of {@linkcode SignatureChecks}. */
export interface SignatureChecksOptions extends KeyedPollTunables {
  resolver: ImageResolver;
  /** How long one verification may take (default 20 s). */
  timeoutMs?: number;
  /** How often a verdict is checked again (default 1 h). */
  recheckMs?: number;
}

const DEFAULT_TIMEOUT_MS = 20_000;
const DEFAULT_RECHECK_MS = 60 * 60_000;
/** How long a verdict stands while rechecks fail to reach the registry. */
export const VERDICT_KEPT_MS = 24 * 60 * 60_000;

/** `sha256:<hex>` of the keys, so a key change is a new verification. */
export async function keysHash(keys: readonly TrustedKey[]): Promise<string> {
  const bytes = new TextEncoder().encode(JSON.stringify(keys.map((k) => [k.name, k.pem])));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Verifies pools' images in the background; see the module documentation. */
export class SignatureChecks {
  #poll: KeyedPoll<Schedule, SignatureSuccess>;
  /** keys hash → the keys, for the attempts; pruned to what subscribers use. */
  #keys = new Map<string, readonly TrustedKey[]>();
  #subscriberKeys = new Map<string, string>();
  /** subscriber → its poll key, and each key's last verdict (pruned to those keys). */
  #subscriberPollKeys = new Map<string, string>();
  #verdicts = new Map<string, SignatureOutcome>();
  #recheckMs: number;
  #clock: Clock;

  /** Creates an idle service. */
  constructor(options: SignatureChecksOptions) {
    const resolver = options.resolver;
    this.#recheckMs = options.recheckMs ?? DEFAULT_RECHECK_MS;
    this.#clock = options.clock ?? systemClock;
    this.#poll = new KeyedPoll({
      ...options,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      attempt: async (image, { key, dockerConfigJson, signal }) => {
        const keys = this.#keys.get(key.split(" ")[1] ?? "") ?? [];
        if (!resolver.verifySignatures) throw new Error("this controller cannot verify signatures");
        const verdict = await resolver.verifySignatures(image, keys, { dockerConfigJson, signal });
        const result = { ok: true as const, verdict };
        if (this.#verdicts.has(key) || [...this.#subscriberPollKeys.values()].includes(key)) {
          this.#verdicts.set(key, { at: this.#clock.now(), result });
        }
        return result;
      },
      nextAt: (s: PollSchedule<Schedule, SignatureSuccess>) => {
        if (s.settledAt === undefined) return -Infinity;
        const result = s.latest?.result;
        if (!result?.ok) return s.settledAt + Math.min(s.retryDelayMs, this.#recheckMs);
        if (result.verdict.verified) return s.settledAt + this.#recheckMs;
        const retry = Math.min(...[...s.subscriptions.values()].map((x) => x.retryMs));
        return s.settledAt + Math.min(retry, this.#recheckMs);
      },
      sameSchedule: (a, b) => a.retryMs === b.retryMs,
      timeoutMessage: (host, _image, timeout) =>
        `registry ${host} did not answer within ${timeout}`,
      log: {
        component: "signature-checks",
        field: "image",
        recovered: "signature check answered again",
        failed: "signature check failed",
      },
    });
  }

  /**
   * Declares that `subscriber` (a pool and what it names, e.g. `pool/<image>`) wants
   * `request` verified, and returns the latest outcome, if any. Never waits.
   */
  async want(subscriber: string, request: SignatureRequest): Promise<SignatureOutcome | undefined> {
    const hash = await keysHash(request.keys);
    this.#keys.set(hash, request.keys);
    this.#subscriberKeys.set(subscriber, hash);
    const key = `${request.image} ${hash} ${pollKey("", request.credentials).trim()}`;
    this.#subscriberPollKeys.set(subscriber, key);
    this.#prune();
    const latest = this.#poll.want(subscriber, {
      key,
      target: request.image,
      dockerConfigJson: request.credentials?.dockerConfigJson,
      schedule: { retryMs: Math.max(1_000, request.retryMs) },
    });
    if (!latest || latest.result.ok) return latest;
    const last = this.#verdicts.get(key);
    const fresh = last && this.#clock.now().getTime() - last.at.getTime() <= VERDICT_KEPT_MS;
    return fresh ? last : latest;
  }

  /**
   * Every subscriber of `pool` (named `pool/...`) not in `keep` wants nothing any
   * more: a pool's subscriptions follow the images it names now.
   */
  forgetPool(pool: string, keep: ReadonlySet<string> = new Set()): void {
    for (const subscriber of [...this.#subscriberKeys.keys()]) {
      if (subscriber.startsWith(`${pool}/`) && !keep.has(subscriber)) this.forget(subscriber);
    }
  }

  /** `subscriber` wants nothing any more. */
  forget(subscriber: string): void {
    this.#subscriberKeys.delete(subscriber);
    this.#subscriberPollKeys.delete(subscriber);
    this.#prune();
    this.#poll.forget(subscriber);
  }

  /** Drops every key, aborting checks in flight. */
  async forgetAll(): Promise<void> {
    this.#subscriberKeys.clear();
    this.#subscriberPollKeys.clear();
    this.#verdicts.clear();
    this.#keys.clear();
    this.#poll.forgetAll();
    await this.#poll.settled();
  }

  #prune(): void {
    const used = new Set(this.#subscriberKeys.values());
    for (const hash of this.#keys.keys()) if (!used.has(hash)) this.#keys.delete(hash);
    const keys = new Set(this.#subscriberPollKeys.values());
    for (const key of this.#verdicts.keys()) if (!keys.has(key)) this.#verdicts.delete(key);
  }
}
