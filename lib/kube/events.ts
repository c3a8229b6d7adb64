/**
 * Kubernetes Events (core/v1) for objects the operator acts on, correlated the
 * way client-go's EventRecorder (EventCorrelator) does, so a loop that retries
 * or a rollout over many nodes does not flood the API:
 *
 * - **Repeats** (same object, type, reason and message) are one Event whose
 *   `count` and `lastTimestamp` are patched. With
 *   {@linkcode EventRecorderOptions.minPatchIntervalMs} the patches of one Event
 *   are at least that far apart: repeats in between are counted locally and the
 *   next patch (on a timer, or {@linkcode EventRecorder.flush}) carries them, like
 *   an events.k8s.io series.
 * - **Similar events** (same object, type and reason, different messages): once
 *   {@linkcode EventRecorderOptions.maxSimilar} distinct messages were recorded
 *   within {@linkcode EventRecorderOptions.similarWindowMs}, further ones go to one
 *   Event whose message is `(combined from similar events): <latest message>`
 *   (client-go's EventAggregator: 10 within 10 minutes).
 *
 * Recording never throws: failures are logged.
 *
 * @module
 */

import { type Clock, formatTime, systemClock } from "../clock.ts";
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
  /**
   * Least time between two count patches of one Event (default 0: every repeat is
   * patched at once). Repeats in between are written by the next patch.
   */
  minPatchIntervalMs?: number;
  /** Distinct messages per object, type and reason before they are combined (default 10). */
  maxSimilar?: number;
  /** The window in which similar events are counted (default 10 minutes). */
  similarWindowMs?: number;
}

interface CacheEntry {
  name: string;
  namespace: string;
  /** Occurrences so far (written or not). */
  count: number;
  /** The count the API has. */
  written: number;
  /** When the Event was last written (epoch ms). */
  writtenAt: number;
  /** The latest occurrence's time and message (a combined Event shows the latest). */
  lastTimestamp: string;
  message: string;
  /** The Event stands for many similar ones: each patch carries the latest message. */
  combined: boolean;
  /** A flush of the unwritten repeats is scheduled. */
  flushing?: AbortController;
}

interface SimilarEntry {
  /** Distinct messages seen in the window. */
  messages: Set<string>;
  /** When the window started (epoch ms). */
  since: number;
}

/** Prefix of a combined event's message (client-go's wording). */
export const COMBINED_PREFIX = "(combined from similar events): ";

/** Longest event message the API accepts is 1 KiB in events.k8s.io; keep core Events reasonable too. */
const MAX_MESSAGE = 1024;

