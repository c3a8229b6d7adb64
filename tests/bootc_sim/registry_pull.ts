/**
 * Fetches what bootc needs from a real OCI registry (manifest → per-architecture manifest →
 * config) with the host's credentials, and words failures the way bootc's image proxy
 * (containers/image) does.
 *
 * @module
 */

import type { PulledImage } from "./model.ts";

/** A pull failure; `message` is the cause as containers/image words it. */
export class PullError extends Error {
  /** Creates a pull error with the cause text. */
  constructor(message: string) {
    super(message);
    this.name = "PullError";
  }
}

/** A parsed image reference (`registry/repository[:tag][@digest]`). */
export interface ImageReference {
  /** Registry host (with port). */
  registry: string;
  /** Repository path. */
  repository: string;
  /** Tag, when given (defaults to `latest` when neither tag nor digest is given). */
  tag: string | null;
  /** Digest, when given. */
  digest: string | null;
}

/** Parses a pullspec like containers/image's docker reference parser. */
export function parseImageReference(pullspec: string): ImageReference {
  let rest = pullspec;
  let digest: string | null = null;
  const at = rest.indexOf("@");
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!/^[a-z0-9]+:[a-f0-9]{32,}$/.test(digest)) throw new PullError("invalid reference format");
  }
  let tag: string | null = null;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const slash = rest.indexOf("/");
  let registry = "docker.io";
  let repository = rest;
  if (slash !== -1) {
    const first = rest.slice(0, slash);
    if (first.includes(".") || first.includes(":") || first === "localhost") {
      registry = first;
      repository = rest.slice(slash + 1);
    }
  }
  if (registry === "docker.io" && !repository.includes("/")) repository = `library/${repository}`;
  if (
    repository === "" || !/^[a-z0-9]+([._-]+[a-z0-9]+)*(\/[a-z0-9]+([._-]+[a-z0-9]+)*)*$/.test(
      repository,
    ) || (tag !== null && !/^[\w][\w.-]{0,127}$/.test(tag))
  ) {
    throw new PullError("invalid reference format");
  }
  if (tag === null && digest === null) tag = "latest";
  return { registry, repository, tag, digest };
}

/** A `containers-auth.json` / `.dockerconfigjson` document. */
export interface AuthFile {
  /** Credentials per registry (or registry/namespace) key. */
  auths?: Record<string, { auth?: string; username?: string; password?: string }>;
}

/** Finds the Basic credentials for an image in an auth file (most specific key first). */
export function credentialsFor(
  auth: AuthFile | null,
  ref: ImageReference,
): { username: string; password: string } | null {
  const auths = auth?.auths;
  if (!auths) return null;
  const normalized = new Map<string, { auth?: string; username?: string; password?: string }>();
  for (const [key, value] of Object.entries(auths)) {
    // Docker-style keys may carry a scheme and a path (`https://index.docker.io/v1/`).
    const stripped = key.replace(/^https?:\/\//, "");
    normalized.set(stripped, value);
    if (key !== stripped) normalized.set(stripped.replace(/\/.*$/, ""), value);
  }
  const parts = ref.repository.split("/");
  const candidates = [];
  for (let n = parts.length; n >= 1; n--) {
    candidates.push(`${ref.registry}/${parts.slice(0, n).join("/")}`);
  }
  candidates.push(ref.registry);
  for (const key of candidates) {
    const entry = normalized.get(key);
    if (!entry) continue;
    if (entry.auth) {
      const decoded = atob(entry.auth);
      const sep = decoded.indexOf(":");
      if (sep !== -1) return { username: decoded.slice(0, sep), password: decoded.slice(sep + 1) };
    }
    if (entry.username !== undefined) {
      return { username: entry.username, password: entry.password ?? "" };
    }
  }
  return null;
}

/** The host auth files bootc reads, in order; the first that exists wins. */
export const AUTH_FILE_PATHS = [
  "run/ostree/auth.json",
  "etc/ostree/auth.json",
  "usr/lib/ostree/auth.json",
] as const;

/** Reads the first existing host auth file under `root`. */
export async function readHostAuth(root: string): Promise<AuthFile | null> {
  for (const rel of AUTH_FILE_PATHS) {
    let text: string;
    try {
      text = await Deno.readTextFile(`${root}/${rel}`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) continue;
      throw e;
    }
    try {
      return JSON.parse(text) as AuthFile;
    } catch {
      throw new PullError(`Parsing ${"/" + rel}: invalid JSON`);
    }
  }
  return null;
}

const MANIFEST_ACCEPT = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.docker.distribution.manifest.v2+json",
].join(", ");

