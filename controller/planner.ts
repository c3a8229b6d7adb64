/**
 * The Pool Reconciler's decisions as one pure function: given a pool, the
 * cluster as the caches see it, the target image and the time, it returns the
 * writes to make (in order), the events to record and the pool's new status.
 * The shell (`reconciler.ts`) only gathers the inputs and applies the plan.
 *
 * Steps, as in the design: (1) target digest, (2) membership, (3) rollout
 * with reboot slots and drains, (4) pool status.
 *
 * @module
 */
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_WAS_CORDONED,
  API_VERSION,
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  type BootcNodeSpec,
  findCondition,
  holdsRebootSlot,
  LABEL_MANAGED,
  LABEL_POOL,
  NODE,
  NodeConditionType,
  type PlatformDigest,
  POOL,
  PoolConditionType,
  PoolDegradedReason,
} from "../lib/api/mod.ts";
import { describeDrainBlockers, pdbDemand, planDrainPass, podKey } from "./drain.ts";
import { type DesiredImage, EffectiveState, effectiveState } from "./effective_state.ts";
import { type ImageRefParts, splitImageRef } from "./image_ref.ts";
import { buildPoolStatus, emptyCounts, type PoolIssue, type StateCounts } from "./pool_status.ts";
import { matchesSelector, selectorError } from "./selector.ts";
import { formatTime, parseTime, resolveMaxUnavailable, slotUnhealthyReason } from "./slots.ts";
import type { NodeSummary, PdbSummary, PodSummary, PoolSummary, Target } from "./types.ts";

/** Finalizer that lets the controller hand nodes back (labels, cordons) when a pool is deleted. */
export const POOL_FINALIZER = "node.bootc.dev/release-nodes";

/** Result of one registry resolution of a tag. */
export type ResolveResult =
  | { ok: true; digest: string; platforms?: PlatformDigest[] }
  | { ok: false; message: string };

/** The latest resolution attempt the shell remembers for a pool (lost on restart, on purpose). */
export interface ResolutionMemo {
  /** The pool generation the attempt was made for. */
  generation: number | undefined;
  at: Date;
  result: ResolveResult;
}

/** What step 1 needs from the shell. */
export type ResolutionNeed =
  | { kind: "invalid"; message: string }
  | { kind: "pinned"; parts: ImageRefParts }
  | { kind: "resolve"; ref: string; parts: ImageRefParts }
  | { kind: "fresh"; parts: ImageRefParts; nextAt: Date };

/** Tunables of the planner (times in milliseconds). */
export interface PlannerOptions {
  /** Tag poll interval when the pool does not set `image.pollIntervalSeconds` (default 5 min). */
  defaultPollIntervalMs?: number;
  /** Retry delay after a failed resolution, capped by the poll interval (default 30 s). */
  resolveRetryMs?: number;
  /** How soon a drain pass is repeated while pods are still leaving (default 5 s). */
  drainPollMs?: number;
}

const DEFAULTS: Required<PlannerOptions> = {
  defaultPollIntervalMs: 5 * 60_000,
  resolveRetryMs: 30_000,
  drainPollMs: 5_000,
};

/** Everything the planner looks at. */
export interface PlanInput {
  pool: BootcNodePool;
  /** Every pool (this one may be included), for conflict detection. */
  pools: readonly PoolSummary[];
  /** Every Node, by name. */
  nodes: ReadonlyMap<string, NodeSummary>;
  /** Every BootcNode, by name. */
  bootcNodes: ReadonlyMap<string, BootcNode>;
  /** Pods by node name (only nodes of this pool need to be present). */
  podsByNode: ReadonlyMap<string, readonly PodSummary[]>;
  /**
   * The nodes whose pods were listed. When set, a node outside it has unknown
   * pods: the planner neither drains it nor gives it a slot, and asks for its
   * pods in {@linkcode Plan.needPods}. When unset, every node's pods are known.
   */
  podsListed?: ReadonlySet<string>;
  pdbs: readonly PdbSummary[];
  /** The latest resolution of the pool's tag, if the shell has one. */
  resolution?: ResolutionMemo;
  /** sha256 of the pull Secret's data, when the pool names a Secret that exists. */
  pullSecretHash?: string;
  now: Date;
  options?: PlannerOptions;
}

