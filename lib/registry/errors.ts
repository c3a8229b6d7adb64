/**
 * Registry errors classified by what the user should do about them, with
 * messages written for a pool condition.
 *
 * @module
 */

/** What went wrong, coarsely: decides whether to retry and what to tell the user. */
export type RegistryErrorKind =
  | "NotFound"
  | "Unauthorized"
  | "Unreachable"
  | "InvalidReference"
  | "Protocol";

/** Options of {@linkcode RegistryError}. */
export interface RegistryErrorOptions {
  /** The registry `host[:port]`. */
  registry?: string;
  /** The HTTP status, when the registry answered. */
  status?: number;
  /** The first registry error code of the body (e.g. MANIFEST_UNKNOWN). */
  code?: string;
  /** The underlying error. */
  cause?: unknown;
}

/** An error talking to a registry; `message` is meant for users. */
export class RegistryError extends Error {
  /** The class of failure. */
  readonly kind: RegistryErrorKind;
  /** The registry `host[:port]`, when known. */
  readonly registry?: string;
  /** The HTTP status, when the registry answered. */
  readonly status?: number;
  /** The registry's error code (e.g. MANIFEST_UNKNOWN), when it sent one. */
  readonly code?: string;

  /** Creates an error of `kind` with a user-facing `message`. */
  constructor(kind: RegistryErrorKind, message: string, options: RegistryErrorOptions = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = "RegistryError";
    this.kind = kind;
    if (options.registry !== undefined) this.registry = options.registry;
    if (options.status !== undefined) this.status = options.status;
    if (options.code !== undefined) this.code = options.code;
  }
}

/** One entry of the registry's JSON error body. */
export interface RegistryErrorEntry {
  code: string;
  message: string;
  detail?: unknown;
}

/** The entries of a registry error body (`{"errors":[…]}`); empty when the body is not one. */
export function parseErrorBody(body: Uint8Array | undefined): RegistryErrorEntry[] {
  if (!body || body.length === 0) return [];
  try {
    const json = JSON.parse(new TextDecoder().decode(body));
    if (!Array.isArray(json?.errors)) return [];
    return json.errors
      .filter((e: unknown) => typeof e === "object" && e !== null)
      .map((e: Record<string, unknown>) => ({
        code: String(e.code ?? ""),
        message: String(e.message ?? ""),
        ...(e.detail !== undefined ? { detail: e.detail } : {}),
      }));
  } catch {
    return [];
  }
}

/** What a failed request was about, for the message. */
export type RequestSubject =
  | { type: "manifest"; tag?: string; digest?: string }
  | { type: "blob"; digest: string }
  | { type: "tags" }
  | { type: "catalog" }
  | { type: "token"; realm: string };

/** Input of {@linkcode classifyHttpError}. */
export interface HttpFailure {
  /** Registry `host[:port]`. */
  registry: string;
  /** Repository path; absent for catalog requests. */
  repository?: string;
  /** HTTP status (not 2xx). */
  status: number;
  /** The parsed error body entries. */
  errors: RegistryErrorEntry[];
  /** What was requested. */
  subject: RequestSubject;
  /** Whether credentials from the pull secret were sent. */
  usedCredentials: boolean;
  /** Whether the client has a pull secret at all. */
  hasPullSecret: boolean;
}

function registryDetail(errors: RegistryErrorEntry[]): string {
  const parts = errors.map((e) => e.message || e.code).filter((m) => m.length > 0);
  return parts.length > 0 ? `: ${parts.join("; ")}` : "";
}

