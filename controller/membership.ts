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
  API_VERSION,
  type BootcNode,
  type BootcNodePool,
  type BootcNodeSpec,
  LABEL_MANAGED,
  LABEL_POOL,
  MAX_STAGING,
  NODE,
  owningPool,
  POOL,
  PoolDegradedReason,
  resolveIntOrPercent,
} from "../lib/api/mod.ts";
import {
  classifyNode,
  daemonProgress,
  type DesiredImage,
  EffectiveState,
  type NodeClassification,
} from "../lib/api/node_state.ts";
import {
  mirrorOf,
  nodeDisrupted,
  recordOf,
  releaseBootcNodePatch,
  releasePatch,
  undrainPatch,
} from "./disruption.ts";
import { type LeavingHold, leavingHold, reportLeavingHold } from "./leaving.ts";
import { listNames, type MergePatch, PlanBuilder, type PlanInput } from "./plan.ts";
import { matchesSelector, selectorError } from "./selector.ts";
import { formatTime, parseTime } from "./slots.ts";
import { stallDeadlines } from "./deadlines.ts";
import type { NodeSummary, Target } from "./types.ts";

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
}

/** What {@linkcode classifyMember} needs besides the node and its BootcNode. */
export interface MemberContext {
  /** The image the member should run (undefined: its spec's). */
  desired?: DesiredImage;
  /** The pool's target (a member rolled back from it is RollingBack). */
  poolTarget?: DesiredImage;
  /** Why the member is held back from the target (a staging gate), if it is. */
  heldBy?: { reason: string; message: string };
}

/**
 * A member's state, disruption and classification from the one rulebook
 * (`classifyNode`), so every step reads the same facts.
 */
export function classifyMember(
  node: NodeSummary,
  bn: BootcNode | undefined,
  context: MemberContext = {},
): Pick<Member, "state" | "disrupted" | "cls"> {
  const cls = classifyNode({
    bootcNode: bn,
    node,
    target: context.desired,
    poolTarget: context.poolTarget,
    heldBy: context.heldBy,
    member: true,
  });
  return { state: cls.effective, disrupted: cls.disrupted, cls };
}

export { owningPool } from "../lib/api/mod.ts";