/** A JSON merge patch. */
export type MergePatch = Record<string, unknown>;

/** What a completed action lets the shell observe (metrics). */
export interface Observation {
  metric: "drain_seconds" | "update_seconds";
  seconds: number;
}

/** One write, applied by the shell in order. */
export type Action =
  | { kind: "createBootcNode"; node: string; object: BootcNode }
  | { kind: "patchBootcNode"; node: string; patch: MergePatch; why: string; observe?: Observation }
  | { kind: "deleteBootcNode"; node: string; uid?: string }
  | { kind: "patchNode"; node: string; patch: MergePatch; why: string }
  | { kind: "evict"; node: string; pods: { namespace: string; name: string; uid?: string }[] }
  | { kind: "addFinalizer" }
  | { kind: "removeFinalizer" };

/** A Kubernetes Event to record. */
export interface PlannedEvent {
  /** The object the event is about. */
  regarding: { kind: "BootcNodePool" | "BootcNode"; name: string };
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /**
   * Set for events derived from time rather than from a write (timeouts): the
   * shell records each key once, so a level-triggered loop does not repeat them.
   */
  onceKey?: string;
}

/** The planner's answer. */
export interface Plan {
  actions: Action[];
  events: PlannedEvent[];
  /** The new status; undefined while the pool is being deleted. */
  status: BootcNodePoolStatus | undefined;
  /** Reconcile again after this long, when a deadline or a poll is due. */
  requeueAfterMs?: number;
  /** True while a drain is waiting on pods (the shell backs off when evictions are refused). */
  draining: boolean;
  /** Number of reboot slots (resolved maxUnavailable). */
  slots: number;
  /** Nodes whose pods the planner needs to decide (list them and plan again). */
  needPods: string[];
  /** Member nodes per effective state (a node found stuck counts as Degraded). */
  counts: StateCounts;
}

/** Name of the pool that controls `bn`, from its controller ownerReference. */
export function owningPool(bn: BootcNode): string | undefined {
  return bn.metadata.ownerReferences?.find((o) => o.kind === POOL.kind && o.controller)?.name;
}

/** Poll interval of a pool in milliseconds. */
export function pollIntervalMs(pool: BootcNodePool, options: PlannerOptions = {}): number {
  const s = pool.spec.image.pollIntervalSeconds;
  return s !== undefined && s > 0
    ? s * 1000
    : (options.defaultPollIntervalMs ?? DEFAULTS.defaultPollIntervalMs);
}

/**
 * Step 1, first half: does this reconcile have to ask the registry? A digest
 * ref never does; a tag does when the spec changed, the last attempt failed
 * and its retry is due, or the poll interval has passed.
 */
export function resolutionNeed(
  pool: BootcNodePool,
  now: Date,
  memo: ResolutionMemo | undefined,
  options: PlannerOptions = {},
): ResolutionNeed {
  let parts: ImageRefParts;
  try {
    parts = splitImageRef(pool.spec.image.ref);
  } catch (e) {
    return { kind: "invalid", message: (e as Error).message };
  }
  if (parts.digest) return { kind: "pinned", parts };
  const interval = pollIntervalMs(pool, options);
  const generation = pool.metadata.generation;
  const due = (nextAt: Date): ResolutionNeed =>
    now.getTime() >= nextAt.getTime()
      ? { kind: "resolve", ref: pool.spec.image.ref, parts }
      : { kind: "fresh", parts, nextAt };
  if (memo && memo.generation === generation) {
    const wait = memo.result.ok
      ? interval
      : Math.min(interval, options.resolveRetryMs ?? DEFAULTS.resolveRetryMs);
    return due(new Date(memo.at.getTime() + wait));
  }
  const status = pool.status;
  const last = parseTime(status?.lastResolvedTime);
  const failedBefore = findCondition(status?.conditions, PoolConditionType.Degraded)?.reason ===
    PoolDegradedReason.ImageResolutionFailed;
  if (
    !last || !status?.targetImage || status.observedGeneration !== generation || failedBefore ||
    !status.targetImage.startsWith(`${parts.repository}@`)
  ) {
    return { kind: "resolve", ref: pool.spec.image.ref, parts };
  }
  return due(new Date(last.getTime() + interval));
}

