/**
 * Test helpers: a fake {@linkcode Transport} answering requests with a
 * function, and response builders. For unit tests only.
 *
 * @module
 */

import type { Transport, TransportRequest } from "./types.ts";

/** A request as the fake transport recorded it. */
export interface RecordedRequest extends TransportRequest {
  /** Parsed JSON body, when the body was JSON. */
  json?: unknown;
}

/** A fake transport that also records every request. */
export interface FakeTransport extends Transport {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** True once `close()` was called. */
  readonly closed: boolean;
}

/** Builds a fake transport from a handler. */
export function fakeTransport(
  handler: (req: RecordedRequest) => Response | Promise<Response>,
): FakeTransport {
  const requests: RecordedRequest[] = [];
  let closed = false;
  return {
    requests,
    get closed() {
      return closed;
    },
    async request(req) {
      const recorded: RecordedRequest = { ...req };
      if (req.body !== undefined) {
        try {
          recorded.json = JSON.parse(req.body);
        } catch {
          // Not JSON (e.g. YAML): leave json unset.
        }
      }
      requests.push(recorded);
      return await handler(recorded);
    },
    close() {
      closed = true;
    },
  };
}

/** A JSON response. */
export function jsonResponse(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...Object.fromEntries(new Headers(headers)) },
  });
}

/** A failure response carrying a metav1.Status. */
export function statusResponse(
  code: number,
  reason: string,
  message = reason,
  details?: Record<string, unknown>,
  headers: HeadersInit = {},
): Response {
  return jsonResponse(
    { apiVersion: "v1", kind: "Status", status: "Failure", code, reason, message, details },
    code,
    headers,
  );
}

/**
 * A streaming response whose body is fed by the returned controller: `send`
 * enqueues text (e.g. watch event lines), `end` closes the stream.
 */
export function streamResponse(status = 200): {
  response: Response;
  send(text: string): void;
  end(): void;
  fail(error: Error): void;
} {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      open = false;
    },
  });
  return {
    response: new Response(body, { status, headers: { "Content-Type": "application/json" } }),
    send(text) {
      if (open) controller.enqueue(encoder.encode(text));
    },
    end() {
      if (open) controller.close();
      open = false;
    },
    fail(error) {
      if (open) controller.error(error);
      open = false;
    },
  };
}

/** One watch event line. */
export function watchLine(type: string, object: unknown): string {
  return JSON.stringify({ type, object }) + "\n";
}
