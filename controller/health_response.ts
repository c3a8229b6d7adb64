/**
 * Planner step 4: the pool's answer to health failures on its target, after
 * the nodes in flight reported theirs (`in_flight.ts`). Canary nodes failing
 * during their soak count too. The `onFailure` policy (`failure_policy.ts`)
 * decides: halt, roll the failed nodes back, or roll the pool back; this step
 * records the failure once per target, marks nodes to roll back, and says
 * which image gets no new slot (`haltFor`). A node's failed-image mark or the
 * history keeps the halt even when the other is edited away.
 *
 * @module
 */
import { ANNOTATION_FAILED_IMAGE, PoolDegradedReason } from "../lib/api/mod.ts";
import {
  type EffectiveTarget,
  type FailureRecord,
  recordFailure,
  respondToFailure,
} from "./failure_policy.ts";
import { soakGraceMs, soakStart } from "./canary.ts";
import { soakVerdict } from "./health.ts";
import type { RolloutContext } from "./in_flight.ts";
import type { Member } from "./membership.ts";
import type { Target } from "./types.ts";

/** What step 4 works on. */
export interface HealthResponseInput {
  ctx: RolloutContext;
  members: readonly Member[];
  target: Target | undefined;
  effective: EffectiveTarget;
  record: FailureRecord;
  /** The last image that succeeded in this pool (other than the target), if any. */
  lastGood?: string;
  /** Whether a member's BootcNode is bound for the target. */
  onTarget: (m: Member) => boolean;
}

/** What step 4 decided. */
export interface HealthResponse {
  /** The target's outcome when it failed in this plan. */
  failed?: { outcome: "RolledBack" | "Failed"; message: string };
  /** True in the plan that first records the target's failure (a version fails once). */
  newFailure: boolean;
  /** The image that gets no new slot (its rollout is halted). */
  haltFor?: string;
  /** The failure record after this plan. */
  record: FailureRecord;
  /** True when a released member failed the canary's watch in this plan (any policy). */
  canaryFailed?: boolean;
  /** When the last member NotReady within the canary's grace fails, if one is. */
  notReadyUntil?: Date;
}

/** Applies the pool's `onFailure` policy to the health failures in `ctx`. */
export function respondToHealth(input: HealthResponseInput): HealthResponse {
  const { ctx, members, target, effective, onTarget } = input;
  const { pool, plan } = ctx;
  let record = input.record;
  const soak = target ? watchSoak(ctx, members.filter(onTarget), target) : { failed: false };
  const response: HealthResponse = {
    newFailure: false,
    record,
    canaryFailed: soak.failed,
    notReadyUntil: soak.notReadyUntil,
  };
  if (target && ctx.failures.length > 0 && !effective.rollback) {
    const decision = respondToFailure({
      pool,
      target,
      failures: ctx.failures,
      lastGood: input.lastGood,
      record,
    });
    const counted = record.failedDigests.includes(target.digest);
    response.newFailure = !counted;
    record = recordFailure(
      record,
      target,
      counted,
      decision.kind === "rollbackPool"
        ? { ref: pool.spec.image.ref ?? "", image: decision.to, now: ctx.input.now }
        : undefined,
    );
    response.record = record;
    if (decision.kind === "rollbackPool") {
      response.failed = { outcome: "RolledBack", message: decision.message };
      plan.issues.push({ reason: PoolDegradedReason.RolledBack, message: decision.message });
      plan.poolEvent("Warning", "RollingBack", decision.message, `rollback/${target.image}`);
      plan.wake(1); // the next reconcile rolls out the good image
    } else {
      response.failed = { outcome: "Failed", message: decision.message };
      plan.issues.push({ reason: PoolDegradedReason.HealthCheckFailed, message: decision.message });
      if (decision.kind === "rollbackNodes") {
        for (const node of decision.nodes) {
          const bn = ctx.input.bootcNodes.get(node);
          if (bn?.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] === target.image) continue;
          plan.act({
            kind: "patchBootcNode",
            node,
            patch: { metadata: { annotations: { [ANNOTATION_FAILED_IMAGE]: target.image } } },
            why: "mark failed (roll back)",
          });
          plan.nodeEvent(
            node,
            "Warning",
            "RollingBack",
            `node ${node} failed on ${target.image}; rolling it back to ${decision.to}`,
          );
        }
        plan.wake(1);
      }
    }
    // Halt keeps the existing rule (two unhealthy nodes in slots stop new slots); the
    // rollback policies stop the failed image at once.
    if (decision.kind !== "halt") response.haltFor = target.image;
  } else if (effective.rollback && effective.note) {
    plan.issues.push({ reason: PoolDegradedReason.RolledBack, message: effective.note });
  }
  if (effective.rollback && ctx.failures.length > 0) {
    // The good image fails too: no automatic response, but every failure is named.
    plan.issues.push({
      reason: PoolDegradedReason.HealthCheckFailed,
      message: ctx.failures.map((f) => f.message).join("; "),
    });
  }
  if (target && !response.haltFor) response.haltFor = rolledBackHalt(ctx, members, target);
  return response;
}

