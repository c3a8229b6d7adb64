/**
 * Planning step 3, the nodes in flight: every member the operator has disrupted
 * (its Node carries the disruption record) is repaired if someone damaged the
 * record, cordoned, drained, asked to reboot, watched until it runs the target
 * and is Ready, then released (prior cordon restored, record removed). Each one
 * counts against the pool's budget until released.
 *
 * @module
 */
import {
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodePool,
  findCondition,
  NodeConditionType,
  setCondition,
  StalledReason,
  VerifiedReason,
} from "../lib/api/mod.ts";
import {
  drainedPatch,
  mirrorOf,
  releaseBootcNodePatch,
  releasePatch,
  repairPatch,
  undrainPatch,
} from "./disruption.ts";
import {
  describeDrainBlockers,
  drainBlockedBy,
  pdbDemand,
  planDrainPass,
  podKey,
} from "./drain.ts";
import { reportDrain } from "./drain_report.ts";
import { type DesiredImage, EffectiveState } from "../lib/api/node_state.ts";
import type { HealthFailure } from "./failure_policy.ts";
import { evaluateHealth, type HealthVerdict } from "./health.ts";
import type { Member } from "./membership.ts";
import type { PlanBuilder, PlanInput } from "./plan.ts";
import { formatTime, parseTime, slotUnhealthyReason } from "./slots.ts";
import type { NodeSummary, PdbSummary, PodSummary } from "./types.ts";

/** Why a node is stalled, found by a step (the Stalled condition's reason and message). */
export interface StallFinding {
  reason: typeof StalledReason[keyof typeof StalledReason];
  message: string;
  /** When the deadline passed (keys the event so it is recorded once). */
  since: Date;
}

/** State the rollout steps share within one plan. */
export class RolloutContext {
  readonly drainTimeoutMs: number;
  readonly rebootTimeoutMs: number;
  readonly minReadyMs: number;
  /** Nodes counted against the pool's budget. */
  inUse = 0;
  /** Nodes draining (or with unknown pods) right now. */
  drainingNodes = 0;
  /** Slot nodes that are unhealthy, with why (two or more halt the rollout). */
  readonly unhealthy: string[] = [];
  /** Member nodes the controller found stuck (counted as Degraded). */
  readonly stuck = new Set<string>();
  /** Stalled findings by node. */
  readonly stalled = new Map<string, StallFinding>();
  /** Messages for the NodeDegraded issue. */
  readonly degradedMessages: string[] = [];
  /** Disruptions each PDB must absorb from drains in flight. */
  readonly drainingDemand = new Map<string, number>();
  /** Nodes that failed their health checks after rebooting (the failure policy acts on them). */
  readonly failures: HealthFailure[] = [];
  /** Nodes still being checked after their reboot, with what they wait for. */
  readonly verifying: string[] = [];

  /** Derives the timeouts from the pool's spec. */
  constructor(
    readonly input: PlanInput,
    readonly plan: PlanBuilder,
    readonly pool: BootcNodePool,
  ) {
    const rollout = pool.spec.rollout ?? {};
    this.drainTimeoutMs = (rollout.drainTimeoutSeconds ?? 600) * 1000;
    this.rebootTimeoutMs = (rollout.rebootTimeoutSeconds ?? 1800) * 1000;
    this.minReadyMs = (rollout.minReadySeconds ?? 0) * 1000;
  }

  /** The pods of a node, undefined when they were not listed (then they are asked for). */
  podsOf(name: string): readonly PodSummary[] | undefined {
    const { podsListed, podsByNode } = this.input;
    return podsListed && !podsListed.has(name) ? undefined : podsByNode.get(name) ?? [];
  }

  /** Adds a drain's PDB demand. */
  addDemand(pods: readonly PodSummary[]): void {
    for (const [k, n] of pdbDemand(pods, this.input.pdbs)) {
      this.drainingDemand.set(k, (this.drainingDemand.get(k) ?? 0) + n);
    }
  }

  /** Disruptions a PDB allows now. */
  allowedDisruptions(key: string): number {
    return allowedDisruptions(this.input.pdbs, key);
  }

