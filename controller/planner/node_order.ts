/**
 * The order reboot slots go to a pool's candidates (its staged, Ready nodes: one still
 * downloading holds no one back): the Node's update priority first
 * (`bootc.dev/update-priority`, higher first, unset 1, 0 skips the node), then the pool's
 * `spec.rollout.order`, then the name. The node the acting controller runs on comes after every
 * other candidate (only skipped nodes, which get no slot, are listed after it), so the
 * controller is not drained away while it still has nodes to update; alone, it is also first.
 *
 * @module
 */
import {
  ANNOTATION_UPDATE_PRIORITY,
  type BootcNodePool,
  type RolloutOrder,
} from "../../lib/api/mod.ts";
import type { Member } from "./membership.ts";

/** The priority of a Node without the annotation. */
export const DEFAULT_PRIORITY = 1;
/** The highest priority the annotation may give. */
export const MAX_PRIORITY = 1000;
/** The zone label ZoneByZone orders by. */
export const ZONE_LABEL = "topology.kubernetes.io/zone";

/** A candidate's place: skipped or not, and what set it besides its name. */
export interface NodePlace {
  /** Priority 0: it gets no slot. */
  skipped: boolean;
  /** For `status.queue[].orderedBy`; undefined when only the name orders it. */
  orderedBy?: string;
}

interface Keyed {
  member: Member;
  last: boolean;
  priority: number;
  key: string;
  place: NodePlace;
}

/** `members` in slot order, with each one's place. */
export function orderCandidates(
  members: readonly Member[],
  pool: BootcNodePool,
  controllerNode?: string,
): { ordered: Member[]; places: Map<string, NodePlace> } {
  const order = pool.spec.rollout.order ?? "Default";
  const keyed = members.map((m) => keyOf(m, order, controllerNode));
  keyed.sort((a, b) =>
    Number(a.place.skipped) - Number(b.place.skipped) || Number(a.last) - Number(b.last) ||
    b.priority - a.priority ||
    compare(a.key, b.key, order === "NewestFirst") ||
    compare(a.member.node.name, b.member.node.name)
  );
  return {
    ordered: keyed.map((k) => k.member),
    places: new Map(keyed.map((k) => [k.member.node.name, k.place])),
  };
}

/** Missing keys ("") sort after every present one, whichever the direction. */
function compare(a: string, b: string, descending = false): number {
  if (a === b) return 0;
  if (a === "") return 1;
  if (b === "") return -1;
  return (a < b ? -1 : 1) * (descending ? -1 : 1);
}

function keyOf(m: Member, order: RolloutOrder, controllerNode: string | undefined): Keyed {
  const why: string[] = [];
  const { priority, note } = priorityOf(m.node.annotations?.[ANNOTATION_UPDATE_PRIORITY]);
  if (note) why.push(note);
  let key = "";
  if (order === "ZoneByZone") {
    key = m.node.labels[ZONE_LABEL] ?? "";
    why.push(key ? `zone ${key}` : "no zone label: after the zones");
  } else if (order === "OldestFirst" || order === "NewestFirst") {
    key = m.node.created ?? "";
    why.push(key ? `created ${key}` : "creation time unknown: last");
  }
  const last = m.node.name === controllerNode;
  if (last) why.push("runs the controller: last");
  return {
    member: m,
    last,
    priority,
    key,
    place: { skipped: priority === 0, ...(why.length ? { orderedBy: why.join(", ") } : {}) },
  };
}

/** The annotation's priority; a value that is not an integer 0–1000 counts as unset. */
function priorityOf(value: string | undefined): { priority: number; note?: string } {
  if (value === undefined) return { priority: DEFAULT_PRIORITY };
  const n = /^\d{1,4}$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(n <= MAX_PRIORITY)) {
    return {
      priority: DEFAULT_PRIORITY,
      note: `${ANNOTATION_UPDATE_PRIORITY} ${JSON.stringify(value.slice(0, 16))} ignored ` +
        `(not 0-${MAX_PRIORITY})`,
    };
  }
  return { priority: n, note: n === 0 ? "priority 0: skipped" : `priority ${n}` };
}
