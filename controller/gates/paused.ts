/**
 * `spec.rollout.paused`: no new reboot slot while paused (staging goes on and
 * nodes in flight finish). Reason `Paused`.
 *
 * @module
 */
import type { Gate, GateDecision, GateInput } from "./gate.ts";

/** Holds every candidate back while the pool is paused. */
export const pausedGate: Gate = {
  name: "paused",
  decide(input: GateInput): GateDecision {
    if (!(input.pool.spec.rollout?.paused ?? false)) return { admit: input.candidates };
    return { admit: [], wait: { reason: "Paused", message: "paused: no new reboot slots" } };
  },
};
