/**
 * Reading the operator's annotations: the disruption record on a Node (reboot
 * slot, prior cordon state, finished drain) and the one rule both the
 * controller and the daemon use to decide whether a node may reboot now.
 *
 * Kept free of the TypeBox schema so the daemon can import it cheaply.
 *
 * @module
 */
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  RebootAllowedReason,
} from "./constants.ts";
import { owningPool } from "./ownership.ts";
import { shortReference } from "./display.ts";

/** Anything with (optional) annotations: a Node, a BootcNode, a summary. */
export interface Annotated {
  metadata?: { annotations?: Record<string, string> };
}

/** True when the object (a Node) holds a reboot slot (the slot annotation is the truth). */
export function holdsRebootSlot(object: Annotated): boolean {
  return object.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined;
}

/**
 * True when a Node carries any part of the operator's disruption record (slot,
 * prior cordon state or finished drain): the operator has work to finish or undo
 * there, and the node counts as disrupted for every budget until it has.
 */
export function isDisrupted(object: Annotated): boolean {
  const a = object.metadata?.annotations;
  if (!a) return false;
  return a[ANNOTATION_IN_REBOOT_SLOT] !== undefined ||
    a[ANNOTATION_WAS_CORDONED] !== undefined ||
    a[ANNOTATION_DRAINED_AT] !== undefined ||
    a[ANNOTATION_DRAINED_FOR] !== undefined;
}

/** The disruption record of a Node, as read from its annotations. */
export interface DisruptionRecord {
  /** When the slot was taken (raw annotation value), if the slot annotation is present. */
  slotAt?: string;
  /** The pool that holds the slot. */
  pool?: string;
  /** "true" / "false" as written, if present. */
  wasCordoned?: string;
  /** When the drain finished (raw), if present. */
  drainedAt?: string;
  /** The image the finished drain was for, if present. */
  drainedFor?: string;
}

/** Reads a Node's disruption record. */
export function disruptionRecord(object: Annotated): DisruptionRecord {
  const a = object.metadata?.annotations ?? {};
  const out: DisruptionRecord = {};
  if (a[ANNOTATION_IN_REBOOT_SLOT] !== undefined) out.slotAt = a[ANNOTATION_IN_REBOOT_SLOT];
  if (a[ANNOTATION_SLOT_POOL] !== undefined) out.pool = a[ANNOTATION_SLOT_POOL];
  if (a[ANNOTATION_WAS_CORDONED] !== undefined) out.wasCordoned = a[ANNOTATION_WAS_CORDONED];
  if (a[ANNOTATION_DRAINED_AT] !== undefined) out.drainedAt = a[ANNOTATION_DRAINED_AT];
  if (a[ANNOTATION_DRAINED_FOR] !== undefined) out.drainedFor = a[ANNOTATION_DRAINED_FOR];
  return out;
}

/**
 * True when the record holds a finished drain for exactly `image`: the one rule for
 * "drained for the desired image" that the planner, the daemon and every view read.
 */
export function drainedFor(record: DisruptionRecord, image: string | undefined): boolean {
  return image !== undefined && record.drainedAt !== undefined && record.drainedFor === image;
}

/**
 * True when the record lets the daemon apply `bn`'s target: Booted is asked for, and
 * the Node holds a slot and a finished drain for that image. The cordon and the owner
 * aside, this is {@linkcode rebootAuthorization}; a node it holds for may be down.
 */
export function rebootRecorded(record: DisruptionRecord, bn: BootcNodeForReboot): boolean {
  return bn.spec?.desiredImageState === "Booted" && record.slotAt !== undefined &&
    drainedFor(record, bn.spec.desiredImage);
}

/** What {@linkcode rebootAuthorization} looks at of a Node. */
export interface NodeForReboot extends Annotated {
  spec?: { unschedulable?: boolean };
}

/** What {@linkcode rebootAuthorization} looks at of a BootcNode. */
export interface BootcNodeForReboot {
  metadata?: {
    ownerReferences?: { kind: string; controller?: boolean; name: string }[];
  };
  spec?: { desiredImage?: string; desiredImageState?: string };
}

/** The answer of {@linkcode rebootAuthorization}. */
export interface RebootAuthorization {
  allowed: boolean;
  /** A {@linkcode RebootAllowedReason}. */
  reason: string;
  message: string;
}

/** True when the BootcNode is controlled by a BootcNodePool (the controller owns it). */
export function ownedByPool(bn: BootcNodeForReboot): boolean {
  return owningPool(bn) !== undefined;
}

/**
 * Whether a node may apply its staged image and reboot now: only when its
 * BootcNode (owned by a pool) asks for Booted, and its Node is cordoned, holds a
 * reboot slot and records a finished drain for exactly the desired image. The
 * daemon checks this on authoritative reads right before invoking bootc; the
 * test invariant checker judges every apply by the same rule.
 */
export function rebootAuthorization(
  node: NodeForReboot | undefined,
  bn: BootcNodeForReboot,
): RebootAuthorization {
  const want = bn.spec?.desiredImage ?? "";
  if (!ownedByPool(bn)) {
    return {
      allowed: false,
      reason: RebootAllowedReason.NotOwned,
      message: "this BootcNode is not owned by a BootcNodePool; nothing is applied until " +
        "a pool's controller adopts it",
    };
  }
  if (bn.spec?.desiredImageState !== "Booted") {
    return {
      allowed: false,
      reason: RebootAllowedReason.NotRequested,
      message: "desiredImageState is not Booted",
    };
  }
  if (!node) {
    return {
      allowed: false,
      reason: RebootAllowedReason.NoRebootSlot,
      message: "Booted was requested but the Node could not be read",
    };
  }
  const r = disruptionRecord(node);
  if (r.slotAt === undefined) {
    return {
      allowed: false,
      reason: RebootAllowedReason.NoRebootSlot,
      message: `Booted was requested but the Node holds no reboot slot ` +
        `(no ${ANNOTATION_IN_REBOOT_SLOT} annotation); keeping the image staged`,
    };
  }
  if (!drainedFor(r, want)) {
    return {
      allowed: false,
      reason: RebootAllowedReason.AwaitingDrain,
      message: r.drainedAt === undefined
        ? "the Node holds a reboot slot but its drain has not finished"
        : `the Node's finished drain was for ${
          r.drainedFor ? shortReference(r.drainedFor) : "(unknown image)"
        }, not ${shortReference(want)}`,
    };
  }
  if (node.spec?.unschedulable !== true) {
    return {
      allowed: false,
      reason: RebootAllowedReason.AwaitingDrain,
      message: "the Node is not cordoned; pods could be scheduled onto it",
    };
  }
  return {
    allowed: true,
    reason: RebootAllowedReason.SlotAndDrain,
    message: `the Node holds a reboot slot and is drained for ${want}`,
  };
}
