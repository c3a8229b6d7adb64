/**
 * Reads the objects of pools' `spec.rollout.preconditions.objects` checks off the reconcile
 * path, and keeps each check's latest verdict (`model/object_check.ts` judges them): a
 * reconcile reads verdicts and never waits on the API for them.
 *
 * - One loop per pool, for the checks it names now ({@linkcode ObjectChecks.want}); a change
 *   of them restarts it, a pool that names none any more stops it.
 * - Each round resolves every check's kind through discovery (`/apis/GROUP/VERSION`, kept
 *   for {@linkcode DISCOVERY_TTL_MS}), reads its objects (by name, or a list with the
 *   labels), judges them, and sleeps `intervalMs`.
 * - A read that fails is the check's error verdict, naming the cause: a kind the server
 *   does not serve, or the permission the controller lacks (get/list on the resource).
 * - `onResult(pool)` is called when a verdict of the pool changes.
 *
 * @module
 */
import type { ObjectPrecondition } from "../../lib/api/mod.ts";
import {
  isKubeError,
  isNotFound,
  type KubeClient,
  type KubeObject,
  type ResourceDescriptor,
} from "../../lib/kube/mod.ts";
import { abortableSleep } from "../../lib/clock.ts";
import { type Logger, silentLogger } from "../../lib/log.ts";
import {
  checkSubject,
  judgeObjects,
  labelSelector,
  type ObjectVerdict,
} from "../model/object_check.ts";

/** Default {@linkcode ObjectChecksOptions.intervalMs}. */
export const DEFAULT_OBJECT_CHECK_INTERVAL_MS = 5_000;
/** How long a discovered kind is trusted before it is looked up again. */
export const DISCOVERY_TTL_MS = 300_000;

/** Options of {@linkcode ObjectChecks}. */
export interface ObjectChecksOptions {
  client: KubeClient;
  logger?: Logger;
  /** Delay between two rounds of a pool (default 5 s). */
  intervalMs?: number;
  /** Called with the pool when one of its verdicts changed. */
  onResult?: (pool: string) => void;
}

interface PoolLoop {
  key: string;
  checks: readonly ObjectPrecondition[];
  verdicts: (ObjectVerdict | undefined)[];
  abort: AbortController;
  done: Promise<void>;
}

interface APIResourceList {
  resources?: { name: string; kind: string; namespaced: boolean }[];
}

/** Polls pools' object checks; see the module doc. */
export class ObjectChecks {
  readonly #o: ObjectChecksOptions;
  readonly #log: Logger;
  readonly #pools = new Map<string, PoolLoop>();
  readonly #kinds = new Map<string, { at: number; desc: ResourceDescriptor }>();

  constructor(options: ObjectChecksOptions) {
    this.#o = options;
    this.#log = options.logger ?? silentLogger;
  }

  /**
   * Declares the checks `pool` names now and returns their latest verdicts, index by index
   * (undefined: not read yet). No checks: the pool's loop stops.
   */
  want(pool: string, checks: readonly ObjectPrecondition[]): (ObjectVerdict | undefined)[] {
    const key = JSON.stringify(checks);
    const current = this.#pools.get(pool);
    if (current?.key === key) return [...current.verdicts];
    this.forget(pool);
    if (checks.length === 0) return [];
    const abort = new AbortController();
    const loop: PoolLoop = {
      key,
      checks,
      verdicts: checks.map(() => undefined),
      abort,
      done: Promise.resolve(),
    };
    loop.done = this.#run(pool, loop);
    this.#pools.set(pool, loop);
    return [...loop.verdicts];
  }

  /** Stops polling `pool`. */
  forget(pool: string): void {
    this.#pools.get(pool)?.abort.abort();
    this.#pools.delete(pool);
  }