const INDEX_TYPES = new Set([
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
]);

/** Options for {@linkcode pullImage}. */
export interface PullOptions {
  /** The pullspec. */
  pullspec: string;
  /** Host architecture: an index resolves to this architecture's manifest. */
  architecture: string;
  /** Registries to reach over plain HTTP. */
  insecureRegistries: string[];
  /** The host's auth file, if any. */
  auth: AuthFile | null;
  /** Cancels the pull. */
  signal?: AbortSignal;
}

async function registryErrorText(res: Response): Promise<string> {
  const body = await res.text();
  try {
    const parsed = JSON.parse(body) as { errors?: { code?: string; message?: string }[] };
    const first = parsed.errors?.[0];
    if (first?.code) {
      return `${first.code.toLowerCase().replaceAll("_", " ")}: ${first.message ?? ""}`;
    }
  } catch {
    // not a registry error document
  }
  if (res.status === 401) return "authentication required";
  return `StatusCode: ${res.status}, ${body.slice(0, 200).trim()}`;
}

function parseChallenge(header: string): { scheme: string; params: Record<string, string> } {
  const space = header.indexOf(" ");
  const scheme = (space === -1 ? header : header.slice(0, space)).toLowerCase();
  const params: Record<string, string> = {};
  for (const m of header.slice(space + 1).matchAll(/(\w+)="([^"]*)"/g)) params[m[1]] = m[2];
  return { scheme, params };
}

class RegistrySession {
  #authorization: string | null = null;
  #base: string;

  constructor(
    readonly ref: ImageReference,
    readonly creds: { username: string; password: string } | null,
    insecure: boolean,
    readonly signal?: AbortSignal,
  ) {
    this.#base = `${insecure ? "http" : "https"}://${ref.registry}`;
  }

  async #fetch(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, { ...init, signal: this.signal });
    } catch (e) {
      if (this.signal?.aborted) throw e;
      const cause = e instanceof Error ? e.message : String(e);
      throw new PullError(
        `pinging container registry ${this.ref.registry}: Get "${this.#base}/v2/": ${cause}`,
      );
    }
  }

  /** GET with the registry's auth dance (Basic or Bearer token on a 401 challenge). */
  async get(path: string, accept?: string): Promise<Response> {
    const url = `${this.#base}${path}`;
    const headers = (): HeadersInit => {
      const h: Record<string, string> = {};
      if (accept) h.accept = accept;
      if (this.#authorization) h.authorization = this.#authorization;
      return h;
    };
    let res = await this.#fetch(url, { headers: headers() });
    if (res.status !== 401 || this.#authorization !== null) return res;
    const challenge = parseChallenge(res.headers.get("www-authenticate") ?? "");
    await res.body?.cancel();
    const basic = this.creds
      ? `Basic ${btoa(`${this.creds.username}:${this.creds.password}`)}`
      : null;
    if (challenge.scheme === "bearer" && challenge.params.realm) {
      const tokenUrl = new URL(challenge.params.realm);
      if (challenge.params.service) tokenUrl.searchParams.set("service", challenge.params.service);
      tokenUrl.searchParams.set("scope", `repository:${this.ref.repository}:pull`);
      const tokenRes = await this.#fetch(tokenUrl.href, {
        headers: basic ? { authorization: basic } : {},
      });
      if (!tokenRes.ok) {
        const text = await registryErrorText(tokenRes);
        throw new PullError(
          `reading manifest ${
            this.ref.digest ?? this.ref.tag
          } in ${this.ref.registry}/${this.ref.repository}: ${text}`,
        );
      }
      const token = await tokenRes.json() as { token?: string; access_token?: string };
      this.#authorization = `Bearer ${token.token ?? token.access_token ?? ""}`;
    } else if (basic) {
      this.#authorization = basic;
    } else {
      return await this.#fetch(url, { headers: headers() });
    }
    res = await this.#fetch(url, { headers: headers() });
    return res;
  }
}

