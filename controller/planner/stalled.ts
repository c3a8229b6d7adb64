/**
 * Planning step 6, stalled nodes: a BootcNode whose status has not caught up
 * with its spec within a deadline gets a `Stalled` condition (reasons
 * DaemonNotReporting, StagingTimeout, RebootTimeout, and NoProgress from the
 * liveness rule in `liveness.ts`: a wait on unchanged facts past
 * `progressTimeoutSeconds`), an event, and counts in the pool's message and
 * Degraded condition. The deadlines are pool fields.
 *
 * @module
 */
import {
  ANNOTATION_DESIRED_SINCE,
  ANNOTATION_SPEC_SINCE,
  type BootcNode,
  type Condition,
  daemonBehindController,
  daemonUnreported,
  findCondition,
  NodeConditionType,
  PoolDegradedReason,
  setCondition,
  StalledReason,
} from "../../lib/api/mod.ts";
import { shortReference } from "../../lib/api/display.ts";
import { EffectiveState } from "../model/effective_state.ts";
import type { StallFinding } from "./in_flight.ts";
import type { Member } from "./membership.ts";
import { type Action, listNames, type PlanInput, type StepOutput, StepWriter } from "./plan.ts";
import { formatTime, parseTime, pastTime } from "../model/slots.ts";
import { type StallDeadlines, stallDeadlines } from "./deadlines.ts";
import { daemonSays, findNoProgress } from "./liveness.ts";

export {
  DEFAULT_DAEMON_REPORT_TIMEOUT_SECONDS,
  DEFAULT_PROGRESS_TIMEOUT_SECONDS,
  DEFAULT_STAGING_TIMEOUT_SECONDS,
  type StallDeadlines,
  stallDeadlines,
} from "./deadlines.ts";

/**
 * Why a member is stalled now, if it is (RebootTimeout is found by the in-flight
 * step): DaemonNotReporting, else NoProgress, else StagingTimeout; otherwise when
 * to look again.
 */
export function findStall(
  m: Member,
  deadlines: StallDeadlines,
  now: Date,
  rewritesSpec = false,
): { finding?: StallFinding; nextAt?: Date } {
  const bn = m.bn;
  if (!bn) return {};
  const times = reportClockAnchors(m, now);
  if (times.length === 0) return {};
  const since = new Date(Math.max(...times.map((t) => t.getTime())));
  // Someone else's spec is excused only in the plan that puts the controller's back (an
  // edited record alone never hides a silent daemon).
  if (rewritesSpec ? daemonBehindController(bn) : daemonUnreported(bn)) {
    const at = new Date(since.getTime() + deadlines.daemonReportMs);
    if (now < at) return { nextAt: at };
    return {
      finding: {
        reason: StalledReason.DaemonNotReporting,
        message: `no daemon has reported on node ${m.node.name}'s current spec for ` +
          `${deadlines.daemonReportMs / 1000}s (is the bootc daemon running there?)`,
        since: at,
      },
    };
  }
  // The liveness rule first: it names what the node waits for.
  const live = findNoProgress({
    node: m.node,
    bn,
    cls: m.cls,
    progressMs: deadlines.progressMs,
    now,
  });
  if (live.finding) return live;
  const staging = findStagingTimeout(m, bn, deadlines, now);
  if (staging.finding) return staging;
  const next = [live.nextAt, staging.nextAt].filter((t): t is Date => t !== undefined);
  return next.length > 0 ? { nextAt: new Date(Math.min(...next.map((t) => t.getTime()))) } : {};
}

/**
 * Where the daemon-report clock starts: the controller's first spec change the
 * daemon has not reported on (`spec-since`, `spec_since.ts`), else, for a
 * BootcNode written before it existed, the newest of its image time and its
 * drain record.
 */
function reportClockAnchors(m: Member, now: Date): Date[] {
  const bn = m.bn!;
  const annotations = bn.metadata.annotations;
  const created = parseTime(bn.metadata.creationTimestamp);
  const specSince = pastTime(annotations?.[ANNOTATION_SPEC_SINCE], now);
  if (specSince) return [specSince, ...(created ? [created] : [])];
  return [
    created,
    pastTime(annotations?.[ANNOTATION_DESIRED_SINCE], now),
    m.facts.drainedAt,
  ].filter((t): t is Date => t !== undefined);
}

