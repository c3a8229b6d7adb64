import assert from "node:assert/strict";
import { FakeClock } from "../lib/clock.ts";
import { runReportingIfSlow } from "./report_if_slow.ts";

/** A promise with its resolve, to end a fake action when the test says. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

Deno.test("runReportingIfSlow: a quick action is not reported", async () => {
  const clock = new FakeClock();
  let reports = 0;
  const out = await runReportingIfSlow({
    work: () => Promise.resolve("staged"),
    afterMs: 5_000,
    report: () => Promise.resolve(reports++ >= 0),
    clock,
  });
  assert.equal(out, "staged");
  clock.advance(10_000);
  await Promise.resolve();
  assert.equal(reports, 0);
});

Deno.test("runReportingIfSlow: a slow action is reported once, and the report is awaited", async () => {
  const clock = new FakeClock();
  const work = deferred<string>();
  const write = deferred<void>();
  const calls: string[] = [];
  const run = runReportingIfSlow({
    work: () => work.promise,
    afterMs: 5_000,
    report: () => {
      calls.push("report");
      return write.promise.then(() => true);
    },
    clock,
  });
  clock.advance(4_999);
  await Promise.resolve();
  assert.deepEqual(calls, []);
  clock.advance(1);
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(calls, ["report"]);
  work.resolve("staged");
  let done = false;
  run.then(() => done = true);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(done, false, "returns only once the report's write is done");
  write.resolve();
  assert.equal(await run, "staged");
  clock.advance(60_000);
  assert.deepEqual(calls, ["report"]);
});

Deno.test("runReportingIfSlow: a failing action still ends the timer; a failed report is the report's own", async () => {
  const clock = new FakeClock();
  const work = deferred<string>();
  const run = runReportingIfSlow({
    work: () => work.promise.then(() => Promise.reject(new Error("pull failed"))),
    afterMs: 1_000,
    report: () => Promise.reject(new Error("write failed")),
    clock,
  });
  clock.advance(1_000);
  await new Promise((r) => setTimeout(r, 0));
  work.resolve("x");
  await assert.rejects(run, /pull failed/);
});

Deno.test("runReportingIfSlow: a failed report is tried again while the action runs", async () => {
  const clock = new FakeClock();
  const work = deferred<string>();
  const results = [false, false, true];
  let calls = 0;
  const run = runReportingIfSlow({
    work: () => work.promise,
    afterMs: 5_000,
    retryMs: 2_000,
    report: () => {
      calls++;
      const ok = results.shift();
      return ok === false && calls === 2
        ? Promise.reject(new Error("timeout"))
        : Promise.resolve(ok!);
    },
    clock,
  });
  const tick = async (ms: number) => {
    clock.advance(ms);
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
  };
  await tick(5_000);
  assert.equal(calls, 1);
  await tick(1_999);
  assert.equal(calls, 1, "not before retryMs");
  await tick(1);
  assert.equal(calls, 2, "a failed write is tried again");
  await tick(2_000);
  assert.equal(calls, 3, "a rejection is a failure too");
  await tick(60_000);
  assert.equal(calls, 3, "once written, no more");
  work.resolve("staged");
  assert.equal(await run, "staged");
});
