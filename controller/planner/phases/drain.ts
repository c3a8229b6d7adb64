/**
 * The cordon and drain phases: a node is cordoned, its pods are evicted within the
 * drain timeout (or forced, or the pool degraded), and its finished drain is recorded.
 *
 * @module
 */
import { drainedPatch, undrainPatch } from "../../model/disruption.ts";
import {
  describeDrainBlockers,
  drainBlockedBy,
  type DrainPass,
  drainWaitingFor,
  forcedDeletionMessage,
  forcedDeletions,
  planDrainPass,
  podKey,
} from "../../model/drain.ts";
import { reportDrain } from "../drain_report.ts";
import { shortReference } from "../../../lib/api/display.ts";
import { EffectiveState } from "../../../lib/api/node_state.ts";
import type { Member } from "../membership.ts";
import {
  type Action,
  mergeOutputs,
  NO_OUTPUT,
  nodeObjectEvent,
  type StepOutput,
  stepOutput,
} from "../plan.ts";
import { formatTime, parseTime } from "../../model/slots.ts";
import type { PodSummary } from "../../model/types.ts";
import {
  attachmentsUnknown,
  drainContext,
  evictPass,
  InFlightEnv,
  InFlightMode,
  NodeOutcome,
  PassOutcome,
  podsOf,
  SlotNode,
} from "./context.ts";

/**
 * Cordons a node that is not. One uncordoned after its drain may have pods back,
 * so its drain no longer counts: the drain and the reboot request are withdrawn
 * and it is drained again (`drainedAt` undefined).
 */
export function cordonPhase(m: Member, f: SlotNode): NodeOutcome & { drainedAt?: Date } {
  const { node, name, bn } = f;
  if (node.unschedulable) return { drainedAt: f.drainedAt };
  const actions: Action[] = [{
    kind: "patchNode",
    node: name,
    patch: { spec: { unschedulable: true } },
    why: "cordon",
  }];
  if (!f.drainedAt) return { out: stepOutput({ actions }), drainedAt: undefined };
  // The cordon and the drain's withdrawal in one write: a cordon that landed without the
  // withdrawal would make a drain that pods have landed on since read as finished again.
  const undrain = undrainPatch(node);
  if (undrain) {
    actions[0] = {
      kind: "patchNode",
      node: name,
      patch: { ...undrain, spec: { unschedulable: true } },
      why: "cordon and withdraw drain",
    };
  }
  if (m.state === EffectiveState.Rebooting) {
    // Pods may have landed since the drain. A reboot already under way is not stopped, and
    // needs no record to finish; one not yet started is refused by the daemon's last read of
    // the Node until a new drain pass records it again (the reboot request stays).
    const events = [nodeObjectEvent(
      name,
      "Warning",
      "DrainInvalidated",
      `node ${name} was uncordoned while it was to reboot; cordoning it again and ` +
        `withdrawing its drain, so a reboot not yet started waits for a new drain`,
    )];
    return { out: stepOutput({ actions, events }), drainedAt: undefined };
  }
  if (bn.spec.desiredImageState === "Booted") {
    actions.push({
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Staged" } },
      why: "withdraw reboot request",
    });
  }
  const events = [nodeObjectEvent(
    name,
    "Warning",
    "DrainInvalidated",
    `node ${name} was uncordoned after its drain; cordoning and draining it again`,
  )];
  return { out: stepOutput({ actions, events }), drainedAt: undefined };
}

/** A node whose pods are unknown: asked for, and counted as draining so no other slot races it for a budget. */
export function podsUnknown(name: string): PassOutcome {
  return {
    podsUnknown: true,
    draining: true,
    drainTimedOut: false,
    rebootTimedOut: false,
    out: stepOutput({ needPods: [name], draining: true }),
  };
}

/**
 * One drain pass: unknown pods are asked for (it counts as draining meanwhile);
 * a finished drain (its cordon visible, so no pod slipped in) is recorded and the
 * reboot asked for; else what must leave is evicted, within the drain timeout.
 */
