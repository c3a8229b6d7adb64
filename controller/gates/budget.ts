/**
 * The pool's own disruption budget: at most `maxUnavailable` of its nodes
 * disrupted at once (an integer, or a percentage of the pool rounded up, at
 * least 1). Reason `BudgetExhausted` when candidates wait for a slot.
 *
 * @module
 */
import { resolveMaxUnavailable } from "../slots.ts";
import type { Gate, GateDecision, GateInput } from "./gate.ts";

/** The number of reboot slots of a pool now. */
export function poolSlots(input: Pick<GateInput, "pool" | "memberCount">): number {
  return resolveMaxUnavailable(input.pool.spec.rollout?.maxUnavailable, input.memberCount);
}

/** Admits candidates while the pool's budget has room. */
export const budgetGate: Gate = {
  name: "budget",
  decide(input: GateInput): GateDecision {
    const slots = poolSlots(input);
    const room = Math.max(0, slots - input.disrupted.length);
    if (input.candidates.length <= room) return { admit: input.candidates };
    return {
      admit: input.candidates.slice(0, room),
      wait: {
        reason: "BudgetExhausted",
        message: `${input.disrupted.length}/${slots} reboot slots in use (maxUnavailable)`,
        routine: input.disrupted.length > 0,
      },
    };
  },
};