async function sha256Digest(bytes: Uint8Array): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", bytes as BufferSource);
  return `sha256:${
    Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

/** Normalizes an RFC 3339 timestamp to UTC as chrono serializes it (`…Z`, 0/3/6/9 digits). */
export function normalizeTimestamp(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const m = value.match(/^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/i);
  if (!m) return null;
  const whole = new Date(`${m[1]}${m[3].toUpperCase()}`);
  if (Number.isNaN(whole.getTime())) return null;
  const base = whole.toISOString().slice(0, 19);
  let frac = (m[2] ?? "").slice(1).replace(/0+$/, "");
  if (frac.length > 0) frac = `.${frac.padEnd(Math.ceil(frac.length / 3) * 3, "0").slice(0, 9)}`;
  return `${base}${frac}Z`;
}

/**
 * Resolves a pullspec to what bootc records for it: the per-architecture manifest digest, the
 * version label, the build timestamp and the architecture. Throws {@linkcode PullError}.
 */
export async function pullImage(opts: PullOptions): Promise<PulledImage> {
  const ref = parseImageReference(opts.pullspec);
  const session = new RegistrySession(
    ref,
    credentialsFor(opts.auth, ref),
    opts.insecureRegistries.includes(ref.registry),
    opts.signal,
  );
  const reference = ref.digest ?? ref.tag!;
  const where = `${ref.registry}/${ref.repository}`;
  const fetchManifest = async (r: string) => {
    const res = await session.get(`/v2/${ref.repository}/manifests/${r}`, MANIFEST_ACCEPT);
    if (!res.ok) {
      throw new PullError(`reading manifest ${r} in ${where}: ${await registryErrorText(res)}`);
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    const json = JSON.parse(new TextDecoder().decode(bytes)) as {
      mediaType?: string;
      manifests?: { digest: string; platform?: { architecture?: string; os?: string } }[];
      config?: { digest: string };
    };
    const mediaType = json.mediaType ?? res.headers.get("content-type") ?? "";
    return { bytes, json, mediaType };
  };
  let manifest = await fetchManifest(reference);
  if (INDEX_TYPES.has(manifest.mediaType) || manifest.json.manifests) {
    const chosen = (manifest.json.manifests ?? []).find((m) =>
      m.platform?.architecture === opts.architecture && (m.platform?.os ?? "linux") === "linux"
    );
    if (!chosen) {
      throw new PullError(
        `choosing image instance: no image found in image index for architecture "${opts.architecture}", variant "", OS "linux"`,
      );
    }
    manifest = await fetchManifest(chosen.digest);
  }
  const imageDigest = await sha256Digest(manifest.bytes);
  const configDigest = manifest.json.config?.digest;
  if (!configDigest) throw new PullError(`reading manifest ${reference} in ${where}: no config`);
  const res = await session.get(`/v2/${ref.repository}/blobs/${configDigest}`);
  if (!res.ok) {
    throw new PullError(`fetching blob ${configDigest}: ${await registryErrorText(res)}`);
  }
  const config = await res.json() as {
    architecture?: string;
    created?: string;
    config?: { Labels?: Record<string, string> | null };
  };
  const labels = config.config?.Labels ?? {};
  return {
    imageDigest,
    version: labels["org.opencontainers.image.version"] ?? labels["version"] ?? null,
    timestamp: normalizeTimestamp(labels["org.opencontainers.image.created"]) ??
      normalizeTimestamp(config.created),
    architecture: config.architecture ?? opts.architecture,
  };
}
