/**
 * The reboot phase: a finished drain is proven again until the daemon starts the
 * reboot, and a reboot that takes too long is reported.
 *
 * @module
 */
import { StalledReason } from "../../../lib/api/mod.ts";
import { undrainPatch } from "../../model/disruption.ts";
import { planDrainPass } from "../../model/drain.ts";
import { shortReference } from "../../../lib/api/display.ts";
import { EffectiveState } from "../../../lib/api/node_state.ts";
import type { Member } from "../membership.ts";
import { type Action, mergeOutputs, NO_OUTPUT, nodeObjectEvent, stepOutput } from "../plan.ts";
import { formatTime, parseTime } from "../../model/slots.ts";
import {
  attachmentsUnknown,
  drainContext,
  InFlightEnv,
  type InFlightMode,
  NodeOutcome,
  PassOutcome,
  podsOf,
  SlotNode,
} from "./context.ts";
import { podsUnknown } from "./drain.ts";

/**
 * Drained for its image: the reboot is asked for (again, if someone took the
 * request back) and it must come back within the reboot timeout.
 */
export function rebootPhase(
  m: Member,
  f: SlotNode & { drainedAt: Date },
  env: InFlightEnv,
  mode: InFlightMode = "finish",
): PassOutcome {
  const { name, bn, drainedAt } = f;
  // Held (its image's verdict awaited): the drain stands, the request waits for the verdict.
  const request: Action[] = m.state === EffectiveState.Staged && mode !== "holdReboot" &&
      bn.spec.desiredImageState !== "Booted"
    ? [{
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Booted" } },
      why: "request reboot",
    }]
    : [];
  // Until its daemon starts the reboot, the drain must still be finished now: a record (or a
  // reboot request) written by hand, or a pod that came back, is not a drain. Checked every
  // drain poll while it waits (a pod landing wakes nothing), and pods unknown never suspend
  // the reboot timeout.
  const waiting = m.state === EffectiveState.Staged;
  const deadline = drainedAt.getTime() + env.rebootTimeoutMs;
  // Held for its verdict and not asked to reboot yet: no reboot can be late.
  const held = mode === "holdReboot" && bn.spec.desiredImageState !== "Booted";
  const overdue = env.now.getTime() >= deadline && !held;
  const unproven = waiting ? drainUnproven(f, env) : undefined;
  if (unproven && !(unproven.podsUnknown && overdue)) return unproven;
  if (!overdue) {
    const pollMs = env.input.options?.drainPollMs ?? 5_000;
    const wake = deadline - env.now.getTime();
    return {
      drainedAt,
      drainTimedOut: false,
      rebootTimedOut: false,
      out: stepOutput({ actions: request, wake, ...(waiting ? { poll: pollMs } : {}) }),
    };
  }
  const msg =
    `node ${name} did not come back running ${shortReference(bn.spec.desiredImage)} and Ready ` +
    `within ${env.rebootTimeoutMs / 1000}s of its reboot request`;
  const t = rebootTimeout(name, msg, drainedAt, env);
  return {
    ...t,
    drainedAt,
    drainTimedOut: false,
    rebootTimedOut: true,
    out: mergeOutputs([
      stepOutput({ actions: unproven ? [] : request }),
      unproven?.out ?? NO_OUTPUT,
      t.out ?? NO_OUTPUT,
    ]),
  };
}

/**
 * Defence in depth while a node waits for its reboot (asked for or not, its daemon not yet
 * rebooting): the Node's finished-drain record must be true now (cordoned, nothing left
 * to evict). Its pods unknown: asked for first. A record that is not true (written by
 * hand, or a pod came back) is withdrawn, with a Warning, so the daemon's own check
 * refuses the reboot, and the node is drained again. Undefined: proven.
 */
function drainUnproven(f: SlotNode, env: InFlightEnv): PassOutcome | undefined {
  const { name, node } = f;
  const pods = podsOf(env.input, name);
  if (!pods || attachmentsUnknown(env.input, name)) return podsUnknown(name);
  if (node.unschedulable && planDrainPass(pods, drainContext(env.input, node)).done) {
    return undefined;
  }
  const patch = undrainPatch(node);
  // The record first (the daemon's own check then refuses), then any reboot request.
  const actions: Action[] = patch
    ? [{ kind: "patchNode", node: name, patch, why: "withdraw unproven drain" }]
    : [];
  if (f.bn.spec.desiredImageState === "Booted") {
    actions.push({
      kind: "patchBootcNode",
      node: name,
      patch: { spec: { desiredImageState: "Staged" } },
      why: "revoke reboot request",
    });
  }
  return {
    draining: true,
    drainTimedOut: false,
    rebootTimedOut: false,
    out: stepOutput({
      actions,
      events: [nodeObjectEvent(
        name,
        "Warning",
        "DrainRecordWithdrawn",
        `node ${name}'s Node records a finished drain (bootc.dev/drained-for) but pods its ` +
          `drain must evict are on it; withdrawn, and the node drained again before any reboot`,
      )],
      draining: true,
    }),
  };
}

/**
 * Still rebooting with its drain record withdrawn (the pool retargeted mid-reboot, or the
 * node uncordoned while it was to reboot): it keeps its slot until it is back, and the
 * wait is bounded by the reboot timeout counted from the latest of when the daemon
 * said it was rebooting, the old drain and the slot. Past it the node is
 * stuck and Stalled (RebootTimeout) and counts as unhealthy; it is no failure of the
 * new target, so the failure policy is not asked.
 */
export function retargetedRebootPhase(f: SlotNode, env: InFlightEnv): PassOutcome {
  const known = [
    f.facts.rebootReport?.since,
    parseTime(f.facts.record.drainedAt),
    f.slotAt,
  ].filter((t): t is Date => t !== undefined);
  // The latest thing known to have happened: the wait is bounded, never cut short.
  const since = new Date(Math.max(...known.map((t) => t.getTime())));
  const deadline = since.getTime() + env.rebootTimeoutMs;
  if (env.now.getTime() < deadline) {
    return {
      drainTimedOut: false,
      rebootTimedOut: false,
      out: stepOutput({ wake: deadline - env.now.getTime() }),
    };
  }
  const msg = `node ${f.name} is still rebooting (its drain withdrawn: the pool retargeted or ` +
    `the node uncordoned meanwhile) ${env.rebootTimeoutMs / 1000}s after it started; it keeps ` +
    `its slot until it is back`;
  const t = rebootTimeout(f.name, msg, since, env);
  return { ...t, failures: [], drainTimedOut: false, rebootTimedOut: true };
}

/** A node not back within the reboot timeout: failed, stuck and Stalled (RebootTimeout). */
export function rebootTimeout(
  name: string,
  msg: string,
  drainedAt: Date,
  env: InFlightEnv,
): NodeOutcome {
  return {
    failures: [{ node: name, message: msg }],
    degraded: [msg],
    stuck: true,
    stalled: {
      reason: StalledReason.RebootTimeout,
      message: msg,
      since: new Date(drainedAt.getTime() + env.rebootTimeoutMs),
    },
    out: stepOutput({
      events: [nodeObjectEvent(
        name,
        "Warning",
        "RebootTimedOut",
        msg,
        `reboot-timeout/${name}/${formatTime(drainedAt)}`,
      )],
    }),
  };
}
