/**
 * A node's facts, read once. From its Node (the disruption record, the cordon,
 * Ready) and its BootcNode (the spec, the copy of the prior cordon state, the
 * daemon's report), {@linkcode readNodeFacts} builds one {@linkcode NodeFacts}
 * value. The classification (`node_state.ts`), the planner, the daemon and the
 * plugin read its fields instead of the raw annotations and conditions, so no
 * fact is derived twice, and so never derived differently.
 *
 * Times are checked as they are read: an unreadable time, or one more than a
 * minute ahead of `now`, counts as absent (a deadline from a future time would
 * never pass).
 *
 * **May the machine be down** ({@linkcode NodeFacts.down}) is one rule. With a
 * BootcNode: its daemon says Rebooting (and did not fall back), or its reboot was
 * asked for with a slot and a finished drain for the image on the Node (what the
 * daemon needs to apply it), until the daemon no longer says Rebooting, the Node is
 * Ready and the host runs the image (or fell back from it). Without one, only the
 * Node tells: a finished drain may have been followed by a reboot, which is over
 * once the Node became Ready after the drain (or the reboot timeout passed).
 *
 * Kept free of the TypeBox schema (type imports only) so the daemon imports it cheaply.
 *
 * @module
 */
import { type DisruptionRecord, disruptionRecord, isDisrupted } from "./annotations.ts";
import { findCondition } from "./conditions.ts";
import { shortReference } from "./display.ts";
import { ANNOTATION_WAS_CORDONED, IdleReason, NodeConditionType } from "./constants.ts";
import type { BootcNodeSpec, BootcNodeStatus, BootEntryStatus } from "./schema.ts";
import { type DesiredImage, entryRuns } from "../bootc/image_ref.ts";
import { parseTime, pastTime } from "../clock.ts";

/** What is read of a BootcNode. */
export interface BootcNodeFacts {
  metadata?: {
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; controller?: boolean; name: string }[];
    deletionTimestamp?: string;
    generation?: number;
  };
  spec: Pick<BootcNodeSpec, "desiredImage" | "desiredImageState">;
  status?: BootcNodeStatus;
}

/** What is read of a Node (the controller's `NodeSummary` fits). */
export interface NodeRead {
  /** The Node's annotations (the disruption record). */
  annotations?: Record<string, string>;
  /** `spec.unschedulable`. */
  unschedulable?: boolean;
  /** The Ready condition is True. */
  ready?: boolean;
  /** When Ready last changed, as written. */
  readySince?: string;
}

/** Default of `spec.rollout.rebootTimeoutSeconds`, in ms. */
export const DEFAULT_REBOOT_TIMEOUT_MS = 1_800_000;

/** While the machine may be down for a reboot: what it waits for, and until when. */
export interface DownFacts {
  /** What ends it, in words. */
  waitsFor: string;
  /** The reboot timeout from when the reboot was asked for; undefined when no time is readable. */
  deadline?: Date;
  /** True once `deadline` passed, or when none is readable: still down, and to be reported. */
  overdue: boolean;
}

/** The facts of one node (see the module doc). */
export interface NodeFacts {
  /** The Node's disruption record as written (empty without a Node). */
  record: DisruptionRecord;
  /** The BootcNode's copy of the prior cordon state, as written. */
  mirror?: string;
  /** The Node carries (part of) the record (`isDisrupted`: a slot, a prior cordon state or a drain). */
  onNode: boolean;
  /** {@linkcode NodeFacts.onNode}, or the BootcNode still holds its copy of the prior cordon. */
  recorded: boolean;
  /** Whether the Node was cordoned before its slot: the record's own, else the copy's. */
  priorCordon?: "true" | "false";
  /** When the slot was granted, when readable. */
  slotAt?: Date;
  /** When the drain for the desired image finished (undefined unless `drained`). */
  drainedAt?: Date;
  /** The record holds a finished drain for exactly the BootcNode's desired image. */
  drained: boolean;
  /** Booted is asked for, and the Node holds a slot and a finished drain for that image. */
  rebootRequested: boolean;
  /** The daemon says Idle=False/Rebooting, with when it said so (when readable). */
  rebootReport?: { since?: Date };
  /** The daemon reports the host booted the target and fell back by itself: it is up. */
  fellBack: boolean;
  /** The daemon says it reboots and did not fall back: the machine may be down now. */
  rebooting: boolean;
  /**
   * A record no grant can have written: a grant writes the slot, its pool and the prior
   * cordon state in one Node write, with the cordon, then their copy on the BootcNode.
   * With no copy and no reboot reported, a record holding at most one of the three, or
   * lacking the prior cordon state on a node neither cordoned nor drained, is a stray
   * edit (by hand, another tool), or a grant that lost as much: never driven.
   */
  stray: boolean;
  /** Set while the machine may be down for a reboot (see the module doc). */
  down?: DownFacts;
}

