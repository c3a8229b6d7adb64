/**
 * The one HTTP client for the controller's outgoing webhooks (hooks and the
 * approval gate): a JSON POST with a per-attempt timeout, an optional bearer
 * token or client certificate, and TLS always verified (system roots, plus
 * the endpoint's CA bundle when given). There is deliberately no option to
 * skip verification.
 *
 * @module
 */
import { LABEL_WEBHOOK_CREDENTIALS } from "../../lib/api/constants.ts";

/** Where and how to call an endpoint. */
export interface WebhookEndpoint {
  /** `http://` or `https://` URL. */
  url: string;
  /** Per attempt: connect, send and read the whole reply. */
  timeoutSeconds: number;
  /** PEM; verify TLS against it (in addition to the system roots); never skip verification. */
  caBundle?: string;
  /** From the Secret's `token` key; sent as `Authorization: Bearer …`. */
  bearerToken?: string;
  /** mTLS, from the Secret's `tls.crt` / `tls.key`. */
  clientCert?: { cert: string; key: string };
}

/** What the endpoint answered (any status; the caller decides what a status means). */
export interface WebhookReply {
  status: number;
  /** The reply body, at most {@linkcode MAX_REPLY_BYTES} bytes of it. */
  body: string;
}

/** Most bytes of a reply body read (the rest is dropped): messages, not payloads. */
export const MAX_REPLY_BYTES = 16 * 1024;

/** Options of {@linkcode postJson}. */
export interface PostJsonOptions {
  /** Extra request headers (e.g. a CloudEvents content type replacing application/json). */
  headers?: Record<string, string>;
  /** Aborts the attempt (e.g. on shutdown). */
  signal?: AbortSignal;
}

/**
 * One POST of `body` as JSON with `headers`; resolves with any HTTP status,
 * rejects on a network or TLS error, a timeout (`TimeoutError`) or an abort.
 * Redirects are not followed (a 3xx is returned as is): a redirect must not
 * carry the bearer token elsewhere.
 */
export async function postJson(
  endpoint: WebhookEndpoint,
  body: unknown,
  options: PostJsonOptions = {},
): Promise<WebhookReply> {
  const url = checkedUrl(endpoint.url, endpoint);
  const timeout = AbortSignal.timeout(Math.max(1, endpoint.timeoutSeconds) * 1000);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const client = httpClient(endpoint);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: requestHeaders(endpoint, options.headers),
      body: JSON.stringify(body),
      redirect: "manual",
      signal,
      ...(client ? { client } : {}),
    });
    return { status: response.status, body: await readCapped(response, MAX_REPLY_BYTES) };
  } catch (err) {
    // fetch reports our own timeout as an AbortError carrying the reason.
    if (timeout.aborted) {
      throw new DOMException(`no reply within ${endpoint.timeoutSeconds}s`, "TimeoutError");
    }
    throw err;
  } finally {
    client?.close();
  }
}

/**
 * Reads a Secret's `data` (base64 values) into the endpoint's credentials:
 * `token` → bearerToken, `tls.crt` + `tls.key` → clientCert, `ca.crt` → caBundle.
 * Missing keys are left out; a certificate without its key (or the reverse) is an error.
 */
export function credentialsFromSecret(
  data: Record<string, string>,
): Pick<WebhookEndpoint, "bearerToken" | "clientCert" | "caBundle"> {
  const value = (key: string): string | undefined =>
    data[key] === undefined ? undefined : decodeBase64Text(data[key]);
  const token = value("token")?.trim();
  const cert = value("tls.crt");
  const key = value("tls.key");
  const ca = value("ca.crt");
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error("the Secret must hold both tls.crt and tls.key for a client certificate");
  }
  return {
    ...(token ? { bearerToken: token } : {}),
    ...(cert !== undefined && key !== undefined ? { clientCert: { cert, key } } : {}),
    ...(ca ? { caBundle: ca } : {}),
  };
}

/** Default `timeoutSeconds` of an endpoint spec (hooks and the approval webhook). */
export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10;