  /** Stops every loop and waits for them. */
  async close(): Promise<void> {
    const loops = [...this.#pools.values()];
    for (const l of loops) l.abort.abort();
    this.#pools.clear();
    await Promise.allSettled(loops.map((l) => l.done));
  }

  async #run(pool: string, loop: PoolLoop): Promise<void> {
    const signal = loop.abort.signal;
    while (!signal.aborted) {
      let changed = false;
      for (const [i, check] of loop.checks.entries()) {
        const verdict = await this.#judge(check, signal);
        if (signal.aborted) return;
        if (JSON.stringify(verdict) !== JSON.stringify(loop.verdicts[i])) {
          loop.verdicts[i] = verdict;
          changed = true;
          this.#log.info("precondition verdict", {
            pool,
            check: checkSubject(check),
            state: verdict.state,
            ...(verdict.state === "passed" ? {} : { detail: verdict.message }),
          });
        }
      }
      if (changed) this.#o.onResult?.(pool);
      await abortableSleep(this.#o.intervalMs ?? DEFAULT_OBJECT_CHECK_INTERVAL_MS, signal);
    }
  }

  async #judge(check: ObjectPrecondition, signal: AbortSignal): Promise<ObjectVerdict> {
    const subject = checkSubject(check);
    let desc: ResourceDescriptor | string;
    try {
      desc = await this.#kind(check, signal);
    } catch (e) {
      return { state: "error", message: `${subject}: ${readError(e, "discover", check)}` };
    }
    if (typeof desc === "string") return { state: "error", message: `${subject}: ${desc}` };
    const api = this.#o.client.resource<KubeObject>(desc, check.namespace);
    try {
      if (check.name !== undefined) {
        if (desc.namespaced && !check.namespace) {
          return {
            state: "error",
            message: `${subject}: ${desc.kind} is namespaced: set namespace`,
          };
        }
        const one = await api.get(check.name, { signal }).catch((e) => {
          if (isNotFound(e)) return undefined;
          throw e;
        });
        return judgeObjects(check, one ? [one] : []);
      }
      const list = await api.list({
        signal,
        ...(check.matchLabels ? { labelSelector: labelSelector(check.matchLabels) } : {}),
      });
      return judgeObjects(check, list.items);
    } catch (e) {
      return { state: "error", message: `${subject}: ${readError(e, "read", check, desc)}` };
    }
  }

  /** The resource serving `check.kind` in `check.apiVersion`, or why there is none. */
  async #kind(
    check: ObjectPrecondition,
    signal: AbortSignal,
  ): Promise<ResourceDescriptor | string> {
    const id = `${check.apiVersion}/${check.kind}`;
    const known = this.#kinds.get(id);
    if (known && Date.now() - known.at < DISCOVERY_TTL_MS) return known.desc;
    const [group, version] = check.apiVersion.includes("/")
      ? check.apiVersion.split("/", 2)
      : ["", check.apiVersion];
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    let list: APIResourceList;
    try {
      list = await this.#o.client.request({ method: "GET", path, signal }) as APIResourceList;
    } catch (e) {
      if (isNotFound(e)) return `the API server serves no ${check.apiVersion}`;
      throw e;
    }
    const found = list?.resources?.find((r) => r.kind === check.kind && !r.name.includes("/"));
    if (!found) return `the API server serves no kind ${check.kind} in ${check.apiVersion}`;
    const desc = {
      group,
      version,
      plural: found.name,
      kind: found.kind,
      namespaced: found.namespaced,
    };
    this.#kinds.set(id, { at: Date.now(), desc });
    return desc;
  }
}

/** A read's failure in words; a refusal names the permission the controller lacks. */
function readError(
  e: unknown,
  what: "discover" | "read",
  check: ObjectPrecondition,
  desc?: ResourceDescriptor,
): string {
  const message = e instanceof Error ? e.message : String(e);
  if (isKubeError(e) && e.status === 403 && desc) {
    const resource = desc.group ? `${desc.plural}.${desc.group}` : desc.plural;
    const verb = check.name !== undefined ? "get" : "list";
    const where = check.namespace ? ` in namespace ${check.namespace}` : "";
    return `the controller may not ${verb} ${resource}${where}: grant it ${verb} on ` +
      `${resource} (a ClusterRole bound to its ServiceAccount)`;
  }
  return `cannot ${what} ${check.apiVersion} ${check.kind}: ${message}`;
}
