/**
 * A watcher for things that must never happen while a test waits: it runs a
 * check every few hundred milliseconds until stopped and collects each
 * distinct problem the check notes. A failed read (a loaded API server) is
 * not a problem: the next round reads again.
 *
 * @module
 */

/** Options of {@linkcode ProblemWatch}. */
export interface ProblemWatchOptions {
  /** Reads the world and calls `note` with each problem seen (duplicates are kept once). */
  check: (note: (problem: string) => void) => Promise<void>;
  /** Pause between rounds (default 250 ms). */
  periodMs?: number;
}

/** See the module documentation. */
export class ProblemWatch {
  /** The distinct problems seen so far, in order. */
  readonly problems: string[] = [];
  #options: ProblemWatchOptions;
  #stop = false;
  #loop?: Promise<void>;

  /** Creates a watch; it checks nothing until {@linkcode start}. */
  constructor(options: ProblemWatchOptions) {
    this.#options = options;
  }

  /** Starts the rounds (once). */
  start(): this {
    this.#loop ??= this.#run();
    return this;
  }

  /** Stops after the round under way; resolves with the problems seen. */
  async stop(): Promise<string[]> {
    this.#stop = true;
    await this.#loop;
    return this.problems;
  }

  #note = (problem: string): void => {
    if (!this.problems.includes(problem)) this.problems.push(problem);
  };

  async #run(): Promise<void> {
    while (!this.#stop) {
      try {
        await this.#options.check(this.#note);
      } catch {
        // A read failed: the next round reads again.
      }
      if (!this.#stop) await new Promise((r) => setTimeout(r, this.#options.periodMs ?? 250));
    }
  }
}