/** Turns a non-2xx registry answer into a classified {@linkcode RegistryError}. Pure. */
export function classifyHttpError(f: HttpFailure): RegistryError {
  const { registry, status, subject } = f;
  const code = f.errors[0]?.code || undefined;
  const options = { registry, status, ...(code ? { code } : {}) };
  const where = f.repository !== undefined ? `${registry}/${f.repository}` : registry;
  const http = `(HTTP ${status})`;

  if (status === 401 || (subject.type === "token" && status === 403)) {
    const via = subject.type === "token"
      ? ` via its token service ${new URL(subject.realm).host}`
      : "";
    if (f.usedCredentials) {
      return new RegistryError(
        "Unauthorized",
        `unauthorized: registry ${registry} rejected the credentials from pull secret${via} ${http}; check the Secret`,
        options,
      );
    }
    const missing = f.hasPullSecret
      ? `the pull secret has no credentials for ${registry}`
      : "no pull secret is configured";
    return new RegistryError(
      "Unauthorized",
      `unauthorized: registry ${registry} requires credentials for ${where} and ${missing} ${http}` +
        "; add them to the pool's pull secret (a registry may also answer this way for a repository that does not exist)",
      options,
    );
  }
  if (status === 403) {
    const who = f.usedCredentials ? "the credentials from pull secret" : "anonymous access";
    return new RegistryError(
      "Unauthorized",
      `denied: registry ${registry} denied ${who} to ${where} ${http}${registryDetail(f.errors)}`,
      options,
    );
  }
  if (status === 404) {
    if (code === "NAME_UNKNOWN") {
      return new RegistryError(
        "NotFound",
        `repository unknown: repository ${
          JSON.stringify(f.repository)
        } not found in ${registry} ${http}`,
        options,
      );
    }
    if (subject.type === "manifest") {
      const what = subject.digest !== undefined
        ? `digest ${subject.digest}`
        : `tag ${JSON.stringify(subject.tag)}`;
      return new RegistryError(
        "NotFound",
        `manifest unknown: ${what} not found in ${where} ${http}`,
        options,
      );
    }
    if (subject.type === "blob") {
      return new RegistryError(
        "NotFound",
        `blob unknown: blob ${subject.digest} not found in ${where} ${http}`,
        options,
      );
    }
    if (subject.type === "token") {
      return new RegistryError(
        "Protocol",
        `registry ${registry} points to a token service that does not exist: ${subject.realm} ${http}`,
        options,
      );
    }
    return new RegistryError(
      "NotFound",
      `not found: ${where} ${http}${registryDetail(f.errors)}`,
      options,
    );
  }
  if (status === 429) {
    return new RegistryError(
      "Unreachable",
      `too many requests: registry ${registry} is rate-limiting ${http}; it will be retried${
        f.usedCredentials ? "" : " (credentials usually raise the limit)"
      }`,
      options,
    );
  }
  if (status >= 500) {
    return new RegistryError(
      "Unreachable",
      `registry ${registry} failed ${http}${registryDetail(f.errors)}; it will be retried`,
      options,
    );
  }
  return new RegistryError(
    "Protocol",
    `registry ${registry} refused the request for ${where} ${http}${registryDetail(f.errors)}`,
    options,
  );
}

/** Turns a `fetch` failure (no HTTP answer) into an "Unreachable" {@linkcode RegistryError}. Pure. */
export function classifyNetworkError(
  error: unknown,
  registry: string,
  options: { timedOut: boolean; timeoutMs: number; insecure: boolean },
): RegistryError {
  const raw = messageChain(error);
  const opts = { registry, cause: error };
  if (options.timedOut) {
    return new RegistryError(
      "Unreachable",
      `cannot reach registry ${registry}: no answer within ${options.timeoutMs / 1000}s`,
      opts,
    );
  }
  let reason: string;
  if (/connection refused/i.test(raw)) reason = "connection refused";
  else if (/requests to port [0-9]+ are blocked/i.test(raw)) {
    reason = "fetch refuses that port (a browser 'bad port'); serve the registry on another port";
  } else if (/dns error|failed to lookup|name or service not known|no address/i.test(raw)) {
    reason = "the host name does not resolve";
  } else if (/certificate|unknownissuer|notvalidforname|expired/i.test(raw)) {
    reason = `its TLS certificate is not trusted (${shorten(raw)}); ` +
      "if it uses a private CA, configure that CA";
  } else if (/tls|handshake|corrupt message|invalidcontenttype/i.test(raw)) {
    reason = `TLS handshake failed (${shorten(raw)})` +
      (options.insecure
        ? ""
        : "; if the registry serves plain HTTP, list it as an insecure registry");
  } else if (/connection reset/i.test(raw)) reason = "connection reset";
  else if (/timed out/i.test(raw)) reason = "connection timed out";
  else if (/unreachable/i.test(raw)) reason = "network unreachable";
  else reason = shorten(raw);
  return new RegistryError("Unreachable", `cannot reach registry ${registry}: ${reason}`, opts);
}

/** The messages of an error and its causes (Deno's fetch says "fetch failed" and puts the reason in `cause`). */
function messageChain(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    parts.push(e instanceof Error ? e.message : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.filter((m) => m && m !== "fetch failed").join(": ") || "fetch failed";
}

function shorten(message: string): string {
  // Deno wraps the cause in "error sending request for url (…): client error (Connect): …".
  const tail = message.replace(/^error sending request for url \([^)]*\):\s*/i, "");
  return tail.length > 200 ? `${tail.slice(0, 200)}…` : tail;
}
