/**
 * A pool's reboot slots and slot queue as the controller publishes them: the
 * limit, what sets it and the slots in use (`status.slots`), and the first
 * nodes waiting for a slot in the order the planner hands slots out, each with
 * what holds it (`status.queue`). The plugin reads them and derives nothing:
 * no budget arithmetic, no schedule, no candidate order of its own. A
 * controller that predates these fields publishes neither; the views then say
 * so instead of guessing.
 *
 * @module
 */
import { ANNOTATION_IN_REBOOT_SLOT, ANNOTATION_SLOT_POOL } from "../lib/api/constants.ts";
import type { QueueEntry, SlotsStatus } from "../lib/api/schema.ts";
import { ordinal } from "./format.ts";
import type { BootcNodePool, NodeLike } from "./model.ts";

/** Said when the controller publishes no `status.slots` (it is older than the plugin). */
export const NOT_PUBLISHED = "not published by the controller (it predates status.slots)";

/** The pool's slots as published, or undefined from a controller that does not publish them. */
export function publishedSlots(pool: BootcNodePool): SlotsStatus | undefined {
  return pool.status?.slots;
}

/**
 * The pool's slot queue as published (empty when nobody waits), or undefined
 * from a controller that does not publish it.
 */
export function publishedQueue(pool: BootcNodePool): readonly QueueEntry[] | undefined {
  if (!pool.status?.slots) return undefined;
  return pool.status.queue ?? [];
}

/** The nodes waiting for a slot: the queue's entries in order and how many wait in all. */
export interface WaitingQueue {
  /** The published entries left, their positions counted again from 1. */
  entries: QueueEntry[];
  /** How many wait (the published count, less the entries left out). */
  waiting: number;
}

/**
 * The published queue without the nodes in flight, renumbered from 1. The
 * controller writes its queue with the status after the plan's grants, so
 * for a moment a node that took its slot is still listed: whether a node is
 * in flight is the classification's word (`inFlight`), and the queue only
 * orders the rest. Undefined from a controller that publishes no queue.
 */
export function waitingQueue(
  pool: BootcNodePool,
  inFlight: ReadonlySet<string>,
): WaitingQueue | undefined {
  const slots = publishedSlots(pool);
  const queue = publishedQueue(pool);
  if (!slots || !queue) return undefined;
  const left = queue.filter((e) => !inFlight.has(e.node));
  const entries = left.map((e, i) => ({ ...e, position: i + 1 }));
  const waiting = Math.max(slots.waiting, queue.length) - (queue.length - left.length);
  return { entries, waiting };
}

/** Where a node stands in the published queue. */
export type QueuePlace =
  /** The controller publishes no queue. */
  | { kind: "unknown" }
  /** In the published part of the queue. */
  | { kind: "queued"; entry: QueueEntry; of: number }
  /** Not in the published part, which is cut while more wait than it holds. */
  | { kind: "beyond"; shown: number; of: number }
  /** Not waiting for a slot (not a candidate, or granted one since). */
  | { kind: "none"; of: number };

/**
 * Where `node` stands in `pool`'s published slot queue, the nodes in flight
 * left out ({@linkcode waitingQueue}).
 */
export function queuePlace(
  pool: BootcNodePool,
  node: string,
  inFlight: ReadonlySet<string> = new Set(),
): QueuePlace {
  const q = waitingQueue(pool, inFlight);
  if (!q) return { kind: "unknown" };
  const of = Math.max(q.waiting, q.entries.length);
  if (inFlight.has(node)) return { kind: "none", of };
  const entry = q.entries.find((e) => e.node === node);
  if (entry) return { kind: "queued", entry, of };
  return of > q.entries.length
    ? { kind: "beyond", shown: q.entries.length, of }
    : { kind: "none", of };
}

/** "2nd of 3 in the slot queue", or what is known of the node's place. */
export function placeText(place: QueuePlace): string {
  switch (place.kind) {
    case "unknown":
      return `place in the slot queue ${NOT_PUBLISHED}`;
    case "queued":
      return `${ordinal(place.entry.position)} of ${place.of} in the slot queue`;
    case "beyond":
      return `after the first ${place.shown} of ${place.of} in the slot queue`;
    case "none":
      return "not in the slot queue";
  }
}

/**
 * "1/2 slot(s) in use (n1)": the published slots in use and limit, and the
 * Nodes that hold one of the pool's slots (their own record says so).
 */
export function slotsText(pool: BootcNodePool, holders: readonly string[]): string {
  const slots = publishedSlots(pool);
  const who = holders.length > 0 ? ` (${holders.join(", ")})` : "";
  if (!slots) return `${holders.length} slot(s) in use${who}; the limit is ${NOT_PUBLISHED}`;
  return `${slots.inUse}/${slots.limit} slot(s) in use${who}`;
}

/** The limit and what sets it, for people: "1 (maxUnavailable 1)", with `until` when scheduled. */
export function limitText(slots: SlotsStatus): string {
  return `${slots.limit} (${slots.message}${slots.until ? ` until ${slots.until}` : ""})`;
}

/** The Nodes holding a reboot slot for `pool`, sorted by name. */
export function slotHolders(pool: string, nodes: Iterable<NodeLike>): string[] {
  const out: string[] = [];
  for (const n of nodes) {
    const a = n.metadata?.annotations ?? {};
    if (a[ANNOTATION_IN_REBOOT_SLOT] !== undefined && a[ANNOTATION_SLOT_POOL] === pool) {
      out.push(n.metadata?.name ?? "");
    }
  }
  return out.sort();
}
