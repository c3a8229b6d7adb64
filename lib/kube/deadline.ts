/**
 * Client-side deadlines for API requests. A connection the network dropped without a FIN or
 * RST (a cut cable, a firewall that drops packets) stays open on our side for as long as we
 * send nothing: a request on it never gets an answer and a watch on it never sees another
 * event, and neither says so. The API server's own `timeoutSeconds` cannot help, since its
 * closing never reaches us. So every request gets a deadline, a watch its `timeoutSeconds`
 * plus a grace, and one that passes ends the request with {@linkcode RequestTimeoutError}.
 *
 * @module
 */

/** A request got no (complete) answer within its deadline. */
export class RequestTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RequestTimeoutError";
  }
}

/** One request's deadline: {@linkcode RequestDeadline.signal} aborts when it passes. */
export interface RequestDeadline {
  /** Aborts (with a {@linkcode RequestTimeoutError}) at the deadline or when `outer` aborts. */
  readonly signal: AbortSignal;
  /** True once the deadline (not `outer`) ended the request. */
  readonly expired: boolean;
  /** Stops the timer (the request is done). */
  clear(): void;
}

/**
 * Starts a deadline of `ms` for the request `what` (a method and path, for the message),
 * linked to the caller's `outer` signal; `onExpire` runs when it passes.
 */
export function startDeadline(options: {
  ms: number;
  what: string;
  outer?: AbortSignal;
  onExpire?: () => void;
}): RequestDeadline {
  const own = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    own.abort(
      new RequestTimeoutError(
        `${options.what}: no answer from the API server within ${options.ms / 1000} s`,
      ),
    );
    options.onExpire?.();
  }, options.ms);
  const signal = options.outer ? AbortSignal.any([options.outer, own.signal]) : own.signal;
  return {
    signal,
    get expired() {
      return expired;
    },
    clear: () => clearTimeout(timer),
  };
}