interface Member {
  node: NodeSummary;
  /** The BootcNode as it will be after this plan's sync (undefined: to be created). */
  view?: BootcNode;
  state: EffectiveState;
  inSlot: boolean;
  slotAt?: Date;
  drainedAt?: Date;
}

function readyForMs(node: NodeSummary, now: Date): number {
  if (!node.ready) return -1;
  const since = parseTime(node.readySince);
  return since ? now.getTime() - since.getTime() : Number.POSITIVE_INFINITY;
}

function ownerReference(pool: BootcNodePool) {
  return {
    apiVersion: API_VERSION,
    kind: POOL.kind,
    name: pool.metadata.name ?? "",
    uid: pool.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Patch that hands a node back: unlabel and restore the cordon state recorded before we took it. */
function nodeReleasePatch(
  node: NodeSummary,
  bn: BootcNode | undefined,
  unlabel: boolean,
): MergePatch | undefined {
  const patch: { metadata?: MergePatch; spec?: MergePatch } = {};
  if (unlabel && Object.hasOwn(node.labels, LABEL_MANAGED)) {
    patch.metadata = { labels: { [LABEL_MANAGED]: null } };
  }
  const was = bn?.metadata.annotations?.[ANNOTATION_WAS_CORDONED];
  if (was === "false" && node.unschedulable) patch.spec = { unschedulable: null };
  return patch.metadata || patch.spec ? patch : undefined;
}

function listNames(names: readonly string[], max = 5): string {
  const shown = names.slice(0, max).join(", ");
  return names.length > max ? `${shown} and ${names.length - max} more` : shown;
}

/** Plans one reconcile of `input.pool`. Pure: same input, same plan. */
export function planPool(input: PlanInput): Plan {
  const { pool, now } = input;
  const options = { ...DEFAULTS, ...input.options };
  const poolName = pool.metadata.name ?? "";
  const actions: Action[] = [];
  const events: PlannedEvent[] = [];
  const issues: PoolIssue[] = [];
  let requeueAfterMs: number | undefined;
  const wake = (ms: number) => {
    const v = Math.max(ms, 1);
    requeueAfterMs = requeueAfterMs === undefined ? v : Math.min(requeueAfterMs, v);
  };
  const poolEvent = (type: PlannedEvent["type"], reason: string, message: string) =>
    events.push({ regarding: { kind: "BootcNodePool", name: poolName }, type, reason, message });
  const nodeEvent = (
    node: string,
    type: PlannedEvent["type"],
    reason: string,
    message: string,
    onceKey?: string,
  ) =>
    events.push({ regarding: { kind: "BootcNode", name: node }, type, reason, message, onceKey });

  const owned = [...input.bootcNodes.values()].filter((bn) => owningPool(bn) === poolName);
  const hasFinalizer = (pool.metadata.finalizers ?? []).includes(POOL_FINALIZER);

  // A pool being deleted hands every node back, then lets go of its finalizer.
  if (pool.metadata.deletionTimestamp) {
    for (const bn of owned) releaseNode(bn, "pool is being deleted");
    if (owned.length === 0 && hasFinalizer) actions.push({ kind: "removeFinalizer" });
    return {
      actions,
      events,
      status: undefined,
      draining: false,
      slots: 0,
      needPods: [],
      counts: emptyCounts(),
    };
  }
  if (!hasFinalizer) actions.push({ kind: "addFinalizer" });

  // Invalid specs the CRD schema cannot catch stop everything but status: a typo must
  // neither release nodes nor start reboots.
  const specErrors: string[] = [];
  const selErr = selectorError(pool.spec.nodeSelector);
  if (selErr) specErrors.push(selErr);
  const need = resolutionNeed(pool, now, input.resolution, options);
  if (need.kind === "invalid") specErrors.push(need.message);
  try {
    resolveMaxUnavailable(pool.spec.rollout?.maxUnavailable, 1);
  } catch (e) {
    specErrors.push((e as Error).message);
  }
  if (specErrors.length > 0 || need.kind === "invalid") {
    const counts = emptyCounts();
    for (const bn of owned) {
      counts[effectiveState(bn, { image: bn.spec.desiredImage })]++;
    }
    const status = buildPoolStatus({
      prior: pool.status,
      generation: pool.metadata.generation,
      target: priorTarget(pool),
      lastResolvedTime: pool.status?.lastResolvedTime,
      counts,
      slotsInUse: owned.filter((bn) => bn.metadata.annotations?.[ANNOTATION_IN_REBOOT_SLOT]).length,
      paused: pool.spec.rollout?.paused ?? false,
      issues: [{ reason: PoolDegradedReason.InvalidSpec, message: specErrors.join("; ") }],
      now,
    });
    conditionEvents(pool.status, status);
    return { actions, events, status, draining: false, slots: 0, needPods: [], counts };
  }

  // Step 1: target digest.
  let target: Target | undefined;
  let lastResolvedTime: string | undefined;
  const parts = need.parts;
  const memo = input.resolution?.generation === pool.metadata.generation
    ? input.resolution
    : undefined;
  if (need.kind === "pinned") {
    const digest = parts.digest ?? "";
    const prior = pool.status?.targetDigest === digest ? pool.status?.targetPlatforms : undefined;
    target = { digest, image: `${parts.repository}@${digest}`, platforms: prior };
  } else if (memo?.result.ok) {
    target = {
      digest: memo.result.digest,
      image: `${parts.repository}@${memo.result.digest}`,
      platforms: memo.result.platforms,
    };
    lastResolvedTime = formatTime(memo.at);
  } else {
    target = priorTarget(pool);
    lastResolvedTime = pool.status?.lastResolvedTime;
    if (memo && !memo.result.ok) {
      issues.push({
        reason: PoolDegradedReason.ImageResolutionFailed,
        message: `resolving ${pool.spec.image.ref}: ${memo.result.message}`,
      });
    }
  }
  if (target && target.digest !== pool.status?.targetDigest) {
    poolEvent("Normal", "TargetChanged", `rolling out ${target.image}`);
  }
  const desired: DesiredImage | undefined = target
    ? { image: target.image, platforms: target.platforms }
    : undefined;

  // Step 2: membership.
  const selector = pool.spec.nodeSelector;
  const otherPools = input.pools.filter((p) =>
    p.name !== poolName && selectorError(p.selector) === undefined
  );
  const matching = new Set<string>();
  for (const node of input.nodes.values()) {
    if (matchesSelector(selector, node.labels)) matching.add(node.name);
  }
  for (const bn of owned) {
    const name = bn.metadata.name ?? "";
    const node = input.nodes.get(name);
    if (!node) releaseNode(bn, "node was deleted");
    else if (!matching.has(name)) releaseNode(bn, "node no longer matches the pool's nodeSelector");
  }

  const conflicts = new Map<string, string[]>();
  const addConflict = (other: string, node: string) => {
    const list = conflicts.get(other) ?? [];
    list.push(node);
    conflicts.set(other, list);
  };
  const members: Member[] = [];
  const rebootPolicy = pool.spec.disruption?.rebootPolicy ?? "RebootOnly";
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
    if (bn?.metadata.deletionTimestamp) continue; // an old BootcNode still going away
    if (!desired || !target) {
      members.push({ node, state: EffectiveState.Pending, inSlot: false });
      continue;
    }
    if (!bn) {
      const spec: BootcNodeSpec = {
        desiredImage: target.image,
        desiredImageState: "Staged",
        rebootPolicy,
        ...(pool.spec.pullSecretRef ? { pullSecretRef: { ...pool.spec.pullSecretRef } } : {}),
        ...(input.pullSecretHash ? { pullSecretHash: input.pullSecretHash } : {}),
      };
      actions.push({
        kind: "createBootcNode",
        node: name,
        object: {
          apiVersion: API_VERSION,
          kind: NODE.kind,
          metadata: {
            name,
            labels: { [LABEL_POOL]: poolName },
            ownerReferences: [ownerReference(pool)],
          },
          spec,
        },
      });
      labelManaged(node);
      poolEvent("Normal", "NodeAdded", `node ${name} joined the pool`);
      members.push({ node, state: EffectiveState.Pending, inSlot: false });
      continue;
    }
    members.push(syncMember(node, bn, target, desired));
  }
  for (const [other, nodes] of [...conflicts].sort(([a], [b]) => a < b ? -1 : 1)) {
    issues.push({
      reason: PoolDegradedReason.NodeConflict,
      message: `node(s) ${listNames(nodes.sort())} also match pool ${other}`,
    });
  }

  // Step 3: rollout.
  const rollout = pool.spec.rollout ?? {};
  const drainTimeoutMs = (rollout.drainTimeoutSeconds ?? 600) * 1000;
  const rebootTimeoutMs = (rollout.rebootTimeoutSeconds ?? 1800) * 1000;
  const minReadyMs = (rollout.minReadySeconds ?? 0) * 1000;
  const slots = resolveMaxUnavailable(rollout.maxUnavailable, members.length);
  const unhealthy: string[] = [];
  const stuck = new Set<string>();
  const degradedMessages: string[] = [];
  let inUse = 0;
  let draining = false;
  const drainingDemand = new Map<string, number>();
  const addDemand = (pods: readonly PodSummary[]) => {
    for (const [k, n] of pdbDemand(pods, input.pdbs)) {
      drainingDemand.set(k, (drainingDemand.get(k) ?? 0) + n);
    }
  };
  let drainingNodes = 0;
  const needPods: string[] = [];
  const podsOf = (name: string): readonly PodSummary[] | undefined =>
    input.podsListed && !input.podsListed.has(name) ? undefined : input.podsByNode.get(name) ?? [];

  for (const m of members) {
    const name = m.node.name;
    if (m.view && m.state === EffectiveState.Degraded) {
      const cond = findCondition(m.view.status?.conditions, NodeConditionType.Degraded);
      degradedMessages.push(`node ${name}: ${cond?.message || cond?.reason || "Degraded"}`);
    }
    if (!m.inSlot || !m.view) continue;
    const view = m.view;
    const slotAt = m.slotAt ?? now;
    const readyMs = readyForMs(m.node, now);
    if (m.state === EffectiveState.UpToDate && m.node.ready) {
      if (readyMs >= minReadyMs) {
        const patch = nodeReleasePatch(m.node, view, false);
        if (patch) actions.push({ kind: "patchNode", node: name, patch, why: "restore cordon" });
        actions.push({
          kind: "patchBootcNode",
          node: name,
          patch: {
            metadata: {
              annotations: {
                [ANNOTATION_IN_REBOOT_SLOT]: null,
                [ANNOTATION_WAS_CORDONED]: null,
                [ANNOTATION_DRAINED_AT]: null,
              },
            },
          },
          why: "release slot",
          observe: {
            metric: "update_seconds",
            seconds: (now.getTime() - slotAt.getTime()) / 1000,
          },
        });
        nodeEvent(
          name,
          "Normal",
          "NodeUpdated",
          `node ${name} runs ${view.spec.desiredImage}; slot released`,
        );
        m.inSlot = false;
        continue;
      }
      wake(minReadyMs - readyMs);
    }
    inUse++;
    if (m.state === EffectiveState.UpToDate) {
      // Runs the target but is not Ready (long enough): hold the slot, no drain needed.
      const rebootTimedOut = m.drainedAt !== undefined &&
        now.getTime() >= m.drainedAt.getTime() + rebootTimeoutMs;
      if (rebootTimedOut) {
        const msg = `node ${name} runs ${view.spec.desiredImage} but is not Ready ` +
          `${rebootTimeoutMs / 1000}s after its reboot request`;
        degradedMessages.push(msg);
        nodeEvent(
          name,
          "Warning",
          "RebootTimedOut",
          msg,
          `reboot-timeout/${name}/${formatTime(m.drainedAt!)}`,
        );
        stuck.add(name);
      } else if (m.drainedAt) {
        wake(m.drainedAt.getTime() + rebootTimeoutMs - now.getTime());
      }
      const why = slotUnhealthyReason({
        degraded: false,
        ready: m.node.ready,
        drainTimedOut: false,
        rebootRequested: m.drainedAt !== undefined,
        rebootTimedOut,
      });
      if (why) unhealthy.push(`${name} ${why}`);
      continue;
    }
    if (!m.node.unschedulable) {
      actions.push({
        kind: "patchNode",
        node: name,
        patch: { spec: { unschedulable: true } },
        why: "cordon",
      });
    }
    let drainTimedOut = false;
    let rebootTimedOut = false;
    if (!m.drainedAt) {
      const pods = podsOf(name);
      if (!pods) {
        // Unknown pods: count it as draining so no other slot races it for a budget.
        needPods.push(name);
        draining = true;
        drainingNodes++;
        continue;
      }
      const pass = planDrainPass(pods);
      // The drain only counts as done once the cordon is visible, so no pod slipped in.
      if (pass.done && m.node.unschedulable) {
        if (m.state === EffectiveState.Staged) {
          actions.push(rebootRequest(name, now, slotAt));
          nodeEvent(name, "Normal", "DrainCompleted", `node ${name} drained`);
          nodeEvent(
            name,
            "Normal",
            "RebootRequested",
            `node ${name} asked to boot ${view.spec.desiredImage}`,
          );
          m.drainedAt = now;
          wake(rebootTimeoutMs);
        }
      } else {
        draining = true;
        drainingNodes++;
        addDemand(pods);
        if (pass.toEvict.length > 0) {
          actions.push({
            kind: "evict",
            node: name,
            pods: pass.toEvict.map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid })),
          });
        }
        wake(options.drainPollMs);
        const deadline = slotAt.getTime() + drainTimeoutMs;
        if (now.getTime() >= deadline) {
          drainTimedOut = true;
          const msg = `drain of node ${name} did not finish within ${drainTimeoutMs / 1000}s: ${
            describeDrainBlockers(pass, input.pdbs) || "waiting for the cordon"
          }`;
          degradedMessages.push(msg);
          nodeEvent(
            name,
            "Warning",
            "DrainBlocked",
            msg,
            `drain-timeout/${name}/${formatTime(slotAt)}`,
          );
        } else {
          wake(deadline - now.getTime());
        }
      }
    } else {
      if (m.state === EffectiveState.Staged && view.spec.desiredImageState !== "Booted") {
        actions.push({
          kind: "patchBootcNode",
          node: name,
          patch: { spec: { desiredImageState: "Booted" } },
          why: "request reboot",
        });
      }
      const deadline = m.drainedAt.getTime() + rebootTimeoutMs;
      if (now.getTime() >= deadline) {
        rebootTimedOut = true;
        const msg = `node ${name} did not come back running ${view.spec.desiredImage} and Ready ` +
          `within ${rebootTimeoutMs / 1000}s of its reboot request`;
        degradedMessages.push(msg);
        nodeEvent(
          name,
          "Warning",
          "RebootTimedOut",
          msg,
          `reboot-timeout/${name}/${formatTime(m.drainedAt)}`,
        );
      } else {
        wake(deadline - now.getTime());
      }
    }
    const why = slotUnhealthyReason({
      degraded: m.state === EffectiveState.Degraded,
      ready: m.node.ready,
      drainTimedOut,
      rebootRequested: m.drainedAt !== undefined,
      rebootTimedOut,
    });
    if (why) unhealthy.push(`${name} ${why}`);
    if (drainTimedOut || rebootTimedOut) stuck.add(name);
  }

  const halted = unhealthy.length >= 2;
  const notes: string[] = [];
  if (halted) {
    issues.push({
      reason: PoolDegradedReason.RolloutHalted,
      message: `rollout halted: ${unhealthy.length} nodes in reboot slots are unhealthy (${
        unhealthy.join("; ")
      })`,
    });
  }
  const paused = rollout.paused ?? false;
  const candidates = members.filter((m) =>
    m.view && !m.inSlot && m.state === EffectiveState.Staged && m.node.ready
  );
  if (paused && candidates.length > 0) notes.push("paused: no new reboot slots");
  if (!paused && !halted && desired) {
    const waitingOnPdb: string[] = [];
    let unknownBudget = slots - inUse + 5;
    for (const c of candidates) {
      if (inUse >= slots) break;
      const name = c.node.name;
      const pods = podsOf(name);
      if (!pods) {
        if (unknownBudget-- <= 0) break;
        needPods.push(name);
        continue;
      }
      const demand = pdbDemand(pods, input.pdbs);
      const blockedBy = [...demand].filter(([key, n]) =>
        n + (drainingDemand.get(key) ?? 0) > allowedDisruptions(input.pdbs, key)
      ).map(([key]) => key);
      // With no drain running, one blocked node may go: it cannot deadlock with anyone,
      // and its drain timeout reports the budget that blocks it.
      if (blockedBy.length > 0 && drainingNodes > 0) {
        waitingOnPdb.push(`${name} (PodDisruptionBudget ${listNames(blockedBy, 3)})`);
        continue;
      }
      inUse++;
      drainingNodes++;
      draining = true;
      addDemand(pods);
      actions.push({
        kind: "patchBootcNode",
        node: name,
        patch: {
          metadata: {
            annotations: {
              [ANNOTATION_IN_REBOOT_SLOT]: formatTime(now),
              [ANNOTATION_WAS_CORDONED]: String(c.node.unschedulable),
            },
          },
        },
        why: "assign slot",
      });
      if (!c.node.unschedulable) {
        actions.push({
          kind: "patchNode",
          node: name,
          patch: { spec: { unschedulable: true } },
          why: "cordon",
        });
      }
      const pass = planDrainPass(pods);
      if (pass.toEvict.length > 0) {
        actions.push({
          kind: "evict",
          node: name,
          pods: pass.toEvict.map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid })),
        });
      }
      nodeEvent(
        name,
        "Normal",
        "SlotAssigned",
        `node ${name} got a reboot slot (${inUse}/${slots})`,
      );
      nodeEvent(
        name,
        "Normal",
        "DrainStarted",
        `draining node ${name}: ${pass.toEvict.length} pod(s) to evict, ${pass.terminating.length} terminating`,
      );
      c.inSlot = true;
      wake(options.drainPollMs);
    }
    if (waitingOnPdb.length > 0) {
      notes.push(`waiting on disruption budgets: ${listNames(waitingOnPdb, 3)}`);
    }
  }
  if (degradedMessages.length > 0) {
    issues.push({ reason: PoolDegradedReason.NodeDegraded, message: degradedMessages.join("; ") });
  }

  // Step 4: status.
  const counts = emptyCounts();
  for (const m of members) {
    counts[stuck.has(m.node.name) ? EffectiveState.Degraded : m.state]++;
  }
  if (need.kind === "fresh") wake(need.nextAt.getTime() - now.getTime());
  const status = buildPoolStatus({
    prior: pool.status,
    generation: pool.metadata.generation,
    target,
    lastResolvedTime,
    counts,
    slotsInUse: inUse,
    paused,
    issues,
    note: notes.join("; ") || undefined,
    now,
  });
  conditionEvents(pool.status, status);
  return { actions, events, status, requeueAfterMs, draining, slots, needPods, counts };

  // --- helpers closing over the plan being built ---

  function releaseNode(bn: BootcNode, why: string) {
    const name = bn.metadata.name ?? "";
    const node = input.nodes.get(name);
    if (node) {
      const patch = nodeReleasePatch(node, bn, true);
      if (patch) actions.push({ kind: "patchNode", node: name, patch, why: "release node" });
    }
    actions.push({ kind: "deleteBootcNode", node: name, uid: bn.metadata.uid });
    poolEvent("Normal", "NodeRemoved", `node ${name} left the pool: ${why}`);
  }

  /** Labels a member Node `bootc.dev/managed` (so the daemon DaemonSet runs there) if it is not yet. */
  function labelManaged(node: NodeSummary): void {
    if (Object.hasOwn(node.labels, LABEL_MANAGED)) return;
    actions.push({
      kind: "patchNode",
      node: node.name,
      patch: { metadata: { labels: { [LABEL_MANAGED]: "" } } },
      why: "label managed",
    });
  }

  function syncMember(node: NodeSummary, bn: BootcNode, t: Target, d: DesiredImage): Member {
    const name = node.name;
    const annotations = bn.metadata.annotations ?? {};
    const inSlot = holdsRebootSlot(bn);
    const imageChanged = bn.spec.desiredImage !== t.image;
    const wantedSpec: BootcNodeSpec = {
      ...bn.spec,
      desiredImage: t.image,
      rebootPolicy,
      pullSecretRef: pool.spec.pullSecretRef ? { ...pool.spec.pullSecretRef } : undefined,
      pullSecretHash: input.pullSecretHash,
    };
    const viewAnnotations = { ...annotations };
    const annotationPatch: Record<string, string | null> = {};
    if (imageChanged) {
      // A new image revokes any pending reboot approval for the old one.
      wantedSpec.desiredImageState = "Staged";
      if (viewAnnotations[ANNOTATION_DRAINED_AT] !== undefined) {
        delete viewAnnotations[ANNOTATION_DRAINED_AT];
        annotationPatch[ANNOTATION_DRAINED_AT] = null;
      }
    }
    let state = effectiveState({ ...bn, spec: wantedSpec }, d);
    // Booted is only ever granted to a drained slot node: anything else would let the
    // daemon reboot without a drain (e.g. after a host-side rollback).
    if (
      wantedSpec.desiredImageState === "Booted" && state !== EffectiveState.UpToDate &&
      (!inSlot || viewAnnotations[ANNOTATION_DRAINED_AT] === undefined)
    ) {
      wantedSpec.desiredImageState = "Staged";
      state = effectiveState({ ...bn, spec: wantedSpec }, d);
    }
    let slotAt = parseTime(annotations[ANNOTATION_IN_REBOOT_SLOT]);
    if (inSlot && !slotAt) {
      // Unreadable slot time: restart the clock rather than time out at once.
      slotAt = now;
      annotationPatch[ANNOTATION_IN_REBOOT_SLOT] = formatTime(now);
      viewAnnotations[ANNOTATION_IN_REBOOT_SLOT] = formatTime(now);
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
    if (Object.keys(annotationPatch).length > 0) metaPatch.annotations = annotationPatch;
    const patch: MergePatch = {};
    if (Object.keys(specPatch).length > 0) patch.spec = specPatch;
    if (Object.keys(metaPatch).length > 0) patch.metadata = metaPatch;
    if (Object.keys(patch).length > 0) {
      actions.push({ kind: "patchBootcNode", node: name, patch, why: "sync spec" });
      if (imageChanged) {
        nodeEvent(name, "Normal", "DesiredImageChanged", `node ${name} should now run ${t.image}`);
      }
    }
    labelManaged(node);
    const view: BootcNode = {
      ...bn,
      metadata: { ...bn.metadata, annotations: viewAnnotations },
      spec: wantedSpec,
    };
    return {
      node,
      view,
      state,
      inSlot,
      slotAt,
      drainedAt: parseTime(viewAnnotations[ANNOTATION_DRAINED_AT]),
    };
  }

  function conditionEvents(prior: BootcNodePoolStatus | undefined, next: BootcNodePoolStatus) {
    const before = findCondition(prior?.conditions, PoolConditionType.Degraded);
    const after = findCondition(next.conditions, PoolConditionType.Degraded);
    if (after?.status === "True" && (before?.status !== "True" || before.reason !== after.reason)) {
      poolEvent("Warning", after.reason, after.message);
    } else if (after?.status === "False" && before?.status === "True") {
      poolEvent("Normal", "Recovered", `pool is healthy again (was ${before.reason})`);
    }
    const upBefore = findCondition(prior?.conditions, PoolConditionType.UpToDate);
    const upAfter = findCondition(next.conditions, PoolConditionType.UpToDate);
    if (upAfter?.status === "True" && upBefore?.status !== "True") {
      poolEvent("Normal", "RolloutComplete", upAfter.message);
    }
  }
}

function rebootRequest(name: string, now: Date, slotAt: Date): Action {
  return {
    kind: "patchBootcNode",
    node: name,
    patch: {
      metadata: { annotations: { [ANNOTATION_DRAINED_AT]: formatTime(now) } },
      spec: { desiredImageState: "Booted" },
    },
    why: "request reboot",
    observe: { metric: "drain_seconds", seconds: (now.getTime() - slotAt.getTime()) / 1000 },
  };
}

function allowedDisruptions(pdbs: readonly PdbSummary[], key: string): number {
  return pdbs.find((p) => podKey(p) === key)?.disruptionsAllowed ?? 0;
}

function priorTarget(pool: BootcNodePool): Target | undefined {
  const s = pool.status;
  if (!s?.targetDigest || !s.targetImage) return undefined;
  return { digest: s.targetDigest, image: s.targetImage, platforms: s.targetPlatforms };
}
