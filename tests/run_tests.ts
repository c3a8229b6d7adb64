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

if (import.meta.main) {
  const jobs = Deno.env.get("DENO_JOBS") || String(defaultJobs(navigator.hardwareConcurrency));
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--parallel",
      "--allow-all",
      "--sanitize-ops",
      "--sanitize-resources",
      ...Deno.args,
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
