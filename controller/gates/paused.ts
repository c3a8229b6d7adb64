/**
 * `spec.rollout.paused`: no new reboot slot while paused (staging goes on and
 * nodes in flight finish). Reason `Paused`.
 *
 * @module
 */
import { UpToDateReason } from "../../lib/api/constants.ts";
import type { Gate, GateDecision, GateInput } from "./gate.ts";

/** Holds every candidate back while the pool is paused. */
export const pausedGate: Gate = {
  name: "paused",
  reasons: [{ reason: UpToDateReason.Paused, blocksPool: true }],
  decide(input: GateInput): GateDecision {
    if (!(input.pool.spec.rollout?.paused ?? false)) return { admit: input.candidates };
    return {
      admit: [],
      wait: { reason: UpToDateReason.Paused, message: "no new reboot slots while paused" },
    };
  },
};
