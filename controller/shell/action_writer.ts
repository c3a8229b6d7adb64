/**
 * The writers of a plan's actions, one per kind: each makes its API call,
 * counts it, logs why, and records what the caches should come to show
 * (`cache_guard.ts`). Idempotent like the plan: an object already created or
 * already gone is no error, and a status patch that lost a race to the daemon
 * is tried again by the next reconcile.
 *
 * @module
 */
import {
  ANNOTATION_IN_REBOOT_SLOT,
  type BootcNode,
  type BootcNodePool,
  CONTROLLER_FIELD_MANAGER,
} from "../../lib/api/mod.ts";
import type { Clock } from "../../lib/clock.ts";
import {
  isAlreadyExists,
  isConflict,
  isKubeError,
  isNotFound,
  type KubeClient,
  type ResourceClient,
  Resources,
} from "../../lib/kube/mod.ts";
import type { Logger } from "../../lib/log.ts";
import { type Written, writtenObject } from "./cache_guard.ts";
import { deletePods, evictPods } from "../model/drain.ts";
import type { GrantAdmission } from "./grant_admission.ts";
import type { ControllerMetrics } from "./metrics.ts";
import type { Node } from "./object_views.ts";
import { type Action, type MergePatch, POOL_FINALIZER } from "../planner/planner.ts";
import { isSlotGrant, isSlotRelease } from "../planner/plan.ts";

/** Options of {@linkcode ActionWriter}. */
export interface ActionWriterOptions {
  client: KubeClient;
  clock: Clock;
  metrics?: ControllerMetrics;
  /** Counts one API write of `kind`. */
  count: (kind: string) => void;
  /** Asks for another reconcile of `pool` after `ms`. */
  requeue: (pool: string, ms: number) => void;
  /**
   * Throws when this replica may no longer write (it no longer holds the leader's lease);
   * checked right before every write, each eviction and deletion included.
   */
  fence?: () => void;
  /** Checks each slot grant against the cluster budgets as it is written. */
  admission?: GrantAdmission;
}

type ActionOf<K extends Action["kind"]> = Extract<Action, { kind: K }>;

/** What one write is applied for: the pool, where its writes are recorded, its log. */
interface WriteContext {
  pool: BootcNodePool;
  poolName: string;
  written: Written[];
  log: Logger;
  failedEvictions?: FailedEviction[];
}

/**
 * An eviction that failed other than by a budget's refusal (forbidden, an admission
 * policy, a server error): not thrown, so the rest of the node's lane (a forced deletion,
 * its drain report) still runs; the shell says it like a failed write.
 */
export interface FailedEviction {
  node: string;
  error: unknown;
  /** A read the plan needed (the node's pod list), not a write. */
  read?: boolean;
}

/** How often a conditional Node write is retried on conflicts its precondition survives. */
const MAX_CONDITIONAL_ATTEMPTS = 3;

/**
 * A planned write found the object changed in a way the plan depends on (a Node cordoned or
 * uncordoned after the plan read it). Nothing of that node's lane is written after it; the
 * reconciler drops the plan's events about the node and plans again from the fresh caches.
 */
export class StalePlanError extends Error {
  constructor(readonly node: string, message: string) {
    super(message);
    this.name = "StalePlanError";
  }
}

const OPTS = { fieldManager: CONTROLLER_FIELD_MANAGER };

/** Applies a plan's actions, one at a time (the order is `apply_order.ts`'s). */
export class ActionWriter {
  #o: ActionWriterOptions;
  #bootcNodes: ResourceClient<BootcNode>;
  #nodes: ResourceClient<Node>;
  #pools: ResourceClient<BootcNodePool>;

  /** A writer through `options.client`. */
  constructor(options: ActionWriterOptions) {
    this.#o = options;
    this.#bootcNodes = options.client.resource<BootcNode>(Resources.bootcNodes);
    this.#nodes = options.client.resource<Node>(Resources.nodes);
    this.#pools = options.client.resource<BootcNodePool>(Resources.bootcNodePools);
  }

  /**
   * Applies one action of `pool`'s plan, appending what it wrote to `written`;
   * returns how many evictions were refused and forced deletions failed (the
   * drain backs off while there are any).
   */
  async apply(
    pool: BootcNodePool,
    action: Action,
    written: Written[],
    log: Logger,
    failedEvictions?: FailedEviction[],
  ): Promise<number> {
    const ctx: WriteContext = {
      pool,
      poolName: pool.metadata.name ?? "",
      written,
      log,
      failedEvictions,
    };
    this.#o.fence?.();
    switch (action.kind) {
      case "createBootcNode":
        return await this.#create(action, ctx);
      case "patchBootcNode":
        return await this.#patchBootcNode(action, ctx);
      case "patchBootcNodeStatus":
        return await this.#patchStatus(action, ctx);
      case "deleteBootcNode":
        return await this.#delete(action, ctx);
      case "patchNode":
        return await this.#patchNode(action, ctx);
      case "evict":
        return await this.#evict(action, ctx);
      case "deletePods":
        return await this.#deletePods(action, ctx);
      case "addFinalizer":
      case "removeFinalizer":
        return await this.#finalizer(action, ctx);
    }
  }

