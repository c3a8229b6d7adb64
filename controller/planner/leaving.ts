/**
 * Nodes that leave a pool (relabelled, or the pool deleted) while the operator
 * is updating them: one asked to reboot is held — its BootcNode, its Node's
 * disruption record and its cordon stay, so it keeps counting against the
 * pool's budget and every cluster budget — until its reboot has finished
 * (its daemon reports it booted, the Node is Ready); only then is it handed
 * back. One not yet asked to reboot is undone at once (its daemon needs
 * `desiredImageState: Booted` and the record to apply anything).
 *
 * Releasing a rebooting node early would free its slot while the machine is
 * down, and the next grant would disrupt a second node.
 *
 * @module
 */
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  isDisrupted,
  NodeConditionType,
  owningPool,
  PoolDegradedReason,
  rebootRecorded,
  rebootReport,
} from "../../lib/api/mod.ts";
import { mirrorOf, recordOf } from "../model/disruption.ts";
import type { UnrecordedDisruption } from "../gates/mod.ts";
import { shortReference } from "../../lib/api/display.ts";
import { type DesiredImage, entryMatches } from "../model/effective_state.ts";
import { poolEvent, type StepOutput, stepOutput } from "./plan.ts";
import { formatTime, parseTime, pastTime } from "../model/slots.ts";
import type { NodeSummary } from "../model/types.ts";

/** Default of `spec.rollout.rebootTimeoutSeconds`. */
const DEFAULT_REBOOT_TIMEOUT_MS = 1_800_000;

/** What {@linkcode leavingHold} looks at. */
export interface LeavingFacts {
  node: NodeSummary;
  /** Its BootcNode (perhaps terminating), undefined when it has none. */
  bn?: BootcNode;
  /** Per-platform digests of the BootcNode's desired image, when known. */
  platforms?: DesiredImage["platforms"];
  /** `rollout.rebootTimeoutSeconds` in ms (default 1800 s). */
  rebootTimeoutMs?: number;
  now: Date;
}

/** The answer of {@linkcode leavingHold}. */
export interface LeavingHold {
  /** Set while the node must be held: what it waits for, in words. */
  waitsFor?: string;
  /** When the hold is overdue (reboot request + reboot timeout), if known. */
  deadline?: Date;
  /** True once `deadline` has passed: the node is held all the same, and reported. */
  overdue: boolean;
}

/**
 * Whether a node that left its pool must still be held because its reboot has
 * not finished. Pure.
 *
 * Asked to reboot: its BootcNode asks for Booted and its Node holds the slot and
 * a finished drain for that image (what the daemon needs to apply it), or its
 * daemon says it is rebooting (whatever the spec and the record say now). Finished: the daemon no longer says
 * Rebooting and reports the desired image booted (or that the host fell back
 * from it), and the Node is Ready. Without a BootcNode only the Node tells: a
 * finished drain means a reboot may be under way; it is over once the Node
 * became Ready after the drain (or the reboot timeout passed).
 */
export function leavingHold(facts: LeavingFacts): LeavingHold {
  const { node, bn, now } = facts;
  const timeoutMs = facts.rebootTimeoutMs ?? DEFAULT_REBOOT_TIMEOUT_MS;
  const record = recordOf(node);
  const report = rebootReport(bn);
  const rebooting = report !== undefined;
  const requestedAt = pastTime(record.drainedAt, now) ?? pastTime(record.slotAt, now) ??
    pastTime(report?.since, now);
  const deadline = requestedAt ? new Date(requestedAt.getTime() + timeoutMs) : undefined;
  const overdue = deadline !== undefined && now >= deadline;
  if (bn) {
    // The daemon applies only Booted with a slot and a drain for that image on the Node.
    if (!rebootRecorded(record, bn) && !rebooting) return { overdue: false };
    const desired = { image: bn.spec.desiredImage, platforms: facts.platforms };
    const rebooted = findCondition(bn.status?.conditions, NodeConditionType.Rebooted);
    const back = !rebooting && node.ready &&
      (entryMatches(bn.status?.booted, desired) || rebooted?.reason === "FellBack");
    if (back) return { overdue: false };
    return {
      waitsFor: rebooting || node.ready
        ? `its reboot into ${
          shortReference(bn.spec.desiredImage)
        } to finish (booted, reported, Ready)`
        : `the Node to be Ready again after its reboot into ${
          shortReference(bn.spec.desiredImage)
        }`,
      deadline,
      overdue,
    };
  }
  const drainedAt = pastTime(record.drainedAt, now);
  if (record.drainedFor === undefined && record.drainedAt === undefined) return { overdue: false };
  const readySince = parseTime(node.readySince);
  const cameBack = node.ready && (overdue ||
    (drainedAt !== undefined && readySince !== undefined && readySince > drainedAt));
  if (cameBack) return { overdue: false };
  return {
    waitsFor: "the Node to come back Ready after the reboot its finished drain allowed",
    deadline,
    overdue,
  };
}

/** What {@linkcode deletedNodeHold} looks at. */
export interface DeletedNodeFacts {
  /** The BootcNode of the node whose Node object is gone. */
  bn: BootcNode;
  /** `rollout.rebootTimeoutSeconds` in ms (default 1800 s). */
  rebootTimeoutMs?: number;
  now: Date;
}

/**
 * Whether a member whose Node object was deleted must still be held. Pure.
 *
 * Deleting the Node object does not stop the machine: its daemon said Rebooting, so it may
 * be down right now, and its kubelet registers the Node again when it boots. Releasing it
 * would free its slot while it is down. Held (its BootcNode kept, counted against the
 * pool's budget) until a Node of that name is back (the usual paths take over), or its daemon
 * no longer says Rebooting. Past the reboot timeout since it said so (`overdue`; an
 * unreadable time counts as overdue) it is still held, and the pool is Degraded naming it:
 * only a person knows the machine is gone for good (they delete its BootcNode).
 */
