/**
 * Planning step 2, membership: which nodes belong to the pool, their
 * BootcNodes created and kept in sync with the target, nodes that left handed
 * back, and nodes that carry this pool's disruption record without being members
 * any more released, so nothing stays cordoned.
 *
 * @module
 */
import {
  ANNOTATION_DESIRED_SINCE,
  ANNOTATION_FAILED_IMAGE,
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_WAS_CORDONED,
  API_VERSION,
  type BootcNode,
  LABEL_MANAGED,
  LABEL_POOL,
  NODE,
  owningPool,
  PoolDegradedReason,
} from "../../lib/api/mod.ts";
import {
  classifiedTarget,
  classifyNode,
  type DesiredImage,
  EffectiveState,
  type NodeClassification,
  type NodeFacts,
  readNodeFacts,
} from "../../lib/api/node_state.ts";
import { mirrorOf, nodeDisrupted, recordOf, releasePatch } from "../model/disruption.ts";
import { releaseNode, releaseOrphans } from "./hand_back.ts";
import {
  memberSpec,
  ownerReference,
  staleMirror,
  syncPatch,
  withdrawForNewImage,
} from "./member_spec.ts";
import { type StagingQueue, stagingQueue } from "./staging_queue.ts";
import {
  type Action,
  listNames,
  mergeOutputs,
  NO_OUTPUT,
  nodeEvent,
  ownedBootcNodes,
  type PlanInput,
  type PlannedEvent,
  poolEvent,
  type StepOutput,
  stepOutput,
} from "./plan.ts";
import { matchesSelector, selectorError } from "../model/selector.ts";
import { externallyOrchestrated } from "../../lib/api/node_state.ts";
import { formatTime } from "../model/slots.ts";
import type { NodeSummary, Target } from "../model/types.ts";

/** Finalizer that lets the controller hand nodes back (labels, cordons) when a pool is deleted. */
export const POOL_FINALIZER = "node.bootc.dev/release-nodes";

/** A member node as the later steps see it. */
export interface Member {
  node: NodeSummary;
  /** The BootcNode as it will be after this plan's sync (undefined: being created). */
  bn?: BootcNode;
  /** How far its daemon got towards `desired` (`cls.effective`): what decisions read. */
  state: EffectiveState;
  /**
   * True while the operator has work to finish or undo on this node, or its daemon
   * reboots it (`cls.disrupted`): it counts as disrupted.
   */
  disrupted: boolean;
  /** The image this member should run (the pool's target, or its rollback image). */
  desired?: DesiredImage;
  /** The node's one classification (`lib/api/node_state.ts`), as of this plan's sync. */
  cls: NodeClassification;
  /** The facts it was classified by (`lib/api/node_facts.ts`), as of this plan's sync. */
  facts: NodeFacts;
  /** What `cls` was classified with (the Node annotations classify it again after the plan). */
  context?: MemberContext;
}

/** What {@linkcode classifyMember} needs besides the node and its BootcNode. */
export interface MemberContext {
  /** The image the member should run (undefined: its spec's). */
  desired?: DesiredImage;
  /** The pool's target (a member rolled back from it is RollingBack). */
  poolTarget?: DesiredImage;
  /** Why the member is held back from the target (a staging gate), if it is. */
  heldBy?: { reason: string; message: string };
  /** The pool's `rollout.strategy` is External: staged members wait on that orchestrator. */
  external?: boolean;
  /** The plan's clock: recorded times ahead of it are unreadable. */
  now?: Date;
}

/**
 * A member's state, disruption and classification from the one rulebook
 * (`classifyNode`), so every step reads the same facts.
 */
