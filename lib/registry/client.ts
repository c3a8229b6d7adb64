/**
 * The registry client (imperative shell): HTTP on `fetch`, the auth dance
 * (anonymous → challenge → Basic or Bearer token), digest verification and
 * pagination. Decisions live in the pure modules beside it.
 *
 * @module
 */
import { type Clock, systemClock } from "../clock.ts";
import { parseWwwAuthenticate } from "./challenge.ts";
import { computeDigest, isSupportedDigestAlgorithm } from "./digest.ts";
import {
  type DockerConfig,
  findCredentials,
  parseDockerConfig,
  type RegistryCredentials,
} from "./docker_config.ts";
import {
  classifyHttpError,
  classifyNetworkError,
  parseErrorBody,
  RegistryError,
  type RequestSubject,
} from "./errors.ts";
import { parseNextLink } from "./link.ts";
import {
  bareMediaType,
  isImageManifestMediaType,
  isIndexMediaType,
  MANIFEST_ACCEPT,
} from "./media_types.ts";
import {
  digestProblem,
  DOCKER_HUB_ALIASES,
  DOCKER_HUB_REGISTRY,
  type ImageReference,
  ImageReferenceError,
  parseImageReference,
  withDigest,
} from "./reference.ts";

/** Options of {@linkcode RegistryClient}. */
export interface RegistryClientOptions {
  /** The pull secret's `.dockerconfigjson` (string or parsed). */
  dockerConfigJson?: string | object;
  /** `host[:port]` of registries reached over plain HTTP; every other one uses HTTPS. */
  insecureRegistries?: string[];
  /** An extra CA (PEM) trusted in addition to the system roots. */
  caCertPem?: string;
  /** Timeout of each HTTP exchange, including reading the body (default 30 s). */
  timeoutMs?: number;
  /** The HTTP seam (default: global `fetch`). */
  fetch?: typeof fetch;
  /** The clock used for token expiry (default: the system clock). */
  clock?: Clock;
  /** The `User-Agent` header (default "bootc-operator"). */
  userAgent?: string;
}

/** The digest of one platform's manifest inside an index. */
export interface PlatformDigest {
  /** e.g. "linux". */
  os: string;
  /** GOARCH spelling: "amd64", "arm64", "ppc64le", "s390x", … */
  architecture: string;
  /** e.g. "v8" for arm64, when the index says. */
  variant?: string;
  /** The per-platform manifest digest (what bootc reports as `imageDigest`). */
  digest: string;
}

/** What a reference resolves to. */
export interface ResolvedImage {
  /** The digest of the manifest or index the reference points at. */
  digest: string;
  /** Its media type. */
  mediaType: string;
  /** For an index or manifest list: the per-platform manifest digests. */
  platforms?: PlatformDigest[];
}

/** A manifest with its raw bytes (verified against `digest`). */
export interface FetchedManifest {
  /** The manifest's digest. */
  digest: string;
  /** Its media type. */
  mediaType: string;
  /** The exact bytes the registry served. */
  bytes: Uint8Array<ArrayBuffer>;
  /** The parsed JSON. */
  manifest: Record<string, unknown>;
  /** For an index: its platforms. */
  platforms?: PlatformDigest[];
}

/** A platform to select from an index. */
export interface PlatformSelector {
  /** Default "linux". */
  os?: string;
  /** e.g. "amd64". */
  architecture: string;
  /** Only matched when given. */
  variant?: string;
}

/** A reference given as a string or already parsed. */
export type ImageReferenceInput = string | ImageReference;

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const MAX_ERROR_BODY_BYTES = 64 * 1024;
const DEFAULT_TOKEN_LIFETIME_S = 60;
/** Refresh tokens this long before they expire, so a request never carries a dying token. */
const TOKEN_EXPIRY_MARGIN_MS = 5_000;
const MAX_PAGES = 10_000;

interface Exchange {
  status: number;
  headers: Headers;
  url: string;
  body?: Uint8Array<ArrayBuffer>;
}

type Challenge =
  | { scheme: "bearer"; realm: string; service?: string; scope?: string }
  | { scheme: "basic" };

interface CachedToken {
  token: string;
  expiresAt: number;
}

