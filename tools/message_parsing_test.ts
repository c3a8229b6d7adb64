/**
 * Facts travel as fields, never as prose: no product code takes a condition's or an
 * event's message apart (a regex, a split, a search for a word in it). What a reader
 * needs is a reason, a status field or an annotation the operator owns.
 *
 * This test reads the product code (controller/, daemon/, lib/, plugin/; tests and
 * test helpers aside) for a `message` that is matched, split or searched. The few
 * texts that are no condition or event message (an exception's, an HTTP call's) are
 * listed with why; an entry that no longer occurs fails too, so the list only shrinks.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PRODUCT = ["controller", "daemon", "lib", "plugin"];

/** A `message` matched, split or searched: the shapes that take prose apart. */
const PATTERNS: readonly RegExp[] = [
  /\bmessage\??\.(match|matchAll|split|search|replace|replaceAll)\(/,
  /\bmessage\??\.(includes|startsWith|endsWith|indexOf|lastIndexOf)\(/,
  /\.(test|exec|match)\([^)]*\bmessage\b/,
];

/** Texts that are no condition or event message: file, the line's code, why. */
const ALLOWED: readonly [string, string, string][] = [
  [
    "controller/gates/schedule.ts",
    '(e as Error).message.replace(/^CronPattern: /, "")',
    "croner's exception, reworded for the pool's InvalidSpec message",
  ],
  [
    "controller/pollers/keyed_poll.ts",
    "message.includes(host)",
    "a registry call's exception: the host is named once",
  ],
  [
    "controller/pollers/health_queries.ts",
    "outcome.message.includes(state.url)",
    "a Prometheus request's error: the URL is named once",
  ],
  [
    "controller/pollers/approval_requests.ts",
    "r.message.startsWith(`${state.webhook.url}: `)",
    "an approval webhook call's error: the URL is named once",
  ],
  [
    "lib/registry/errors.ts",
    'message.replace(/^error sending request for url \\([^)]*\\):\\s*/i, "")',
    "fetch's exception, shortened to its cause",
  ],
];

async function* productFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) {
      if (entry.name !== "testing") yield* productFiles(path);
    } else if (
      entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts") &&
      entry.name !== "testing.ts"
    ) {
      yield path;
    }
  }
}

/** Every line of product code (outside `skip`) that one of `patterns` matches, as `file: code`. */
async function linesMatching(
  patterns: readonly RegExp[],
  skip = "\0",
): Promise<{ file: string; code: string }[]> {
  const out: { file: string; code: string }[] = [];
  for (const top of PRODUCT) {
    for await (const path of productFiles(join(ROOT, top))) {
      const file = relative(ROOT, path);
      if (file.startsWith(skip)) continue;
      for (const line of (await Deno.readTextFile(path)).split("\n")) {
        const code = line.trim();
        if (code.startsWith("//") || code.startsWith("*")) continue;
        if (patterns.some((p) => p.test(code))) out.push({ file, code });
      }
    }
  }
  return out;
}

/** Every line of product code that takes a `message` apart. */
function messageParsing(): Promise<{ file: string; code: string }[]> {
  return linesMatching(PATTERNS);
}

/**
 * The node facts `lib/api` decides once (`drainedFor`, `rebootRecorded`, `rebootReport`):
 * code elsewhere comparing a record's drained-for image, or reading the Idle reason
 * for a reboot, derives them a second time.
 */
const LIFECYCLE_FACTS: readonly RegExp[] = [
  /\.drainedFor\s*[!=]==(?!\s*undefined\b)|[!=]==\s*[\w.?]*\.drainedFor\b/,
  /\breason\s*[!=]==\s*IdleReason\.Rebooting|IdleReason\.Rebooting\s*[!=]==\s*[\w.?]*\breason\b/,
];

Deno.test("only lib/api decides drained-for-the-image and whether a daemon reboots", async () => {
  const found = await linesMatching(LIFECYCLE_FACTS, "lib/api/");
  assert.deepEqual(found.map((f) => `${f.file}: ${f.code}`), [], "read the fact from lib/api");
  const caught = [
    "const approved = record.slotAt !== undefined && record.drainedFor === wanted.desiredImage;",
    "idle?.reason === IdleReason.Rebooting ? parseTime(idle.lastTransitionTime) : undefined,",
    'if (idle?.status !== "False" || idle.reason !== IdleReason.Rebooting) return;',
  ];
  for (const code of caught) assert.ok(LIFECYCLE_FACTS.some((p) => p.test(code)), code);
});

Deno.test("no product code matches, splits or searches a condition or event message", async () => {
  const found = await messageParsing();
  const allowed = (f: { file: string; code: string }) =>
    ALLOWED.some(([file, code]) => f.file === file && f.code.includes(code));
  const parsing = found.filter((f) => !allowed(f)).map((f) => `${f.file}: ${f.code}`);
  assert.deepEqual(parsing, [], "put the fact in a reason, a status field or an annotation");
  const stale = ALLOWED.filter(([file, code]) =>
    !found.some((f) => f.file === file && f.code.includes(code))
  ).map(([file, code]) => `${file}: ${code}`);
  assert.deepEqual(stale, [], "these no longer occur: remove them from ALLOWED");
});

Deno.test("the message-parsing patterns catch the shapes they are for", () => {
  const caught = [
    'const locking = /locking it/.test(idle?.message ?? "");',
    "return c ? c.message.split(/\\s+/).includes(image) : undefined;",
    "const listed = /failed health checks: (.*)$/.exec(message)?.[1];",
    'return cond?.status === "True" && cond.message.includes(image);',
    'message: back.message.replace(/^pool (\\S+) rolled back:/, "x"),',
  ];
  for (const code of caught) assert.ok(PATTERNS.some((p) => p.test(code)), code);
  const fine = [
    "message: `runs ${shortReference(image)}; slot released`,",
    "if (cond.reason === reason && cond.message === message) return NO_OUTPUT;",
    "message: message.slice(0, MAX_MESSAGE),",
  ];
  for (const code of fine) assert.ok(!PATTERNS.some((p) => p.test(code)), code);
});
