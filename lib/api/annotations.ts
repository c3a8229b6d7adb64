/**
 * Reading the operator's annotations on a BootcNode.
 *
 * @module
 */
import { ANNOTATION_IN_REBOOT_SLOT } from "./constants.ts";

/** True when the BootcNode holds a reboot slot (the slot annotation is the truth). */
export function holdsRebootSlot(
  object: { metadata?: { annotations?: Record<string, string> } },
): boolean {
  return object.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined;
}
