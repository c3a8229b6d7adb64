/**
 * `spec.rollout.canary`: each new target goes to a canary batch first. While
 * the batch updates, only as many nodes as it has left may take a slot; once
 * all of it is verified it must stay healthy for at least `soakSeconds` before
 * the rest proceeds (reason `CanarySoak`, until the soak ends); a failed canary
 * holds everything (reason `CanaryFailed`). The phase itself is computed by
 * `controller/planner/canary.ts` and handed in as {@linkcode GateInput.canary}.
 *
 * @module
 */
import { CANARY_NODES, intOrPercentError } from "../../lib/api/budget.ts";
import type { Gate, GateDecision, GateInput, SpecCheckInput } from "./gate.ts";

/** Reason while the canary batch updates. */
export const CANARY_UPDATING = "CanaryInProgress";
/** Reason while the canary batch soaks. */
export const CANARY_SOAK = "CanarySoak";
/** Reason after the canary failed. */
export const CANARY_FAILED = "CanaryFailed";

/** Admits what the pool's canary phase allows. */
export const canaryGate: Gate = {
  name: "canary",
  // None blocks the pool: nodes going back from a failed image still take slots, and while
  // the batch updates the canary nodes do.
  reasons: [
    { reason: CANARY_UPDATING, blocksPool: false },
    { reason: CANARY_SOAK, blocksPool: false },
    { reason: CANARY_FAILED, blocksPool: false },
  ],
  validate({ pool }: SpecCheckInput): string[] {
    const nodes = pool.spec.rollout?.canary?.nodes;
    const err = nodes === undefined ? undefined : intOrPercentError(nodes, CANARY_NODES);
    return err ? [`spec.${err}`] : [];
  },
  decide(input: GateInput): GateDecision {
    const c = input.canary;
    if (!c || c.phase === "Passed") return { admit: input.candidates };
    // Nodes going back from a failed image are not part of any canary.
    const back = input.candidates.filter((x) => x.rollback);
    if (back.length > 0) {
      const decision = canaryGate.decide({
        ...input,
        candidates: input.candidates.filter((x) => !x.rollback),
      });
      const keep = new Set([...back, ...decision.admit].map((x) => x.name));
      return { admit: input.candidates.filter((x) => keep.has(x.name)), wait: decision.wait };
    }
    if (c.phase === "Failed") {
      return {
        admit: [],
        wait: { reason: CANARY_FAILED, message: `canary failed: the rest of the pool waits` },
      };
    }
    if (c.phase === "Soaking") {
      const until = c.soakUntil ? new Date(c.soakUntil) : undefined;
      return {
        admit: [],
        wait: {
          reason: CANARY_SOAK,
          message: `canary: ${c.nodes} node(s) updated, soaking until ${c.soakUntil ?? "?"}`,
          until,
        },
      };
    }
    const room = Math.max(0, c.nodes - (input.updated ?? 0) - input.disrupted.length);
    const admit = input.candidates.slice(0, room);
    if (admit.length === input.candidates.length) return { admit };
    return {
      admit,
      wait: {
        reason: CANARY_UPDATING,
        message: `canary: ${input.updated ?? 0} of ${c.nodes} canary node(s) updated; ` +
          `the rest waits for the canary`,
      },
    };
  },
};
