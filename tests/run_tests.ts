/**
 * `deno task test`'s runner: `deno test --parallel` with the sanitizers on, test files
 * {@linkcode defaultJobs} at a time unless `DENO_JOBS` says otherwise (`DENO_JOBS=1`: one
 * after another). Arguments are passed on (a file or folder to run only that).
 *
 * Twice as many files as CPUs: the suite waits far more than it computes (reboots, drains,
 * timeouts, polls; with one file per CPU, 2 cores stayed ~70 % idle), and the CPU, not the
 * waits, is what more files at once share.
 *
 * @module
 */

/** At most this many test files at once, whatever the machine. */
const MAX_JOBS = 8;

/** Test files at once when `DENO_JOBS` is unset: twice the CPUs, at most {@linkcode MAX_JOBS}. */
export function defaultJobs(cpus: number): number {
  return Math.max(1, Math.min(MAX_JOBS, 2 * cpus));
}

/**
 * The files that take longest, longest first (measured in CI). Started last, the longest
 * ran alone at the end while the other slots sat idle; started first, the short files fill
 * the slots around it.
 */
export const LONGEST_FIRST: readonly string[] = [
  "tests/e2e/faults_test.ts",
  "tests/e2e/health_adversarial_test.ts",
  "tests/e2e/rulebook_test.ts",
  "tests/node/real_nodes_test.ts",
];

/** Folders `deno test` must not look in (deno.json's `test.exclude`, plus what is not ours). */
const SKIP = ["tests/kube/", "node_modules/", ".git/"];

/** Every test file under `root` (relative, `/`-separated), in the order they should start. */
export async function testFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(`${root}/${dir}`)) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory && !SKIP.includes(`${path}/`)) await walk(path);
      else if (entry.isFile && /_test\.ts$/.test(entry.name)) found.push(path);
    }
  };
  await walk("");
  return orderFiles(found);
}

/** `files` with {@linkcode LONGEST_FIRST} at the front, the rest sorted. */
export function orderFiles(files: readonly string[]): string[] {
  const present = new Set(files);
  const first = LONGEST_FIRST.filter((f) => present.has(f));
  return [...first, ...files.filter((f) => !LONGEST_FIRST.includes(f)).sort()];
}

if (import.meta.main) {
  const jobs = Deno.env.get("DENO_JOBS") || String(defaultJobs(navigator.hardwareConcurrency));
  const root = new URL("..", import.meta.url).pathname;
  // With no files named, every test file, the longest first.
  const files = Deno.args.some((a) => !a.startsWith("-")) ? [] : await testFiles(root);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--parallel",
      "--allow-all",
      "--sanitize-ops",
      "--sanitize-resources",
      ...Deno.args,
      ...files.map((f) => `${root}${f}`),
    ],
    env: { DENO_JOBS: jobs },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  // A stopped run (Ctrl-C, CI's timeout) stops the tests too.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => child.kill(signal));
  }
  Deno.exit((await child.status).code);
}
