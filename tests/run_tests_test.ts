import assert from "node:assert/strict";
import { defaultJobs, LONGEST_FIRST, orderFiles, testFiles } from "./run_tests.ts";

Deno.test("defaultJobs: twice the CPUs, at least one, at most eight", () => {
  assert.equal(defaultJobs(2), 4);
  assert.equal(defaultJobs(1), 2);
  assert.equal(defaultJobs(0), 1);
  assert.equal(defaultJobs(16), 8);
});

Deno.test("orderFiles: the longest files start first, the rest in path order", () => {
  assert.deepEqual(
    orderFiles([
      "lib/b_test.ts",
      "tests/e2e/rulebook_test.ts",
      "a_test.ts",
      "tests/e2e/faults_test.ts",
    ]),
    ["tests/e2e/faults_test.ts", "tests/e2e/rulebook_test.ts", "a_test.ts", "lib/b_test.ts"],
  );
});

Deno.test("testFiles: every test file of the repository once, none of tests/kube", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const files = await testFiles(root);
  assert.equal(new Set(files).size, files.length);
  assert.deepEqual(files.slice(0, LONGEST_FIRST.length), [...LONGEST_FIRST], "each exists");
  assert.ok(files.includes("tests/run_tests_test.ts"));
  assert.ok(files.includes("lib/kube/informer_test.ts"));
  assert.ok(!files.some((f) => f.startsWith("tests/kube/") || f.includes("node_modules")));
});
