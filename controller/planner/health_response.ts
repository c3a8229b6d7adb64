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
import { ANNOTATION_FAILED_IMAGE, PoolDegradedReason } from "../../lib/api/mod.ts";
import {
  type EffectiveTarget,
  type FailureRecord,
  type HealthFailure,
  recordFailure,
  respondToFailure,
} from "./failure_policy.ts";
import { soakGraceMs, soakStart } from "./canary.ts";
import { soakVerdict } from "../model/health.ts";
import { shortReference } from "../../lib/api/display.ts";
import type { Member } from "./membership.ts";
import {
  mergeOutputs,
  nodeEvent,
  type PlanInput,
  poolEvent,
  type StepOutput,
  stepOutput,
} from "./plan.ts";
import type { PoolIssue } from "./pool_status.ts";
import type { Target } from "../model/types.ts";

/** What step 4 works on. */
export interface HealthResponseInput {
  input: PlanInput;
  members: readonly Member[];
  target: Target | undefined;
  effective: EffectiveTarget;
  record: FailureRecord;
  /** The last image that succeeded in this pool (other than the target), if any. */
  lastGood?: string;
  /** Whether a member's BootcNode is bound for the target. */
  onTarget: (m: Member) => boolean;
  /** The health failures of the nodes in flight (step 3), in member order. */
  failures: readonly HealthFailure[];
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
  /** The issues, events, marks and wake-ups of the response. */
  out: StepOutput;
}

/** Applies the pool's `onFailure` policy to the health failures found in flight and in the soak. */
export function respondToHealth(h: HealthResponseInput): HealthResponse {
  const { target, effective } = h;
  const soak = target
    ? watchSoak(h.input, h.members.filter(h.onTarget), target)
    : { failed: false, failures: [], out: stepOutput() };
  const failures = [...h.failures, ...soak.failures];
  const policy = target && failures.length > 0 && !effective.rollback
    ? applyPolicy(h, target, failures)
    : undefined;
  const issues: PoolIssue[] = [];
  if (effective.rollback && effective.note) {
    issues.push({ reason: PoolDegradedReason.RolledBack, message: effective.note });
  }
  if (effective.rollback && failures.length > 0) {
    // The good image fails too: no automatic response, but every failure is named.
    issues.push({
      reason: PoolDegradedReason.HealthCheckFailed,
      message: failures.map((f) => f.message).join("; "),
    });
  }
  const halted = target && !policy?.haltFor ? rolledBackHalt(h.input, h.members, target) : {};
  return {
    failed: policy?.failed,
    newFailure: policy?.newFailure ?? false,
    haltFor: policy?.haltFor ?? halted.haltFor,
    record: policy?.record ?? h.record,
    canaryFailed: soak.failed,
    notReadyUntil: soak.notReadyUntil,
    out: mergeOutputs([
      soak.out,
      policy?.out ?? stepOutput(),
      stepOutput({ issues }),
      halted.out ?? stepOutput(),
    ]),
  };
}

/**
 * The `onFailure` policy on the target's failures: the failure recorded (once per
 * target), the pool rolled back or the failed nodes marked to roll back, and the
 * image halted under every policy (no node gets a new slot for it).
 */
function applyPolicy(
  h: HealthResponseInput,
  target: Target,
  failures: readonly HealthFailure[],
): Pick<HealthResponse, "failed" | "newFailure" | "haltFor" | "record" | "out"> {
  const { pool, now } = h.input;
  const poolName = pool.metadata.name ?? "";
  const decision = respondToFailure({
    pool,
    target,
    failures,
    lastGood: h.lastGood,
    record: h.record,
  });
  const counted = h.record.failedDigests.includes(target.digest);
  const record = recordFailure(
    h.record,
    target,
    counted,
    decision.kind === "rollbackPool"
      ? { ref: pool.spec.image.ref ?? "", image: decision.to, now }
      : undefined,
  );
  // Every policy stops the failed image at once: the node that failed is the evidence.
  const common = { newFailure: !counted, record, haltFor: target.image };
  if (decision.kind === "rollbackPool") {
    return {
      ...common,
      failed: { outcome: "RolledBack", message: decision.message },
      out: stepOutput({
        issues: [{ reason: PoolDegradedReason.RolledBack, message: decision.message }],
        events: [
          poolEvent(
            poolName,
            "Warning",
            "RollingBack",
            decision.message,
            `rollback/${target.image}`,
          ),
        ],
        wake: 1, // the next reconcile rolls out the good image
      }),
    };
  }
  const failed = stepOutput({
    issues: [{ reason: PoolDegradedReason.HealthCheckFailed, message: decision.message }],
  });
  return {
    ...common,
    failed: { outcome: "Failed", message: decision.message },
    out: decision.kind === "rollbackNodes"
      ? mergeOutputs([failed, markRollbacks(h.input, decision.nodes, target, decision.to)])
      : failed,
  };
}

