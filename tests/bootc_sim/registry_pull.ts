/**
 * Fetches what bootc needs from a real OCI registry (manifest → per-architecture manifest →
 * config) with the host's credentials, and words failures the way bootc's image proxy
 * (containers/image) does.
 *
 * @module
 */

import {
  type ImageReference,
  ImageReferenceError,
  parseImageReference,
  RegistryClient,
  RegistryError,
} from "../../lib/registry/mod.ts";
import { withDigest } from "../../lib/registry/reference.ts";
import type { PulledImage } from "./model.ts";
import { checkPolicy, PolicyFileError } from "./policy.ts";

/** A pull failure; `message` is the cause as containers/image words it. */
export class PullError extends Error {
  /** Creates a pull error with the cause text. */
  constructor(message: string) {
    super(message);
    this.name = "PullError";
  }
}

/** A `containers-auth.json` / `.dockerconfigjson` document. */
export interface AuthFile {
  /** Credentials per registry (or registry/namespace) key. */
  auths?: Record<string, { auth?: string; username?: string; password?: string }>;
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
  /** An extra trusted CA (PEM). */
  caCertPem?: string | null;
  /** The host's root: its signature policy applies (policy.ts). Unset: none. */
  root?: string;
}

// The docker/distribution messages for its error codes, as containers/image prints them.
const CODE_MESSAGES: Record<string, string> = {
  MANIFEST_UNKNOWN: "manifest unknown",
  NAME_UNKNOWN: "repository name not known to registry",
  BLOB_UNKNOWN: "blob unknown to registry",
  UNAUTHORIZED: "authentication required",
  DENIED: "requested access to the resource is denied",
};

/** Words a registry failure the way containers/image (bootc's image proxy) does. */
export function describeRegistryError(
  e: RegistryError,
  ctx: { reference: string; where: string },
): string {
  if (e.kind === "Unreachable" && e.status === undefined) {
    return `pinging container registry ${e.registry ?? ctx.where}: ${e.message}`;
  }
  if (e.kind === "InvalidReference") return "invalid reference format";
  const code = e.code ??
    (e.status === 401 ? "UNAUTHORIZED" : e.status === 404 ? "MANIFEST_UNKNOWN" : undefined);
  const words = code
    ? `${code.toLowerCase().replaceAll("_", " ")}: ${CODE_MESSAGES[code] ?? e.message}`
    : e.message;
  return `reading manifest ${ctx.reference} in ${ctx.where}: ${words}`;
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

/** What a pull found: what bootc records, and the image's config labels. */
export interface PullResult extends PulledImage {
  /** The config's labels (the simulator reads `dev.bootc.sim.bad-boot` from them). */
  labels: Record<string, string>;
}

/**
 * Resolves a pullspec to what bootc records for it: the per-architecture manifest digest, the
 * version label, the build timestamp and the architecture; plus the config labels. Throws
 * {@linkcode PullError}.
 */
export async function pullImage(opts: PullOptions): Promise<PullResult> {
  let ref: ImageReference;
  try {
    ref = parseImageReference(opts.pullspec);
  } catch (e) {
    if (e instanceof ImageReferenceError) throw new PullError("invalid reference format");
    throw e;
  }
  const reference = ref.digest ?? ref.tag ?? "latest";
  const where = `${ref.registry}/${ref.repository}`;
  const client = new RegistryClient({
    insecureRegistries: opts.insecureRegistries,
    ...(opts.auth ? { dockerConfigJson: opts.auth } : {}),
    userAgent: "bootc-sim",
    ...(opts.caCertPem ? { caCertPem: opts.caCertPem } : {}),
  });
  try {
    let fetched = await client.fetchManifest(ref);
    if (opts.root !== undefined) {
      const rejected = await checkPolicy(opts.root, client, ref, opts.pullspec, fetched.digest)
        .catch((e) => {
          if (e instanceof PolicyFileError) return e.message;
          throw e;
        });
      if (rejected) throw new PullError(rejected);
    }
    if (fetched.platforms) {
      const chosen = fetched.platforms.find((p) =>
        p.architecture === opts.architecture && p.os === "linux"
      );
      if (!chosen) {
        throw new PullError(
          `choosing image instance: no image found in image index for architecture "${opts.architecture}", variant "", OS "linux"`,
        );
      }
      fetched = await client.fetchManifest(withDigest(ref, chosen.digest));
    }
    const configDigest = (fetched.manifest.config as { digest?: string } | undefined)?.digest;
    if (!configDigest) throw new PullError(`reading manifest ${reference} in ${where}: no config`);
    const config = JSON.parse(
      new TextDecoder().decode(await client.fetchBlob(ref, configDigest)),
    ) as {
      architecture?: string;
      created?: string;
      config?: { Labels?: Record<string, string> | null };
    };
    const labels = config.config?.Labels ?? {};
    return {
      imageDigest: fetched.digest,
      version: labels["org.opencontainers.image.version"] ?? labels["version"] ?? null,
      timestamp: normalizeTimestamp(labels["org.opencontainers.image.created"]) ??
        normalizeTimestamp(config.created),
      architecture: config.architecture ?? opts.architecture,
      labels,
    };
  } catch (e) {
    if (e instanceof RegistryError) {
      throw new PullError(describeRegistryError(e, { reference, where }));
    }
    throw e;
  } finally {
    client.close();
  }
}
