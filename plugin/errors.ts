/**
 * The plugin's exit codes and its own errors: one wording for "not there"
 * whichever command asks (`status`, `history`, `why`, the writes), so scripts
 * and people read one form.
 *
 * @module
 */

/**
 * Exit codes of `kubectl bootc` (see plugin/README.md):
 * - 0: done; `status`: no pool shown is unhealthy;
 * - 1: `status`: a pool shown is unhealthy; other commands: refused (nothing to roll
 *   back, abort or retry);
 * - 2: a usage error, or the pool or node named does not exist;
 * - 3: the API server or the kubeconfig failed (nothing could be read or written);
 * - 4: `status --strict`: a pool is still progressing or waiting (none unhealthy).
 */
export const ExitCode = {
  Ok: 0,
  Unhealthy: 1,
  Refused: 1,
  Usage: 2,
  NotFound: 2,
  Failed: 3,
  NotDone: 4,
} as const;

/** `BootcNodePool "nosuch" not found`: the one wording of a missing object. */
export function notFoundMessage(kind: string, name: string): string {
  return `${kind} ${JSON.stringify(name)} not found`;
}

/** A pool or node named on the command line that does not exist (exit code 2). */
export class NotFoundError extends Error {
  override readonly name = "NotFoundError";
  constructor(readonly kind: string, readonly object: string) {
    super(notFoundMessage(kind, object));
  }
}
