/**
 * The verify phase: after the reboot request, the node's health verdict: failed, still
 * being checked, or passed and released once it has soaked.
 *
 * @module
 */
import {
  type BootcNode,
  conditionsEqual,
  failedChecksOn,
  findCondition,
  NodeConditionType,
  setCondition,
  verifiedOn,
  VerifiedReason,
  verifiedSince,
  type VerifiedWindow,
  withVerified,
} from "../../../lib/api/mod.ts";
import { releaseCordonNote } from "../../model/disruption.ts";
import { shortReference } from "../../../lib/api/display.ts";
import { EffectiveState } from "../../../lib/api/node_state.ts";
import { evaluateHealth, type HealthVerdict } from "../../model/health.ts";
import type { Member } from "../membership.ts";
import { mergeOutputs, NO_OUTPUT, nodeObjectEvent, type StepOutput, stepOutput } from "../plan.ts";
import { parseTime, slotUnhealthyReason } from "../../model/slots.ts";
import { type InFlightEnv, type NodeOutcome, podsOf, type SlotNode } from "./context.ts";
import { releaseOutput } from "./release.ts";
import { rebootTimeout } from "./reboot.ts";

/**
 * After the reboot request (or once it runs the image): is it healthy? Failed or
 * fallen back: it keeps its slot and the failure policy decides (`done`). Still
 * being checked: it waits. Passed: released once `minReadySeconds` have passed
 * (`done`), else its Verified condition is written and it waits.
 */
export function healthPhase(
  m: Member,
  f: SlotNode,
  env: InFlightEnv,
): NodeOutcome & { done?: boolean } {
  if (!f.drainedAt && m.state !== EffectiveState.UpToDate) return {};
  // The daemon says it is rebooting: the node is down whatever else the caches show
  // (a stale report is bounded by the reboot timeout of the reboot phase).
  // (A host that fell back by itself says Rebooting too, but is up: the classification
  // tells the two apart, so its fall-back is judged here.)
  if (m.state === EffectiveState.Rebooting) return {};
  const verdict: HealthVerdict = evaluateHealth({
    node: f.node,
    bn: f.bn,
    desired: f.desired,
    health: env.input.pool.spec.rollout?.health,
    rebootRequestedAt: f.drainedAt,
    pods: podsOf(env.input, f.name),
    podsUnreadable: env.input.podsFailed?.get(f.name),
    query: env.input.healthQueries?.get(f.name),
    now: env.now,
  });
  if (verdict.state === "FellBack" || verdict.state === "Failed") {
    const reason = verdict.state === "FellBack"
      ? VerifiedReason.FellBack
      : VerifiedReason.CheckFailed;
    return {
      done: true,
      failures: [{ node: f.name, message: verdict.message }],
      unhealthy: [`${f.name} failed its health checks`],
      stuck: true,
      out: verifiedFalse(f.bn, f.name, {
        reason,
        message: verdict.message,
        checks: verdict.state === "Failed" ? verdict.failed : ["FellBack"],
      }, env.now),
    };
  }
  if (verdict.state === "Checking") {
    const needPods = verdict.needPods ? [f.name] : [];
    const pending = verdict.checks.filter((c) => c.state === "pending");
    if (!f.node.ready) return { out: stepOutput({ needPods }) };
    // Pods and queries are polled, not watched (the daemon's report comes by watch).
    const polled = pending.some((c) => c.name === "Pods" || c.name === "Prometheus");
    return {
      verifying: [`${f.name}: ${pending.map((c) => `${c.name} (${c.message})`).join(", ")}`],
      out: mergeOutputs([
        stepOutput({ needPods, wake: verdict.deadline.getTime() - env.now.getTime() }),
        polled ? stepOutput({ wake: 5_000 }) : NO_OUTPUT,
      ]),
    };
  }
  if (verdict.state === "Passed") return passedPhase(f, env);
  return {};
}

/** Verified: released once it has been verified and Ready for `minReadySeconds`. */
function passedPhase(f: SlotNode, env: InFlightEnv): NodeOutcome & { done?: boolean } {
  const { bn, name, desired } = f;
  const window = verifiedWindow(f, env.now);
  const verifiedAt = verifiedSince(bn.status, desired.image, window) ?? env.now;
  const soakMs = env.minReadyMs - (env.now.getTime() - verifiedAt.getTime());
  // Without minReadySeconds, Ready is enough: a Ready transition stamped by a clock
  // ahead of the controller's must not hold the slot for the difference.
  const readyOk = f.node.ready && (env.minReadyMs <= 0 || f.readyMs >= env.minReadyMs);
  if (soakMs <= 0 && readyOk) {
    // The release revokes the reboot request, which the daemon acknowledges with a status
    // write anyway: the verdict rides in the release for it to record (lib/api/verified.ts).
    const daemonRecords = bn.spec.desiredImageState === "Booted";
    return {
      done: true,
      released: true,
      out: mergeOutputs([
        daemonRecords ? NO_OUTPUT : verifiedOutput(bn, name, desired.image, true, env.now, window),
        releaseOutput(f.node, bn, f.slotAt, env.now, daemonRecords ? desired.image : undefined),
        stepOutput({
          events: [nodeObjectEvent(
            name,
            "Normal",
            "NodeUpdated",
            `node ${name} runs ${shortReference(bn.spec.desiredImage)}, verified; slot released` +
              releaseCordonNote(f.node, bn),
          )],
        }),
      ]),
    };
  }
  return {
    out: mergeOutputs([
      verifiedSince(bn.status, desired.image, window)
        ? NO_OUTPUT
        : verifiedOutput(bn, name, desired.image, false, env.now, window),
      stepOutput({ wake: Math.max(soakMs, readyOk ? 0 : env.minReadyMs - f.readyMs, 1) }),
    ]),
  };
}

