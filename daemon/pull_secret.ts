/**
 * Installs the pool's pull Secret for bootc on the host.
 *
 * The daemon reads the referenced Secret with a one-shot GET (never a watch)
 * on start-up and whenever `spec.pullSecretRef` or `spec.pullSecretHash`
 * changes, and writes its `.dockerconfigjson` to `<host-root>/run/ostree/auth.json`
 * (the first file bootc's pulls consult; `/run` does not survive a reboot,
 * so credentials vanish with the DaemonSet), atomically (temp file + rename)
 * with mode 0600. When the reference goes away the file is removed, but only
 * if it is still the one the daemon wrote (a marker file holds its hash).
 *
 * The Secret is checked first by the rule the controller applies too
 * (lib/registry/pull_secret.ts: type `kubernetes.io/dockerconfigjson`, the
 * `.dockerconfigjson` key, a well-formed `auths` object): a Secret that fails
 * it is reported and never written, so the auth file the host has stays.
 *
 * @module
 */
import type { ISecret } from "kubernetes-models/v1/Secret";
import type { BootcNodeSpec } from "../lib/api/schema.ts";
import { isForbidden } from "../lib/kube/errors.ts";
import { checkPullSecret } from "../lib/registry/pull_secret.ts";
import { DEFAULT_RETRY, retryDelay, type RetryPolicy } from "./decide.ts";

/** The auth file path below the host root. */
export const AUTH_FILE = "run/ostree/auth.json";
/** Marker next to the auth file: the SHA-256 of the content the daemon wrote. */
export const AUTH_MARKER_FILE = "run/ostree/auth.json.bootc-operator";

/** Reads one Secret; resolves undefined when it does not exist. */
export type SecretGetter = (namespace: string, name: string) => Promise<ISecret | undefined>;

/** Options of {@linkcode PullSecretInstaller}. */
export interface PullSecretInstallerOptions {
  /** The host's root as seen by the daemon (`/proc/1/root` in a pod, `/` standalone). */
  hostRoot: string;
  /** One-shot Secret lookup. */
  getSecret: SecretGetter;
  /** Backoff between lookups of a failing reference (default {@linkcode DEFAULT_RETRY}). */
  retry?: RetryPolicy;
}

/** Outcome of {@linkcode PullSecretInstaller.sync}. */
export interface PullSecretResult {
  /** What was done: nothing, written, removed, or failed. */
  outcome: "unchanged" | "written" | "removed" | "failed";
  /** For "failed": a message naming the Secret (for the Degraded condition). */
  error?: string;
}

function refKey(spec: BootcNodeSpec | undefined): string {
  const ref = spec?.pullSecretRef;
  return ref ? `${ref.namespace}/${ref.name}#${spec?.pullSecretHash ?? ""}` : "";
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function readOrUndefined(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

async function removeIfExists(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/** Writes `text` to `path` atomically with `mode` (temp file in the same directory, then rename). */
export async function writeFileAtomic(path: string, text: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.writeTextFile(tmp, text, { mode, createNew: true });
    // The mode option is filtered by the umask; make it exact.
    await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (e) {
    await removeIfExists(tmp).catch(() => {});
    throw e;
  }
}

/** Keeps the host's auth file in line with the BootcNode's pull Secret reference. */
export class PullSecretInstaller {
  readonly #hostRoot: string;
  readonly #get: SecretGetter;
  readonly #retry: RetryPolicy;
  /** The reference + hash last installed successfully; undefined before the first sync. */
  #installed?: string;
  #failure?: { key: string; error: string; attempts: number; retryAt: number };

  /** Creates the installer. */
  constructor(options: PullSecretInstallerOptions) {
    this.#hostRoot = options.hostRoot.replace(/\/+$/, "");
    this.#get = options.getSecret;
    this.#retry = options.retry ?? DEFAULT_RETRY;
  }

  /** The auth file's path as seen by the daemon. */
  get authFile(): string {
    return `${this.#hostRoot}/${AUTH_FILE}`;
  }

  get #markerFile(): string {
    return `${this.#hostRoot}/${AUTH_MARKER_FILE}`;
  }

  /** When a failed lookup will be retried (undefined when nothing failed). */
  get retryAt(): Date | undefined {
    return this.#failure ? new Date(this.#failure.retryAt) : undefined;
  }

  /**
   * Installs or removes the auth file for `spec`; never throws. Does nothing
   * when the reference and hash are the ones installed; after a failure the
   * lookup is retried with backoff (sooner when the reference changes).
   */
  async sync(spec: BootcNodeSpec | undefined, now = new Date()): Promise<PullSecretResult> {
    const key = refKey(spec);
    if (this.#installed === key) return { outcome: "unchanged" };
    const failure = this.#failure;
    if (failure?.key === key && now.getTime() < failure.retryAt) {
      return { outcome: "failed", error: failure.error };
    }
    const result = await this.#sync(spec, key);
    if (result.outcome === "failed") {
      const attempts = failure?.key === key ? failure.attempts + 1 : 1;
      this.#failure = {
        key,
        error: result.error!,
        attempts,
        retryAt: now.getTime() + retryDelay(attempts, this.#retry),
      };
    } else {
      this.#failure = undefined;
    }
    return result;
  }

  async #sync(spec: BootcNodeSpec | undefined, key: string): Promise<PullSecretResult> {
    const ref = spec?.pullSecretRef;
    const name = ref ? `${ref.namespace}/${ref.name}` : "";
    try {
      if (!ref) {
        const removed = await this.#removeOwnFile();
        this.#installed = key;
        return { outcome: removed ? "removed" : "unchanged" };
      }
      let secret: ISecret | undefined;
      try {
        secret = await this.#get(ref.namespace, ref.name);
      } catch (e) {
        if (!isForbidden(e)) throw e;
        return this.#fail(
          `pull secret ${name}: the daemon may not read it (daemons may read only the Secrets ` +
            "that pools name in the operator's namespace, as the controller grants them)",
        );
      }
      if (!secret) return this.#fail(`pull secret ${name}: Secret not found`);
      // Checked before anything is written: a bad Secret never replaces a good auth file.
      const check = checkPullSecret(secret);
      if (!check.ok) return this.#fail(`pull secret ${name} ${check.message}`);
      const content = check.dockerConfigJson;
      await Deno.mkdir(`${this.#hostRoot}/run/ostree`, { recursive: true, mode: 0o755 });
      await writeFileAtomic(this.authFile, content, 0o600);
      await writeFileAtomic(this.#markerFile, (await sha256(content)) + "\n", 0o600);
      this.#installed = key;
      return { outcome: "written" };
    } catch (e) {
      const what = ref ? `pull secret ${name}` : "removing the pull secret";
      return this.#fail(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  #fail(error: string): PullSecretResult {
    this.#installed = undefined;
    return { outcome: "failed", error };
  }

  /** Removes the auth file if it is still the content this daemon wrote. */
  async #removeOwnFile(): Promise<boolean> {
    const marker = (await readOrUndefined(this.#markerFile))?.trim();
    if (!marker) return false;
    const current = await readOrUndefined(this.authFile);
    if (current !== undefined && await sha256(current) === marker) {
      await removeIfExists(this.authFile);
    }
    await removeIfExists(this.#markerFile);
    return current !== undefined;
  }
}
