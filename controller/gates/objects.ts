/**
 * `spec.rollout.preconditions.objects`: no new reboot slot until every CEL check over the
 * objects it selects passes (a storage cluster healthy, say), as tuppr checks before each
 * node. Nodes in flight finish; the checks run again before every grant.
 *
 * The shell reads the objects off the reconcile path (`pollers/object_checks.ts`) and hands
 * in each check's latest verdict (`GateInput.objects`, index by index). A check that is false
 * or selects nothing holds the pool (`PreconditionNotMet`); one not read yet, or that cannot
 * be evaluated, holds it too (`PreconditionUnknown`), and the planner makes the pool Degraded
 * (`PreconditionFailing`) for the latter. An expression that does not compile is the
 * pool's `InvalidSpec`, naming the field.
 *
 * @module
 */
import { compileCheck } from "../model/object_check.ts";
import type { Gate, GateDecision, GateInput, SpecCheckInput } from "./gate.ts";

/** The gate's wait reasons. */
export const ObjectsReason = {
  /** A check is false for an object, or selects none. */
  PreconditionNotMet: "PreconditionNotMet",
  /** A check is not read yet, or cannot be evaluated. */
  PreconditionUnknown: "PreconditionUnknown",
} as const;

/** Holds every candidate back until every object check passes. */
export const objectsGate: Gate = {
  name: "objects",
  reasons: [
    { reason: ObjectsReason.PreconditionNotMet, blocksPool: true },
    { reason: ObjectsReason.PreconditionUnknown, blocksPool: true },
  ],
  validate({ pool }: SpecCheckInput): string[] {
    const checks = pool.spec.rollout?.preconditions?.objects ?? [];
    return checks.flatMap((c, i) => {
      const compiled = compileCheck(c.expression);
      return typeof compiled === "string"
        ? [`spec.rollout.preconditions.objects[${i}].expression: ${compiled}`]
        : [];
    });
  },
  decide(input: GateInput): GateDecision {
    const checks = input.pool.spec.rollout?.preconditions?.objects ?? [];
    if (checks.length === 0 || input.candidates.length === 0) return { admit: input.candidates };
    const notMet: string[] = [];
    const unknown: string[] = [];
    checks.forEach((_, i) => {
      const v = input.objects?.[i];
      if (!v) unknown.push(`objects[${i}]: not read yet`);
      else if (v.state === "error") unknown.push(v.message);
      else if (v.state === "failed") notMet.push(v.message);
    });
    if (notMet.length === 0 && unknown.length === 0) return { admit: input.candidates };
    return {
      admit: [],
      wait: {
        reason: unknown.length > 0
          ? ObjectsReason.PreconditionUnknown
          : ObjectsReason.PreconditionNotMet,
        message: `no new reboot slot until the preconditions pass: ${
          [...unknown, ...notMet].join("; ")
        }`,
      },
    };
  },
};
