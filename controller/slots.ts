/**
 * Reboot slots: how many there are, and when a slot node counts as unhealthy
 * for the halt rule (two or more unhealthy slot nodes stop new assignments).
 *
 * @module
 */

/**
 * Resolves `maxUnavailable` against the pool size: an integer as is, a
 * percentage of `nodeCount` rounded up (as DaemonSets do); never below 1.
 * Throws when the value is neither (the CRD's CEL rule should prevent that).
 */
export function resolveMaxUnavailable(
  value: number | string | undefined,
  nodeCount: number,
): number {
  if (value === undefined) return 1;
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 1) {
      throw new Error(`rollout.maxUnavailable ${value} must be an integer >= 1`);
    }
    return value;
  }
  const match = /^(\d+)%$/.exec(value);
  if (match) {
    const pct = Number(match[1]);
    if (pct < 1 || pct > 100) {
      throw new Error(`rollout.maxUnavailable ${value} must be between 1% and 100%`);
    }
    return Math.max(1, Math.ceil((pct * nodeCount) / 100));
  }
  if (/^\d+$/.test(value) && Number(value) >= 1) return Number(value);
  throw new Error(
    `rollout.maxUnavailable ${JSON.stringify(value)} must be an integer >= 1 or a percentage`,
  );
}

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

/** Parses an RFC 3339 annotation value; undefined when absent or unparsable. */
export function parseTime(value: string | undefined): Date | undefined {
  if (!value) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : new Date(t);
}

/** RFC 3339 with second precision, as Kubernetes writes times. */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
