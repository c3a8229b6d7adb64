/**
 * Errors of the Kubernetes client: a {@linkcode KubeError} per failed API call,
 * parsed from the server's `metav1.Status` body, with one subclass per
 * condition callers branch on (not found, conflict, gone, throttled, ...).
 *
 * @module
 */

/** One cause of an Invalid (422) or other detailed failure. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** The `details` of a `metav1.Status`. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A `metav1.Status` object as the API server sends it. */
export interface Status {
  apiVersion?: string;
  kind?: string;
  status?: "Success" | "Failure" | string;
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code?: number;
}

/** Fields of a {@linkcode KubeError}. */
export interface KubeErrorInit {
  /** HTTP status code (or the Status `code` of a watch ERROR event). */
  status: number;
  /** The Status `reason`, e.g. "NotFound", "AlreadyExists", "Expired". */
  reason?: string;
  message?: string;
  details?: StatusDetails;
  /** The raw body (parsed Status when it was one, else the text). */
  body?: unknown;
  /** Seconds the server asked us to wait (429, or details.retryAfterSeconds). */
  retryAfterSeconds?: number;
}

/** A failed Kubernetes API call. */
export class KubeError extends Error {
  /** HTTP status code. */
  readonly status: number;
  /** The Status `reason` ("" when the body was not a Status). */
  readonly reason: string;
  /** The Status `details`, if any. */
  readonly details?: StatusDetails;
  /** The raw body. */
  readonly body?: unknown;
  /** Seconds the server asked to wait before retrying, if it said. */
  readonly retryAfterSeconds?: number;

  /** Builds an error from a status code and Status fields. */
  constructor(init: KubeErrorInit) {
    super(
      init.message ||
        `Kubernetes API error ${init.status}${init.reason ? ` (${init.reason})` : ""}`,
    );
    this.name = "KubeError";
    this.status = init.status;
    this.reason = init.reason ?? "";
    this.details = init.details;
    this.body = init.body;
    this.retryAfterSeconds = init.retryAfterSeconds ?? init.details?.retryAfterSeconds;
  }

  /** The Status `details.causes` (empty when none). */
  get causes(): StatusCause[] {
    return this.details?.causes ?? [];
  }
}

/** 404: the object (or its namespace) does not exist. */
export class NotFoundError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "NotFoundError" as const;
}

/** 409 Conflict: stale resourceVersion or a server-side apply field conflict. */
export class ConflictError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "ConflictError" as const;
}

/** 409 AlreadyExists: create of an object that exists. */
export class AlreadyExistsError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "AlreadyExistsError" as const;
}

/** 410 Gone / reason Expired: the requested resourceVersion is too old; relist. */
export class GoneError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "GoneError" as const;
}

/** 429: throttled, or an eviction refused by a PodDisruptionBudget. */
export class TooManyRequestsError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "TooManyRequestsError" as const;
}

/** 403: RBAC or admission denied the request. */
export class ForbiddenError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "ForbiddenError" as const;
}

/** 401: credentials missing, expired or rejected. */
export class UnauthorizedError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "UnauthorizedError" as const;
}

/** 422 Invalid: the object failed validation; see {@linkcode KubeError.causes}. */
export class InvalidError extends KubeError {
  /** The error class name (a literal type keeps the subclasses distinct for type guards). */
  override readonly name = "InvalidError" as const;
}

/** Picks the error class for an HTTP status and Status reason. */
export function kubeErrorFrom(init: KubeErrorInit): KubeError {
  const { status, reason } = init;
  if (status === 410 || reason === "Expired" || reason === "Gone") return new GoneError(init);
  if (status === 404) return new NotFoundError(init);
  if (status === 409) {
    return reason === "AlreadyExists" ? new AlreadyExistsError(init) : new ConflictError(init);
  }
  if (status === 429) return new TooManyRequestsError(init);
  if (status === 403) return new ForbiddenError(init);
  if (status === 401) return new UnauthorizedError(init);
  if (status === 422) return new InvalidError(init);
  return new KubeError(init);
}

/** Builds the error for a Status object (for example from a watch ERROR event). */
export function errorFromStatus(status: Status, httpStatus?: number): KubeError {
  return kubeErrorFrom({
    status: status.code ?? httpStatus ?? 500,
    reason: status.reason,
    message: status.message,
    details: status.details,
    body: status,
  });
}

/** Parses a Retry-After header holding delay-seconds (HTTP dates are ignored). */
function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const n = Number(value.trim());
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * Reads a failed response to the end (it may be chunked or streamed) and turns
 * it into the matching {@linkcode KubeError} subclass. Always consumes the body.
 */
export async function errorFromResponse(res: Response): Promise<KubeError> {
  let text = "";
  try {
    text = await res.text();
  } catch (e) {
    text = `(body unreadable: ${e instanceof Error ? e.message : String(e)})`;
  }
  const retryAfterHeader = parseRetryAfter(res.headers.get("retry-after"));
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed && typeof parsed === "object" && (parsed as Status).kind === "Status") {
    const s = parsed as Status;
    return kubeErrorFrom({
      status: res.status,
      reason: s.reason,
      message: s.message,
      details: s.details,
      body: s,
      retryAfterSeconds: retryAfterHeader ?? s.details?.retryAfterSeconds,
    });
  }
  const snippet = text.length > 512 ? `${text.slice(0, 512)}…` : text;
  return kubeErrorFrom({
    status: res.status,
    reason: res.statusText || undefined,
    message: `Kubernetes API error ${res.status}${snippet ? `: ${snippet}` : ""}`,
    body: parsed ?? text,
    retryAfterSeconds: retryAfterHeader,
  });
}

/** True when `e` is a {@linkcode KubeError} (any status). */
export function isKubeError(e: unknown): e is KubeError {
  return e instanceof KubeError;
}
/** True for a {@linkcode NotFoundError}. */
export function isNotFound(e: unknown): e is NotFoundError {
  return e instanceof NotFoundError;
}
/** True for a {@linkcode ConflictError} (not AlreadyExists). */
export function isConflict(e: unknown): e is ConflictError {
  return e instanceof ConflictError;
}
/** True for an {@linkcode AlreadyExistsError}. */
export function isAlreadyExists(e: unknown): e is AlreadyExistsError {
  return e instanceof AlreadyExistsError;
}
/** True for a {@linkcode GoneError}. */
export function isGone(e: unknown): e is GoneError {
  return e instanceof GoneError;
}
/** True for a {@linkcode TooManyRequestsError}. */
export function isTooManyRequests(e: unknown): e is TooManyRequestsError {
  return e instanceof TooManyRequestsError;
}
/** True for a {@linkcode ForbiddenError}. */
export function isForbidden(e: unknown): e is ForbiddenError {
  return e instanceof ForbiddenError;
}
/** True for an {@linkcode InvalidError}. */
export function isInvalid(e: unknown): e is InvalidError {
  return e instanceof InvalidError;
}