  /** Evicts what a drain pass says must leave. */
  evict(name: string, pods: readonly PodSummary[]): { toEvict: number; terminating: number } {
    const pass = planDrainPass(pods);
    if (pass.toEvict.length > 0) {
      this.plan.act({
        kind: "evict",
        node: name,
        pods: pass.toEvict.map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid })),
      });
    }
    return { toEvict: pass.toEvict.length, terminating: pass.terminating.length };
  }
}

function allowedDisruptions(pdbs: readonly PdbSummary[], key: string): number {
  return pdbs.find((p) => podKey(p) === key)?.disruptionsAllowed ?? 0;
}

function readyForMs(node: NodeSummary, now: Date): number {
  if (!node.ready) return -1;
  const since = parseTime(node.readySince);
  return since ? now.getTime() - since.getTime() : Number.POSITIVE_INFINITY;
}

/** How {@linkcode progressInFlight} treats nodes not yet asked to reboot. */
export type InFlightMode =
  /** Normal: drain them and ask them to reboot. */
  | "finish"
  /** The spec went bad: undo those not yet asked to reboot, finish the others. */
  | "undoUndrained";

/** Step 3: moves every disrupted member forward (or back, in `undoUndrained` mode). */
export function progressInFlight(
  members: readonly Member[],
  ctx: RolloutContext,
  mode: InFlightMode = "finish",
): void {
  for (const m of members) {
    if (m.bn && m.state === EffectiveState.Degraded) {
      const cond = findCondition(m.bn.status?.conditions, NodeConditionType.Degraded);
      ctx.degradedMessages.push(
        `node ${m.node.name}: ${cond?.message || cond?.reason || "Degraded"}`,
      );
    }
    if (!m.disrupted) continue;
    ctx.inUse++;
    if (!m.bn) continue; // being recreated: it keeps its place until its daemon reports
    progressOne(m, m.bn, ctx, mode);
  }
}

