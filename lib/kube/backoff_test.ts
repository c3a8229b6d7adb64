import assert from "node:assert/strict";
import { backoffDelay } from "./backoff.ts";

Deno.test("backoffDelay doubles from initialMs, caps at maxMs, then adds jitter", () => {
  const opts = { initialMs: 50, maxMs: 300_000 };
  assert.deepEqual([1, 2, 3, 4].map((n) => backoffDelay(n, opts)), [50, 100, 200, 400]);
  assert.equal(backoffDelay(30, opts), 300_000);
  const jittered = { initialMs: 1000, maxMs: 4000, jitter: 0.5 };
  assert.equal(backoffDelay(1, jittered, () => 0), 1000);
  assert.equal(backoffDelay(1, jittered, () => 0.999), 1500);
  assert.equal(backoffDelay(10, jittered, () => 1), 6000);
  assert.equal(backoffDelay(2, { initialMs: 10, maxMs: 1e9, factor: 3 }), 30);
});
