import assert from "node:assert/strict";
import { Mutex } from "./mutex.ts";

Deno.test("Mutex: one holder at a time, in arrival order, also after a failure", async () => {
  const m = new Mutex();
  const log: string[] = [];
  const hold = (name: string, fail = false) =>
    m.run(async () => {
      log.push(`${name}+`);
      await new Promise((r) => setTimeout(r, 5));
      log.push(`${name}-`);
      if (fail) throw new Error(name);
      return name;
    });
  const results = await Promise.allSettled([hold("a"), hold("b", true), hold("c")]);
  assert.deepEqual(log, ["a+", "a-", "b+", "b-", "c+", "c-"]);
  assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
});