/** Input of {@linkcode readNodeFacts}. */
export interface NodeFactsInput {
  /** The Node; undefined when it is gone (or unknown). */
  node?: NodeRead;
  /** The BootcNode; undefined when there is none. */
  bootcNode?: BootcNodeFacts;
  /** The image the node should run (default: its BootcNode's desired image). */
  target?: DesiredImage;
  /** `rollout.rebootTimeoutSeconds` in ms (default {@linkcode DEFAULT_REBOOT_TIMEOUT_MS}). */
  rebootTimeoutMs?: number;
  /** Times ahead of it count as unreadable; without it, times are only parsed. */
  now?: Date;
}

/** Reads one node's facts (see the module doc). Pure. */
export function readNodeFacts(input: NodeFactsInput): NodeFacts {
  const { node, bootcNode: bn } = input;
  const time = timeReader(input.now);
  const record = disruptionRecord({ metadata: { annotations: node?.annotations } });
  const mirror = bn?.metadata?.annotations?.[ANNOTATION_WAS_CORDONED];
  // The pool's name alone records nothing a grant or a drain left (the one rule of isDisrupted).
  const onNode = isDisrupted({ metadata: { annotations: node?.annotations } });
  const desired = bn?.spec.desiredImage;
  const drained = desired !== undefined && record.drainedAt !== undefined &&
    record.drainedFor === desired;
  const report = rebootReport(bn);
  const target = input.target ?? (bn ? { image: bn.spec.desiredImage } : undefined);
  const fellBack = bn !== undefined && target !== undefined && fellBackFrom(bn, target);
  const own = record.wasCordoned;
  const facts: NodeFacts = {
    record,
    onNode,
    recorded: onNode || mirror !== undefined,
    drained,
    rebootRequested: bn?.spec.desiredImageState === "Booted" && record.slotAt !== undefined &&
      drained,
    fellBack,
    rebooting: report !== undefined && !fellBack,
    stray: onNode && mirror === undefined && report === undefined && strayShape(record, node),
  };
  if (mirror !== undefined) facts.mirror = mirror;
  const prior = own === "true" || own === "false" ? own : mirror;
  if (prior === "true" || prior === "false") facts.priorCordon = prior;
  const slotAt = time(record.slotAt);
  if (slotAt) facts.slotAt = slotAt;
  const drainedAt = drained ? time(record.drainedAt) : undefined;
  if (drainedAt) facts.drainedAt = drainedAt;
  const since = time(report?.since);
  if (report) facts.rebootReport = since ? { since } : {};
  const down = downFacts(facts, input, target);
  if (down) facts.down = down;
  return facts;
}

/** Parses a recorded time, unreadable when ahead of `now` (when given). */
function timeReader(now: Date | undefined): (text: string | undefined) => Date | undefined {
  return now ? (text) => pastTime(text, now) : parseTime;
}

/** At most one of the grant's three annotations, or no prior cordon on an open, undrained node. */
function strayShape(record: DisruptionRecord, node: NodeRead | undefined): boolean {
  const granted = [record.slotAt, record.pool, record.wasCordoned].filter((v) => v !== undefined);
  const drainedAny = record.drainedAt !== undefined || record.drainedFor !== undefined;
  return granted.length <= 1 ||
    (record.wasCordoned === undefined && node?.unschedulable !== true && !drainedAny);
}

