/**
 * `deno task test` runs test files in parallel as workers of ONE process: a test that sets an
 * environment variable or changes the working directory changes it under every other file
 * running at that moment (a TMPDIR set for one test once sent another file's control plane into
 * the first test's "must stay empty" folder). Tests pass such things as options instead.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;
const FOLDERS = ["controller", "daemon", "lib", "plugin", "tests", "tools"];
/** Process-wide state a test must not change. */
const FORBIDDEN = /\bDeno\.(env\.set|env\.delete|chdir|umask)\s*\(/;

/** Test files and the test helpers they import (mains run as processes of their own). */
function loadedByTests(path: string): boolean {
  if (path.includes("/tests/kube/")) return false;
  return /_test\.ts$/.test(path) || /\/tests\/(harness|e2e)\/[^/]+\.ts$/.test(path);
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else if (entry.isFile && path.endsWith(".ts")) yield path;
  }
}

Deno.test("no test changes process-wide state (the environment, the working directory)", async () => {
  const offenders: string[] = [];
  let scanned = 0;
  for (const folder of FOLDERS) {
    for await (const path of walk(`${ROOT}${folder}`)) {
      if (!loadedByTests(path) || path.endsWith("parallel_safety_test.ts")) continue;
      scanned++;
      const lines = (await Deno.readTextFile(path)).split("\n");
      lines.forEach((line, i) => {
        if (FORBIDDEN.test(line)) {
          offenders.push(`${path.slice(ROOT.length)}:${i + 1}: ${line.trim()}`);
        }
      });
    }
  }
  assert.ok(scanned > 100, `scanned ${scanned} files`);
  assert.deepEqual(offenders, [], "pass an option instead:\n" + offenders.join("\n"));
});
