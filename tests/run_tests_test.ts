import assert from "node:assert/strict";
import { defaultJobs } from "./run_tests.ts";

Deno.test("defaultJobs: twice the CPUs, at least one, at most eight", () => {
  assert.equal(defaultJobs(2), 4);
  assert.equal(defaultJobs(1), 2);
  assert.equal(defaultJobs(0), 1);
  assert.equal(defaultJobs(16), 8);
});
