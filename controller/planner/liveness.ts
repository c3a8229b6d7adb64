/**
 * The liveness rule: nothing waits silently. A member that has waited on the
 * same unchanged facts for its daemon, the controller or its Node for longer
 * than `rollout.progressTimeoutSeconds` is Stalled with reason NoProgress,
 * naming what it waits for (from the node's one classification,
 * `lib/api/node_state.ts`) and what its daemon says, so a wait between the two
 * (each waiting for the other) shows as such.
 *
 * Waits that have a deadline of their own are left to it: the daemon's first
 * report (DaemonNotReporting), a download (StagingTimeout), a drain (the drain
 * timeout), a reboot (RebootTimeout) and the checks after it (the health
 * timeout). Waits on a rollout gate (budgets, windows, pause, the staging
 * limit, a PodDisruptionBudget) or on a person (a failure, a daemon error) are
 * no stalls: the pool's conditions already name them.
 *
 * @module
 */
import {
  ANNOTATION_DESIRED_SINCE,
  type BootcNode,
  findCondition,
  type NodeClassification,
  NodeConditionType,
  NodeState,
  NodeStateReason,
  StalledReason,
  STATE_TEXT,
} from "../../lib/api/mod.ts";
import { recordOf } from "../model/disruption.ts";
import type { StallFinding } from "./in_flight.ts";
import { parseTime } from "../model/slots.ts";
import type { NodeSummary } from "../model/types.ts";

/** True when the liveness rule watches this classified wait (see the module doc). */
export function livenessWatches(cls: NodeClassification): boolean {
  if (cls.waitsOn !== "daemon" && cls.waitsOn !== "controller" && cls.waitsOn !== "node") {
    return false;
  }
  switch (cls.phase) {
    case NodeState.Staging: // stagingTimeoutSeconds
    case NodeState.Rebooting: // rebootTimeoutSeconds
    case NodeState.Verifying: // the health timeout, rebootTimeoutSeconds
      return false;
    case NodeState.Pending: // daemonReportTimeoutSeconds for the first report
      return cls.reason !== NodeStateReason.AwaitingReport;
    case NodeState.Draining: // drainTimeoutSeconds, while pods are being evicted
      return !(cls.reason === NodeStateReason.Draining && cls.waitsOn === "controller");
    default:
      return true;
  }
}

/**
 * When the facts about a node last changed: its BootcNode's creation and new
 * target, its Node's record and Ready, and every condition of its BootcNode
 * except the controller's own Stalled (which must not reset the clock it is
 * derived from). Undefined without an anchor (neither a creation time nor a
 * desired-since annotation).
 */
export function factsChangedAt(node: NodeSummary, bn: BootcNode): Date | undefined {
  const anchors = [
    parseTime(bn.metadata.creationTimestamp),
    parseTime(bn.metadata.annotations?.[ANNOTATION_DESIRED_SINCE]),
  ].filter((t): t is Date => t !== undefined);
  if (anchors.length === 0) return undefined;
  const record = recordOf(node);
  const times = [
    ...anchors,
    parseTime(record.slotAt),
    parseTime(record.drainedAt),
    parseTime(node.readySince),
    ...(bn.status?.conditions ?? [])
      .filter((c) => c.type !== NodeConditionType.Stalled)
      .map((c) => parseTime(c.lastTransitionTime)),
  ].filter((t): t is Date => t !== undefined);
  return new Date(Math.max(...times.map((t) => t.getTime())));
}

/** "its daemon says Idle=False/Staged: …", or "" when it says nothing. */
export function daemonSays(bn: BootcNode): string {
  const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
  if (!idle) return "";
  return `; its daemon says Idle=${idle.status}/${idle.reason}` +
    (idle.message ? `: ${idle.message}` : "");
}

/** What {@linkcode findNoProgress} looks at. */
export interface LivenessFacts {
  node: NodeSummary;
  bn: BootcNode;
  cls: NodeClassification;
  /** `rollout.progressTimeoutSeconds` in ms. */
  progressMs: number;
  now: Date;
}

/** The NoProgress finding for a member, or when to look again. Pure. */
export function findNoProgress(f: LivenessFacts): { finding?: StallFinding; nextAt?: Date } {
  if (!livenessWatches(f.cls)) return {};
  const changed = factsChangedAt(f.node, f.bn);
  if (!changed) return {};
  const at = new Date(changed.getTime() + f.progressMs);
  if (f.now < at) return { nextAt: at };
  return {
    finding: {
      reason: StalledReason.NoProgress,
      // From the phase (never the Stalled overlay's message, which quotes this one).
      message: `node ${f.node.name} (${STATE_TEXT[f.cls.phase]}) has waited ` +
        `${f.progressMs / 1000}s with nothing changing for ${f.cls.waitsFor} ` +
        `(on the ${f.cls.waitsOn})${daemonSays(f.bn)}`,
      since: at,
    },
  };
}