export function classifyMember(
  node: NodeSummary,
  bn: BootcNode | undefined,
  context: MemberContext = {},
): Pick<Member, "state" | "disrupted" | "cls" | "facts"> {
  const target = bn
    ? classifiedTarget(bn, { target: context.desired, poolTarget: context.poolTarget }).target
    : context.desired;
  const facts = readNodeFacts({ node, bootcNode: bn, target, now: context.now });
  const cls = classifyNode({
    bootcNode: bn,
    node,
    target: context.desired,
    poolTarget: context.poolTarget,
    heldBy: context.heldBy,
    external: context.external,
    member: true,
    facts,
  });
  return { state: cls.effective, disrupted: cls.disrupted, cls, facts };
}

/** The classification context every member of `input.pool` shares: its clock, External or not. */
export function externalContext(input: PlanInput): MemberContext {
  return externallyOrchestrated(input.pool)
    ? { external: true, now: input.now }
    : { now: input.now };
}

export { owningPool } from "../../lib/api/mod.ts";

/** What step 2 settled. */
export interface Membership {
  members: Member[];
  /** Nodes handed back in this plan that were still disrupted (they count until released). */
  releasing: string[];
  /** Nodes that left but are held until their reboot finished (views count them rebooting). */
  held: string[];
  /** The staging queue after this plan, when the pool limits staging. */
  staging?: StagingQueue;
  /** BootcNodes created and synced, nodes handed back, conflicts. */
  out: StepOutput;
}

/** Options of {@linkcode planMembership}. */
export interface MembershipOptions {
  /** False while the pool stages only inside its (closed) windows. */
  stagingOpen?: boolean;
  /**
   * The image for members that failed their health checks on `target` (the
   * `bootc.dev/failed-image` annotation, onFailure RollbackNode): they go back to
   * it and are not retried on `target`. Unset: they stay on `target`.
   */
  rollbackImage?: Target;
  /**
   * There is a rollback image, but the trust gate does not admit it (yet): members that
   * failed on `target` keep their spec as it is, neither sent back to `target` nor on.
   */
  rollbackNotAdmitted?: boolean;
}

/** Step 2: membership and BootcNode sync. */
export function planMembership(
  input: PlanInput,
  target: Target | undefined,
  options: MembershipOptions = {},
): Membership {
  const matching = new Set<string>();
  for (const node of input.nodes.values()) {
    if (matchesSelector(input.pool.spec.nodeSelector, node.labels)) matching.add(node.name);
  }
  const leaving = planLeavers(input, matching);
  const claimed = claimMembers(input, matching);
  const staging = target
    ? stagingQueue(input, target, matching.size, options.stagingOpen ?? true)
    : undefined;
  const synced = syncMembers(input, claimed.nodes, target, staging, options);
  const conflicts = [...claimed.conflicts].sort(([a], [b]) => a < b ? -1 : 1).map((
    [other, nodes],
  ) => ({
    reason: PoolDegradedReason.NodeConflict,
    message: `node(s) ${listNames([...nodes].sort())} also match pool ${other}`,
  }));
  const orphans = releaseOrphans(input, new Set(synced.members.map((m) => m.node.name)));
  return {
    members: synced.members,
    releasing: [...leaving.releasing, ...claimed.releasing, ...orphans.released],
    held: leaving.held,
    staging: staging && { ...staging, room: synced.room, held: synced.held },
    out: mergeOutputs([leaving.out, synced.out, stepOutput({ issues: conflicts }), orphans.out]),
  };
}

/**
 * The pool's BootcNodes whose node is gone or no longer matches: handed back
 * (or held while rebooting). `releasing` names those still disrupted.
 */
function planLeavers(
  input: PlanInput,
  matching: ReadonlySet<string>,
): { releasing: string[]; held: string[]; out: StepOutput } {
  const releasing: string[] = [];
  const held: string[] = [];
  const outs: StepOutput[] = [];
  for (const bn of ownedBootcNodes(input)) {
    const name = bn.metadata.name ?? "";
    const node = input.nodes.get(name);
    // A node leaving counts as disrupted until restored; once its BootcNode is going
    // away (perhaps held by someone's finalizer) that is what its Node says.
    const leavingDisrupted = node !== undefined && !matching.has(name) &&
      (bn.metadata.deletionTimestamp
        ? releasePatch(node, bn, { unlabel: false }) !== undefined
        : nodeDisrupted(node, bn));
    const released = !node
      ? releaseNode(input, name, bn, "node was deleted")
      : !matching.has(name)
      ? releaseNode(input, name, bn, "node no longer matches the pool's nodeSelector")
      : undefined;
    // Held while rebooting (perhaps known only by its daemon's report): it counts too.
    if (leavingDisrupted || released?.held) releasing.push(name);
    if (released?.held) held.push(name);
    if (released) outs.push(released.out);
  }
  return { releasing, held, out: mergeOutputs(outs) };
}