interface RequestSpec {
  method: "GET" | "HEAD";
  url: URL;
  accept?: string;
  /** Read the body of a 2xx answer. */
  readBody: boolean;
  maxBytes?: number;
  subject: RequestSubject;
  /** Token scope, e.g. `repository:os:pull`. */
  scope: string;
  repository?: string;
}

/** Talks to OCI registries: resolve tags to digests, list tags, fetch manifests and blobs. */
export class RegistryClient {
  #config: DockerConfig;
  #hasPullSecret: boolean;
  #insecure: Set<string>;
  #timeoutMs: number;
  #fetch: typeof fetch;
  #clock: Clock;
  #userAgent: string;
  #httpClient?: Deno.HttpClient;
  #challenges = new Map<string, Challenge>();
  #tokens = new Map<string, CachedToken>();

  /** Creates a client; throws a {@linkcode RegistryError} when the pull secret is malformed. */
  constructor(options: RegistryClientOptions = {}) {
    this.#hasPullSecret = options.dockerConfigJson !== undefined;
    this.#config = options.dockerConfigJson !== undefined
      ? parseDockerConfig(options.dockerConfigJson)
      : { entries: [] };
    this.#insecure = new Set(
      (options.insecureRegistries ?? []).map((h) =>
        h.trim().toLowerCase().replace(/^https?:\/\//, "").replace(/\/+$/, "")
      ),
    );
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#clock = options.clock ?? systemClock;
    this.#userAgent = options.userAgent ?? "bootc-operator";
    if (options.caCertPem !== undefined) {
      this.#httpClient = Deno.createHttpClient({ caCerts: [options.caCertPem] });
    }
  }

  /** Releases the TLS client and forgets cached tokens. */
  close(): void {
    this.#httpClient?.close();
    this.#httpClient = undefined;
    this.#tokens.clear();
    this.#challenges.clear();
  }

