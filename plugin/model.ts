/**
 * The plain objects the plugin's pure functions work on: the operator's
 * resources (types from `lib/api`) and the few fields of core Nodes and Events
 * the plugin reads. Tests build these by hand; the shell (`kube.ts`) fills them
 * from the API server.
 *
 * @module
 */
import type { BootcNode, BootcNodePool, Condition } from "../lib/api/schema.ts";

export type { BootcNode, BootcNodePool, Condition };

/**
 * Pool status fields for people that a newer controller publishes and the
 * plugin reads when present: `status.state`, the one headline with the most
 * important problem first, and `status.targetShort`, the target's short form
 * (tag or channel version, bootc version, 12-hex digest). Read through
 * {@linkcode publishedState} so an older controller (neither field) still works.
 */
export interface PublishedHeadline {
  state?: string;
  targetShort?: string;
}

/** The pool's published `status.state` and `status.targetShort`, when it has them. */
export function publishedState(pool: BootcNodePool): PublishedHeadline {
  const status = pool.status as PublishedHeadline | undefined;
  return {
    state: typeof status?.state === "string" && status.state !== "" ? status.state : undefined,
    targetShort: typeof status?.targetShort === "string" && status.targetShort !== ""
      ? status.targetShort
      : undefined,
  };
}

/** The fields of a core/v1 Node the plugin reads. */
export interface NodeLike {
  metadata?: {
    name?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { unschedulable?: boolean };
  status?: {
    conditions?: { type: string; status: string; lastTransitionTime?: string; reason?: string }[];
  };
}

/** The fields of a core/v1 Event the plugin reads. */
export interface EventLike {
  metadata?: { name?: string; creationTimestamp?: string };
  involvedObject?: { kind?: string; name?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  eventTime?: string | null;
}

/** Everything `status` needs, read at `now`. */
export interface Snapshot {
  pools: BootcNodePool[];
  bootcNodes: BootcNode[];
  nodes: NodeLike[];
  now: Date;
}

/** Parses an RFC 3339 time; undefined when absent or unreadable. */
export function parseTime(text: string | null | undefined): Date | undefined {
  if (!text) return undefined;
  const time = new Date(text);
  return Number.isNaN(time.getTime()) ? undefined : time;
}

/** True when the Node's Ready condition is True. */
export function nodeReady(node: NodeLike | undefined): boolean {
  return node?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
}

/** The time an Event last happened (lastTimestamp, eventTime, firstTimestamp, creation). */
export function eventTime(event: EventLike): Date | undefined {
  return parseTime(event.lastTimestamp) ?? parseTime(event.eventTime) ??
    parseTime(event.firstTimestamp) ?? parseTime(event.metadata?.creationTimestamp);
}
