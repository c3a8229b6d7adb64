/**
 * The spec check of the rollout policies, for the pool's `InvalidSpec`
 * condition: the pool's time zone (every time-based gate reads it), then what
 * each gate of `GATES` says about the fields it reads ({@linkcode Gate.validate}),
 * in gate order, each error naming its field. The gates assume a spec that
 * passed these and fail closed when it did not.
 *
 * @module
 */
import type { Gate, SpecCheckInput } from "./gate.ts";
import { poolPolicy } from "./policy.ts";
import { GATES } from "./registry.ts";
import { timeZoneError } from "./schedule.ts";

/** What {@linkcode policyErrors} checks. */
export interface PolicyErrorsInput extends SpecCheckInput {
  /** The gates whose checks run; default `GATES` (tests pass others). */
  gates?: readonly Gate[];
}

/** Every problem of the policy fields of the pool's spec, each naming its field; [] when none. */
export function policyErrors(input: PolicyErrorsInput): string[] {
  const { gates = GATES } = input;
  const errors: string[] = [];
  const timeZone = poolPolicy(input.pool).timeZone;
  if (timeZone !== undefined) {
    const err = timeZoneError(timeZone, "spec.timeZone");
    if (err) errors.push(err);
  }
  for (const gate of gates) {
    errors.push(...(gate.validate?.({ pool: input.pool, pools: input.pools }) ?? []));
  }
  return errors;
}