/** StagingTimeout: a node that has not staged its desired image within the staging deadline. */
function findStagingTimeout(
  m: Member,
  bn: BootcNode,
  deadlines: StallDeadlines,
  now: Date,
): { finding?: StallFinding; nextAt?: Date } {
  if (m.state !== EffectiveState.Pending && m.state !== EffectiveState.Staging) return {};
  // Held back by a gate (the staging limit, a closed window): waiting, not stalled.
  if (m.cls.waitsOn === "gate") return {};
  const desiredSince = pastTime(bn.metadata.annotations?.[ANNOTATION_DESIRED_SINCE], now) ??
    parseTime(bn.metadata.creationTimestamp);
  if (!desiredSince) return {};
  const at = new Date(desiredSince.getTime() + deadlines.stagingMs);
  if (now < at) return { nextAt: at };
  const waiting = m.cls.waitsFor ? `; waiting for ${m.cls.waitsFor}` : "";
  return {
    finding: {
      reason: StalledReason.StagingTimeout,
      message:
        `node ${m.node.name} has not staged ${shortReference(bn.spec.desiredImage)} within ` +
        `${deadlines.stagingMs / 1000}s${waiting}${daemonSays(bn)}`,
      since: at,
    },
  };
}

/** The Stalled condition a BootcNode should carry, or undefined to leave it as is. */
export function stalledCondition(
  bn: BootcNode,
  finding: StallFinding | undefined,
): Omit<Condition, "lastTransitionTime"> | undefined {
  const current = findCondition(bn.status?.conditions, NodeConditionType.Stalled);
  if (finding) {
    return {
      type: NodeConditionType.Stalled,
      status: "True",
      reason: finding.reason,
      message: finding.message,
    };
  }
  if (current?.status === "True") {
    return {
      type: NodeConditionType.Stalled,
      status: "False",
      reason: StalledReason.Progressing,
      message: "The node's status keeps up with its spec",
    };
  }
  return undefined;
}

/** What step 6 found: the members it found stalled now (they count as Degraded). */
export interface StalledResult {
  /** Members stalled by a finding of this step (not those step 3 found). */
  stuck: ReadonlySet<string>;
  /** Stalled conditions, events, the NodeStalled issue, the note and wake-ups. */
  out: StepOutput;
}

/**
 * Step 6: Stalled conditions, events and the pool's NodeStalled issue. `found`
 * are the in-flight step's findings (RebootTimeout), which come first;
 * `specRewritten` the nodes whose spec this plan writes (a hand edit it reverts is
 * not held against their daemon).
 */
export function reportStalled(
  members: readonly Member[],
  input: PlanInput,
  found: ReadonlyMap<string, StallFinding>,
  specRewritten: ReadonlySet<string> = new Set(),
): StalledResult {
  const deadlines = stallDeadlines(input.pool.spec.rollout as Record<string, unknown> | undefined);
  const w = new StepWriter(input.pool.metadata.name ?? "", input.now);
  const stuck = new Set<string>();
  const stalledNames: string[] = [];
  const issueParts: string[] = [];
  for (const m of members) {
    const bn = m.bn;
    if (!bn) continue;
    const name = m.node.name;
    let finding = found.get(name);
    if (!finding) {
      const stall = findStall(m, deadlines, input.now, specRewritten.has(name));
      if (stall.nextAt) w.wakeAt(stall.nextAt);
      finding = stall.finding;
      if (finding) {
        stuck.add(name);
        issueParts.push(`${name} (${finding.reason}: ${finding.message})`);
      }
    }
    if (finding) {
      stalledNames.push(name);
      w.nodeEvent(
        name,
        "Warning",
        finding.reason,
        finding.message,
        `stalled/${name}/${finding.reason}/${formatTime(finding.since)}`,
      );
    }
    const patch = stalledPatch(name, bn, finding, input.now);
    if (patch) w.act(patch);
  }
  if (issueParts.length > 0) {
    w.issues.push({
      reason: PoolDegradedReason.NodeStalled,
      message: `${issueParts.length} node(s) stalled: ${listNames(issueParts, 3)}`,
    });
  }
  if (stalledNames.length > 0) {
    w.notes.push(`${stalledNames.length} stalled (${listNames(stalledNames.sort(), 3)})`);
  }
  return { stuck, out: w.output() };
}

/** The write of the Stalled condition `finding` calls for, if it changes. */
function stalledPatch(
  name: string,
  bn: BootcNode,
  finding: StallFinding | undefined,
  now: Date,
): Action | undefined {
  const wanted = stalledCondition(bn, finding);
  if (!wanted) return undefined;
  const current = findCondition(bn.status?.conditions, NodeConditionType.Stalled);
  if (
    current?.status === wanted.status && current.reason === wanted.reason &&
    current.message === wanted.message
  ) return undefined;
  return {
    kind: "patchBootcNodeStatus",
    node: name,
    patch: {
      metadata: { resourceVersion: bn.metadata.resourceVersion },
      status: { conditions: setCondition(bn.status?.conditions, wanted, now) },
    },
    why: finding ? `stalled: ${finding.reason}` : "no longer stalled",
  };
}