function progressOne(m: Member, bn: BootcNode, ctx: RolloutContext, mode: InFlightMode): void {
  const { plan, input } = ctx;
  const { now } = input;
  const name = m.node.name;
  const poolName = plan.poolName;

  // Repair what someone removed, before anything else is decided on it.
  const repair = repairPatch(m.node, bn, poolName, now);
  if (repair.patch) {
    plan.act({ kind: "patchNode", node: name, patch: repair.patch, why: "repair record" });
  }
  if (repair.fixed.length > 0) {
    plan.nodeEvent(
      name,
      "Warning",
      "DisruptionRecordRepaired",
      `node ${name}'s disruption record was damaged (edited or deleted by hand?): ` +
        repair.fixed.join("; "),
    );
  }
  if (repair.priorCordonLost) {
    const msg = `node ${name}: the record of whether it was cordoned before the update was ` +
      `lost on both the Node and the BootcNode; it will stay cordoned after the update ` +
      `(uncordon it by hand if it should run pods)`;
    ctx.degradedMessages.push(msg);
    plan.nodeEvent(name, "Warning", "PriorCordonStateLost", msg);
  }
  const node: NodeSummary = {
    ...m.node,
    annotations: {
      ...m.node.annotations,
      ...(repair.patch
        ? (repair.patch.metadata as { annotations: Record<string, string> }).annotations
        : {}),
    },
  };
  if (mirrorOf(bn) !== repair.record.wasCordoned) {
    plan.act({
      kind: "patchBootcNode",
      node: name,
      patch: {
        metadata: { annotations: { [ANNOTATION_WAS_CORDONED]: repair.record.wasCordoned } },
      },
      why: "mirror prior cordon state",
    });
  }
  const record = repair.record;
  const slotAt = parseTime(record.slotAt) ?? now;
  let drainedAt = record.drainedFor === bn.spec.desiredImage
    ? parseTime(record.drainedAt)
    : undefined;
  const readyMs = readyForMs(node, now);
  const desired: DesiredImage = m.desired ?? { image: bn.spec.desiredImage };

  // After the reboot request (or once it runs the image): is it healthy?
  let verdict: HealthVerdict | undefined;
  if (drainedAt || m.state === EffectiveState.UpToDate) {
    verdict = evaluateHealth({
      node,
      bn,
      desired,
      health: ctx.pool.spec.rollout?.health,
      rebootRequestedAt: drainedAt,
      pods: ctx.podsOf(name),
      query: input.healthQueries?.get(name),
      now,
    });
  }
  if (verdict?.state === "FellBack" || verdict?.state === "Failed") {
    const reason = verdict.state === "FellBack"
      ? VerifiedReason.FellBack
      : VerifiedReason.CheckFailed;
    healthFailed(ctx, bn, name, reason, verdict.message);
    return;
  }
  if (verdict?.state === "Checking") {
    if (verdict.needPods) plan.needPods.push(name);
    const pending = verdict.checks.filter((c) => c.state === "pending");
    if (node.ready) {
      ctx.verifying.push(`${name}: ${pending.map((c) => `${c.name} (${c.message})`).join(", ")}`);
      plan.wakeAt(verdict.deadline);
      // Pods and queries are polled, not watched (the daemon's report comes by watch).
      if (pending.some((c) => c.name === "Pods" || c.name === "Prometheus")) plan.wake(5_000);
    }
  }
  if (verdict?.state === "Passed") {
    const verifiedAt = verifiedSince(bn, desired.image) ?? now;
    const soakMs = ctx.minReadyMs - (now.getTime() - verifiedAt.getTime());
    const readyOk = readyMs >= ctx.minReadyMs;
    if (soakMs <= 0 && readyOk) {
      writeVerified(ctx, bn, name, desired.image, true);
      release(ctx, node, bn, slotAt);
      plan.nodeEvent(
        name,
        "Normal",
        "NodeUpdated",
        `node ${name} runs ${bn.spec.desiredImage}; slot released`,
      );
      ctx.inUse--;
      return;
    }
    if (!verifiedSince(bn, desired.image)) writeVerified(ctx, bn, name, desired.image, false);
    plan.wake(Math.max(soakMs, ctx.minReadyMs - readyMs, 1));
  }
  if (m.state === EffectiveState.UpToDate) {
    // Runs the target but is not Ready (long enough): hold the slot, no drain needed.
    // A Ready node under its health checks (or soaking) has the health timeout instead.
    const rebootTimedOut = drainedAt !== undefined && !node.ready &&
      now.getTime() >= drainedAt.getTime() + ctx.rebootTimeoutMs;
    if (rebootTimedOut) {
      const msg = `node ${name} runs ${bn.spec.desiredImage} but is not Ready ` +
        `${ctx.rebootTimeoutMs / 1000}s after its reboot request`;
      rebootTimeout(ctx, name, msg, drainedAt!);
      recordVerifiedFalse(ctx, bn, name, VerifiedReason.CheckFailed, `NodeReady: ${msg}`);
    } else if (drainedAt && !node.ready) {
      plan.wake(drainedAt.getTime() + ctx.rebootTimeoutMs - now.getTime());
    }
    const why = slotUnhealthyReason({
      degraded: false,
      ready: node.ready,
      drainTimedOut: false,
      rebootRequested: drainedAt !== undefined,
      rebootTimedOut,
    });
    if (why) ctx.unhealthy.push(`${name} ${why}`);
    return;
  }
  if (mode === "undoUndrained" && !drainedAt && m.state !== EffectiveState.Rebooting) {
    release(ctx, node, bn, undefined);
    plan.nodeEvent(
      name,
      "Warning",
      "UpdateUndone",
      `node ${name} was not yet asked to reboot when the pool's spec became invalid; ` +
        `restored its cordon state`,
    );
    ctx.inUse--;
    return;
  }
  if (!node.unschedulable) {
    plan.act({
      kind: "patchNode",
      node: name,
      patch: { spec: { unschedulable: true } },
      why: "cordon",
    });
    if (drainedAt && m.state !== EffectiveState.Rebooting) {
      // Uncordoned after its drain: pods may be back, so the drain no longer counts.
      const undrain = undrainPatch(node);
      if (undrain) {
        plan.act({ kind: "patchNode", node: name, patch: undrain, why: "withdraw drain" });
      }
      if (bn.spec.desiredImageState === "Booted") {
        plan.act({
          kind: "patchBootcNode",
          node: name,
          patch: { spec: { desiredImageState: "Staged" } },
          why: "withdraw reboot request",
        });
      }
      plan.nodeEvent(
        name,
        "Warning",
        "DrainInvalidated",
        `node ${name} was uncordoned after its drain; cordoning and draining it again`,
      );
      drainedAt = undefined;
    }
  }
  let drainTimedOut = false;
  let rebootTimedOut = false;
  if (!drainedAt) {
    const pods = ctx.podsOf(name);
    if (!pods) {
      // Unknown pods: count it as draining so no other slot races it for a budget.
      plan.needPods.push(name);
      plan.draining = true;
      ctx.drainingNodes++;
      return;
    }
    const pass = planDrainPass(pods);
    // The drain only counts as done once the cordon is visible, so no pod slipped in.
    if (pass.done && node.unschedulable) {
      if (m.state === EffectiveState.Staged && mode === "finish") {
        plan.act({
          kind: "patchNode",
          node: name,
          patch: drainedPatch(bn.spec.desiredImage, now),
          why: "record drain",
          observe: { metric: "drain_seconds", seconds: (now.getTime() - slotAt.getTime()) / 1000 },
        });
        plan.act({
          kind: "patchBootcNode",
          node: name,
          patch: { spec: { desiredImageState: "Booted" } },
          why: "request reboot",
        });
        plan.nodeEvent(name, "Normal", "DrainCompleted", `node ${name} drained`);
        plan.nodeEvent(
          name,
          "Normal",
          "RebootRequested",
          `node ${name} asked to boot ${bn.spec.desiredImage}`,
        );
        drainedAt = now;
        plan.wake(ctx.rebootTimeoutMs);
      }
    } else {
      plan.draining = true;
      ctx.drainingNodes++;
      ctx.addDemand(pods);
      ctx.evict(name, pods);
      if (node.unschedulable) {
        const blockedBy = drainBlockedBy(pass, input.pdbs);
        reportDrain(plan, bn, { image: bn.spec.desiredImage, slotAt: record.slotAt, blockedBy });
      }
      plan.wake(input.options?.drainPollMs ?? 5_000);
      const deadline = slotAt.getTime() + ctx.drainTimeoutMs;
      if (now.getTime() >= deadline) {
        drainTimedOut = true;
        const msg = `drain of node ${name} did not finish within ${ctx.drainTimeoutMs / 1000}s: ${
          describeDrainBlockers(pass, input.pdbs) || "waiting for the cordon"
        }`;
        ctx.degradedMessages.push(msg);
        plan.nodeEvent(
          name,
          "Warning",
          "DrainBlocked",
          msg,
          `drain-timeout/${name}/${formatTime(slotAt)}`,
        );
      } else {
        plan.wake(deadline - now.getTime());
      }
    }
  } else {
    if (m.state === EffectiveState.Staged && bn.spec.desiredImageState !== "Booted") {
      plan.act({
        kind: "patchBootcNode",
        node: name,
        patch: { spec: { desiredImageState: "Booted" } },
        why: "request reboot",
      });
    }
    const deadline = drainedAt.getTime() + ctx.rebootTimeoutMs;
    if (now.getTime() >= deadline) {
      rebootTimedOut = true;
      const msg = `node ${name} did not come back running ${bn.spec.desiredImage} and Ready ` +
        `within ${ctx.rebootTimeoutMs / 1000}s of its reboot request`;
      rebootTimeout(ctx, name, msg, drainedAt);
    } else {
      plan.wake(deadline - now.getTime());
    }
  }
  const why = slotUnhealthyReason({
    degraded: m.state === EffectiveState.Degraded,
    ready: node.ready,
    drainTimedOut,
    rebootRequested: drainedAt !== undefined,
    rebootTimedOut,
  });
  if (why) ctx.unhealthy.push(`${name} ${why}`);
  if (drainTimedOut) ctx.stuck.add(name);
}

