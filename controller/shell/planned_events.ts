/**
 * Records a plan's events: each about the pool or one of its BootcNodes, and
 * those derived from time rather than from a write (timeouts, `onceKey`) once
 * per process, so a level-triggered loop does not repeat them.
 *
 * @module
 */
import type { BootcNodePool } from "../../lib/api/mod.ts";
import type { KubeObject } from "../../lib/kube/mod.ts";
import type { PlannedEvent } from "../planner/planner.ts";

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

/**
 * `events` but for those about node `node` (its Node or BootcNode): what a plan said it did
 * to a node whose writes did not happen. All of them when `node` is undefined.
 */
export function withoutEventsAbout(
  events: readonly PlannedEvent[],
  node: string | undefined,
): PlannedEvent[] {
  if (node === undefined) return [...events];
  return events.filter((e) => e.regarding.kind === "BootcNodePool" || e.regarding.name !== node);
}
