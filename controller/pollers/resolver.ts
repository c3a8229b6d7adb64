/**
 * The registry seam of the reconciler: {@linkcode ImageResolver} resolves a
 * tag to a digest (and the per-platform digests of an index). The planner and
 * the reconciler's tests never need a registry; production uses lib/registry.
 *
 * @module
 */
import type { PlatformDigest } from "../../lib/api/mod.ts";
import { RegistryClient } from "../../lib/registry/mod.ts";
import {
  type SignatureVerdict,
  type TrustedKey,
  verifyImageSignatures,
} from "../../lib/registry/signatures.ts";

/** What a tag resolved to. */
export interface ResolvedTarget {
  digest: string;
  platforms?: PlatformDigest[];
}

/** Options of one {@linkcode ImageResolver.resolve} call. */
export interface ResolveOptions {
  /** The pull Secret's `.dockerconfigjson`, if the pool names one. */
  dockerConfigJson?: string;
  /**
   * Aborts the resolution (its timeout ran out, or no pool wants it any more).
   * Implementations must stop their requests and settle promptly.
   */
  signal?: AbortSignal;
}

/** Resolves image references; errors carry a message meant for users. */
export interface ImageResolver {
  resolve(ref: string, options: ResolveOptions): Promise<ResolvedTarget>;
  /** Verifies the cosign signatures of a digest-pinned image against `keys`. */
  verifySignatures?(
    image: string,
    keys: readonly TrustedKey[],
    options: ResolveOptions,
  ): Promise<SignatureVerdict>;
}

/** Options of {@linkcode RegistryImageResolver}. */
export interface RegistryImageResolverOptions {
  /** `host[:port]` of registries spoken to over plain HTTP. */
  insecureRegistries?: string[];
  /** Extra CA certificate (PEM). */
  caCertPem?: string;
  /** Per-request timeout (default: the registry client's). */
  timeoutMs?: number;
  /** The `fetch` to use (tests); every request also follows the resolution's signal. */
  fetch?: typeof fetch;
}

/** {@linkcode ImageResolver} on lib/registry: one short-lived client per resolution. */
export class RegistryImageResolver implements ImageResolver {
  #options: RegistryImageResolverOptions;

  /** Creates a resolver. */
  constructor(options: RegistryImageResolverOptions = {}) {
    this.#options = options;
  }

  /** Resolves `ref` with the pull secret's `.dockerconfigjson`, if any, until `signal` aborts. */
  async resolve(ref: string, options: ResolveOptions): Promise<ResolvedTarget> {
    const client = this.#client(options);
    try {
      const resolved = await client.resolve(ref);
      return {
        digest: resolved.digest,
        platforms: resolved.platforms?.map((p) => ({
          os: p.os,
          architecture: p.architecture,
          ...(p.variant ? { variant: p.variant } : {}),
          digest: p.digest,
        })),
      };
    } finally {
      client.close();
    }
  }

  /** Verifies `image`'s cosign signatures with the pool's credentials, until `signal` aborts. */
  async verifySignatures(
    image: string,
    keys: readonly TrustedKey[],
    options: ResolveOptions,
  ): Promise<SignatureVerdict> {
    const client = this.#client(options);
    try {
      return await verifyImageSignatures(client, image, keys);
    } finally {
      client.close();
    }
  }

  #client(options: ResolveOptions): RegistryClient {
    const signal = options.signal;
    signal?.throwIfAborted();
    const base = this.#options.fetch ?? globalThis.fetch;
    // The registry client has its own per-request timeout; the caller's signal must
    // also cut every request short, so it is joined to each request's own signal.
    const fetchWithSignal: typeof fetch = signal
      ? (input, init) =>
        base(input, {
          ...init,
          signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal,
        })
      : base;
    return new RegistryClient({
      dockerConfigJson: options.dockerConfigJson,
      insecureRegistries: this.#options.insecureRegistries,
      caCertPem: this.#options.caCertPem,
      timeoutMs: this.#options.timeoutMs,
      fetch: fetchWithSignal,
    });
  }
}

/** `sha256:<hex>` over a Secret's data (keys sorted), so any content change changes it. */
export async function secretDataHash(data: Record<string, string> | undefined): Promise<string> {
  const entries = Object.entries(data ?? {}).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  const bytes = new TextEncoder().encode(JSON.stringify(entries));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `sha256:${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Decodes the `.dockerconfigjson` key of a Secret's base64 data. */
export function dockerConfigOf(data: Record<string, string> | undefined): string | undefined {
  const b64 = data?.[".dockerconfigjson"];
  if (b64 === undefined) return undefined;
  const bin = atob(b64);
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}
