/**
 * Credentials from a `.dockerconfigjson` (the content of a Secret of type
 * `kubernetes.io/dockerconfigjson`), matched to a registry the way kubelet
 * does: by host and port, Docker Hub spellings treated as one, `*.` wildcards
 * for one label, and an optional path prefix where the most specific wins.
 *
 * @module
 */
import { DOCKER_HUB_ALIASES, DOCKER_HUB_DOMAIN } from "./reference.ts";
import { RegistryError } from "./errors.ts";

/** A username and password for Basic auth or the token service. */
export interface RegistryCredentials {
  username: string;
  password: string;
}

/** One credential entry, keyed by where it applies. */
export interface DockerConfigEntry {
  /** Lower-cased `host[:port]` pattern (Docker Hub spellings become `docker.io`). */
  host: string;
  /** Repository path prefix, without slashes at the ends; "" for the whole registry. */
  path: string;
  /** The credentials. */
  credentials: RegistryCredentials;
}

/** A parsed `.dockerconfigjson`. */
export interface DockerConfig {
  /** Entries that carry usable credentials. */
  entries: DockerConfigEntry[];
}

/** Canonical host for matching: lower-cased, Docker Hub aliases folded into `docker.io`. */
export function canonicalHost(host: string): string {
  const lower = host.toLowerCase();
  return DOCKER_HUB_ALIASES.includes(lower) ? DOCKER_HUB_DOMAIN : lower;
}

/** Splits a config key (`https://index.docker.io/v1/`, `host:5000`, `host/org`) into host and path. */
export function parseConfigKey(key: string): { host: string; path: string } {
  let rest = key.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
  const slash = rest.indexOf("/");
  let path = "";
  if (slash >= 0) {
    path = rest.slice(slash + 1);
    rest = rest.slice(0, slash);
  }
  path = path.replace(/^\/+|\/+$/g, "");
  // `/v1/` and `/v2/` are API paths of old-style keys, not repository prefixes.
  if (path === "v1" || path === "v2") path = "";
  return { host: canonicalHost(rest), path };
}

function decodeAuth(auth: string): RegistryCredentials | undefined {
  let decoded: string;
  try {
    decoded = new TextDecoder().decode(Uint8Array.from(atob(auth.trim()), (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** A malformed `.dockerconfigjson`; `problem` says what is wrong with it. */
export class InvalidDockerConfig extends RegistryError {
  /** The problem alone, for callers that name the Secret themselves. */
  readonly problem: string;

  /** Creates the error for `problem`. */
  constructor(problem: string) {
    super(
      "Unauthorized",
      `the pull secret is not a valid .dockerconfigjson: ${problem}; check the Secret`,
    );
    this.problem = problem;
  }
}

function invalid(problem: string): RegistryError {
  return new InvalidDockerConfig(problem);
}

/**
 * Parses a `.dockerconfigjson` (string or already-parsed object). Also accepts
 * the legacy `.dockercfg` shape (the `auths` map at top level). Throws a
 * {@linkcode RegistryError} ("Unauthorized") when it is malformed.
 */
export function parseDockerConfig(input: string | object): DockerConfig {
  let json: unknown = input;
  if (typeof input === "string") {
    try {
      json = JSON.parse(input);
    } catch (e) {
      throw invalid(`it is not JSON (${e instanceof Error ? e.message : e})`);
    }
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalid("it is not a JSON object");
  }
  const root = json as Record<string, unknown>;
  const auths = "auths" in root ? root.auths : root;
  if (typeof auths !== "object" || auths === null || Array.isArray(auths)) {
    throw invalid('"auths" is not an object');
  }
  const entries: DockerConfigEntry[] = [];
  for (const [key, value] of Object.entries(auths as Record<string, unknown>)) {
    if (typeof value !== "object" || value === null) {
      throw invalid(`the entry for ${JSON.stringify(key)} is not an object`);
    }
    const v = value as Record<string, unknown>;
    let credentials: RegistryCredentials | undefined;
    if (typeof v.auth === "string" && v.auth.length > 0) {
      credentials = decodeAuth(v.auth);
      if (!credentials) {
        throw invalid(
          `the "auth" of ${JSON.stringify(key)} is not base64 of "username:password"`,
        );
      }
    } else if (typeof v.username === "string" && typeof v.password === "string") {
      credentials = { username: v.username, password: v.password };
    }
    if (credentials) entries.push({ ...parseConfigKey(key), credentials });
  }
  return { entries };
}

function hostMatches(pattern: string, host: string): boolean {
  if (pattern === host) return true;
  if (!pattern.includes("*")) return false;
  const [patternName, patternPort] = pattern.split(/:(?=[0-9]+$)/);
  const [name, port] = host.split(/:(?=[0-9]+$)/);
  if (patternPort !== port) return false;
  const patternLabels = patternName.split(".");
  const labels = name.split(".");
  if (patternLabels.length !== labels.length) return false;
  return patternLabels.every((p, i) => p === "*" || p === labels[i]);
}

/**
 * The credentials for `repository` on `registry` (`host[:port]` as contacted),
 * or undefined. A longer matching path prefix wins; exact hosts beat wildcards.
 */
export function findCredentials(
  config: DockerConfig,
  registry: string,
  repository: string,
): RegistryCredentials | undefined {
  const host = canonicalHost(registry);
  let best: { entry: DockerConfigEntry; score: number } | undefined;
  for (const entry of config.entries) {
    if (!hostMatches(entry.host, host)) continue;
    if (
      entry.path !== "" && repository !== entry.path && !repository.startsWith(entry.path + "/")
    ) {
      continue;
    }
    const score = entry.path.length * 2 + (entry.host.includes("*") ? 0 : 1);
    if (!best || score > best.score) best = { entry, score };
  }
  return best?.entry.credentials;
}

/** Builds a `.dockerconfigjson` string for one registry (for tests and tools). */
export function dockerConfigJson(registry: string, credentials: RegistryCredentials): string {
  const auth = btoa(
    String.fromCharCode(
      ...new TextEncoder().encode(`${credentials.username}:${credentials.password}`),
    ),
  );
  return JSON.stringify({ auths: { [registry]: { auth } } });
}
