/**
 * `spec.rollout.strategy: External`: another orchestrator (such as OpenShift's
 * MCO) cordons, drains and reboots the pool's nodes, so the operator grants no
 * reboot slot at all. Staging goes on (the nodes get the target with
 * `desiredImageState: Staged`), and a node already in a slot when the pool
 * switches finishes its update through it (the gates only decide new slots:
 * nothing is left half-done). Reason `ExternalOrchestrator`; it blocks the pool,
 * so its staged nodes never compete for cluster budgets.
 *
 * @module
 */
import { UpToDateReason } from "../../lib/api/constants.ts";
import { externallyOrchestrated } from "../../lib/api/node_state.ts";
import type { Gate, GateDecision, GateInput } from "./gate.ts";

/** The wait's message: how many staged nodes wait for the orchestrator. */
export function externalWaitMessage(staged: number): string {
  if (staged === 0) {
    return "rollout.strategy is External: the external orchestrator reboots the nodes";
  }
  return `${staged} staged, waiting for the external orchestrator to reboot ` +
    (staged === 1 ? "it" : "them");
}

/** Holds every candidate back while an external orchestrator reboots the nodes. */
export const externalGate: Gate = {
  name: "external",
  reasons: [{ reason: UpToDateReason.ExternalOrchestrator, blocksPool: true }],
  decide(input: GateInput): GateDecision {
    if (!externallyOrchestrated(input.pool)) return { admit: input.candidates };
    return {
      admit: [],
      wait: {
        reason: UpToDateReason.ExternalOrchestrator,
        message: externalWaitMessage(input.candidates.length),
      },
    };
  },
};
