/**
 * The BootcNode's `Cordoned` and `Drained` conditions, which two writers share
 * by a rule: the daemon sets them at a new target (Waiting) and from the Node
 * it reads before a reboot; the controller, which reads the Node on every
 * reconcile, sets them while it drains the node (cordoned in a slot; draining,
 * or blocked by a PodDisruptionBudget). Neither overwrites the other's answer
 * for the same target without having read the Node. The texts live here so both
 * write the same words for the same fact.
 *
 * A True is a fact of the Node (cordoned in a reboot slot, drained for the
 * target) and lasts only as long as it: the controller, which reads the Node on
 * every plan, sets one False once its fact ended (the slot released or undone),
 * whoever wrote it ({@linkcode endedDrainConditions}). A False is a writer's "not
 * yet" or "not needed" and is left to them.
 *
 * Kept free of the TypeBox schema so the daemon can import it cheaply.
 *
 * @module
 */
import { disruptionRecord, drainedFor } from "./annotations.ts";
import { findCondition, setCondition } from "./conditions.ts";
import { NodeConditionType } from "./constants.ts";
import { shortReference } from "./display.ts";
import type { Condition } from "./schema.ts";

/** Reasons of `Cordoned` / `Drained` written while the controller drains a node. */
export const DrainConditionReason = {
  /** Cordoned True: the Node holds a reboot slot and is cordoned. */
  Cordoned: "Cordoned",
  /** Drained False: the controller is evicting the node's pods. */
  Draining: "Draining",
  /**
   * Drained False: an eviction the drain needs is refused by a PodDisruptionBudget, or
   * the pool's drain policy refuses a pod (emptyDir data without `deleteEmptyDirData`).
   */
  DrainBlocked: "DrainBlocked",
  /** Cordoned or Drained False: the fact it said True ended (the slot released or undone). */
  NotInSlot: "NotInSlot",
} as const;

/** The message of `Cordoned` True for `image` (slot time as the Node records it). */
export function cordonedMessage(image: string, slotAt: string | undefined): string {
  return `Cordoned in a reboot slot for ${shortReference(image)} (slot taken at ${slotAt})`;
}

/** The message of `Drained` False while the controller drains the node for `image`. */
export function drainingMessage(
  image: string,
  blockedBy: string | undefined,
  waitingFor?: string,
): string {
  const short = shortReference(image);
  return blockedBy
    ? `Drain for ${short} blocked: ${blockedBy}`
    : `Draining for ${short}: ${waitingFor ? `waiting for ${waitingFor}` : "evicting its pods"}`;
}

/** What a Node (its disruption record and cordon) says of the facts behind Cordoned and Drained. */
export interface DrainFacts {
  /** It holds a reboot slot and is cordoned. */
  cordonedInSlot: boolean;
  /** Its drain finished for the image the BootcNode names. */
  drainedForTarget: boolean;
}

/** The facts of `node` behind Cordoned and Drained, for the BootcNode's desired `image`. */
export function drainFacts(
  node: { annotations?: Record<string, string>; unschedulable?: boolean },
  image: string,
): DrainFacts {
  const r = disruptionRecord({ metadata: { annotations: node.annotations } });
  return {
    cordonedInSlot: r.slotAt !== undefined && node.unschedulable === true,
    drainedForTarget: drainedFor(r, image),
  };
}

/**
 * `conditions` with each of Cordoned and Drained that says True while its fact
 * no longer holds set False (NotInSlot); undefined when none changes.
 */
export function endedDrainConditions(
  conditions: readonly Condition[] | undefined,
  facts: DrainFacts,
  now: Date,
): Condition[] | undefined {
  const ended = [
    {
      type: NodeConditionType.Cordoned,
      holds: facts.cordonedInSlot,
      message: "Not cordoned in a reboot slot: the slot was released or undone",
    },
    {
      type: NodeConditionType.Drained,
      holds: facts.drainedForTarget,
      message: "No drain in place for a reboot: the slot was released or undone",
    },
  ];
  let out: Condition[] | undefined;
  for (const e of ended) {
    if (e.holds || findCondition(conditions, e.type)?.status !== "True") continue;
    out = setCondition(out ?? conditions, {
      type: e.type,
      status: "False",
      reason: DrainConditionReason.NotInSlot,
      message: e.message,
    }, now);
  }
  return out;
}
