/**
 * Records a plan's events: each about the pool or one of its BootcNodes, and
 * those derived from time rather than from a write (timeouts, `onceKey`) once
 * per process, so a level-triggered loop does not repeat them.
 *
 * @module
 */
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { isConflict, type KubeObject } from "../../lib/kube/mod.ts";
import type { PlannedEvent } from "../planner/planner.ts";
import type { StatusPart } from "../planner/plan.ts";

/** Where events go (lib/kube's EventRecorder fits). */
export interface EventSink {
  record(
    involved: KubeObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): Promise<void>;
}

/** Once-only event keys remembered (the oldest are forgotten first). */
const MAX_ONCE_KEYS = 10_000;

/** See the module documentation. */
export class PlannedEvents {
  #sink?: EventSink;
  #bootcNodeUid: (name: string) => string | undefined;
  #nodeUid: (name: string) => string | undefined;
  #onceKeys = new Set<string>();

  /**
   * Events go to `sink` (none: dropped); a BootcNode's and a Node's uid are looked up by
   * name (`kubectl describe node` finds a Node's events by its uid).
   */
  constructor(
    sink: EventSink | undefined,
    bootcNodeUid: (name: string) => string | undefined,
    nodeUid: (name: string) => string | undefined = () => undefined,
  ) {
    this.#sink = sink;
    this.#bootcNodeUid = bootcNodeUid;
    this.#nodeUid = nodeUid;
  }

  /** Records `events` of `pool`'s plan. */
  async record(pool: BootcNodePool, events: readonly PlannedEvent[]): Promise<void> {
    const sink = this.#sink;
    if (!sink) return;
    const records: Promise<void>[] = [];
    for (const e of events) {
      if (e.onceKey && !this.#firstTime(e.onceKey)) continue;
      records.push(sink.record(this.#involved(pool, e), e.type, e.reason, e.message));
    }
    await Promise.all(records);
  }

  #firstTime(key: string): boolean {
    if (this.#onceKeys.has(key)) return false;
    this.#onceKeys.add(key);
    // Bounded: keys name nodes and times, so a long-lived controller would collect them.
    if (this.#onceKeys.size > MAX_ONCE_KEYS) {
      this.#onceKeys.delete(this.#onceKeys.values().next().value!);
    }
    return true;
  }

  #involved(pool: BootcNodePool, e: PlannedEvent): KubeObject {
    if (e.regarding.kind === "BootcNodePool") {
      return { apiVersion: pool.apiVersion, kind: "BootcNodePool", metadata: pool.metadata };
    }
    if (e.regarding.kind === "Node") {
      // As kubelet records its own: core v1 Node, cluster scoped, stored in "default".
      const name = e.regarding.name;
      return { apiVersion: "v1", kind: "Node", metadata: { name, uid: this.#nodeUid(name) } };
    }
    return {
      apiVersion: pool.apiVersion,
      kind: "BootcNode",
      metadata: { name: e.regarding.name, uid: this.#bootcNodeUid(e.regarding.name) },
    };
  }
}

/** Every part of a pool's status an event may tell of. */
export const ALL_STATUS_PARTS: ReadonlySet<StatusPart> = new Set<StatusPart>([
  "Degraded",
  "CircuitOpen",
  "UpToDate",
  "Target",
]);

/**
 * `events` but for those about the nodes `nodes` (their Node or BootcNode): what a plan
 * said it did to nodes whose writes did not happen. All of them when there are none.
 * Also none telling of a part of the plan's status that was not written (`untold`: all
 * of them when the reconcile failed before its status write): they wait for the plan
 * that writes it.
 */
export function withoutEventsAbout(
  events: readonly PlannedEvent[],
  nodes: ReadonlySet<string>,
  untold: ReadonlySet<StatusPart> = new Set(),
): PlannedEvent[] {
  return events.filter((e) =>
    (e.ofStatus === undefined || !untold.has(e.ofStatus)) &&
    (e.regarding.kind === "BootcNodePool" || !nodes.has(e.regarding.name))
  );
}

/**
 * The pool's Warning when a reconcile's writes failed (its status is then not written):
 * the error, and the nodes whose planned writes did not all happen. None for a conflict:
 * optimistic concurrency (the pool edited meanwhile), retried at once, is no news.
 */
export function writesFailedEvent(
  pool: string,
  error: unknown,
  nodes: ReadonlySet<string>,
  retryWithinMs: number,
  options: { read?: boolean } = {},
): PlannedEvent | undefined {
  if (isConflict(error)) return undefined;
  const names = [...nodes].sort();
  const which = names.length === 0
    ? ""
    : ` (${options.read ? "nodes waiting, their pods unknown" : "nodes left as they were"}: ${
      names.slice(0, 5).join(", ")
    }${names.length > 5 ? ` and ${names.length - 5} more` : ""})`;
  const why = error instanceof Error ? error.message : String(error);
  const what = options.read
    ? "a read this pool's plan needs failed, asked again"
    : "a write of this pool's plan failed, tried again";
  return {
    regarding: { kind: "BootcNodePool", name: pool },
    type: "Warning",
    reason: "WritesFailed",
    message: `${what} within ${retryWithinMs / 1000} s${which}: ${why}`.slice(0, 1024),
  };
}