function rebootTimeout(ctx: RolloutContext, name: string, msg: string, drainedAt: Date): void {
  ctx.failures.push({ node: name, message: msg });
  ctx.degradedMessages.push(msg);
  ctx.plan.nodeEvent(
    name,
    "Warning",
    "RebootTimedOut",
    msg,
    `reboot-timeout/${name}/${formatTime(drainedAt)}`,
  );
  ctx.stuck.add(name);
  ctx.stalled.set(name, {
    reason: StalledReason.RebootTimeout,
    message: msg,
    since: new Date(drainedAt.getTime() + ctx.rebootTimeoutMs),
  });
}

/**
 * Hands a finished (or undone) node back: the BootcNode's mirror and reboot request
 * go first, then the Node's record goes and its prior cordon state comes back.
 */
function release(
  ctx: RolloutContext,
  node: NodeSummary,
  bn: BootcNode,
  slotAt: Date | undefined,
): void {
  const name = node.name;
  const bnPatch = releaseBootcNodePatch(bn);
  if (bnPatch) {
    ctx.plan.act({ kind: "patchBootcNode", node: name, patch: bnPatch, why: "release slot" });
  }
  const patch = releasePatch(node, bn, { unlabel: false });
  if (patch) {
    ctx.plan.act({
      kind: "patchNode",
      node: name,
      patch,
      why: "release slot",
      observe: slotAt
        ? { metric: "update_seconds", seconds: (ctx.input.now.getTime() - slotAt.getTime()) / 1000 }
        : undefined,
    });
  }
}