  /**
   * Resolves a reference to the digest of what it points at; for an index or
   * manifest list, also to the per-platform manifest digests.
   */
  async resolve(input: ImageReferenceInput): Promise<ResolvedImage> {
    const ref = this.#parse(input);
    const reference = ref.digest ?? ref.tag ?? "latest";
    // HEAD first: it is cheap and registries such as Docker Hub do not count it against pull limits.
    const head = await this.#request(ref, this.#manifestSpec(ref, reference, "HEAD"));
    const headDigest = head.headers.get("docker-content-digest") ?? undefined;
    const headType = bareMediaType(head.headers.get("content-type"));
    if (headDigest !== undefined && isImageManifestMediaType(headType)) {
      if (digestProblem(headDigest)) {
        throw this.#protocol(
          ref,
          `sent an invalid Docker-Content-Digest ${JSON.stringify(headDigest)}`,
        );
      }
      if (ref.digest !== undefined && headDigest !== ref.digest) {
        throw this.#protocol(
          ref,
          `answered digest ${headDigest} for a request by digest ${ref.digest}`,
        );
      }
      return { digest: headDigest, mediaType: headType };
    }
    // An index needs its body to list platforms; an unknown type or a missing digest needs it too.
    const fetched = await this.#getManifest(ref, reference);
    return {
      digest: fetched.digest,
      mediaType: fetched.mediaType,
      ...(fetched.platforms ? { platforms: fetched.platforms } : {}),
    };
  }

  /**
   * Fetches the manifest `ref` points at. With `platform`, an index is
   * followed to that platform's manifest.
   */
  async fetchManifest(
    input: ImageReferenceInput,
    options: { platform?: PlatformSelector } = {},
  ): Promise<FetchedManifest> {
    const ref = this.#parse(input);
    const fetched = await this.#getManifest(ref, ref.digest ?? ref.tag ?? "latest");
    if (!options.platform || !fetched.platforms) return fetched;
    const wanted = options.platform;
    const os = wanted.os ?? "linux";
    const match = fetched.platforms.find((p) =>
      p.os === os && p.architecture === wanted.architecture &&
      (wanted.variant === undefined || p.variant === wanted.variant)
    );
    if (!match) {
      const available = fetched.platforms
        .map((p) => `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ""}`).join(", ");
      throw new RegistryError(
        "NotFound",
        `no manifest for platform ${os}/${wanted.architecture}${
          wanted.variant ? `/${wanted.variant}` : ""
        } in ${ref} (available: ${available || "none"})`,
        { registry: ref.registry },
      );
    }
    return await this.#getManifest(withDigest(ref, match.digest), match.digest);
  }

  /** Fetches a blob (e.g. an image config) and verifies it against `digest`. */
  async fetchBlob(
    input: ImageReferenceInput,
    digest: string,
    options: { maxBytes?: number } = {},
  ): Promise<Uint8Array<ArrayBuffer>> {
    const ref = this.#parse(input);
    const problem = digestProblem(digest);
    if (problem) {
      throw new RegistryError("InvalidReference", `invalid blob digest: ${problem}`, {
        registry: ref.registry,
      });
    }
    const url = new URL(`${this.#base(ref.registry)}/v2/${ref.repository}/blobs/${digest}`);
    const response = await this.#request(ref, {
      method: "GET",
      url,
      readBody: true,
      ...(options.maxBytes !== undefined ? { maxBytes: options.maxBytes } : {}),
      subject: { type: "blob", digest },
      scope: `repository:${ref.repository}:pull`,
      repository: ref.repository,
    });
    const bytes = response.body ?? new Uint8Array();
    await this.#verify(ref, bytes, digest, `blob ${digest}`);
    return bytes;
  }

  /**
   * Lists the tags of `ref`'s repository, following `Link: <…>; rel="next"`
   * pages. `pageSize` asks for pages of that size (`n=`); registries may ignore it.
   * Tags come in the registry's order.
   */
  async listTags(
    input: ImageReferenceInput,
    options: { pageSize?: number } = {},
  ): Promise<string[]> {
    const ref = this.#parse(input);
    const url = new URL(`${this.#base(ref.registry)}/v2/${ref.repository}/tags/list`);
    if (options.pageSize !== undefined) url.searchParams.set("n", String(options.pageSize));
    return await this.#paginate(ref, url, "tags", {
      subject: { type: "tags" },
      scope: `repository:${ref.repository}:pull`,
      repository: ref.repository,
    });
  }

  /**
   * Lists the repositories of a registry (`/v2/_catalog`), following pages.
   * `registry` is a `host[:port]`; not every registry allows it.
   */
  async listRepositories(
    registry: string,
    options: { pageSize?: number } = {},
  ): Promise<string[]> {
    const lower = registry.trim().toLowerCase();
    const ref = { registry: DOCKER_HUB_ALIASES.includes(lower) ? DOCKER_HUB_REGISTRY : lower };
    const url = new URL(`${this.#base(ref.registry)}/v2/_catalog`);
    if (options.pageSize !== undefined) url.searchParams.set("n", String(options.pageSize));
    return await this.#paginate(
      { registry: ref.registry, repository: "" },
      url,
      "repositories",
      { subject: { type: "catalog" }, scope: "registry:catalog:*" },
    );
  }

  async #paginate(
    ref: { registry: string; repository: string },
    first: URL,
    field: "tags" | "repositories",
    spec: Pick<RequestSpec, "subject" | "scope" | "repository">,
  ): Promise<string[]> {
    const items: string[] = [];
    const seen = new Set<string>();
    let url: URL | undefined = first;
    while (url) {
      if (seen.has(url.href) || seen.size >= MAX_PAGES) {
        throw this.#protocol(ref, `sent a pagination loop at ${url.pathname}${url.search}`);
      }
      seen.add(url.href);
      const response: Exchange = await this.#request(ref, {
        method: "GET",
        url,
        readBody: true,
        maxBytes: MAX_MANIFEST_BYTES,
        ...spec,
      });
      const page = this.#json(ref, response.body, `the ${field} list`);
      const list = page[field];
      if (list !== null && list !== undefined && !Array.isArray(list)) {
        throw this.#protocol(ref, `sent a ${field} list whose "${field}" is not an array`);
      }
      for (const item of (list ?? []) as unknown[]) items.push(String(item));
      const next = parseNextLink(response.headers.get("link"), response.url || url);
      if (next && next.origin !== first.origin) {
        throw this.#protocol(ref, `sent a next-page link to another host (${next.host})`);
      }
      url = next;
    }
    return items;
  }

  #parse(input: ImageReferenceInput): ImageReference {
    if (typeof input !== "string") return input;
    try {
      return parseImageReference(input);
    } catch (e) {
      if (e instanceof ImageReferenceError) {
        throw new RegistryError("InvalidReference", e.message, { cause: e });
      }
      throw e;
    }
  }

  #isInsecure(host: string): boolean {
    return this.#insecure.has(host.toLowerCase());
  }

  #base(registry: string): string {
    return `${this.#isInsecure(registry) ? "http" : "https"}://${registry}`;
  }

  #manifestSpec(ref: ImageReference, reference: string, method: "GET" | "HEAD"): RequestSpec {
    const isDigest = reference.includes(":");
    return {
      method,
      url: new URL(`${this.#base(ref.registry)}/v2/${ref.repository}/manifests/${reference}`),
      accept: MANIFEST_ACCEPT,
      readBody: method === "GET",
      maxBytes: MAX_MANIFEST_BYTES,
      subject: isDigest
        ? { type: "manifest", digest: reference }
        : { type: "manifest", tag: reference },
      scope: `repository:${ref.repository}:pull`,
      repository: ref.repository,
    };
  }

  async #getManifest(ref: ImageReference, reference: string): Promise<FetchedManifest> {
    const response = await this.#request(ref, this.#manifestSpec(ref, reference, "GET"));
    const bytes = response.body ?? new Uint8Array();
    const headerDigest = response.headers.get("docker-content-digest") ?? undefined;
    const requestedDigest = reference.includes(":") ? reference : undefined;
    if (headerDigest !== undefined && digestProblem(headerDigest)) {
      throw this.#protocol(
        ref,
        `sent an invalid Docker-Content-Digest ${JSON.stringify(headerDigest)}`,
      );
    }
    if (requestedDigest && headerDigest && headerDigest !== requestedDigest) {
      throw this.#protocol(
        ref,
        `answered digest ${headerDigest} for a request by digest ${requestedDigest}`,
      );
    }
    const expected = requestedDigest ?? headerDigest;
    let digest: string;
    if (expected !== undefined && isSupportedDigestAlgorithm(expected.split(":")[0])) {
      await this.#verify(ref, bytes, expected, `manifest ${reference}`);
      digest = expected;
    } else if (expected !== undefined) {
      digest = expected; // an algorithm crypto.subtle lacks: trust the registry
    } else {
      digest = await computeDigest(bytes);
    }
    const manifest = this.#json(ref, bytes, `manifest ${reference}`);
    let mediaType = bareMediaType(response.headers.get("content-type"));
    if (!isIndexMediaType(mediaType) && !isImageManifestMediaType(mediaType)) {
      // Some registries serve application/json; the manifest names its own type.
      if (typeof manifest.mediaType === "string") mediaType = manifest.mediaType;
      else if (Array.isArray(manifest.manifests)) {
        mediaType = "application/vnd.oci.image.index.v1+json";
      }
    }
    const fetched: FetchedManifest = { digest, mediaType, bytes, manifest };
    if (isIndexMediaType(mediaType) || Array.isArray(manifest.manifests)) {
      fetched.platforms = platformsOf(manifest);
    }
    return fetched;
  }

  async #verify(
    ref: { registry: string },
    bytes: Uint8Array<ArrayBuffer>,
    digest: string,
    what: string,
  ): Promise<void> {
    const algorithm = digest.split(":")[0];
    if (!isSupportedDigestAlgorithm(algorithm)) {
      throw this.#protocol(ref, `uses digest algorithm ${algorithm}, which cannot be verified`);
    }
    const actual = await computeDigest(bytes, algorithm);
    if (actual !== digest) {
      throw this.#protocol(ref, `served ${what} whose content has digest ${actual}, not ${digest}`);
    }
  }

  #json(
    ref: { registry: string },
    body: Uint8Array | undefined,
    what: string,
  ): Record<string, unknown> {
    try {
      const value = JSON.parse(new TextDecoder().decode(body ?? new Uint8Array()));
      if (typeof value === "object" && value !== null && !Array.isArray(value)) return value;
    } catch {
      // reported below
    }
    throw this.#protocol(ref, `served ${what} that is not a JSON object`);
  }

  #protocol(ref: { registry: string }, problem: string): RegistryError {
    return new RegistryError("Protocol", `registry ${ref.registry} ${problem}`, {
      registry: ref.registry,
    });
  }

  /** One authorized request: uses what is known about the registry's auth, answers one challenge. */
  async #request(
    ref: { registry: string; repository: string },
    spec: RequestSpec,
  ): Promise<Exchange> {
    const registry = ref.registry;
    const credentials = findCredentials(this.#config, registry, ref.repository);
    let authorization = await this.#knownAuthorization(registry, spec.scope, credentials, false);
    let response = await this.#exchange(registry, spec, authorization);
    if (response.status === 401) {
      const challenges = parseWwwAuthenticate(response.headers.get("www-authenticate"));
      const bearer = challenges.find((c) => c.scheme === "bearer" && c.params.realm);
      const basic = challenges.find((c) => c.scheme === "basic");
      let retry = false;
      if (bearer) {
        this.#challenges.set(registry, {
          scheme: "bearer",
          realm: bearer.params.realm,
          ...(bearer.params.service !== undefined ? { service: bearer.params.service } : {}),
        });
        // A cached token may have been revoked or lack the scope: always fetch a fresh one here.
        authorization = await this.#knownAuthorization(
          registry,
          spec.scope,
          credentials,
          true,
          bearer.params.scope,
        );
        retry = true;
      } else if (basic && credentials && !authorization?.startsWith("Basic ")) {
        this.#challenges.set(registry, { scheme: "basic" });
        authorization = basicAuthorization(credentials);
        retry = true;
      }
      if (retry) response = await this.#exchange(registry, spec, authorization);
    }
    if (response.status >= 200 && response.status < 300) return response;
    throw classifyHttpError({
      registry,
      ...(spec.repository !== undefined ? { repository: spec.repository } : {}),
      status: response.status,
      errors: parseErrorBody(response.body),
      subject: spec.subject,
      usedCredentials: credentials !== undefined && authorization !== undefined,
      hasPullSecret: this.#hasPullSecret,
    });
  }

  /** The Authorization header for what we know of the registry, fetching a token when needed. */
  async #knownAuthorization(
    registry: string,
    scope: string,
    credentials: RegistryCredentials | undefined,
    forceNewToken: boolean,
    challengeScope?: string,
  ): Promise<string | undefined> {
    const challenge = this.#challenges.get(registry);
    if (!challenge) return undefined;
    if (challenge.scheme === "basic") {
      return credentials ? basicAuthorization(credentials) : undefined;
    }
    const key = `${registry} ${scope}`;
    const cached = this.#tokens.get(key);
    if (!forceNewToken && cached && this.#clock.now().getTime() < cached.expiresAt) {
      return `Bearer ${cached.token}`;
    }
    const token = await this.#fetchToken(registry, challenge, challengeScope ?? scope, credentials);
    this.#tokens.set(key, token);
    return `Bearer ${token.token}`;
  }

  async #fetchToken(
    registry: string,
    challenge: { realm: string; service?: string },
    scope: string,
    credentials: RegistryCredentials | undefined,
  ): Promise<CachedToken> {
    let url: URL;
    try {
      url = new URL(challenge.realm);
    } catch {
      throw this.#protocol(
        { registry },
        `sent an invalid token realm ${JSON.stringify(challenge.realm)}`,
      );
    }
    if (url.protocol === "http:" && !this.#isInsecure(registry) && !this.#isInsecure(url.host)) {
      throw this.#protocol(
        { registry },
        `points to a plain-HTTP token service ${url.host}; list it as an insecure registry to allow that`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw this.#protocol(
        { registry },
        `sent a token realm that is not an http(s) URL: ${url.href}`,
      );
    }
    if (challenge.service !== undefined) url.searchParams.set("service", challenge.service);
    for (const s of scope.split(" ").filter((s) => s.length > 0)) {
      url.searchParams.append("scope", s);
    }
    const requestedAt = this.#clock.now().getTime();
    const response = await this.#exchange(
      registry,
      {
        method: "GET",
        url,
        readBody: true,
        maxBytes: MAX_MANIFEST_BYTES,
      },
      credentials ? basicAuthorization(credentials) : undefined,
    );
    if (response.status < 200 || response.status >= 300) {
      throw classifyHttpError({
        registry,
        status: response.status,
        errors: parseErrorBody(response.body),
        subject: { type: "token", realm: challenge.realm },
        usedCredentials: credentials !== undefined,
        hasPullSecret: this.#hasPullSecret,
      });
    }
    const body = this.#json({ registry }, response.body, "a token response");
    const token = typeof body.token === "string" && body.token.length > 0
      ? body.token
      : typeof body.access_token === "string"
      ? body.access_token
      : "";
    if (token.length === 0) {
      throw this.#protocol({ registry }, "token service answered without a token");
    }
    const lifetimeS = typeof body.expires_in === "number" && body.expires_in > 0
      ? body.expires_in
      : DEFAULT_TOKEN_LIFETIME_S;
    const issuedAt = typeof body.issued_at === "string" ? Date.parse(body.issued_at) : NaN;
    // Our clock, not the token service's, decides; issued_at only matters when it is earlier.
    const start = Number.isFinite(issuedAt) ? Math.min(issuedAt, requestedAt) : requestedAt;
    return { token, expiresAt: start + lifetimeS * 1000 - TOKEN_EXPIRY_MARGIN_MS };
  }

  /** One HTTP exchange under a timeout that also covers reading the body. */
  async #exchange(
    registry: string,
    spec: Pick<RequestSpec, "method" | "url" | "accept" | "readBody" | "maxBytes">,
    authorization: string | undefined,
  ): Promise<Exchange> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException("registry request timed out", "TimeoutError"));
    }, this.#timeoutMs);
    const headers = new Headers({ "user-agent": this.#userAgent });
    if (spec.accept) headers.set("accept", spec.accept);
    if (authorization) headers.set("authorization", authorization);
    const init: RequestInit & { client?: Deno.HttpClient } = {
      method: spec.method,
      headers,
      signal: controller.signal,
      redirect: "follow",
    };
    if (this.#httpClient) init.client = this.#httpClient;
    try {
      const response = await this.#fetch(spec.url, init);
      const ok = response.status >= 200 && response.status < 300;
      let body: Uint8Array<ArrayBuffer> | undefined;
      if (spec.method !== "HEAD" && (spec.readBody || !ok)) {
        const limit = ok ? spec.maxBytes : MAX_ERROR_BODY_BYTES;
        body = await readLimited(
          response,
          limit,
          () =>
            this.#protocol({ registry }, `sent more than ${limit} bytes for ${spec.url.pathname}`),
        );
      } else {
        await response.body?.cancel();
      }
      return { status: response.status, headers: response.headers, url: response.url, body };
    } catch (e) {
      if (e instanceof RegistryError) throw e;
      throw classifyNetworkError(e, registry, {
        timedOut,
        timeoutMs: this.#timeoutMs,
        insecure: this.#isInsecure(registry),
      });
    } finally {
      clearTimeout(timer);
    }
  }
}

function basicAuthorization(credentials: RegistryCredentials): string {
  const bytes = new TextEncoder().encode(`${credentials.username}:${credentials.password}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

async function readLimited(
  response: Response,
  limit: number | undefined,
  tooLarge: () => Error,
): Promise<Uint8Array<ArrayBuffer>> {
  if (!response.body) return new Uint8Array();
  const declared = Number(response.headers.get("content-length"));
  if (limit !== undefined && Number.isFinite(declared) && declared > limit) {
    await response.body.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (limit !== undefined && total > limit) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/** The per-platform digests of an index, without attestation and "unknown" entries. Pure. */
export function platformsOf(index: Record<string, unknown>): PlatformDigest[] {
  const manifests = Array.isArray(index.manifests) ? index.manifests : [];
  const platforms: PlatformDigest[] = [];
  for (const m of manifests as Record<string, unknown>[]) {
    const platform = m?.platform as Record<string, unknown> | undefined;
    const annotations = (m?.annotations ?? {}) as Record<string, unknown>;
    if (!platform || typeof m.digest !== "string") continue;
    if (annotations["vnd.docker.reference.type"] !== undefined) continue; // build attestations
    const os = String(platform.os ?? "");
    const architecture = String(platform.architecture ?? "");
    if (os === "unknown" || architecture === "unknown" || !os || !architecture) continue;
    platforms.push({
      os,
      architecture,
      ...(typeof platform.variant === "string" && platform.variant
        ? { variant: platform.variant }
        : {}),
      digest: m.digest,
    });
  }
  return platforms;
}
