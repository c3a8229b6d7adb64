/**
 * A local HTTP(S) receiver for the controller's outgoing webhooks (hooks, the
 * approval gate): it records every call (headers, body, time, attempt number)
 * and answers through a responder function per request, so a test can make
 * it answer slowly, fail (5xx) or refuse (4xx) per phase, per attempt or per
 * anything else it reads from the call.
 *
 * @module
 */

import { abortableSleep } from "../../lib/clock.ts";
import { issueCa, issueLeaf } from "./pki.ts";

/** One recorded request. */
export interface ReceivedCall {
  /** 1-based order of arrival across all calls. */
  seq: number;
  /** When it arrived. */
  at: Date;
  method: string;
  /** URL path with query, e.g. "/hooks/a". */
  path: string;
  /** Header names lower case. */
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json?: unknown;
  /** The call's key ({@linkcode HookReceiverOptions.attemptKey}). */
  key: string;
  /** 1-based: how many calls with this key arrived so far, this one included. */
  attempt: number;
}

/** What the receiver answers. */
export interface ReceiverAnswer {
  /** HTTP status (default 200). */
  status?: number;
  /** Body: a string as is, anything else as JSON (default empty). */
  body?: unknown;
  /** Wait this long before answering (cut short when the receiver closes). */
  delayMs?: number;
}

/** Decides the answer to one call. */
export type Responder = (call: ReceivedCall) => ReceiverAnswer | Promise<ReceiverAnswer>;

/** Options of {@linkcode startHookReceiver}. */
export interface HookReceiverOptions {
  /** Serve HTTPS with this PEM certificate and key. */
  tls?: { cert: string; key: string };
  /** The answer to each call (default: 200, empty body). */
  responder?: Responder;
  /**
   * What counts as the same call for {@linkcode ReceivedCall.attempt} (default: the JSON
   * body's `id`, as CloudEvents carry one, else method and path).
   */
  attemptKey?: (call: Omit<ReceivedCall, "key" | "attempt">) => string;
}

/** A running receiver. */
export interface HookReceiver {
  /** Base URL, e.g. "http://127.0.0.1:41234"; append a path for an endpoint. */
  readonly url: string;
  /** Every call so far, in order of arrival. */
  readonly calls: readonly ReceivedCall[];
  /** Replaces the responder (calls already answered keep their answer). */
  setResponder(responder: Responder): void;
  /** The calls matching `filter`. */
  received(filter?: (call: ReceivedCall) => boolean): ReceivedCall[];
  /**
   * Resolves with the calls matching `filter` once `until` holds for them (default: at
   * least one); rejects after `timeoutMs` (default 60 s) naming what it saw.
   */
  waitFor(
    filter: (call: ReceivedCall) => boolean,
    options?: { until?: (calls: ReceivedCall[]) => boolean; timeoutMs?: number },
  ): Promise<ReceivedCall[]>;
  /** Stops serving; pending delayed answers end at once. */
  close(): Promise<void>;
}

function defaultKey(call: Omit<ReceivedCall, "key" | "attempt">): string {
  const id = (call.json as { id?: unknown } | undefined)?.id;
  return typeof id === "string" ? id : `${call.method} ${call.path}`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Starts a receiver on 127.0.0.1 (a free port). */
export function startHookReceiver(options: HookReceiverOptions = {}): HookReceiver {
  const calls: ReceivedCall[] = [];
  const attempts = new Map<string, number>();
  const closing = new AbortController();
  let responder: Responder = options.responder ?? (() => ({}));
  const keyOf = options.attemptKey ?? defaultKey;
  const waiters = new Set<() => void>();

  const handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const body = await req.text();
    const base = {
      seq: calls.length + 1,
      at: new Date(),
      method: req.method,
      path: url.pathname + url.search,
      headers: Object.fromEntries(req.headers),
      body,
      json: parseJson(body),
    };
    const key = keyOf(base);
    const attempt = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, attempt);
    const call: ReceivedCall = { ...base, key, attempt };
    calls.push(call);
    waiters.forEach((w) => w());
    const answer = await responder(call);
    if (answer.delayMs) {
      await abortableSleep(answer.delayMs, closing.signal);
    }
    const text = typeof answer.body === "string" || answer.body === undefined
      ? answer.body ?? ""
      : JSON.stringify(answer.body);
    return new Response(text, { status: answer.status ?? 200 });
  };

  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    ...(options.tls ?? {}),
  }, handle);
  const scheme = options.tls ? "https" : "http";
  const matching = (filter?: (c: ReceivedCall) => boolean) =>
    filter ? calls.filter(filter) : [...calls];

  return {
    url: `${scheme}://127.0.0.1:${server.addr.port}`,
    calls,
    setResponder(next) {
      responder = next;
    },
    received: matching,
    waitFor(filter, opts = {}) {
      const until = opts.until ?? ((c: ReceivedCall[]) => c.length > 0);
      const timeoutMs = opts.timeoutMs ?? 60_000;
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = matching(filter);
          if (!until(found)) return;
          clear();
          resolve(found);
        };
        const timer = setTimeout(() => {
          clear();
          const seen = calls.map((c) => `${c.seq} ${c.path} ${c.key}#${c.attempt}`).join("; ");
          reject(
            new Error(`hook receiver: no matching calls within ${timeoutMs} ms; saw: ${seen}`),
          );
        }, timeoutMs);
        const clear = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      closing.abort();
      await server.shutdown();
    },
  };
}

/** A CA and a server certificate for 127.0.0.1 (PEM), for a receiver on TLS. */
export async function testServerTls(): Promise<{ ca: string; cert: string; key: string }> {
  const dir = await Deno.makeTempDir();
  try {
    const ca = await issueCa({
      dir,
      name: "ca",
      days: 1,
      profile: { commonName: "hooks-test-ca" },
    });
    const leaf = await issueLeaf({
      dir,
      name: "hooks",
      days: 1,
      ca,
      profile: { commonName: "hooks", extendedKeyUsage: ["serverAuth"], ips: ["127.0.0.1"] },
    });
    return {
      ca: await Deno.readTextFile(ca.cert),
      cert: await Deno.readTextFile(leaf.cert),
      key: await Deno.readTextFile(leaf.key),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