/**
 * Which matching nodes this pool takes (by name): not those another pool owns,
 * nor those another pool's selector also matches while nobody owns them, nor
 * those whose old BootcNode is still going away (counted while disrupted).
 * `conflicts` names, per other pool, the matching nodes this pool cannot take
 * (owned by that pool, or contested with it); a node it owns is no conflict.
 */
function claimMembers(input: PlanInput, matching: ReadonlySet<string>) {
  const poolName = input.pool.metadata.name ?? "";
  const otherPools = input.pools.filter((p) =>
    p.name !== poolName && selectorError(p.selector) === undefined
  );
  const conflicts = new Map<string, string[]>();
  const addConflict = (other: string, node: string) => {
    conflicts.set(other, [...conflicts.get(other) ?? [], node]);
  };
  const nodes: { node: NodeSummary; bn?: BootcNode }[] = [];
  const releasing: string[] = [];
  // A deleted pool finishing on one image (deletion_end.ts) only brings its own nodes there:
  // a node it handed back, or one that matches only now, is not taken again.
  const closed = input.pool.status?.deletion !== undefined;
  for (const name of [...matching].sort()) {
    const node = input.nodes.get(name)!;
    const bn = input.bootcNodes.get(name);
    const owner = bn ? owningPool(bn) : undefined;
    if (owner !== undefined && owner !== poolName) {
      addConflict(owner, name);
      continue;
    }
    if (closed && owner === undefined) continue;
    const others = otherPools.filter((p) => matchesSelector(p.selector, node.labels));
    // A node this pool owns stays its own: an overlapping selector is the other pool's
    // problem (it reports the conflict), not one of the pool that runs the node.
    if (owner === undefined) { for (const o of others) addConflict(o.name, name); }
    if (owner === undefined && others.length > 0) continue; // contested: nobody takes it
    if (bn?.metadata.deletionTimestamp) {
      // An old BootcNode still going away: while the node is disrupted it still counts.
      if (nodeDisrupted(node, undefined)) releasing.push(name);
      continue;
    }
    nodes.push({ node, bn });
  }
  return { nodes, conflicts, releasing };
}

/**
 * The members' BootcNodes created or brought in line with the target (a member
 * that failed on it goes to `rollbackImage`). A member not in flight that would
 * start a new download takes a staging place, or is held back when none is free.
 */
function syncMembers(
  input: PlanInput,
  nodes: readonly { node: NodeSummary; bn?: BootcNode }[],
  target: Target | undefined,
  staging: StagingQueue | undefined,
  options: MembershipOptions,
): { members: Member[]; room: number; held: string[]; out: StepOutput } {
  const { rollbackImage } = options;
  const desired: DesiredImage | undefined = target
    ? { image: target.image, platforms: target.platforms }
    : undefined;
  const members: Member[] = [];
  const outs: StepOutput[] = [];
  const held: string[] = [];
  let room = staging?.room ?? 0;
  for (const { node, bn } of nodes) {
    if (!desired || !target) {
      members.push({ node, bn, ...classifyMember(node, bn, externalContext(input)) });
      continue;
    }
    if (!bn) {
      const created = createMember(input, node, target);
      members.push(created.member);
      outs.push(created.out);
      continue;
    }
    const failedOn = bn.metadata.annotations?.[ANNOTATION_FAILED_IMAGE];
    if (failedOn === target.image && options.rollbackNotAdmitted) {
      members.push({ node, bn, ...classifyMember(node, bn, externalContext(input)) });
      continue;
    }
    const own = failedOn === target.image && rollbackImage ? rollbackImage : undefined;
    const t = own ?? target;
    const d = own ? { image: own.image, platforms: own.platforms } : desired;
    // A node in flight always follows the target; others wait for a staging place.
    let hold = false;
    if (!own && staging && bn.spec.desiredImage !== t.image && !nodeDisrupted(node, bn)) {
      if (room > 0) room--;
      else {
        hold = true;
        held.push(node.name);
      }
    }
    const synced = syncMember(input, node, bn, {
      t,
      d,
      poolTarget: desired,
      heldBy: hold ? staging?.heldBy : undefined,
    });
    members.push(synced.member);
    outs.push(forgetFailure(node.name, failedOn, target), synced.out);
  }
  return { members, room, held, out: mergeOutputs(outs) };
}