export function drainPhase(
  m: Member,
  f: SlotNode,
  env: InFlightEnv,
  mode: InFlightMode,
): PassOutcome {
  const { name, node, bn } = f;
  const pods = podsOf(env.input, name);
  if (!pods || attachmentsUnknown(env.input, name)) return podsUnknown(name);
  const pass = planDrainPass(pods, drainContext(env.input, node));
  if (!pass.done || !node.unschedulable) return evictPhase(f, pods, env);
  if (m.state !== EffectiveState.Staged || mode !== "finish") {
    return { drainTimedOut: false, rebootTimedOut: false };
  }
  const seconds = (env.now.getTime() - f.slotAt.getTime()) / 1000;
  const actions: Action[] = [
    {
      kind: "patchNode",
      node: name,
      patch: drainedPatch(bn.spec.desiredImage, env.now),
      why: "record drain",
      observe: { metric: "drain_seconds", seconds },
    },
    {
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Booted" } },
      why: "request reboot",
    },
  ];
  // One event for the finished drain and the reboot request: the same plan writes both.
  const events = [
    nodeObjectEvent(
      name,
      "Normal",
      "DrainCompleted",
      `node ${name} drained; asked to boot ${shortReference(bn.spec.desiredImage)}`,
    ),
  ];
  return {
    drainedAt: env.now,
    drainTimedOut: false,
    rebootTimedOut: false,
    out: stepOutput({ actions, events, wake: env.rebootTimeoutMs }),
  };
}

/**
 * A drain still running: its evictions, its report (once the cordon is visible,
 * and the drain blocked or running a poll interval),
 * its PDB demand, and past the drain timeout what `onTimeout` says: Degrade (a
 * DrainBlocked event naming what blocks it, the node degraded) or Force (still
 * evicting, and deleting the pods a PodDisruptionBudget allowing no disruption
 * keeps, each with a Warning event; degraded while pods the policy refuses remain,
 * or pods are not removed within the termination slack after the timeout).
 */
function evictPhase(f: SlotNode, pods: readonly PodSummary[], env: InFlightEnv): PassOutcome {
  const { name, node, bn, slotAt } = f;
  const record = f.facts.record;
  const { input, now } = env;
  const evict = evictPass(name, pods, drainContext(input, node));
  const { pass } = evict;
  const pollMs = input.options?.drainPollMs ?? 5_000;
  const blockedBy = drainBlockedBy(pass, input.pdbs);
  // A drain that ends within its first poll needs no report (the reboot's status tells it).
  const due = blockedBy !== undefined || now.getTime() - slotAt.getTime() >= pollMs;
  const reported = node.unschedulable && due
    ? reportDrain(bn, {
      image: bn.spec.desiredImage,
      slotAt: record.slotAt,
      blockedBy,
      waitingFor: drainWaitingFor(pass),
    }, now)
    : NO_OUTPUT;
  const poll = { draining: true, poll: pollMs };
  const deadline = slotAt.getTime() + env.drainTimeoutMs;
  const common = { draining: true, demand: pods, drainTimedOut: false, rebootTimedOut: false };
  if (now.getTime() < deadline) {
    const polled = stepOutput({ ...poll, actions: evict.action ? [evict.action] : [] });
    return {
      ...common,
      out: mergeOutputs([polled, reported, stepOutput({ wake: deadline - now.getTime() })]),
    };
  }
  if (env.drain.onTimeout === "Force" && node.unschedulable) {
    const force = forceOutput(f, pass, evict.action, env);
    const stuck = forceStuck(pass, deadline, now);
    const note = stuck && pass.toEvict.length > 0 ? FORCE_FAILING : undefined;
    return {
      ...(stuck ? timedOut(f, pass, env, common, note) : common),
      out: mergeOutputs([
        stepOutput(poll),
        reported,
        force,
        // The slack after which pods still there are reported is a deadline: no back-off.
        stuck
          ? timeoutEvent(f, pass, env, note)
          : pass.toEvict.length > 0
          ? stepOutput({ wake: deadline + TERMINATION_SLACK_MS - now.getTime() + 1 })
          : NO_OUTPUT,
      ]),
    };
  }
  const polled = stepOutput({ ...poll, actions: evict.action ? [evict.action] : [] });
  return {
    ...timedOut(f, pass, env, common),
    out: mergeOutputs([polled, reported, timeoutEvent(f, pass, env)]),
  };
}

/** How long past its deletion time (deletionTimestamp: the end of its grace) a pod may linger. */
const TERMINATION_SLACK_MS = 60_000;

