import assert from "node:assert/strict";
import { ProblemWatch } from "./problem_watch.ts";

Deno.test("ProblemWatch: distinct problems in order; failed reads are retried, not problems", async () => {
  let round = 0;
  const watch = new ProblemWatch({
    periodMs: 1,
    check: (note) => {
      round++;
      if (round === 2) return Promise.reject(new Error("the API server is busy"));
      if (round >= 3) note("n1 was cordoned");
      if (round >= 4) note("n2 rebooted");
      return Promise.resolve();
    },
  });
  assert.deepEqual(await new ProblemWatch({ check: () => Promise.resolve() }).stop(), []);
  watch.start().start();
  while (round < 6) await new Promise((r) => setTimeout(r, 2));
  assert.deepEqual(await watch.stop(), ["n1 was cordoned", "n2 rebooted"]);
});