/** A new target: a node's failure was about another image; it may try this one. */
function forgetFailure(name: string, failedOn: string | undefined, target: Target): StepOutput {
  if (failedOn === undefined || failedOn === target.image) return NO_OUTPUT;
  return stepOutput({
    actions: [{
      kind: "patchBootcNode",
      node: name,
      patch: { metadata: { annotations: { [ANNOTATION_FAILED_IMAGE]: null } } },
      why: "forget failure on an old image",
    }],
  });
}

/** A member without a BootcNode: one is created for the target and the Node labelled managed. */
function createMember(
  input: PlanInput,
  node: NodeSummary,
  target: Target,
): { member: Member; out: StepOutput } {
  const { pool, now } = input;
  const poolName = pool.metadata.name ?? "";
  const name = node.name;
  const spec = memberSpec(input, target.image);
  const create: Action = {
    kind: "createBootcNode",
    node: name,
    object: {
      apiVersion: API_VERSION,
      kind: NODE.kind,
      metadata: {
        name,
        labels: { [LABEL_POOL]: poolName },
        // A created object's generation is 1: the controller's spec from the start.
        annotations: {
          [ANNOTATION_DESIRED_SINCE]: formatTime(now),
          [ANNOTATION_SPEC_GENERATION]: "1",
        },
        ownerReferences: [ownerReference(pool)],
      },
      spec,
    },
  };
  const label = labelManaged(node);
  const slotOf = recordOf(node).pool;
  const event = slotOf !== undefined && slotOf !== poolName
    ? poolEvent(
      poolName,
      "Normal",
      "NodeAdded",
      `node ${name} joined the pool carrying a reboot slot of pool ${slotOf}`,
    )
    : nodeDisrupted(node, undefined)
    ? nodeEvent(
      name,
      "Warning",
      "BootcNodeRecreated",
      `the BootcNode of node ${name} was deleted while the operator was updating the node ` +
        `(it still carries the disruption record); recreated it and resuming the update`,
    )
    : poolEvent(poolName, "Normal", "NodeAdded", `node ${name} joined the pool`);
  const desired = { image: target.image, platforms: target.platforms };
  const context = { desired, ...externalContext(input) };
  return {
    member: { node, ...classifyMember(node, undefined, context), context },
    out: stepOutput({ actions: label ? [create, label] : [create], events: [event] }),
  };
}

/** The write labelling a member Node `bootc.dev/managed` (so the daemon DaemonSet runs there), if needed. */
export function labelManaged(node: NodeSummary): Action | undefined {
  if (Object.hasOwn(node.labels, LABEL_MANAGED)) return undefined;
  return {
    kind: "patchNode",
    node: node.name,
    patch: { metadata: { labels: { [LABEL_MANAGED]: "" } } },
    why: "label managed",
  };
}

/** The images a synced member is brought to, and what holds it back from a new one. */
interface SyncTargets {
  /** The target it follows (the pool's, or its rollback image). */
  t: Target;
  d: DesiredImage;
  poolTarget: DesiredImage;
  /** Set when it may not start the new download yet (a staging gate). */
  heldBy?: { reason: string; message: string };
}