/** Marks a node failed: it keeps its slot; the failure policy decides what comes next. */
function healthFailed(
  ctx: RolloutContext,
  bn: BootcNode,
  name: string,
  reason: string,
  message: string,
): void {
  ctx.failures.push({ node: name, message });
  ctx.unhealthy.push(`${name} failed its health checks`);
  ctx.stuck.add(name);
  recordVerifiedFalse(ctx, bn, name, reason, message);
}

/** Writes Verified=False (once per reason and message) and the HealthCheckFailed event. */
function recordVerifiedFalse(
  ctx: RolloutContext,
  bn: BootcNode,
  name: string,
  reason: string,
  message: string,
): void {
  const cond = findCondition(bn.status?.conditions, NodeConditionType.Verified);
  if (cond?.status === "False" && cond.reason === reason && cond.message === message) return;
  ctx.plan.act({
    kind: "patchBootcNodeStatus",
    node: name,
    patch: {
      metadata: { resourceVersion: bn.metadata.resourceVersion },
      status: {
        conditions: setCondition(bn.status?.conditions, {
          type: NodeConditionType.Verified,
          status: "False",
          reason,
          message,
        }, ctx.input.now),
      },
    },
    why: "health check failed",
  });
  ctx.plan.nodeEvent(
    name,
    "Warning",
    "HealthCheckFailed",
    message,
    `health-failed/${name}/${bn.spec.desiredImage}`,
  );
}

/** When the node was verified on `image` (the Verified condition, if it says so). */
function verifiedSince(bn: BootcNode, image: string): Date | undefined {
  const cond = findCondition(bn.status?.conditions, NodeConditionType.Verified);
  if (cond?.status !== "True" || !cond.message.includes(image)) return undefined;
  return parseTime(cond.lastTransitionTime);
}

/** Records the node verified on `image` (and, when `updated`, its update complete). */
function writeVerified(
  ctx: RolloutContext,
  bn: BootcNode,
  name: string,
  image: string,
  updated: boolean,
): void {
  const now = ctx.input.now;
  let conditions = bn.status?.conditions;
  if (!verifiedSince(bn, image)) {
    conditions = setCondition(conditions, {
      type: NodeConditionType.Verified,
      status: "True",
      reason: VerifiedReason.ChecksPassed,
      message: `verified ${image}: running it, Ready and healthy after the reboot`,
    }, now);
  }
  if (updated) {
    conditions = setCondition(conditions, {
      type: "Updated",
      status: "True",
      reason: "UpdateComplete",
      message: `runs ${image}; slot released`,
    }, now);
  }
  if (conditions === bn.status?.conditions) return;
  ctx.plan.act({
    kind: "patchBootcNodeStatus",
    node: name,
    patch: {
      metadata: { resourceVersion: bn.metadata.resourceVersion },
      status: { conditions },
    },
    why: updated ? "verified and updated" : "verified",
  });
}