/** Records core/v1 Events with aggregation of repeats and similar events. */
export class EventRecorder {
  #events: KubeClient;
  #component: string;
  #host?: string;
  #namespace: string;
  #clock: Clock;
  #log: Logger;
  #cacheSize: number;
  #minPatchIntervalMs: number;
  #maxSimilar: number;
  #similarWindowMs: number;
  #cache = new Map<string, CacheEntry>();
  #similar = new Map<string, SimilarEntry>();
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
    this.#minPatchIntervalMs = options.minPatchIntervalMs ?? 0;
    this.#maxSimilar = options.maxSimilar ?? 10;
    this.#similarWindowMs = options.similarWindowMs ?? 10 * 60_000;
  }

  #resource(namespace: string): ResourceClient<CoreEvent> {
    return this.#events.resource<CoreEvent>(Resources.events, namespace);
  }

  /**
   * Records an event about `involved`. Resolves when written (or failed and
   * logged, or counted for a later patch); never rejects.
   */
  record(involved: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const md = involved.metadata ?? {};
    let msg = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    const similarKey = JSON.stringify([
      involved.apiVersion,
      involved.kind,
      md.namespace,
      md.name,
      md.uid,
      type,
      reason,
    ]);
    let key = JSON.stringify([similarKey, msg]);
    let combined = false;
    if (!this.#cache.has(key) && this.#tooManySimilar(similarKey, msg)) {
      // client-go's EventAggregator: one Event for the rest, showing the latest message.
      key = similarKey;
      combined = true;
      msg = `${COMBINED_PREFIX}${msg}`.slice(0, MAX_MESSAGE);
    }
    const previous = this.#inflight.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.#write(key, involved, type, reason, msg, combined));
    this.#inflight.set(key, next);
    return next.finally(() => {
      if (this.#inflight.get(key) === next) this.#inflight.delete(key);
    });
  }

  /**
   * Writes every repeat counted but not yet patched (see
   * {@linkcode EventRecorderOptions.minPatchIntervalMs}); call before exiting.
   */
  async flush(): Promise<void> {
    const due = [...this.#cache].filter(([, e]) => e.count > e.written);
    await Promise.all(due.map(([key, entry]) => {
      entry.flushing?.abort();
      entry.flushing = undefined;
      return this.#serialized(key, () => this.#patch(key, entry));
    }));
  }

  #serialized(key: string, fn: () => Promise<void>): Promise<void> {
    const previous = this.#inflight.get(key) ?? Promise.resolve();
    const next = previous.then(fn);
    this.#inflight.set(key, next);
    return next.finally(() => {
      if (this.#inflight.get(key) === next) this.#inflight.delete(key);
    });
  }

  /** Notes a distinct message of `similarKey`; true once too many were seen in the window. */
  #tooManySimilar(similarKey: string, message: string): boolean {
    const now = this.#clock.now().getTime();
    let entry = this.#similar.get(similarKey);
    if (!entry || now - entry.since > this.#similarWindowMs) {
      entry = { messages: new Set(), since: now };
    }
    this.#similar.delete(similarKey);
    this.#similar.set(similarKey, entry);
    if (this.#similar.size > this.#cacheSize) {
      this.#similar.delete(this.#similar.keys().next().value!);
    }
    if (entry.messages.has(message)) return false;
    if (entry.messages.size >= this.#maxSimilar) return true;
    entry.messages.add(message);
    return false;
  }

  #timestamp(): string {
    return formatTime(this.#clock.now());
  }

  /** PATCHes the entry's count (and, for a combined Event, its latest message). */
  async #patch(key: string, entry: CacheEntry): Promise<void> {
    const count = entry.count;
    if (count <= entry.written) return;
    try {
      await this.#resource(entry.namespace).patch(entry.name, {
        count,
        lastTimestamp: entry.lastTimestamp,
        ...(entry.combined ? { message: entry.message } : {}),
      }, { type: "merge" });
      entry.written = Math.max(entry.written, count);
      entry.writtenAt = this.#clock.now().getTime();
    } catch (e) {
      if (isNotFound(e)) {
        // The Event expired (events have a TTL): the next occurrence starts a new one.
        if (this.#cache.get(key) === entry) this.#cache.delete(key);
        return;
      }
      this.#log.warn("recording event failed", { error: e, event: entry.name });
    }
  }

  /** Patches the entry's unwritten repeats once the minimum interval has passed. */
  #scheduleFlush(key: string, entry: CacheEntry): void {
    if (entry.flushing) return;
    const abort = new AbortController();
    entry.flushing = abort;
    const wait = Math.max(
      0,
      entry.writtenAt + this.#minPatchIntervalMs - this.#clock.now().getTime(),
    );
    this.#clock.sleep(wait, abort.signal).then(
      () => {
        if (entry.flushing !== abort) return;
        entry.flushing = undefined;
        void this.#serialized(key, () => this.#patch(key, entry));
      },
      () => {/* flushed or superseded */},
    );
  }

  async #write(
    key: string,
    involved: KubeObject,
    type: EventType,
    reason: string,
    message: string,
    combined: boolean,
  ): Promise<void> {
    const now = this.#timestamp();
    const cached = this.#cache.get(key);
    try {
      if (cached) {
        cached.count++;
        cached.lastTimestamp = now;
        cached.message = message;
        // Refresh recency for the LRU.
        this.#cache.delete(key);
        this.#cache.set(key, cached);
        const since = this.#clock.now().getTime() - cached.writtenAt;
        if (this.#minPatchIntervalMs > 0 && since < this.#minPatchIntervalMs) {
          this.#scheduleFlush(key, cached);
          return;
        }
        cached.flushing?.abort();
        cached.flushing = undefined;
        await this.#patch(key, cached);
        if (this.#cache.get(key) === cached) return;
        // The Event expired: start a new one.
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
      this.#cache.set(key, {
        name,
        namespace,
        count: 1,
        written: 1,
        writtenAt: this.#clock.now().getTime(),
        lastTimestamp: now,
        message,
        combined,
      });
      if (this.#cache.size > this.#cacheSize) {
        const oldest = this.#cache.keys().next().value!;
        this.#cache.get(oldest)?.flushing?.abort();
        this.#cache.delete(oldest);
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
