/**
 * What one hook attempt's answer means, and how long to wait before the next.
 * Pure.
 *
 * - 2xx: delivered.
 * - 4xx other than 408 (timeout) and 429 (too many requests): the receiver
 *   refused this event; sending it again would be refused again, so the
 *   delivery fails at once.
 * - anything else (3xx, 408, 429, 5xx, a network or TLS error, a timeout):
 *   retried with exponential back-off and jitter until `maxAttempts`.
 *
 * @module
 */
import { backoffDelay } from "../../lib/kube/backoff.ts";
import type { WebhookReply } from "../webhook/client.ts";

/** What an attempt's answer means. */
export type AttemptVerdict =
  | { kind: "delivered"; message: string }
  | { kind: "refused"; message: string }
  | { kind: "retry"; message: string };

/** Longest part of a reply body quoted in a message. */
const QUOTE_CHARS = 200;

/** The verdict on a reply, or on the error an attempt threw. */
export function attemptVerdict(
  outcome: { reply: WebhookReply } | { error: unknown },
): AttemptVerdict {
  if ("error" in outcome) return { kind: "retry", message: errorMessage(outcome.error) };
  const { status, body } = outcome.reply;
  const quoted = body.trim().replace(/\s+/g, " ").slice(0, QUOTE_CHARS);
  const message = `HTTP ${status}${quoted ? `: ${quoted}` : ""}`;
  if (status >= 200 && status < 300) return { kind: "delivered", message };
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) {
    return { kind: "refused", message };
  }
  return { kind: "retry", message };
}

/** Back-off tunables. */
export interface RetryOptions {
  /** Delay before the first retry (default 1 s); doubles per attempt. */
  initialMs?: number;
  /** Longest delay before jitter (default 60 s). */
  maxMs?: number;
}

/** Delay before retry number `attempt` (1-based), stretched by up to 50 % at random. */
export function retryDelayMs(
  attempt: number,
  options: RetryOptions = {},
  random: () => number = Math.random,
): number {
  return backoffDelay(attempt, {
    initialMs: options.initialMs ?? 1_000,
    maxMs: options.maxMs ?? 60_000,
    jitter: 0.5,
  }, random);
}

/** The error and its causes ("fetch failed" alone says nothing), without the URL. */
function errorMessage(error: unknown): string {
  if (error instanceof DOMException && error.name === "TimeoutError") return error.message;
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 5; depth++) {
    const text = (e instanceof Error ? e.message : String(e))
      .replace(/error sending request for url \([^)]*\):\s*/, "");
    if (text && !parts.includes(text)) parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(": ").replace(/\s+/g, " ").slice(0, QUOTE_CHARS);
}
