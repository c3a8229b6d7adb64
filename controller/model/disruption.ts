/**
 * The Node disruption record as writes: granting a slot (record and cordon in
 * one Node patch), repairing a record someone damaged, and releasing a node
 * (prior cordon restored, record removed). Pure patch builders.
 *
 * Write order keeps the two copies of the prior cordon state honest: the Node
 * record is written before the BootcNode mirror and removed after it, so a
 * mirror without a Node record always means the record was lost (not that a
 * release half-finished).
 *
 * @module
 */
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type DisruptionRecord,
  disruptionRecord,
  LABEL_MANAGED,
  readNodeFacts,
} from "../../lib/api/mod.ts";
import type { MergePatch } from "../planner/plan.ts";
import { formatTime, parseTime, pastTime } from "./slots.ts";
import type { NodeSummary } from "./types.ts";

/** Every annotation of the Node disruption record. */
export const RECORD_ANNOTATIONS = [
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
] as const;

/** The Node record of a summary. */
export function recordOf(node: NodeSummary): DisruptionRecord {
  return disruptionRecord({ metadata: { annotations: node.annotations } });
}

/** The prior cordon state mirrored on a BootcNode, if any (`NodeFacts.mirror`). */
export function mirrorOf(bn: BootcNode | undefined): string | undefined {
  return readNodeFacts({ bootcNode: bn }).mirror;
}

/**
 * True when the operator has work to finish or undo on this node: the Node carries
 * (part of) the record, or the BootcNode still mirrors a prior cordon state
 * (`NodeFacts.recorded`).
 */
export function nodeDisrupted(node: NodeSummary, bn: BootcNode | undefined): boolean {
  return readNodeFacts({ node, bootcNode: bn }).recorded;
}

/** The Node patch removing the record's annotations, cordon untouched (undefined: none there). */
export function dropRecordPatch(node: NodeSummary): MergePatch | undefined {
  const annotations: Record<string, null> = {};
  for (const key of RECORD_ANNOTATIONS) {
    if (node.annotations?.[key] !== undefined) annotations[key] = null;
  }
  return Object.keys(annotations).length > 0 ? { metadata: { annotations } } : undefined;
}

/** The Node patch that grants a slot: the record and the cordon in one write. */
export function grantPatch(node: NodeSummary, pool: string, now: Date): MergePatch {
  const patch: MergePatch = {
    metadata: {
      annotations: {
        [ANNOTATION_IN_REBOOT_SLOT]: formatTime(now),
        [ANNOTATION_SLOT_POOL]: pool,
        [ANNOTATION_WAS_CORDONED]: String(node.unschedulable),
      },
    },
  };
  if (!node.unschedulable) patch.spec = { unschedulable: true };
  return patch;
}

/** The prior cordon state as far as it is known (`NodeFacts.priorCordon`). */
export function priorCordon(node: NodeSummary, bn: BootcNode | undefined): string | undefined {
  return readNodeFacts({ node, bootcNode: bn }).priorCordon;
}

/** What {@linkcode repairPatch} found and fixed. */
export interface Repair {
  /** The Node patch, when something was missing. */
  patch?: MergePatch;
  /** The record as it will be after the patch. */
  record: DisruptionRecord;
  /** Human-readable descriptions of each repair (for events). */
  fixed: string[];
  /** Set when the prior cordon state was lost on both copies. */
  priorCordonLost?: boolean;
}

/**
 * Completes a damaged record of a disrupted member: a missing or unreadable slot
 * annotation is put back (the node keeps counting against every budget until the
 * operator is done, and its drain timeout can fire), a missing pool named, and a missing prior cordon state
 * comes back from the BootcNode's mirror. When both copies are gone and the node is
 * cordoned, nobody can know whether the user had cordoned it: record "true" (never
 * uncordon what we cannot prove we cordoned) and report it.
 */
