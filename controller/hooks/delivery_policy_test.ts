import assert from "node:assert/strict";
import { attemptVerdict, retryDelayMs } from "./delivery_policy.ts";

Deno.test("attemptVerdict: 2xx delivered, 4xx refused (but 408/429 retried), the rest retried", () => {
  const reply = (status: number, body = "") => attemptVerdict({ reply: { status, body } });
  const cases: [number, string][] = [
    [200, "delivered"],
    [204, "delivered"],
    [301, "retry"],
    [400, "refused"],
    [403, "refused"],
    [408, "retry"],
    [429, "retry"],
    [500, "retry"],
    [503, "retry"],
  ];
  for (const [status, kind] of cases) assert.equal(reply(status).kind, kind, String(status));
  assert.equal(reply(503, "  busy\n  now ").message, "HTTP 503: busy now");
  assert.equal(reply(200).message, "HTTP 200");
  assert.equal(reply(500, "x".repeat(1000)).message.length, "HTTP 500: ".length + 200);
});

Deno.test("attemptVerdict: errors and timeouts are retried with their message", () => {
  const timeout = new DOMException("no reply within 2s", "TimeoutError");
  assert.deepEqual(attemptVerdict({ error: timeout }), {
    kind: "retry",
    message: "no reply within 2s",
  });
  assert.deepEqual(attemptVerdict({ error: new TypeError("connection\nrefused") }), {
    kind: "retry",
    message: "connection refused",
  });
  const tls = new TypeError("fetch failed", {
    cause: new Error(
      "error sending request for url (https://h/x): client error (Connect): invalid peer " +
        "certificate: UnknownIssuer",
    ),
  });
  assert.equal(
    attemptVerdict({ error: tls }).message,
    "fetch failed: client error (Connect): invalid peer certificate: UnknownIssuer",
  );
});

Deno.test("retryDelayMs: doubles per attempt, capped, jitter up to +50%", () => {
  const none = () => 0;
  assert.deepEqual([1, 2, 3, 4].map((a) => retryDelayMs(a, {}, none)), [1000, 2000, 4000, 8000]);
  assert.equal(retryDelayMs(20, { maxMs: 5000 }, none), 5000);
  assert.equal(retryDelayMs(1, { initialMs: 100 }, () => 0.999), 150);
});
