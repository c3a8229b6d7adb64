/**
 * Reboot slots: when a slot node counts as unhealthy for the halt rule (two or
 * more unhealthy slot nodes stop new assignments). How many slots there are is
 * `lib/api/budget.ts` (with the schedules in `gates/budget.ts`).
 *
 * @module
 */
import { formatTime, parseTime, pastTime } from "../../lib/clock.ts";

/** Where a slot node is in its cycle, as far as health is concerned. */
export interface SlotHealthInput {
  /** The BootcNode reports Degraded=True. */
  degraded: boolean;
  /** The Node's Ready condition is True. */
  ready: boolean;
  /** The drain has not finished within drainTimeoutSeconds. */
  drainTimedOut: boolean;
  /** The reboot was requested (drained-at is set). */
  rebootRequested: boolean;
  /** The node has not come back within rebootTimeoutSeconds of drained-at. */
  rebootTimedOut: boolean;
}

/**
 * Why a slot node is unhealthy, or undefined when it is healthy. A node that
 * was asked to reboot is expected to be NotReady for a while, so NotReady only
 * counts once the reboot deadline has passed; before the reboot request a
 * NotReady node is unhealthy at once (the design's "Degraded or not Ready").
 */
export function slotUnhealthyReason(input: SlotHealthInput): string | undefined {
  if (input.degraded) return "reports Degraded";
  if (input.drainTimedOut) return "drain timed out";
  if (input.rebootTimedOut) return "did not come back from its reboot in time";
  if (!input.rebootRequested && !input.ready) return "is not Ready";
  return undefined;
}

/** RFC 3339 date-time (`T` or `t`, fractional seconds, `Z` or an offset). */
/** Times as the API writes them (lib/clock.ts), re-exported for the controller's modules. */
export { formatTime, parseTime, pastTime };