/** The controller ownerReference a pool puts on its BootcNodes. */
export function ownerReference(pool: BootcNodePool) {
  return {
    apiVersion: API_VERSION,
    kind: POOL.kind,
    name: pool.metadata.name ?? "",
    uid: pool.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The BootcNodes a pool owns. */
export function ownedBootcNodes(input: PlanInput): BootcNode[] {
  const name = input.pool.metadata.name ?? "";
  return [...input.bootcNodes.values()].filter((bn) => owningPool(bn) === name);
}

/**
 * Hands a node back: its BootcNode goes first (with its mirror of the prior cordon
 * state), then the Node's record is removed and its cordon state restored, so a
 * crash in between leaves a record that {@linkcode releaseOrphans} finishes.
 * A node whose reboot has not finished is held instead (`leaving.ts`): it keeps
 * its BootcNode, record and cordon, and counts against every budget. Returns true
 * while it is held.
 */
export function releaseNode(
  input: PlanInput,
  plan: PlanBuilder,
  name: string,
  bn: BootcNode | undefined,
  why: string,
): boolean {
  const node = input.nodes.get(name);
  const hold = node ? holdOf(input, node, bn) : undefined;
  if (hold?.waitsFor) {
    // A deleted pool lets go of a node whose reboot is overdue (a dead machine would
    // otherwise hold the finalizer for ever); the node is released and named.
    if (!(hold.overdue && input.pool.metadata.deletionTimestamp)) {
      reportLeavingHold(plan, name, hold, why);
      return true;
    }
    plan.poolEvent(
      "Warning",
      "ReleasedUnfinished",
      `node ${name} is released as its pool is deleted, although it is still waiting for ` +
        `${hold.waitsFor} past its reboot timeout; check the host`,
    );
  }
  // A BootcNode already going away (a finalizer of someone else's holds it) is not
  // deleted again on every pass.
  const deleting = bn !== undefined && !bn.metadata.deletionTimestamp;
  const patch = node ? releasePatch(node, bn, { unlabel: true }) : undefined;
  if (!deleting && !patch) {
    // Its Node is restored: the cordon mirror left on the held BootcNode would keep the
    // node counted as disrupted for as long as the finalizer holds it. Drop it.
    const bnPatch = mirrorOf(bn) !== undefined ? releaseBootcNodePatch(bn) : undefined;
    if (bnPatch) {
      plan.act({ kind: "patchBootcNode", node: name, patch: bnPatch, why: "drop mirror" });
    }
    return false;
  }
  if (deleting) plan.act({ kind: "deleteBootcNode", node: name, uid: bn.metadata.uid });
  if (patch) plan.act({ kind: "patchNode", node: name, patch, why: "release node" });
  plan.poolEvent("Normal", "NodeRemoved", `node ${name} left the pool: ${why}`);
  return false;
}

/** {@linkcode leavingHold} of a node leaving `input.pool`, with the pool's reboot timeout. */
function holdOf(input: PlanInput, node: NodeSummary, bn: BootcNode | undefined): LeavingHold {
  const seconds = input.pool.spec.rollout?.rebootTimeoutSeconds;
  return leavingHold({
    node,
    bn,
    rebootTimeoutMs: seconds !== undefined ? seconds * 1000 : undefined,
    now: input.now,
  });
}

/**
 * Nodes carrying this pool's disruption record (or, for a record naming a pool
 * that no longer exists, the first pool by name) that are no longer members and
 * that no other single pool will adopt: restore them so nothing stays cordoned
 * (once their reboot, if one was under way, has finished). Returns the names of
 * the nodes released or still held: they count against the budget in this plan.
 */
export function releaseOrphans(
  input: PlanInput,
  plan: PlanBuilder,
  members: ReadonlySet<string>,
): string[] {
  const poolName = input.pool.metadata.name ?? "";
  const valid = input.pools.filter((p) => selectorError(p.selector) === undefined);
  const names = new Set(input.pools.map((p) => p.name));
  const first = [...names].sort()[0] === poolName;
  const released: string[] = [];
  for (const node of input.nodes.values()) {
    if (members.has(node.name)) continue;
    const bn = input.bootcNodes.get(node.name);
    if (bn && owningPool(bn) !== undefined) continue; // its owner releases or keeps it
    if (!nodeDisrupted(node, bn)) continue;
    const recordPool = recordOf(node).pool;
    const mine = recordPool === poolName ||
      (first && (recordPool === undefined || !names.has(recordPool)));
    if (!mine) continue;
    const matching = valid.filter((p) => matchesSelector(p.selector, node.labels));
    const adopter = matching.length === 1 && matching[0].name !== poolName;
    if (adopter) continue;
    const hold = holdOf(input, node, bn);
    if (hold.waitsFor) {
      // Still rebooting: it counts against the budget until it is back.
      reportLeavingHold(plan, node.name, hold, "no longer a member");
      released.push(node.name);
      continue;
    }
    const patch = releasePatch(node, bn, { unlabel: false });
    if (patch) {
      plan.act({ kind: "patchNode", node: node.name, patch, why: "restore orphaned node" });
      plan.poolEvent(
        "Warning",
        "OrphanRestored",
        `node ${node.name} carried this pool's disruption record but is no longer a member ` +
          `(its BootcNode was deleted or its labels changed); restored its cordon state`,
      );
      released.push(node.name);
    }
  }
  return released;
}

/** The pool's staging places (`spec.rollout.maxStaging`): how many may start a download now. */
export interface StagingQueue {
  /** Resolved limit. */
  limit: number;
  /** Nodes downloading the target now. */
  active: number;
  /** Places still free in this plan. */
  room: number;
  /** Nodes held back, waiting for a place. */
  held: string[];
  /** Why the held nodes wait (their classification's `heldBy`). */
  heldBy: { reason: string; message: string };
}

/**
 * The staging places of a pool for `target`: nodes already told to stage it that have
 * not reported it staged (nor failed, nor run past the staging deadline, so a failed
 * download does not hold a place forever) use one each. Undefined: no limit.
 */
export function stagingQueue(
  input: PlanInput,
  target: Target,
  memberCount: number,
  open = true,
): StagingQueue | undefined {
  const rollout = input.pool.spec.rollout;
  if (rollout?.maxStaging === undefined && open) return undefined;
  const limit = open && rollout?.maxStaging !== undefined
    ? resolveIntOrPercent(rollout.maxStaging, memberCount, MAX_STAGING)
    : 0;
  const deadlines = stallDeadlines(rollout as Record<string, unknown> | undefined);
  const d: DesiredImage = { image: target.image, platforms: target.platforms };
  let active = 0;
  for (const bn of ownedBootcNodes(input)) {
    if (bn.spec.desiredImage !== target.image) continue;
    const state = daemonProgress(bn, d);
    if (state !== EffectiveState.Pending && state !== EffectiveState.Staging) continue;
    const since = parseTime(bn.metadata.annotations?.[ANNOTATION_DESIRED_SINCE]);
    if (since && input.now.getTime() >= since.getTime() + deadlines.stagingMs) continue;
    active++;
  }
  const heldBy = open
    ? {
      reason: "StagingLimit",
      message: `a staging place (spec.rollout.maxStaging: ${limit} at a time, ${active} in use)`,
    }
    : {
      reason: "OutsideMaintenanceWindow",
      message: "the next maintenance window (maintenance.stageOutsideWindows: false)",
    };
  return { limit, active, room: Math.max(0, limit - active), held: [], heldBy };
}

/**
 * The writes that hand back nodes whose disruption record names pool `name`, which
 * no longer exists (deleted without its finalizer, say): their prior cordon state
 * is restored and the record removed, unless another pool will adopt them.
 */
export function planGonePool(
  name: string,
  input: Pick<PlanInput, "pools" | "nodes" | "bootcNodes" | "now">,
): PlanBuilder {
  const plan = new PlanBuilder(name, input.now);
  const stub = { metadata: { name }, spec: { nodeSelector: {} } } as unknown as BootcNodePool;
  releaseOrphans(
    { ...input, pool: stub, podsByNode: new Map(), pdbs: [] },
    plan,
    new Set(),
  );
  return plan;
}

/** What step 2 settled. */
export interface Membership {
  members: Member[];
  /** Nodes handed back in this plan that were still disrupted (they count until released). */
  releasing: string[];
  /** The staging queue, when the pool limits staging. */
  staging?: StagingQueue;
}

/** Step 2: membership and BootcNode sync. */
export function planMembership(
  input: PlanInput,
  plan: PlanBuilder,
  target: Target | undefined,
  options: {
    stagingOpen?: boolean;
    /**
     * The image for members that failed their health checks on `target` (the
     * `bootc.dev/failed-image` annotation, onFailure RollbackNode): they go back to
     * it and are not retried on `target`. Unset: they stay on `target`.
     */
    rollbackImage?: Target;
  } = {},
): Membership {
  const { pool, now } = input;
  const poolName = pool.metadata.name ?? "";
  const desired: DesiredImage | undefined = target
    ? { image: target.image, platforms: target.platforms }
    : undefined;
  const selector = pool.spec.nodeSelector;
  const otherPools = input.pools.filter((p) =>
    p.name !== poolName && selectorError(p.selector) === undefined
  );
  const matching = new Set<string>();
  for (const node of input.nodes.values()) {
    if (matchesSelector(selector, node.labels)) matching.add(node.name);
  }
  const releasing: string[] = [];
  for (const bn of ownedBootcNodes(input)) {
    const name = bn.metadata.name ?? "";
    const node = input.nodes.get(name);
    // A node leaving counts as disrupted until restored; once its BootcNode is going
    // away (perhaps held by someone's finalizer) that is what its Node says.
    const leavingDisrupted = node !== undefined && !matching.has(name) &&
      (bn.metadata.deletionTimestamp
        ? releasePatch(node, bn, { unlabel: false }) !== undefined
        : nodeDisrupted(node, bn));
    if (leavingDisrupted) releasing.push(name);
    if (!node) releaseNode(input, plan, name, bn, "node was deleted");
    else if (!matching.has(name)) {
      releaseNode(input, plan, name, bn, "node no longer matches the pool's nodeSelector");
    }
  }

  const conflicts = new Map<string, string[]>();
  const addConflict = (other: string, node: string) => {
    const list = conflicts.get(other) ?? [];
    list.push(node);
    conflicts.set(other, list);
  };
  const members: Member[] = [];
  const rebootPolicy = pool.spec.disruption?.rebootPolicy ?? "RebootOnly";
  const staging = target
    ? stagingQueue(input, target, matching.size, options.stagingOpen ?? true)
    : undefined;
  for (const name of [...matching].sort()) {
    const node = input.nodes.get(name)!;
    const bn = input.bootcNodes.get(name);
    const owner = bn ? owningPool(bn) : undefined;
    if (owner !== undefined && owner !== poolName) {
      addConflict(owner, name);
      continue;
    }
    const others = otherPools.filter((p) => matchesSelector(p.selector, node.labels));
    for (const o of others) addConflict(o.name, name);
    if (owner === undefined && others.length > 0) continue; // contested: nobody takes it
    if (bn?.metadata.deletionTimestamp) {
      // An old BootcNode still going away: while the node is disrupted it still counts.
      if (nodeDisrupted(node, undefined)) releasing.push(name);
      continue;
    }
    const disrupted = nodeDisrupted(node, bn);
    if (!desired || !target) {
      members.push({ node, bn, ...classifyMember(node, bn) });
      continue;
    }
    if (!bn) {
      const spec: BootcNodeSpec = {
        desiredImage: target.image,
        desiredImageState: "Staged",
        rebootPolicy,
        ...(pool.spec.pullSecretRef ? { pullSecretRef: { ...pool.spec.pullSecretRef } } : {}),
        ...(input.pullSecretHash ? { pullSecretHash: input.pullSecretHash } : {}),
        ...(healthUnitsOf(pool) ? { healthUnits: healthUnitsOf(pool) } : {}),
      };
      plan.act({
        kind: "createBootcNode",
        node: name,
        object: {
          apiVersion: API_VERSION,
          kind: NODE.kind,
          metadata: {
            name,
            labels: { [LABEL_POOL]: poolName },
            annotations: { [ANNOTATION_DESIRED_SINCE]: formatTime(now) },
            ownerReferences: [ownerReference(pool)],
          },
          spec,
        },
      });
      labelManaged(plan, node);
      if (disrupted) {
        plan.nodeEvent(
          name,
          "Warning",
          "BootcNodeRecreated",
          `the BootcNode of node ${name} was deleted while the operator was updating the node ` +
            `(it still carries the disruption record); recreated it and resuming the update`,
        );
      } else {
        plan.poolEvent("Normal", "NodeAdded", `node ${name} joined the pool`);
      }
      members.push({ node, ...classifyMember(node, undefined, { desired }) });
      continue;
    }
    const failedOn = bn.metadata.annotations?.[ANNOTATION_FAILED_IMAGE];
    if (failedOn !== undefined && failedOn !== target.image) {
      // A new target: the node's failure was about another image; it may try this one.
      plan.act({
        kind: "patchBootcNode",
        node: name,
        patch: { metadata: { annotations: { [ANNOTATION_FAILED_IMAGE]: null } } },
        why: "forget failure on an old image",
      });
    }
    const own = failedOn === target.image && options.rollbackImage
      ? options.rollbackImage
      : undefined;
    const t = own ?? target;
    const d = own ? { image: own.image, platforms: own.platforms } : desired;
    members.push(
      syncMember(input, plan, node, bn, { t, d, poolTarget: desired }, own ? undefined : staging),
    );
  }
  for (const [other, nodes] of [...conflicts].sort(([a], [b]) => a < b ? -1 : 1)) {
    plan.issues.push({
      reason: PoolDegradedReason.NodeConflict,
      message: `node(s) ${listNames(nodes.sort())} also match pool ${other}`,
    });
  }
  releasing.push(...releaseOrphans(input, plan, new Set(members.map((m) => m.node.name))));
  return { members, releasing, staging };
}

/** Labels a member Node `bootc.dev/managed` (so the daemon DaemonSet runs there) if it is not yet. */
export function labelManaged(plan: PlanBuilder, node: NodeSummary): void {
  if (Object.hasOwn(node.labels, LABEL_MANAGED)) return;
  plan.act({
    kind: "patchNode",
    node: node.name,
    patch: { metadata: { labels: { [LABEL_MANAGED]: "" } } },
    why: "label managed",
  });
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
  plan: PlanBuilder,
  node: NodeSummary,
  bn: BootcNode,
  targets: { t: Target; d: DesiredImage; poolTarget: DesiredImage },
  staging: StagingQueue | undefined,
): Member {
  const { t, d } = targets;
  const { pool, now } = input;
  const poolName = pool.metadata.name ?? "";
  const name = node.name;
  const annotations = bn.metadata.annotations ?? {};
  // A node in flight always follows the target; others wait for a staging place.
  let hold = false;
  if (bn.spec.desiredImage !== t.image && staging && !nodeDisrupted(node, bn)) {
    if (staging.room > 0) staging.room--;
    else {
      hold = true;
      staging.held.push(name);
    }
  }
  const imageChanged = !hold && bn.spec.desiredImage !== t.image;
  const wantedSpec: BootcNodeSpec = {
    ...bn.spec,
    desiredImage: hold ? bn.spec.desiredImage : t.image,
    rebootPolicy: pool.spec.disruption?.rebootPolicy ?? "RebootOnly",
    pullSecretRef: pool.spec.pullSecretRef ? { ...pool.spec.pullSecretRef } : undefined,
    pullSecretHash: input.pullSecretHash,
    healthUnits: healthUnitsOf(pool),
  };
  const viewAnnotations = { ...annotations };
  const annotationPatch: Record<string, string | null> = {};
  let viewNode = node;
  if (imageChanged) {
    wantedSpec.desiredImageState = "Staged";
    annotationPatch[ANNOTATION_DESIRED_SINCE] = formatTime(now);
    viewAnnotations[ANNOTATION_DESIRED_SINCE] = formatTime(now);
    const undrain = undrainPatch(node);
    if (undrain) {
      plan.act({
        kind: "patchNode",
        node: name,
        patch: undrain,
        why: "withdraw drain (new image)",
      });
      const nodeAnnotations = { ...node.annotations };
      for (const k of Object.keys((undrain.metadata as MergePatch).annotations as MergePatch)) {
        delete nodeAnnotations[k];
      }
      viewNode = { ...node, annotations: nodeAnnotations };
    }
  }
  const context: MemberContext = {
    desired: d,
    poolTarget: targets.poolTarget,
    heldBy: hold ? staging?.heldBy : undefined,
  };
  const state = classifyMember(viewNode, { ...bn, spec: wantedSpec }, context).state;
  const record = recordOf(viewNode);
  const approved = record.slotAt !== undefined && record.drainedFor === wantedSpec.desiredImage;
  if (
    wantedSpec.desiredImageState === "Booted" && state !== EffectiveState.UpToDate && !approved
  ) {
    wantedSpec.desiredImageState = "Staged";
    if (!imageChanged) {
      plan.nodeEvent(
        name,
        "Warning",
        "UnauthorizedRebootRequest",
        `node ${name} was set to desiredImageState: Booted without a reboot slot and a ` +
          `finished drain (by hand, or its record was lost); reset to Staged`,
      );
    }
  }
  const specPatch: MergePatch = {};
  for (
    const key of ["desiredImage", "desiredImageState", "rebootPolicy", "pullSecretHash"] as const
  ) {
    if (bn.spec[key] !== wantedSpec[key]) specPatch[key] = wantedSpec[key] ?? null;
  }
  if (
    JSON.stringify(bn.spec.pullSecretRef ?? null) !==
      JSON.stringify(wantedSpec.pullSecretRef ?? null)
  ) {
    specPatch.pullSecretRef = wantedSpec.pullSecretRef ?? null;
  }
  if (
    JSON.stringify(bn.spec.healthUnits ?? null) !== JSON.stringify(wantedSpec.healthUnits ?? null)
  ) {
    specPatch.healthUnits = wantedSpec.healthUnits ?? null;
  }
  const metaPatch: MergePatch = {};
  if (bn.metadata.labels?.[LABEL_POOL] !== poolName) {
    metaPatch.labels = { [LABEL_POOL]: poolName };
  }
  if (
    owningPool(bn) === undefined ||
    bn.metadata.ownerReferences?.find((o) => o.kind === POOL.kind && o.controller)?.uid !==
      pool.metadata.uid
  ) {
    // Adopt an orphan (or one left by an earlier pool of the same name).
    metaPatch.ownerReferences = [ownerReference(pool)];
  }
  const view: BootcNode = {
    ...bn,
    metadata: { ...bn.metadata, annotations: viewAnnotations },
    spec: wantedSpec,
  };
  if (Object.keys(annotationPatch).length > 0) metaPatch.annotations = annotationPatch;
  const patch: MergePatch = {};
  if (Object.keys(specPatch).length > 0) patch.spec = specPatch;
  if (Object.keys(metaPatch).length > 0) patch.metadata = metaPatch;
  if (Object.keys(patch).length > 0) {
    plan.act({ kind: "patchBootcNode", node: name, patch, why: "sync spec" });
    if (imageChanged) {
      plan.nodeEvent(
        name,
        "Normal",
        "DesiredImageChanged",
        `node ${name} should now run ${t.image}`,
      );
    }
  }
  labelManaged(plan, node);
  return {
    node: viewNode,
    bn: view,
    ...classifyMember(viewNode, view, context),
    desired: d,
  };
}

/** The units the pool's health check lists (copied to each BootcNode for its daemon). */
function healthUnitsOf(pool: BootcNodePool): string[] | undefined {
  const units = pool.spec.rollout?.health?.units;
  return units && units.length > 0 ? [...units] : undefined;
}