/** Where an endpoint spec is called: its URL, timeout, CA bundle and Secret (by name). */
export interface WebhookEndpointSource {
  url: string;
  timeoutSeconds?: number;
  caBundle?: string;
  secretRef?: { name: string };
}

/** A Secret's `data` by name, in the operator's namespace; undefined when there is none. */
export type WebhookSecretReader = (name: string) => Promise<Record<string, string> | undefined>;

/**
 * The endpoint of a spec (hooks and the approval webhook alike): its credentials read from
 * its `secretRef` (a missing Secret is an error naming it) and its CA bundle joined with the
 * Secret's `ca.crt`.
 */
export async function resolveEndpoint(
  spec: WebhookEndpointSource,
  readSecret: WebhookSecretReader,
): Promise<WebhookEndpoint> {
  const endpoint: WebhookEndpoint = {
    url: spec.url,
    timeoutSeconds: spec.timeoutSeconds ?? DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
    ...(spec.caBundle ? { caBundle: spec.caBundle } : {}),
  };
  if (!spec.secretRef) return endpoint;
  const name = spec.secretRef.name;
  const data = await readSecret(name);
  if (!data) throw new Error(`Secret ${name} not found`);
  const creds = credentialsFromSecret(data);
  const caBundle = [spec.caBundle, creds.caBundle].filter(Boolean).join("\n");
  return { ...endpoint, ...creds, ...(caBundle ? { caBundle } : {}) };
}

/** What {@linkcode webhookSecretProblem} reads of a Secret. */
export interface WebhookSecretLike {
  type?: string;
  metadata?: { name?: string; labels?: Record<string, string> };
}

/**
 * Why the controller must not send `secret`'s credentials to a webhook, or undefined when it
 * may: the Secret must carry the label `bootc.dev/webhook-credentials: "true"` (a pool writer
 * can name any Secret in the operator's namespace; an opt-in keeps them from sending, say, a
 * service-account token to a URL of their choice), and must not be a service-account token.
 */
export function webhookSecretProblem(secret: WebhookSecretLike): string | undefined {
  const name = secret.metadata?.name ?? "";
  if (secret.type === "kubernetes.io/service-account-token") {
    return `Secret ${name} is a service-account token: it is never sent to a webhook`;
  }
  if (secret.metadata?.labels?.[LABEL_WEBHOOK_CREDENTIALS] !== "true") {
    return `Secret ${name} lacks the label ${LABEL_WEBHOOK_CREDENTIALS}: "true" that allows ` +
      "sending its credentials to a webhook";
  }
  return undefined;
}

function checkedUrl(raw: string, endpoint: WebhookEndpoint): URL {
  const url = new URL(raw);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`webhook URL must be http:// or https://, got ${url.protocol}`);
  }
  // Admission refuses this too; defence in depth: credentials never go out in the clear.
  if (url.protocol === "http:" && (endpoint.bearerToken || endpoint.clientCert)) {
    throw new TypeError("webhook credentials (a bearer token or client certificate) need https://");
  }
  return url;
}

/** A client only when TLS needs more than the defaults; the caller closes it. */
function httpClient(endpoint: WebhookEndpoint): Deno.HttpClient | undefined {
  const caCerts = endpoint.caBundle ? [endpoint.caBundle] : undefined;
  if (endpoint.clientCert) {
    return Deno.createHttpClient({
      ...(caCerts ? { caCerts } : {}),
      cert: endpoint.clientCert.cert,
      key: endpoint.clientCert.key,
    });
  }
  return caCerts ? Deno.createHttpClient({ caCerts }) : undefined;
}

function requestHeaders(
  endpoint: WebhookEndpoint,
  extra: Record<string, string> | undefined,
): Headers {
  const headers = new Headers({ "content-type": "application/json", accept: "application/json" });
  for (const [name, value] of Object.entries(extra ?? {})) headers.set(name, value);
  if (endpoint.bearerToken) headers.set("authorization", `Bearer ${endpoint.bearerToken}`);
  return headers;
}

async function readCapped(response: Response, limit: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return new TextDecoder().decode(all.subarray(0, Math.min(size, limit)));
}

function decodeBase64Text(b64: string): string {
  const binary = atob(b64);
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}
