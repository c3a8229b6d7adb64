import assert from "node:assert/strict";
import { FakeClock } from "../clock.ts";
import { WorkQueue } from "./workqueue.ts";

const tick = (ms = 2) => new Promise((r) => setTimeout(r, ms));

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

Deno.test("a key added many times while queued is processed once", async () => {
  const q = new WorkQueue();
  q.add("a");
  q.add("b");
  q.add("a");
  q.add("a");
  assert.equal(q.length, 2);
  const seen: string[] = [];
  const running = q.run((k) => {
    seen.push(k);
  });
  await tick();
  assert.deepEqual(seen, ["a", "b"]);
  await q.shutDown();
  await running;
});

Deno.test("a key re-added while processing runs again afterwards, never concurrently", async () => {
  const q = new WorkQueue();
  let active = 0;
  let maxActive = 0;
  const runs: string[] = [];
  const gates: ReturnType<typeof deferred>[] = [];
  const running = q.run(async (k) => {
    active++;
    maxActive = Math.max(maxActive, active);
    runs.push(k);
    const gate = deferred();
    gates.push(gate);
    await gate.promise;
    active--;
  }, { concurrency: 4 });
  q.add("a");
  await tick();
  assert.equal(runs.length, 1);
  q.add("a"); // while processing
  q.add("a");
  q.add("b");
  await tick();
  assert.deepEqual(runs, ["a", "b"], "b runs in parallel, a waits for its own run");
  gates[0].resolve(); // first run of a finishes
  await tick();
  assert.deepEqual(runs, ["a", "b", "a"]);
  gates[1].resolve();
  gates[2].resolve();
  await tick();
  assert.equal(runs.length, 3, "the two re-adds during processing collapse into one run");
  assert.equal(maxActive, 2);
  await q.shutDown();
  await running;
});

Deno.test("addRateLimited backs off per key exponentially up to the cap; forget resets", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock, baseDelayMs: 50, maxDelayMs: 300 });
  const seen: string[] = [];
  const running = q.run((k) => {
    seen.push(k);
  });
  q.addRateLimited("a");
  assert.equal(q.numRequeues("a"), 1);
  clock.advance(49);
  await tick();
  assert.deepEqual(seen, []);
  clock.advance(1);
  await tick();
  assert.deepEqual(seen, ["a"]);
  // The successful run forgot the failures; count them up without running.
  q.addRateLimited("b"); // 50
  q.addRateLimited("b"); // 100 (the pending earlier deadline wins)
  q.addRateLimited("b"); // 200
  q.addRateLimited("b"); // 300 (capped)
  q.addRateLimited("b"); // 300
  assert.equal(q.numRequeues("b"), 5);
  clock.advance(50);
  await tick();
  assert.deepEqual(seen, ["a", "b"]);
  q.forget("b");
  assert.equal(q.numRequeues("b"), 0);
  await q.shutDown();
  await running;
});

Deno.test("a failing worker is retried with growing delays, and forgotten after success", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock, baseDelayMs: 100, maxDelayMs: 1000 });
  let attempts = 0;
  const running = q.run(() => {
    attempts++;
    if (attempts < 3) throw new Error("transient");
  });
  q.add("k");
  await tick();
  assert.equal(attempts, 1);
  clock.advance(99);
  await tick();
  assert.equal(attempts, 1);
  clock.advance(1);
  await tick();
  assert.equal(attempts, 2);
  clock.advance(199);
  await tick();
  assert.equal(attempts, 2);
  clock.advance(1);
  await tick();
  assert.equal(attempts, 3);
  assert.equal(q.numRequeues("k"), 0);
  await q.shutDown();
  await running;
});

Deno.test("addAfter delays with the real clock and shutDown cancels pending timers", async () => {
  const q = new WorkQueue();
  const seen: string[] = [];
  const running = q.run((k) => {
    seen.push(k);
  });
  q.addAfter("soon", 5);
  q.addAfter("later", 60_000); // would leak a timer if shutDown did not cancel it
  await tick(30);
  assert.deepEqual(seen, ["soon"]);
  await q.shutDown();
  await running;
  q.add("ignored");
  assert.equal(q.length, 0);
});

Deno.test("shutDown drops queued keys by default, drains them on request, waits for in-flight work", async () => {
  for (const drain of [false, true]) {
    const q = new WorkQueue();
    const seen: string[] = [];
    const gate = deferred();
    const running = q.run(async (k) => {
      seen.push(k);
      if (k === "a") await gate.promise;
    });
    q.add("a");
    await tick();
    q.add("b");
    q.add("c");
    let stopped = false;
    const stopping = q.shutDown({ drain }).then(() => (stopped = true));
    await tick();
    assert.equal(stopped, false, "waits for the running key");
    gate.resolve();
    await stopping;
    await running;
    assert.deepEqual(seen, drain ? ["a", "b", "c"] : ["a"]);
  }
});