/**
 * Runs the target but is not Ready (long enough): it holds the slot, no drain
 * needed. A Ready node under its health checks (or soaking) has the health
 * timeout instead; one not Ready past the reboot timeout failed.
 */
export function onTargetPhase(f: SlotNode, env: InFlightEnv): NodeOutcome {
  const { drainedAt, node, name, bn } = f;
  const rebootTimedOut = drainedAt !== undefined && !node.ready &&
    env.now.getTime() >= drainedAt.getTime() + env.rebootTimeoutMs;
  let timedOut: NodeOutcome = {};
  if (rebootTimedOut) {
    const msg = `node ${name} runs ${shortReference(bn.spec.desiredImage)} but is not Ready ` +
      `${env.rebootTimeoutMs / 1000}s after its reboot request`;
    const t = rebootTimeout(name, msg, drainedAt!, env);
    timedOut = {
      ...t,
      out: mergeOutputs([
        t.out ?? NO_OUTPUT,
        verifiedFalse(bn, name, {
          reason: VerifiedReason.CheckFailed,
          message: `NodeReady: ${msg}`,
          checks: ["NodeReady"],
        }, env.now),
      ]),
    };
  } else if (drainedAt && !node.ready) {
    timedOut = {
      out: stepOutput({ wake: drainedAt.getTime() + env.rebootTimeoutMs - env.now.getTime() }),
    };
  }
  const why = slotUnhealthyReason({
    degraded: false,
    ready: node.ready,
    drainTimedOut: false,
    rebootRequested: drainedAt !== undefined,
    rebootTimedOut,
  });
  return { ...timedOut, unhealthy: why ? [`${name} ${why}`] : [] };
}

/**
 * Verified=False with the checks that failed in `status.verification` (written once
 * per verdict), and the HealthCheckFailed event.
 */
function verifiedFalse(
  bn: BootcNode,
  name: string,
  failure: { reason: string; message: string; checks: string[] },
  now: Date,
): StepOutput {
  const { reason, message, checks } = failure;
  const cond = findCondition(bn.status?.conditions, NodeConditionType.Verified);
  // No record of the checks (a daemon that does not keep status.verification drops it):
  // written again, it would be dropped again, one write after another.
  const listed = bn.status?.verification === undefined ||
    failedChecksOn(bn.status, bn.spec.desiredImage)?.join(",") === checks.join(",");
  if (cond?.status === "False" && cond.reason === reason && cond.message === message && listed) {
    return NO_OUTPUT;
  }
  return stepOutput({
    actions: [{
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
          }, now),
          verification: { image: bn.spec.desiredImage, failedChecks: checks },
        },
      },
      why: "health check failed",
    }],
    events: [nodeObjectEvent(
      name,
      "Warning",
      "HealthCheckFailed",
      message,
      `health-failed/${name}/${bn.spec.desiredImage}`,
    )],
  });
}

function verifiedWindow(f: SlotNode, now: Date): VerifiedWindow {
  const slotAt = parseTime(f.facts.record.slotAt);
  return { from: slotAt && slotAt.getTime() <= now.getTime() ? slotAt : undefined, now };
}

/**
 * The node recorded verified on `image` (and, when `updated`, its update complete);
 * a Verified outside `window` is replaced (its time starts now).
 */
function verifiedOutput(
  bn: BootcNode,
  name: string,
  image: string,
  updated: boolean,
  now: Date,
  window: VerifiedWindow,
): StepOutput {
  const current = bn.status?.conditions;
  const stale = verifiedOn(bn.status, image) && !verifiedSince(bn.status, image, window);
  const base = stale ? current?.filter((c) => c.type !== NodeConditionType.Verified) : current;
  const { conditions, verification } = withVerified(
    { conditions: base, verification: bn.status?.verification },
    image,
    updated,
    now,
  );
  // As in verifiedFalse: a status without the record is not written again for it alone.
  const about = bn.status?.verification;
  const same = about === undefined || (about.image === image && about.failedChecks === undefined);
  if (same && conditionsEqual(conditions, bn.status?.conditions)) return NO_OUTPUT;
  return stepOutput({
    actions: [{
      kind: "patchBootcNodeStatus",
      node: name,
      patch: {
        metadata: { resourceVersion: bn.metadata.resourceVersion },
        // null: a merge patch removes the checks of an earlier Verified=False.
        status: { conditions, verification: { failedChecks: null, ...verification } },
      },
      why: updated ? "verified and updated" : "verified",
    }],
  });
}
