import assert from "node:assert/strict";
import { abortableSleep } from "./clock.ts";

Deno.test("abortableSleep: waits its time, or ends at once when aborted", async () => {
  const start = performance.now();
  await abortableSleep(30);
  assert.ok(performance.now() - start >= 25);
  const ac = new AbortController();
  const long = abortableSleep(60_000, ac.signal);
  ac.abort();
  await long;
  ac.abort();
  await abortableSleep(60_000, ac.signal);
});
