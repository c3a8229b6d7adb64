import assert from "node:assert/strict";
import { waitFor, WaitTimeoutError } from "./wait.ts";

Deno.test("waitFor resolves with the first truthy probe value", async () => {
  let calls = 0;
  const value = await waitFor(() => {
    calls++;
    return calls >= 3 ? { calls } : undefined;
  }, { timeoutMs: 2000, intervalMs: 5, message: "three calls" });
  assert.deepEqual(value, { calls: 3 });
});

Deno.test("waitFor keeps 0 and empty string as values", async () => {
  assert.equal(await waitFor(() => 0, { timeoutMs: 100, message: "zero" }), 0);
  assert.equal(await waitFor(() => "", { timeoutMs: 100, message: "empty" }), "");
});

Deno.test("waitFor times out naming the message, last value and last error", async () => {
  let calls = 0;
  const error = await waitFor<string>(() => {
    calls++;
    if (calls % 2 === 0) throw new Error(`boom ${calls}`);
    return false;
  }, { timeoutMs: 60, intervalMs: 5, message: () => "the thing to happen" }).then(
    () => assert.fail("should time out"),
    (e) => e,
  );
  assert.ok(error instanceof WaitTimeoutError);
  assert.match(error.message, /waiting for: the thing to happen/);
  assert.match(error.message, /timed out after \d+ ms/);
  // The last observation is either a value or an error; both are reported when present.
  if (error.lastError !== undefined) assert.match(error.message, /last error: Error: boom \d+/);
  else assert.match(error.message, /last value: false/);
});

Deno.test("waitFor reports the last observed value", async () => {
  const error = await waitFor(() => (false as false | { phase: string }) || undefined, {
    timeoutMs: 20,
    intervalMs: 5,
    message: "phase Running",
  }).catch((e) => e);
  assert.ok(error instanceof WaitTimeoutError);
  assert.match(error.message, /last value: undefined/);
  const error2 = await waitFor(async () => {
    await Promise.resolve();
    return null;
  }, { timeoutMs: 20, intervalMs: 5, message: "x" }).catch((e) => e);
  assert.match(error2.message, /last value: null/);
});

Deno.test("waitFor stops when its signal aborts", async () => {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("stopped")), 20);
  const error = await waitFor(() => undefined, {
    timeoutMs: 5000,
    intervalMs: 5,
    message: "never",
    signal: controller.signal,
  }).catch((e) => e);
  clearTimeout(timer);
  assert.equal(error.message, "stopped");
});

Deno.test("waitFor: progress extends the deadline, up to maxMs; standing still fails", async () => {
  // Moves for 150 ms, done 20 ms later: a 50 ms timeout alone would fail, progress carries it.
  const start = performance.now();
  let movedAt = start;
  const moving = await waitFor(() => {
    const now = performance.now();
    if (now - start < 150) movedAt = now;
    return now - start >= 170 ? "done" : undefined;
  }, { timeoutMs: 50, intervalMs: 5, message: "moving", progressAt: () => movedAt, maxMs: 1_000 });
  assert.equal(moving, "done");
  // Moving forever is still cut off at maxMs.
  const t0 = performance.now();
  await assert.rejects(
    waitFor(() => undefined, {
      timeoutMs: 20,
      message: "forever",
      progressAt: () => performance.now(),
      maxMs: 120,
    }),
    WaitTimeoutError,
  );
  assert.ok(performance.now() - t0 < 400);
  // Without progress the timeout is the timeout.
  const t1 = performance.now();
  await assert.rejects(
    waitFor(() => undefined, { timeoutMs: 30, message: "still", maxMs: 5_000 }),
    WaitTimeoutError,
  );
  assert.ok(performance.now() - t1 < 1_000);
});