/**
 * The canary's watch over released members while it has not passed: each
 * failure joins `ctx.failures`; a member NotReady within the grace holds the
 * soak (a reconcile is asked for when its grace ends).
 */
function watchSoak(
  ctx: RolloutContext,
  onTarget: readonly Member[],
  target: Target,
): { failed: boolean; notReadyUntil?: Date } {
  const { pool, plan } = ctx;
  const canary = pool.status?.canary?.image === target.image ? pool.status.canary : undefined;
  if (!canary || canary.phase === "Passed") return { failed: false };
  const graceMs = soakGraceMs(pool);
  const start = soakStart(pool, canary);
  let failed = false;
  let notReadyUntil: Date | undefined;
  // Any member that ran the target and was released, whatever it reports now (a host
  // that fell back runs the old image again).
  for (const m of onTarget.filter((m) => !m.disrupted && m.bn)) {
    const verdict = soakVerdict({
      node: m.node,
      bn: m.bn!,
      desired: m.desired ?? { image: target.image },
      graceMs,
      soakStart: start,
      now: ctx.input.now,
    });
    if (verdict.state === "Failed") {
      ctx.failures.push({ node: m.node.name, message: verdict.message });
      failed = true;
    } else if (verdict.state === "NotReady") {
      plan.notes.push(`canary: ${verdict.message}`);
      plan.wakeAt(verdict.failsAt);
      if (!notReadyUntil || verdict.failsAt > notReadyUntil) notReadyUntil = verdict.failsAt;
    }
  }
  return { failed, notReadyUntil };
}

/**
 * The target's rollout stays halted after nodes were rolled back from it
 * (RollbackNode): told by the nodes' failed-image marks, or by the history when
 * the marks were edited away. Returns the halted image, if any.
 */
function rolledBackHalt(
  ctx: RolloutContext,
  members: readonly Member[],
  target: Target,
): string | undefined {
  const { pool, plan } = ctx;
  const rolledBack = members.filter((m) =>
    m.bn?.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] === target.image
  ).map((m) => m.node.name);
  if (rolledBack.length > 0) {
    plan.issues.push({
      reason: PoolDegradedReason.HealthCheckFailed,
      message: `node(s) ${rolledBack.join(", ")} failed their health checks on ${target.image} ` +
        `and were rolled back; the rollout is halted until spec.image.ref changes`,
    });
    return target.image;
  }
  const lastRevision = pool.status?.history?.at(-1);
  if (
    pool.spec.rollout?.onFailure === "RollbackNode" &&
    lastRevision?.image === target.image && lastRevision.outcome === "Failed"
  ) {
    plan.issues.push({
      reason: PoolDegradedReason.HealthCheckFailed,
      message: `${target.image} failed its health checks (revision ${lastRevision.revision}); ` +
        `the rollout is halted until spec.image.ref changes`,
    });
    return target.image;
  }
  return undefined;
}