/** True when a terminating pod is still there well after its grace period ended. */
function overdue(pod: PodSummary, now: Date): boolean {
  const at = parseTime(pod.deletionTimestamp);
  return at !== undefined && now.getTime() > at.getTime() + TERMINATION_SLACK_MS;
}

/**
 * Past the timeout under `onTimeout: Force`, what Force cannot remove keeps the
 * node stuck: pods the policy refuses, pods still there well past their deletion
 * (a finalizer, a kubelet that is gone), and pods still to remove once the
 * termination slack after the timeout has passed (their eviction or forced
 * deletion keeps failing: RBAC, an admission webhook, a server error).
 */
function forceStuck(pass: DrainPass, deadline: number, now: Date): boolean {
  // A volume cannot be forced off: still attached after the slack, the node is stuck.
  const volumesStuck = pass.attached.length > 0 && now.getTime() > deadline + TERMINATION_SLACK_MS;
  return pass.refused.length > 0 || volumesStuck ||
    pass.terminating.some((p) => overdue(p, now)) ||
    (pass.toEvict.length > 0 && now.getTime() > deadline + TERMINATION_SLACK_MS);
}

/** Why pods are still to remove past the timeout under Force (the API's answer is in the log). */
const FORCE_FAILING = "onTimeout is Force but evicting or deleting the pods named keeps " +
  "failing (the controller's log has the API's answer: RBAC, an admission webhook, a server " +
  "error)";

/** The drain timeout's message: what blocks the drain (and `note`, why it still does). */
function timeoutMessage(name: string, pass: DrainPass, env: InFlightEnv, note?: string): string {
  return `drain of node ${name} did not finish within ${env.drainTimeoutMs / 1000}s: ${
    describeDrainBlockers(pass, env.input.pdbs) || "waiting for the cordon"
  }${note ? `; ${note}` : ""}`;
}

/** A timed-out drain's outcome: stuck and degraded, naming what blocks it. */
function timedOut(
  f: SlotNode,
  pass: DrainPass,
  env: InFlightEnv,
  common: Omit<PassOutcome, "out">,
  note?: string,
): PassOutcome {
  return { ...common, drainTimedOut: true, degraded: [timeoutMessage(f.name, pass, env, note)] };
}

/** The DrainBlocked event of a timed-out drain (recorded once per slot). */
function timeoutEvent(f: SlotNode, pass: DrainPass, env: InFlightEnv, note?: string): StepOutput {
  const event = nodeObjectEvent(
    f.name,
    "Warning",
    "DrainBlocked",
    timeoutMessage(f.name, pass, env, note),
    `drain-timeout/${f.name}/${formatTime(f.slotAt)}`,
  );
  return stepOutput({ events: [event] });
}

/**
 * `onTimeout: Force`: evicts what eviction can remove (as before the timeout)
 * and deletes the pods a PodDisruptionBudget allowing no disruption keeps, each
 * with a Warning event naming it and that budget (recorded once per slot and
 * pod). Only on a cordoned node, so nothing slips back in.
 */
function forceOutput(
  f: SlotNode,
  pass: DrainPass,
  evict: Action | undefined,
  env: InFlightEnv,
): StepOutput {
  const deletions = forcedDeletions(pass, env.input.pdbs, env.drain);
  const deleted = new Set(deletions.map((d) => podKey(d.pod)));
  const evictions = evict?.kind === "evict"
    ? evict.pods.filter((p) => !deleted.has(podKey(p)))
    : [];
  const actions: Action[] = evictions.length > 0
    ? [{ kind: "evict", node: f.name, pods: evictions }]
    : [];
  if (deletions.length === 0) return stepOutput({ actions });
  actions.push({
    kind: "deletePods",
    node: f.name,
    pods: deletions.map((d) => ({
      namespace: d.pod.namespace,
      name: d.pod.name,
      uid: d.pod.uid,
      gracePeriodSeconds: d.gracePeriodSeconds,
    })),
  });
  const events = deletions.map((d) =>
    nodeObjectEvent(
      f.name,
      "Warning",
      "DrainForced",
      forcedDeletionMessage(f.name, d, env.drainTimeoutMs / 1000),
      `drain-force/${f.name}/${formatTime(f.slotAt)}/${d.pod.uid ?? podKey(d.pod)}`,
    )
  );
  return stepOutput({ actions, events });
}
