/**
 * A mutex for async work: one holder at a time, waiters in arrival order.
 *
 * @module
 */

/** One holder at a time; waiters run in arrival order. */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();

  /** Runs `fn` once every earlier holder has finished. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.#tail;
    let release!: () => void;
    this.#tail = new Promise<void>((r) => release = r);
    await before;
    try {
      return await fn();
    } finally {
      release();
    }
  }
}