/** The failed nodes marked to roll back to `to` (each once), and a reconcile at once. */
function markRollbacks(
  input: PlanInput,
  nodes: readonly string[],
  target: Target,
  to: string,
): StepOutput {
  const marked = nodes.filter((node) =>
    input.bootcNodes.get(node)?.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] !== target.image
  );
  return stepOutput({
    actions: marked.map((node) => ({
      kind: "patchBootcNode" as const,
      node,
      patch: { metadata: { annotations: { [ANNOTATION_FAILED_IMAGE]: target.image } } },
      why: "mark failed (roll back)",
    })),
    events: marked.map((node) =>
      nodeEvent(
        node,
        "Warning",
        "RollingBack",
        `node ${node} failed on ${shortReference(target.image)}; rolling it back to ${
          shortReference(to)
        }`,
      )
    ),
    wake: 1,
  });
}

/**
 * The canary's watch over released members while it has not passed: its
 * failures; a member NotReady within the grace holds the soak (a reconcile is
 * asked for when its grace ends).
 */
function watchSoak(
  input: PlanInput,
  onTarget: readonly Member[],
  target: Target,
): { failed: boolean; failures: HealthFailure[]; notReadyUntil?: Date; out: StepOutput } {
  const { pool, now } = input;
  const canary = pool.status?.canary?.image === target.image ? pool.status.canary : undefined;
  if (!canary || canary.phase === "Passed") {
    return { failed: false, failures: [], out: stepOutput() };
  }
  const graceMs = soakGraceMs(pool);
  const start = soakStart(pool, canary);
  const failures: HealthFailure[] = [];
  const outs: StepOutput[] = [];
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
      now,
    });
    if (verdict.state === "Failed") {
      failures.push({ node: m.node.name, message: verdict.message });
    } else if (verdict.state === "NotReady") {
      outs.push(stepOutput({
        notes: [`canary: ${verdict.message}`],
        wake: verdict.failsAt.getTime() - now.getTime(),
      }));
      if (!notReadyUntil || verdict.failsAt > notReadyUntil) notReadyUntil = verdict.failsAt;
    }
  }
  return { failed: failures.length > 0, failures, notReadyUntil, out: mergeOutputs(outs) };
}

/**
 * The target's rollout stays halted after nodes were rolled back from it
 * (RollbackNode): told by the nodes' failed-image marks, or by the history when
 * the marks were edited away. Returns the halted image, if any, and its issue.
 */
function rolledBackHalt(
  input: PlanInput,
  members: readonly Member[],
  target: Target,
): { haltFor?: string; out?: StepOutput } {
  const { pool } = input;
  const rolledBack = members.filter((m) =>
    m.bn?.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] === target.image
  ).map((m) => m.node.name);
  if (rolledBack.length > 0) {
    return {
      haltFor: target.image,
      out: stepOutput({
        issues: [{
          reason: PoolDegradedReason.HealthCheckFailed,
          message: `node(s) ${rolledBack.join(", ")} failed their health checks on ` +
            `${shortReference(target.image)} and were rolled back; the rollout is halted until ` +
            `spec.image.ref changes`,
        }],
      }),
    };
  }
  const lastRevision = pool.status?.history?.at(-1);
  if (
    pool.spec.rollout?.onFailure === "RollbackNode" &&
    lastRevision?.image === target.image && lastRevision.outcome === "Failed"
  ) {
    return {
      haltFor: target.image,
      out: stepOutput({
        issues: [{
          reason: PoolDegradedReason.HealthCheckFailed,
          message: `${shortReference(target.image)} failed its health checks (revision ` +
            `${lastRevision.revision}); the rollout is halted until spec.image.ref changes`,
        }],
      }),
    };
  }
  return {};
}
