/**
 * The host's signature policy for the pool's repository (defence in depth behind the
 * controller's check).
 *
 * While `spec.signatureKeys` is set, the host's `containers-policy.json(5)` requires, for
 * exactly the repository of `spec.desiredImage`, a sigstore signature by one of those keys,
 * and `containers-registries.d(5)` tells containers-image to read cosign's signature tags
 * there. bootc pulls through containers-image, which then refuses an image none of the keys
 * signed ("A signature was required, but no signature exists"), whoever set the spec.
 *
 * `policy.json` has no drop-in directory, so the daemon owns one scope of it and nothing
 * else: what the scope held before is kept in an operator-owned file beside the keys, and
 * put back when no pool enforces any more or the repository changes. The keys live under
 * `/etc/pki/containers/bootc-operator/`, the registries.d setting in its own file.
 *
 * The pure part says what the files should hold; {@linkcode HostPolicyInstaller} reads and
 * writes them (atomically) under the host root.
 *
 * @module
 */
import type { BootcNodeSpec } from "../lib/api/schema.ts";
import { parseImageReference } from "../lib/registry/reference.ts";
import { writeFileAtomic } from "./pull_secret.ts";

/** The host's trust policy, below the host root. */
export const POLICY_FILE = "etc/containers/policy.json";
/** The registries.d file the daemon owns. */
export const REGISTRIES_D_FILE = "etc/containers/registries.d/bootc-operator.yaml";
/** The folder the daemon owns for keys and its record of the scope it took over. */
export const KEY_DIR = "etc/pki/containers/bootc-operator";
/** The record of the scope the daemon owns in policy.json. */
export const OWNED_FILE = `${KEY_DIR}/owned.json`;

/** What the daemon took over in policy.json. */
export interface OwnedScope {
  /** The docker-transport scope (`registry/repository`). */
  scope: string;
  /** What the scope held before (null: nothing). */
  previous: unknown;
  /** True when the daemon created policy.json (there was none). */
  created?: boolean;
}

/** The files as they should be; a key of `files` with null is removed. */
export interface PolicyFiles {
  /** policy.json's new text. undefined: removed (the daemon had created it). */
  policy?: string;
  /** Other files below the host root: text to write, or null to remove. */
  files: Record<string, string | null>;
}

/** What the host policy should require: the scope and the keys, or nothing. */
export interface WantedPolicy {
  scope: string;
  keys: readonly string[];
}

/** The scope and keys `spec` asks the host to require, if any. */
export function wantedPolicy(spec: BootcNodeSpec | undefined): WantedPolicy | undefined {
  const keys = spec?.signatureKeys ?? [];
  if (!spec || keys.length === 0) return undefined;
  const ref = parseImageReference(spec.desiredImage);
  return { scope: `${ref.domain}/${ref.repository}`, keys };
}

/** The key file of the i-th key (absolute host path, as policy.json names it). */
export function keyFile(i: number): string {
  return `/${KEY_DIR}/key-${i}.pub`;
}

/** The policy requirement that one of `count` key files signed the image. */
export function sigstoreRequirement(count: number): Record<string, unknown> {
  const keys = Array.from({ length: count }, (_, i) => keyFile(i));
  return {
    type: "sigstoreSigned",
    // keyPaths (several keys, any verifies) is newer; one key keeps to the field every
    // containers-image release knows.
    ...(keys.length === 1 ? { keyPath: keys[0] } : { keyPaths: keys }),
    signedIdentity: { type: "matchRepository" },
  };
}

/** The registries.d document that turns on cosign signature tags for `scope`. */
export function registriesDocument(scope: string): string {
  return [
    "# Written by the bootc-operator daemon: cosign signatures of the pool's repository.",
    "docker:",
    `  ${JSON.stringify(scope)}:`,
    "    use-sigstore-attachments: true",
    "",
  ].join("\n");
}

/** A parsed policy.json, or why it cannot be used. */
export function parsePolicy(text: string): Record<string, unknown> | string {
  try {
    const value = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
    return `/${POLICY_FILE} is not a JSON object`;
  } catch (e) {
    return `/${POLICY_FILE} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`;
  }
}

function dockerScopes(policy: Record<string, unknown>): Record<string, unknown> {
  const transports = (policy.transports ?? {}) as Record<string, unknown>;
  return (transports.docker ?? {}) as Record<string, unknown>;
}

function withDockerScope(
  policy: Record<string, unknown>,
  scope: string,
  value: unknown,
): Record<string, unknown> {
  const docker = { ...dockerScopes(policy) };
  if (value === null || value === undefined) delete docker[scope];
  else docker[scope] = value;
  const transports: Record<string, unknown> = {
    ...(policy.transports ?? {}) as Record<string, unknown>,
    docker,
  };
  if (Object.keys(docker).length === 0) delete transports.docker;
  return { ...policy, transports };
}