/** The one may-be-down rule (see the module doc). */
function downFacts(
  f: NodeFacts,
  input: NodeFactsInput,
  target: DesiredImage | undefined,
): DownFacts | undefined {
  const { node, bootcNode: bn } = input;
  const time = timeReader(input.now);
  const now = input.now ?? new Date(0);
  const timeoutMs = input.rebootTimeoutMs ?? DEFAULT_REBOOT_TIMEOUT_MS;
  const askedAt = time(f.record.drainedAt) ?? time(f.record.slotAt) ?? f.rebootReport?.since;
  const deadline = askedAt ? new Date(askedAt.getTime() + timeoutMs) : undefined;
  // Without a clock nothing is overdue; an unreadable time is (it is held and reported).
  const overdue = input.now !== undefined && (deadline === undefined || now >= deadline);
  if (bn && target) {
    if (!f.rebootRequested && !f.rebooting) return undefined;
    const rebooted = findCondition(bn.status?.conditions, NodeConditionType.Rebooted);
    const runs = entryRuns(bn.status?.booted, target) || rebooted?.reason === "FellBack";
    if (!f.rebooting && node?.ready === true && runs) return undefined;
    const into = shortReference(bn.spec.desiredImage);
    const waitsFor = !node
      ? `its machine to come back from its reboot into ${into} (its Node object was deleted ` +
        `meanwhile)`
      : f.rebooting || node.ready
      ? `its reboot into ${into} to finish (booted, reported, Ready)`
      : `the Node to be Ready again after its reboot into ${into}`;
    return { waitsFor, ...(deadline ? { deadline } : {}), overdue };
  }
  if (!node || (f.record.drainedFor === undefined && f.record.drainedAt === undefined)) {
    return undefined;
  }
  const drainedAt = time(f.record.drainedAt);
  const readySince = parseTime(node.readySince);
  const readyAfter = drainedAt !== undefined && readySince !== undefined && readySince > drainedAt;
  if (node.ready === true && (readyAfter || (deadline !== undefined && overdue))) return undefined;
  return {
    waitsFor: "the Node to come back Ready after the reboot its finished drain allowed",
    ...(deadline ? { deadline } : {}),
    overdue,
  };
}

/** True when a boot entry is `desired` (the one rule, `entryRuns` in lib/bootc). */
export function entryMatches(entry: BootEntryStatus | undefined, desired: DesiredImage): boolean {
  return entryRuns(entry, desired);
}

/**
 * Whether the daemon's phase conditions are about `image` (`status.phaseImage`).
 * Undefined when unknown: never reported on, or written by an older daemon.
 */
export function phaseTargetIs(
  status: Pick<BootcNodeStatus, "phaseImage"> | undefined,
  image: string,
): boolean | undefined {
  const about = status?.phaseImage;
  return about === undefined ? undefined : about === image;
}

/**
 * True when the daemon reports that the host booted `target` and fell back to
 * its previous deployment by itself (boot assessment; footnote 5 of
 * `daemon/decide.ts`): `target` is the rollback deployment, neither booted nor
 * staged, and the Rebooted condition says FellBack (or, from a daemon that
 * writes no Rebooted, Idle still says Rebooting). Such a host is up: its stale
 * Rebooting does not make it disrupted.
 */
export function fellBackFrom(bn: BootcNodeFacts, target: DesiredImage): boolean {
  const s = bn.status;
  if (entryMatches(s?.booted, target) || entryMatches(s?.staged, target)) return false;
  if (!entryMatches(s?.rollback, target)) return false;
  const about = phaseTargetIs(s, bn.spec.desiredImage);
  // A report about another image: its Rebooting is a real reboot into that image
  // (retargeted mid-reboot), never a fall-back from this target.
  if (about === false) return false;
  const rebooted = findCondition(s?.conditions, NodeConditionType.Rebooted);
  if (rebooted) return rebooted.reason === "FellBack";
  // Only a daemon that writes no phase conditions at all is read by its stale Idle.
  if (about === true) return false;
  return daemonSaysRebooting(bn);
}

/**
 * The daemon's report that its machine is rebooting (`Idle=False/Rebooting`), with
 * when it said so as written; undefined when it does not say so.
 */
export function rebootReport(
  bn: Pick<BootcNodeFacts, "status"> | undefined,
): { since?: string } | undefined {
  const idle = findCondition(bn?.status?.conditions, NodeConditionType.Idle);
  if (idle?.status !== "False" || idle.reason !== IdleReason.Rebooting) return undefined;
  return { since: idle.lastTransitionTime };
}

/** True while a BootcNode's daemon reports `Idle=False/Rebooting` (its machine may be down). */
export function daemonSaysRebooting(bn: Pick<BootcNodeFacts, "status"> | undefined): boolean {
  return rebootReport(bn) !== undefined;
}