export function repairPatch(
  node: NodeSummary,
  bn: BootcNode | undefined,
  pool: string,
  now: Date,
): Repair {
  const record = { ...recordOf(node) };
  const set: Record<string, string> = {};
  const fixed: string[] = [];
  let priorCordonLost: boolean | undefined;
  const drainedAt = pastTime(record.drainedAt, now);
  if (record.drainedAt !== undefined && drainedAt === undefined && parseTime(record.drainedAt)) {
    // The reboot timeout is measured from it: a time ahead of now would never let it fire.
    record.drainedAt = formatTime(now);
    set[ANNOTATION_DRAINED_AT] = record.drainedAt;
    fixed.push(`replaced its ${ANNOTATION_DRAINED_AT} in the future with ${record.drainedAt}`);
  }
  if (record.slotAt === undefined || pastTime(record.slotAt, now) === undefined) {
    // The drain timeout is measured from the slot time: an unreadable one (or one ahead
    // of now) would never let it fire. The finished drain is the best bound we have, else now.
    const garbled = record.slotAt;
    const drained = pastTime(record.drainedAt, now);
    record.slotAt = drained ? formatTime(drained) : formatTime(now);
    set[ANNOTATION_IN_REBOOT_SLOT] = record.slotAt;
    fixed.push(
      garbled === undefined
        ? `restored its missing ${ANNOTATION_IN_REBOOT_SLOT} annotation`
        : `replaced its unreadable ${ANNOTATION_IN_REBOOT_SLOT} annotation ` +
          `(${
            JSON.stringify(garbled)
          }: not an RFC 3339 time, or in the future) with ${record.slotAt}`,
    );
  }
  // Another pool's record is never repaired into this pool's (record_origin.ts hands it back).
  if (record.pool !== pool) {
    record.pool = pool;
    set[ANNOTATION_SLOT_POOL] = pool;
  }
  if (record.wasCordoned !== "true" && record.wasCordoned !== "false") {
    const mirror = mirrorOf(bn);
    if (mirror === "true" || mirror === "false") {
      record.wasCordoned = mirror;
      fixed.push(`restored its prior cordon state (${mirror}) from the BootcNode`);
    } else if (!node.unschedulable) {
      // Not cordoned now: whoever removed the record also uncordoned it; that is the state to keep.
      record.wasCordoned = "false";
    } else {
      record.wasCordoned = "true";
      priorCordonLost = true;
    }
    set[ANNOTATION_WAS_CORDONED] = record.wasCordoned;
  }
  return {
    patch: Object.keys(set).length > 0 ? { metadata: { annotations: set } } : undefined,
    record,
    fixed,
    priorCordonLost,
  };
}

/**
 * The Node patch that hands a node back: restore the cordon state recorded
 * before we took it, drop the record, and optionally the managed label. With no
 * known prior state the node is left as it is (never uncordon blindly).
 */
export function releasePatch(
  node: NodeSummary,
  bn: BootcNode | undefined,
  options: { unlabel: boolean },
): MergePatch | undefined {
  const metadata: MergePatch = {};
  const annotations: Record<string, null> = {};
  for (const key of RECORD_ANNOTATIONS) {
    if (node.annotations?.[key] !== undefined) annotations[key] = null;
  }
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  if (options.unlabel && Object.hasOwn(node.labels, LABEL_MANAGED)) {
    metadata.labels = { [LABEL_MANAGED]: null };
  }
  const patch: MergePatch = {};
  if (Object.keys(metadata).length > 0) patch.metadata = metadata;
  if (priorCordon(node, bn) === "false" && node.unschedulable) {
    patch.spec = { unschedulable: null };
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** How a release leaves the Node's cordon, for the NodeUpdated event ("" when it was not cordoned). */
export function releaseCordonNote(node: NodeSummary, bn: BootcNode | undefined): string {
  if (!node.unschedulable) return "";
  const prior = priorCordon(node, bn);
  if (prior === "false") return ", uncordoned";
  if (prior === "true") return ", left cordoned (it was cordoned before its update)";
  return ", left cordoned (its prior cordon state was lost)";
}

/** The BootcNode patch that drops the mirror (and any reboot request) before a release. */
export function releaseBootcNodePatch(bn: BootcNode | undefined): MergePatch | undefined {
  if (!bn) return undefined;
  const patch: MergePatch = {};
  if (mirrorOf(bn) !== undefined) {
    patch.metadata = { annotations: { [ANNOTATION_WAS_CORDONED]: null } };
  }
  if (bn.spec.desiredImageState === "Booted") patch.spec = { desiredImageState: "Staged" };
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** The Node patch recording a finished drain for `image` (before Booted is asked for). */
export function drainedPatch(image: string, now: Date): MergePatch {
  return {
    metadata: {
      annotations: { [ANNOTATION_DRAINED_AT]: formatTime(now), [ANNOTATION_DRAINED_FOR]: image },
    },
  };
}

/** The Node patch that withdraws a finished drain (the target moved, or pods may be back). */
export function undrainPatch(node: NodeSummary): MergePatch | undefined {
  const annotations: Record<string, null> = {};
  for (const key of [ANNOTATION_DRAINED_AT, ANNOTATION_DRAINED_FOR]) {
    if (node.annotations?.[key] !== undefined) annotations[key] = null;
  }
  return Object.keys(annotations).length > 0 ? { metadata: { annotations } } : undefined;
}
