/**
 * The default {@linkcode Transport}: `fetch` through a `Deno.createHttpClient`
 * carrying the cluster CA and client certificate, adding the bearer token of the
 * configuration's credential source to every request and retrying once with
 * fresh credentials after a 401 (rotated service-account token, expired exec
 * credential).
 *
 * @module
 */

import type { Credentials, CredentialSource, KubeConfig } from "./config.ts";
import type { Transport, TransportRequest } from "./types.ts";

/** Options of {@linkcode createTransport}. */
export interface CreateTransportOptions {
  /** User-Agent header (default "bootc-operator"). */
  userAgent?: string;
}

/** Builds the request URL from the server base, path and query. */
export function buildUrl(server: string, req: Pick<TransportRequest, "path" | "query">): string {
  const base = server.replace(/\/+$/, "");
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) {
    if (v !== undefined) params.append(k, String(v));
  }
  const qs = params.toString();
  return `${base}${req.path}${qs ? `?${qs}` : ""}`;
}

class FetchTransport implements Transport {
  #config: KubeConfig;
  #credentials?: CredentialSource;
  #userAgent: string;
  #client?: Deno.HttpClient;
  #clientKey?: string;
  #closed = false;

  constructor(config: KubeConfig, options: CreateTransportOptions) {
    this.#config = config;
    this.#credentials = config.credentials;
    this.#userAgent = options.userAgent ?? "bootc-operator";
  }

  /** The HTTP client for the given client certificate (recreated when an exec plugin rotates it). */
  #httpClient(creds: Credentials): Deno.HttpClient | undefined {
    const cert = creds.clientCert ?? this.#config.clientCert;
    const key = creds.clientKey ?? this.#config.clientKey;
    const caCerts = this.#config.caCerts;
    if (!cert && !caCerts?.length) return undefined;
    const id = `${cert ?? ""}\0${key ?? ""}`;
    if (this.#client && this.#clientKey === id) return this.#client;
    this.#client?.close();
    this.#client = cert && key
      ? Deno.createHttpClient({ caCerts, cert, key })
      : Deno.createHttpClient({ caCerts });
    this.#clientKey = id;
    return this.#client;
  }

  async #send(req: TransportRequest, refresh: boolean): Promise<Response> {
    const creds = (await this.#credentials?.get({ refresh })) ?? {};
    const headers = new Headers({ "Accept": "application/json", "User-Agent": this.#userAgent });
    if (req.body !== undefined) headers.set("Content-Type", "application/json");
    for (const [k, v] of Object.entries(req.headers ?? {})) headers.set(k, v);
    if (creds.token) headers.set("Authorization", `Bearer ${creds.token}`);
    const init: RequestInit & { client?: Deno.HttpClient } = {
      method: req.method,
      headers,
      body: req.body,
      signal: req.signal,
    };
    const client = this.#httpClient(creds);
    if (client) init.client = client;
    return await fetch(buildUrl(this.#config.server, req), init);
  }

  async request(req: TransportRequest): Promise<Response> {
    if (this.#closed) throw new Error("transport is closed");
    const res = await this.#send(req, false);
    if (res.status === 401 && this.#credentials) {
      // The token may have rotated under us: drop the body and retry once with fresh credentials.
      await res.body?.cancel();
      return await this.#send(req, true);
    }
    return res;
  }

  reset(): void {
    this.#client?.close();
    this.#client = undefined;
    this.#clientKey = undefined;
  }

  close(): void {
    this.#closed = true;
    this.#client?.close();
    this.#client = undefined;
  }
}

/** Creates the fetch-based transport for `config`. Call `close()` when done. */
export function createTransport(
  config: KubeConfig,
  options: CreateTransportOptions = {},
): Transport {
  return new FetchTransport(config, options);
}
