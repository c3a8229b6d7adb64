/**
 * The BootcNode's `Cordoned` and `Drained` conditions, which two writers share
 * by a rule: the daemon sets them at a new target (Waiting) and from the Node
 * it reads before a reboot; the controller, which reads the Node on every
 * reconcile, sets them while it drains the node (cordoned in a slot; draining,
 * or blocked by a PodDisruptionBudget). Neither overwrites the other's answer
 * for the same target without having read the Node. The texts live here so both
 * write the same words for the same fact.
 *
 * Kept free of the TypeBox schema so the daemon can import it cheaply.
 *
 * @module
 */
import { shortReference } from "./display.ts";

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
} as const;

/** The message of `Cordoned` True for `image` (slot time as the Node records it). */
export function cordonedMessage(image: string, slotAt: string | undefined): string {
  return `Cordoned in a reboot slot for ${shortReference(image)} (slot taken at ${slotAt})`;
}

/** The message of `Drained` False while the controller drains the node for `image`. */
export function drainingMessage(image: string, blockedBy: string | undefined): string {
  const short = shortReference(image);
  return blockedBy
    ? `Drain for ${short} blocked: ${blockedBy}`
    : `Draining for ${short}: evicting its pods`;
}