/**
 * Brings an existing BootcNode in line with the target: desired image, reboot
 * policy, pull secret, pool label and ownership. A new image revokes any reboot
 * approval for the old one (Booted back to Staged, the Node's finished drain
 * withdrawn). Booted stands only on a node whose Node records a finished drain for
 * exactly this image; anything else (a hand edit, a lost record) is reset, with a
 * warning naming the node.
 */
function syncMember(
  input: PlanInput,
  node: NodeSummary,
  bn: BootcNode,
  targets: SyncTargets,
): { member: Member; out: StepOutput } {
  const { t, d, heldBy } = targets;
  const name = node.name;
  const hold = heldBy !== undefined;
  const imageChanged = !hold && bn.spec.desiredImage !== t.image;
  const wanted = memberSpec(input, hold ? bn.spec.desiredImage : t.image, bn.spec);
  const newImage = imageChanged ? withdrawForNewImage(node, input.now) : undefined;
  if (imageChanged) wanted.desiredImageState = "Staged";
  const viewNode = newImage?.node ?? node;
  const context: MemberContext = {
    desired: d,
    poolTarget: targets.poolTarget,
    heldBy,
    ...externalContext(input),
  };
  const wantedNode = classifyMember(viewNode, { ...bn, spec: wanted }, context);
  const events: PlannedEvent[] = [];
  if (
    wanted.desiredImageState === "Booted" && wantedNode.state !== EffectiveState.UpToDate &&
    !wantedNode.facts.rebootRequested
  ) {
    wanted.desiredImageState = "Staged";
    if (!imageChanged) {
      events.push(nodeEvent(
        name,
        "Warning",
        "UnauthorizedRebootRequest",
        `node ${name} was set to desiredImageState: Booted without a reboot slot and a ` +
          `finished drain (by hand, or its record was lost); reset to Staged`,
      ));
    }
  }
  const stale = staleMirror(input.pool, node, bn);
  // The release the mirror was kept for, finished: the cordon as it was before (first, so a
  // failed write leaves the mirror to try again).
  const uncordon = stale && mirrorOf(bn) === "false" && node.unschedulable;
  const changes: Record<string, string | null> = {
    ...newImage?.annotations,
    ...(stale ? { [ANNOTATION_WAS_CORDONED]: null } : {}),
  };
  const annotations = { ...bn.metadata.annotations ?? {}, ...newImage?.annotations };
  if (stale) {
    delete annotations[ANNOTATION_WAS_CORDONED];
    events.push(nodeEvent(
      name,
      "Warning",
      "StaleMirrorDropped",
      `node ${name}'s BootcNode, adopted by pool ${input.pool.metadata.name}, mirrored a prior ` +
        `cordon state while its Node carries no disruption record and no reboot is under way; ` +
        `dropped${uncordon ? " and the node uncordoned as it was before" : ""} (a slot is ` +
        `only ever granted through the gates)`,
    ));
  }
  const view: BootcNode = { ...bn, metadata: { ...bn.metadata, annotations }, spec: wanted };
  const patch = syncPatch(input.pool, bn, wanted, changes);
  const actions: Action[] = newImage?.undrain ? [newImage.undrain] : [];
  if (uncordon) {
    actions.push({
      kind: "patchNode",
      node: name,
      patch: { spec: { unschedulable: null } },
      why: "restore cordon (stale mirror)",
    });
  }
  // No event per node for a new desired image: the pool's TargetChanged says it once, and
  // the BootcNode's spec and conditions carry each node's phase (events mark what people act on).
  if (patch) actions.push({ kind: "patchBootcNode", node: name, patch, why: "sync spec" });
  const label = labelManaged(node);
  if (label) actions.push(label);
  return {
    member: {
      node: viewNode,
      bn: view,
      ...classifyMember(viewNode, view, context),
      desired: d,
      context,
    },
    out: stepOutput({ actions, events }),
  };
}