export function deletedNodeHold(facts: DeletedNodeFacts): LeavingHold {
  const { bn, now } = facts;
  const report = rebootReport(bn);
  if (!report) return { overdue: false };
  const since = pastTime(report.since, now);
  const timeoutMs = facts.rebootTimeoutMs ?? DEFAULT_REBOOT_TIMEOUT_MS;
  const deadline = since ? new Date(since.getTime() + timeoutMs) : undefined;
  return {
    waitsFor: `its machine to come back from its reboot into ` +
      `${shortReference(bn.spec.desiredImage)} (its Node object was deleted meanwhile)`,
    deadline,
    overdue: deadline === undefined || now >= deadline,
  };
}

/**
 * Nodes disrupted by their BootcNode's account while their Node carries no disruption
 * record, over every pool's members. Pure. Pools sharing a cluster budget count
 * disruption by the Node's record; these would be missed:
 * - its Node exists and its BootcNode still mirrors a prior cordon (`mirrorOf`) and its pool
 *   exists: the node is in a slot by its pool's account (back from its reboot without its
 *   record, or the record removed; the pool restores or finishes it), the rule of
 *   `nodeDisrupted`;
 * - or its Node object is gone while {@linkcode deletedNodeHold} holds it (its daemon said
 *   Rebooting): as long as its pool holds it, past the reboot timeout too (its BootcNode
 *   deleted by a person ends it).
 */
export function unrecordedDisruptions(input: {
  pools: readonly BootcNodePool[];
  bootcNodes: Iterable<BootcNode>;
  nodes: ReadonlyMap<string, NodeSummary>;
  now: Date;
}): UnrecordedDisruption[] {
  const byName = new Map(input.pools.map((p) => [p.metadata.name ?? "", p]));
  const out: UnrecordedDisruption[] = [];
  for (const bn of input.bootcNodes) {
    const name = bn.metadata.name ?? "";
    const node = input.nodes.get(name);
    if (node && isDisrupted({ metadata: { annotations: node.annotations } })) continue;
    const pool = byName.get(owningPool(bn) ?? "");
    // A mirror counts while its Node and its pool exist (the pool restores the record or
    // lets the node go, so the count ends). With its Node gone only the bounded Rebooting
    // hold counts: a mirror alone could count for as long as an invalid pool does not act.
    const mirrored = node !== undefined && pool !== undefined && mirrorOf(bn) !== undefined;
    const hold = node ? undefined : heldWithoutNode(bn, pool, input.now);
    if (!mirrored && !hold) continue;
    if (node) out.push({ node: name, labels: node.labels });
    else {
      out.push({
        node: name,
        ...(pool ? { poolSelector: pool.spec.nodeSelector } : {}),
        ...(hold?.until ? { until: hold.until } : {}),
      });
    }
  }
  return out.sort((a, b) => a.node < b.node ? -1 : a.node > b.node ? 1 : 0);
}

/**
 * Whether a {@linkcode deletedNodeHold} holds `bn`, and until when it is bound to end
 * (`until`, undefined once overdue: its pool holds it until a person lets it go).
 */
function heldWithoutNode(
  bn: BootcNode,
  pool: BootcNodePool | undefined,
  now: Date,
): { until?: Date } | undefined {
  const seconds = pool?.spec.rollout?.rebootTimeoutSeconds;
  const hold = deletedNodeHold({
    bn,
    rebootTimeoutMs: seconds !== undefined ? seconds * 1000 : undefined,
    now,
  });
  if (hold.waitsFor === undefined) return undefined;
  // Overdue, it counts while its pool holds it (and says so); a BootcNode whose pool is
  // gone counts no longer than the reboot timeout (nobody would report it).
  if (hold.overdue) return pool ? {} : undefined;
  return { until: hold.deadline };
}

/**
 * What the pool's plan says of a held node: a note (and an event once), a
 * wake-up at its deadline, and once overdue a NodeStalled issue (it stays held).
 */
export function reportLeavingHold(
  name: string,
  hold: LeavingHold,
  why: string,
  at: { poolName: string; now: Date; nodeGone?: boolean },
): StepOutput {
  const notes = [
    `${name} left the pool (${why}) while rebooting: held, waiting for ${hold.waitsFor}`,
  ];
  const events = [poolEvent(
    at.poolName,
    "Normal",
    "NodeLeavingAfterReboot",
    `node ${name} left the pool (${why}) while rebooting; it keeps its reboot slot while ` +
      `waiting for ${hold.waitsFor}, then it is handed back`,
    `leaving/${name}/${hold.deadline ? formatTime(hold.deadline) : "-"}`,
  )];
  if (!hold.deadline) return stepOutput({ notes, events });
  if (!hold.overdue) {
    return stepOutput({ notes, events, wake: hold.deadline.getTime() - at.now.getTime() });
  }
  const message = `node ${name} left the pool while rebooting and is still waiting for ` +
    `${hold.waitsFor} past its reboot timeout; it keeps its reboot slot until then ` +
    `(check the host; if the machine is gone for good, delete its BootcNode` +
    `${at.nodeGone ? "" : " and its Node object"} to let the slot go)`;
  const issues = [{ reason: PoolDegradedReason.NodeStalled, message }];
  // Said as a Warning too: a deleted pool writes no status (its finalizer waits for this).
  events.push(poolEvent(
    at.poolName,
    "Warning",
    "NodeStalled",
    message,
    `leaving-overdue/${name}/${formatTime(hold.deadline)}`,
  ));
  return stepOutput({ notes, events, issues });
}
