/**
 * Keeps the daemon's pull-secret Role in line with the pools (the imperative
 * shell of controller/model/daemon_access.ts).
 *
 * Two callers: the reconciler calls {@linkcode DaemonAccessSync.ensure} before
 * it plans a pool, so a Secret is readable by the daemons before any BootcNode
 * names it; and {@linkcode DaemonAccessSync.run} (while leading) re-syncs when
 * pools or Secrets change — a deleted pool, which no reconcile follows, drops
 * its Secret from the Role — and re-reads the Role every `resyncMs` to undo
 * outside edits (e.g. a re-applied manifest).
 *
 * The controller needs only `get` and `update` on this one Role (RBAC
 * `resourceNames`); the API server's escalation check passes because the
 * controller may itself get Secrets in its namespace.
 *
 * @module
 */
import { CONTROLLER_FIELD_MANAGER } from "../../lib/api/mod.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import {
  type Informer,
  isConflict,
  isNotFound,
  type KubeClient,
  type KubeObject,
  type ResourceClient,
  Resources,
} from "../../lib/kube/mod.ts";
import { type Logger, silentLogger } from "../../lib/log.ts";
import {
  DAEMON_PULL_SECRETS_ROLE,
  daemonSecretRules,
  type PolicyRule,
  rulesEqual,
} from "../model/daemon_access.ts";

/** A Role as read and written. */
type Role = KubeObject & { rules?: PolicyRule[] };

/** Options of {@linkcode DaemonAccessSync}. */
export interface DaemonAccessSyncOptions {
  client: KubeClient;
  /** The operator's namespace, where the Role and the pull Secrets live. */
  namespace: string;
  /** The Secret names the daemons may read now (computed from the caches). */
  desiredNames: () => string[];
  /** Informers whose events may change the desired names (pools, Secrets). */
  triggers?: Informer<KubeObject>[];
  /** The Role's name (default {@linkcode DAEMON_PULL_SECRETS_ROLE}). */
  roleName?: string;
  /** How often {@linkcode DaemonAccessSync.run} re-reads the Role (default 5 min). */
  resyncMs?: number;
  /** Called after each write of the Role (write counts, metrics). */
  onWrite?: () => void;
  clock?: Clock;
  logger?: Logger;
}

/** See the module documentation. */
export class DaemonAccessSync {
  readonly #roles: ResourceClient<Role>;
  readonly #namespace: string;
  readonly #roleName: string;
  readonly #desiredNames: () => string[];
  readonly #resyncMs: number;
  readonly #onWrite?: () => void;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** The rules last found or written (JSON), so an unchanged set costs no request. */
  #synced?: string;
  #chain: Promise<unknown> = Promise.resolve();
  #dirty = false;
  #wake?: () => void;

  /** Creates the syncer; nothing is read or written until a call. */
  constructor(options: DaemonAccessSyncOptions) {
    this.#namespace = options.namespace;
    this.#roleName = options.roleName ?? DAEMON_PULL_SECRETS_ROLE;
    this.#roles = options.client.resource<Role>(Resources.roles, options.namespace);
    this.#desiredNames = options.desiredNames;
    this.#resyncMs = options.resyncMs ?? 5 * 60_000;
    this.#onWrite = options.onWrite;
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger).with({ component: "daemon-access" });
    const notify = () => this.notify();
    for (const informer of options.triggers ?? []) {
      informer.onAdd(notify);
      informer.onUpdate(notify);
      informer.onDelete(notify);
    }
  }

  /** Says the desired names may have changed; a running {@linkcode run} syncs soon. */
  notify(): void {
    this.#dirty = true;
    this.#wake?.();
  }

  /**
   * Brings the Role's rules to the desired ones. Calls are serialized; when the
   * desired rules are the ones last synced it returns without a request, unless
   * `force` (then the Role is read again). Throws when the Role cannot be read
   * or written (a missing Role is fine while nothing is to be granted).
   */
  ensure(options: { force?: boolean } = {}): Promise<void> {
    const next = this.#chain.then(() => this.#sync(options.force === true));
    this.#chain = next.catch(() => {});
    return next;
  }

  async #sync(force: boolean): Promise<void> {
    const names = this.#desiredNames();
    const rules = daemonSecretRules(names);
    const key = JSON.stringify(rules);
    if (!force && this.#synced === key) return;
    for (let attempt = 1;; attempt++) {
      let role: Role;
      try {
        role = await this.#roles.get(this.#roleName);
      } catch (e) {
        if (!isNotFound(e)) throw e;
        if (rules.length === 0) {
          this.#synced = key;
          return;
        }
        throw new Error(
          `Role ${this.#namespace}/${this.#roleName} not found: the daemons cannot be allowed ` +
            `to read pull secret(s) ${names.join(", ")} (install manifests/daemon-rbac.yaml)`,
        );
      }
      if (rulesEqual(role.rules, rules)) {
        this.#synced = key;
        return;
      }
      try {
        await this.#roles.update({ ...role, rules }, { fieldManager: CONTROLLER_FIELD_MANAGER });
      } catch (e) {
        // Someone else changed the Role between our read and write: read it again.
        if (isConflict(e) && attempt < 3) continue;
        throw e;
      }
      this.#onWrite?.();
      this.#synced = key;
      this.#log.info("daemon pull-secret access updated", {
        role: `${this.#namespace}/${this.#roleName}`,
        secrets: names,
      });
      return;
    }
  }

  /**
   * Syncs until `signal` aborts: at once (reading the Role), whenever
   * {@linkcode notify} is called, and every `resyncMs` (reading the Role
   * again). Failures are logged and retried with backoff (1 s doubling to 1 min).
   */
  async run(signal: AbortSignal): Promise<void> {
    let force = true;
    let failures = 0;
    while (!signal.aborted) {
      this.#dirty = false;
      try {
        await this.ensure({ force });
        failures = 0;
      } catch (e) {
        failures++;
        this.#log.warn("cannot sync the daemon's pull-secret access", {
          error: e instanceof Error ? e.message : String(e),
        });
      }
      const wait = failures > 0 ? Math.min(1000 * 2 ** (failures - 1), 60_000) : this.#resyncMs;
      const timedOut = await this.#sleep(wait, signal);
      // A timeout means a periodic re-read (or a retry); a notification uses the memo.
      force = timedOut || failures > 0;
    }
  }

  /** Sleeps `ms` or until notified or aborted; true when the time ran out. */
  async #sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.#dirty || signal.aborted) return false;
    const ac = new AbortController();
    const stop = () => ac.abort();
    signal.addEventListener("abort", stop, { once: true });
    this.#wake = stop;
    try {
      await this.#clock.sleep(ms, ac.signal);
      return true;
    } catch {
      return false;
    } finally {
      this.#wake = undefined;
      signal.removeEventListener("abort", stop);
    }
  }
}