/**
 * The policy with `owned`'s scope put back as it was: what the daemon undoes when it
 * lets go of a scope.
 */
export function restoredPolicy(
  policy: Record<string, unknown>,
  owned: OwnedScope,
): Record<string, unknown> {
  return withDockerScope(policy, owned.scope, owned.previous);
}

/**
 * What the files should hold: `policy` is policy.json as it is (undefined: none), `owned`
 * the scope the daemon holds now (undefined: none), `wanted` what the spec asks.
 */
export function policyFiles(
  policy: Record<string, unknown> | undefined,
  owned: OwnedScope | undefined,
  wanted: WantedPolicy | undefined,
): PolicyFiles {
  const files: Record<string, string | null> = {};
  let base = policy;
  let created = false;
  if (owned) {
    base = base && restoredPolicy(base, owned);
    created = owned.created === true;
    for (let i = wanted?.keys.length ?? 0; i < 16; i++) files[keyFile(i).slice(1)] = null;
  }
  if (!wanted) {
    files[REGISTRIES_D_FILE] = null;
    files[OWNED_FILE] = null;
    // A policy.json the daemon created goes with it.
    return { ...(created || !base ? {} : { policy: json(base) }), files };
  }
  // Without a policy.json every pull fails; the one written keeps that for all other images.
  if (!base) {
    base = { default: [{ type: "reject" }] };
    created = true;
  }
  const previous = dockerScopes(base)[wanted.scope] ?? null;
  const record: OwnedScope = { scope: wanted.scope, previous, ...(created ? { created } : {}) };
  wanted.keys.forEach((pem, i) =>
    files[keyFile(i).slice(1)] = pem.endsWith("\n") ? pem : `${pem}\n`
  );
  files[REGISTRIES_D_FILE] = registriesDocument(wanted.scope);
  files[OWNED_FILE] = json(record);
  return {
    policy: json(withDockerScope(base, wanted.scope, [sigstoreRequirement(wanted.keys.length)])),
    files,
  };
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Outcome of {@linkcode HostPolicyInstaller.sync}. */
export interface HostPolicyResult {
  outcome: "unchanged" | "written" | "removed" | "failed";
  /** For "failed": why (a Degraded problem; nothing is pulled meanwhile). */
  error?: string;
}

/** Writes the host policy files under `hostRoot` to match a BootcNode spec. */
export class HostPolicyInstaller {
  readonly #root: string;

  /** `hostRoot`: the host's root as the daemon sees it. */
  constructor(hostRoot: string) {
    this.#root = hostRoot.replace(/\/+$/, "");
  }

  /** Brings the files to what `spec` asks; idempotent, so it runs every reconcile. */
  async sync(spec: BootcNodeSpec | undefined): Promise<HostPolicyResult> {
    try {
      const wanted = wantedPolicy(spec);
      const owned = await this.#owned();
      if (!wanted && !owned) return { outcome: "unchanged" };
      const text = await this.#read(POLICY_FILE);
      const policy = text === undefined ? undefined : parsePolicy(text);
      if (typeof policy === "string") return { outcome: "failed", error: policy };
      const want = policyFiles(policy, owned, wanted);
      let changed = false;
      // Keys and the registries.d file first: the policy that names them is written last.
      for (const [path, content] of Object.entries(want.files)) {
        if (path !== OWNED_FILE) changed = await this.#put(path, content) || changed;
      }
      changed = await this.#put(POLICY_FILE, want.policy ?? null) || changed;
      changed = await this.#put(OWNED_FILE, want.files[OWNED_FILE] ?? null) || changed;
      if (!changed) return { outcome: "unchanged" };
      return { outcome: wanted ? "written" : "removed" };
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      return { outcome: "failed", error: `cannot write the host's signature policy: ${why}` };
    }
  }

  async #owned(): Promise<OwnedScope | undefined> {
    const text = await this.#read(OWNED_FILE);
    if (text === undefined) return undefined;
    try {
      const value = JSON.parse(text) as OwnedScope;
      if (typeof value?.scope === "string") return value;
    } catch {
      // A damaged record: nothing to restore from it, the scope is rewritten as wanted.
    }
    return undefined;
  }

  async #read(path: string): Promise<string | undefined> {
    try {
      return await Deno.readTextFile(`${this.#root}/${path}`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  }

  /** Writes (atomically) or removes one file; true when it changed. */
  async #put(path: string, content: string | null): Promise<boolean> {
    const full = `${this.#root}/${path}`;
    if ((await this.#read(path)) === (content ?? undefined)) return false;
    if (content === null) {
      await Deno.remove(full).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
      return true;
    }
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true, mode: 0o755 });
    await writeFileAtomic(full, content, 0o644);
    return true;
  }
}