  async #create(action: ActionOf<"createBootcNode">, ctx: WriteContext): Promise<number> {
    try {
      const created = await this.#bootcNodes.create(action.object, OPTS);
      this.#o.count("createBootcNode");
      ctx.written.push(writtenObject("bootcNodes", action.node, created));
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
    return 0;
  }

  async #patchBootcNode(action: ActionOf<"patchBootcNode">, ctx: WriteContext): Promise<number> {
    let updated;
    try {
      updated = await this.#bootcNodes.patch(action.node, action.patch, { type: "merge", ...OPTS });
    } catch (e) {
      // A display-only write to a BootcNode gone meanwhile: nothing to show.
      if ((action.intent === "annotate") && isNotFound(e)) return 0;
      throw e;
    }
    // The annotations for `kubectl get bootcnodes` alone are counted apart (their cost shows).
    this.#o.count((action.intent === "annotate") ? "patchBootcNodeDisplay" : "patchBootcNode");
    ctx.written.push(writtenObject("bootcNodes", action.node, updated));
    if ((action.intent === "annotate")) ctx.log.debug(action.why, { node: action.node });
    else ctx.log.info(action.why, { node: action.node });
    this.#o.metrics?.observeAction(ctx.poolName, action, this.#o.clock.now());
    return 0;
  }

  async #patchStatus(action: ActionOf<"patchBootcNodeStatus">, ctx: WriteContext) {
    try {
      const updated = await this.#bootcNodes.patch(action.node, action.patch, {
        type: "merge",
        subresource: "status",
        ...OPTS,
      });
      this.#o.count("patchBootcNodeStatus");
      ctx.written.push(writtenObject("bootcNodes", action.node, updated));
      ctx.log.info(action.why, { node: action.node });
    } catch (e) {
      // The daemon wrote in between (or the object is gone): the next reconcile sees it.
      if (!isConflict(e) && !isNotFound(e)) throw e;
      this.#o.requeue(ctx.poolName, 1_000);
    }
    return 0;
  }

  async #delete(action: ActionOf<"deleteBootcNode">, ctx: WriteContext): Promise<number> {
    try {
      await this.#bootcNodes.delete(action.node, {
        preconditions: action.uid ? { uid: action.uid } : undefined,
      });
      this.#o.count("deleteBootcNode");
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    // The object deleted is known by its uid: another of the same name may follow at once.
    ctx.written.push({ store: "bootcNodes", name: action.node, uid: action.uid, deleted: true });
    ctx.log.info("released node", { node: action.node });
    return 0;
  }

  async #patchNode(action: ActionOf<"patchNode">, ctx: WriteContext): Promise<number> {
    const admission = isSlotGrant(action) ? this.#o.admission : undefined;
    const refused = admission?.admit(action.node);
    if (refused !== undefined) {
      throw new StalePlanError(action.node, `${refused}; not granting ${action.node} a slot`);
    }
    let updated: Node;
    try {
      updated = action.cordonSeen
        ? await this.#patchNodeIfCordon(action, action.cordonSeen)
        : await this.#nodes.patch(action.node, action.patch, { type: "merge", ...OPTS });
    } catch (e) {
      if (admission) await this.#settleFailedGrant(action.node, e, admission);
      if (!isNotFound(e)) throw e;
      // A grant of a Node gone is no grant: nothing after it in the lane may be written.
      if (admission) throw new StalePlanError(action.node, `node ${action.node} is gone`);
      return 0;
    }
    admission?.landed(action.node);
    if (isSlotRelease(action)) this.#o.admission?.released(action.node);
    // The annotations for people alone are counted apart (what they cost is visible).
    this.#o.count((action.intent === "annotate") ? "patchNodeAnnotations" : "patchNode");
    ctx.written.push(writtenObject("nodes", action.node, updated));
    if ((action.intent === "annotate")) ctx.log.debug(action.why, { node: action.node });
    else ctx.log.info(action.why, { node: action.node });
    this.#o.metrics?.observeAction(ctx.poolName, action, this.#o.clock.now());
    return 0;
  }

  /**
   * Tells the admission whether a grant whose write failed landed: an answer of the API
   * server refusing it (a 4xx) did not; after anything else (a timeout, a server error) the
   * Node is read back, and while that read fails too the grant counts as landed.
   */
  async #settleFailedGrant(node: string, e: unknown, admission: GrantAdmission): Promise<void> {
    if (
      e instanceof StalePlanError ||
      (isKubeError(e) && e.status >= 400 && e.status < 500 && e.status !== 408)
    ) {
      return admission.unwritten(node);
    }
    try {
      const fresh = await this.#nodes.get(node);
      if (fresh.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined) {
        admission.landed(node);
      } else admission.unwritten(node);
    } catch {
      admission.landed(node);
    }
  }

  /**
   * The Node patch, conditional on the Node's cordon being `seen.unschedulable`: sent at the
   * cached resourceVersion; on a conflict (the Node changed since: a status update, a label)
   * the Node is read again and the patch resent at the fresh version while the cordon is
   * still as planned. A changed cordon throws {@linkcode StalePlanError}.
   */
  async #patchNodeIfCordon(
    action: ActionOf<"patchNode">,
    seen: { unschedulable: boolean; resourceVersion?: string },
  ): Promise<Node> {
    let resourceVersion = seen.resourceVersion;
    for (let attempt = 1;; attempt++) {
      const metadata = { ...(action.patch.metadata as MergePatch | undefined), resourceVersion };
      try {
        return await this.#nodes.patch(action.node, { ...action.patch, metadata }, {
          type: "merge",
          ...OPTS,
        });
      } catch (e) {
        if (!isConflict(e) || attempt >= MAX_CONDITIONAL_ATTEMPTS) throw e;
      }
      const fresh = await this.#nodes.get(action.node);
      if ((fresh.spec?.unschedulable === true) !== seen.unschedulable) {
        throw new StalePlanError(
          action.node,
          `node ${action.node} was ${seen.unschedulable ? "un" : ""}cordoned after the plan ` +
            `read it; not writing "${action.why}" on that view`,
        );
      }
      resourceVersion = fresh.metadata?.resourceVersion;
    }
  }

  /** One drain pass's evictions; returns how many a disruption budget refused. */
  async #evict(action: ActionOf<"evict">, ctx: WriteContext): Promise<number> {
    const { log } = ctx;
    const outcomes = await evictPods((ns, pod, gracePeriodSeconds) => {
      this.#o.fence?.();
      this.#o.count("evict");
      return this.#o.client.evict(ns, pod, { gracePeriodSeconds });
    }, action.pods);
    this.#o.metrics?.observeEvictions(ctx.poolName, action.node, outcomes, this.#o.clock.now());
    let refused = 0;
    for (const o of outcomes) {
      if (o.result === "refused") {
        refused++;
        log.info("eviction refused", { node: action.node, pod: o.pod, reason: o.message });
      } else if (o.result === "failed") {
        log.warn("eviction failed", { node: action.node, pod: o.pod, error: o.error });
      }
    }
    const failed = outcomes.find((o) => o.result === "failed");
    if (failed?.result === "failed") {
      ctx.failedEvictions?.push({ node: action.node, error: failed.error });
    }
    const evicted = outcomes.filter((o) => o.result === "evicted").length;
    if (evicted > 0) log.info("evicted pods", { node: action.node, count: evicted });
    return refused;
  }

  /**
   * `onTimeout: Force`: deletes the pods evictions cannot remove (the planner
   * recorded a Warning event per pod). Never throws: a failure is logged with the
   * API's answer and counted like a refused eviction, so the next passes back off;
   * the planner degrades the node if the pods are still there after the timeout's
   * slack. Returns how many failed.
   */
  async #deletePods(action: ActionOf<"deletePods">, ctx: WriteContext): Promise<number> {
    const outcomes = await deletePods(({ namespace, name, uid, gracePeriodSeconds }) => {
      this.#o.fence?.();
      this.#o.count("deletePod");
      return this.#o.client.resource(Resources.pods, namespace).delete(name, {
        gracePeriodSeconds,
        preconditions: uid ? { uid } : undefined,
      });
    }, action.pods);
    let failed = 0;
    for (const o of outcomes) {
      if (o.result === "failed") {
        failed++;
        ctx.log.warn("forced pod deletion failed", {
          node: action.node,
          pod: o.pod,
          error: o.error,
        });
      } else {
        ctx.log.warn("pod deleted past the drain timeout (onTimeout: Force)", {
          node: action.node,
          pod: o.pod,
          result: o.result,
        });
      }
    }
    return failed;
  }

  async #finalizer(
    action: ActionOf<"addFinalizer" | "removeFinalizer">,
    ctx: WriteContext,
  ): Promise<number> {
    const { pool, poolName } = ctx;
    const current = pool.metadata.finalizers ?? [];
    const finalizers = action.kind === "addFinalizer"
      ? [...current, POOL_FINALIZER]
      : current.filter((f) => f !== POOL_FINALIZER);
    try {
      const updated = await this.#pools.patch(poolName, {
        metadata: { finalizers, resourceVersion: pool.metadata.resourceVersion },
      }, { type: "merge", ...OPTS });
      this.#o.count("poolFinalizer");
      ctx.written.push(writtenObject("pools", poolName, updated));
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    return 0;
  }
}
