/**
 * Kubernetes Events (core/v1) for objects the operator acts on. Repeats of the
 * same event (same object, type, reason and message) are aggregated into one
 * Event whose `count` and `lastTimestamp` are patched, so a loop that retries
 * does not flood the API. Recording never throws: failures are logged.
 *
 * @module
 */

import { type Clock, systemClock } from "../clock.ts";
import { type Logger, silentLogger } from "../log.ts";
import type { KubeClient } from "./client.ts";
import { isNotFound } from "./errors.ts";
import { Resources } from "./resources.ts";
import type { KubeObject, ResourceClient } from "./types.ts";

/** Event type. */
export type EventType = "Normal" | "Warning";

/** The fields of a core/v1 Event the recorder writes. */
export interface CoreEvent extends KubeObject {
  involvedObject: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
  };
  reason: string;
  message: string;
  type: EventType;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
}

/** Options of {@linkcode EventRecorder}. */
export interface EventRecorderOptions {
  client: KubeClient;
  /** `source.component`, e.g. "bootc-operator-controller". */
  component: string;
  /** `source.host` / `reportingInstance`, e.g. the node name. */
  host?: string;
  /**
   * Namespace for events about cluster-scoped objects (default "default"). The API
   * server accepts only "default" there; the option exists for servers that differ.
   */
  namespace?: string;
  clock?: Clock;
  logger?: Logger;
  /** How many distinct events to remember for aggregation (default 4096). */
  cacheSize?: number;
}

interface CacheEntry {
  name: string;
  namespace: string;
  count: number;
}

/** Longest event message the API accepts is 1 KiB in events.k8s.io; keep core Events reasonable too. */
const MAX_MESSAGE = 1024;

/** Records core/v1 Events with aggregation of repeats. */
export class EventRecorder {
  #events: KubeClient;
  #component: string;
  #host?: string;
  #namespace: string;
  #clock: Clock;
  #log: Logger;
  #cacheSize: number;
  #cache = new Map<string, CacheEntry>();
  /** Serializes records of the same key so repeats patch instead of racing to create. */
  #inflight = new Map<string, Promise<void>>();
  #seq = 0;

  /** Creates a recorder. */
  constructor(options: EventRecorderOptions) {
    this.#events = options.client;
    this.#component = options.component;
    this.#host = options.host;
    this.#namespace = options.namespace ?? "default";
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#cacheSize = options.cacheSize ?? 4096;
  }

  #resource(namespace: string): ResourceClient<CoreEvent> {
    return this.#events.resource<CoreEvent>(Resources.events, namespace);
  }

  /**
   * Records an event about `involved`. Resolves when written (or failed and
   * logged); never rejects.
   */
  record(involved: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const md = involved.metadata ?? {};
    const msg = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    const key = JSON.stringify([
      involved.apiVersion,
      involved.kind,
      md.namespace,
      md.name,
      md.uid,
      type,
      reason,
      msg,
    ]);
    const previous = this.#inflight.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.#write(key, involved, type, reason, msg));
    this.#inflight.set(key, next);
    return next.finally(() => {
      if (this.#inflight.get(key) === next) this.#inflight.delete(key);
    });
  }

  async #write(
    key: string,
    involved: KubeObject,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    const now = this.#clock.now().toISOString().replace(/\.\d{3}Z$/, "Z");
    const cached = this.#cache.get(key);
    try {
      if (cached) {
        try {
          await this.#resource(cached.namespace).patch(cached.name, {
            count: cached.count + 1,
            lastTimestamp: now,
          }, { type: "merge" });
          cached.count++;
          // Refresh recency for the LRU.
          this.#cache.delete(key);
          this.#cache.set(key, cached);
          return;
        } catch (e) {
          if (!isNotFound(e)) throw e;
          // The Event expired (events have a TTL): start a new one.
          this.#cache.delete(key);
        }
      }
      const md = involved.metadata ?? {};
      const namespace = md.namespace || this.#namespace;
      // Object names may be 253 characters: keep the event name within that too.
      const name = `${(md.name ?? "unknown").slice(0, 230)}.${
        this.#clock.now().getTime().toString(16)
      }${(this.#seq++ % 4096).toString(16).padStart(3, "0")}`;
      const event: CoreEvent = {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: involved.apiVersion,
          kind: involved.kind,
          name: md.name,
          namespace: md.namespace,
          uid: md.uid,
          resourceVersion: md.resourceVersion,
        },
        reason,
        message,
        type,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: this.#component, ...(this.#host ? { host: this.#host } : {}) },
        reportingComponent: this.#component,
        // The API server limits reportingInstance to 128 characters.
        reportingInstance: (this.#host ?? this.#component).slice(0, 128),
      };
      await this.#resource(namespace).create(event);
      this.#cache.set(key, { name, namespace, count: 1 });
      if (this.#cache.size > this.#cacheSize) {
        this.#cache.delete(this.#cache.keys().next().value!);
      }
    } catch (e) {
      this.#log.warn("recording event failed", {
        error: e,
        reason,
        kind: involved.kind,
        name: involved.metadata?.name,
      });
    }
  }
}
