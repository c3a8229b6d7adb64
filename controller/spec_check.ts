/**
 * Planner step 0: what is wrong with a pool's spec that the CRD schema cannot
 * catch (names, selectors, references, budgets, orderings, policies, channels,
 * the pull Secret's name). A pool with any of these changes no membership and
 * hands out no slot; the planner finishes or undoes what is in flight.
 *
 * @module
 */
import {
  CANARY_NODES,
  intOrPercentError,
  MAX_STAGING,
  POOL_MAX_UNAVAILABLE,
  PoolDegradedReason,
  poolNameError,
} from "../lib/api/mod.ts";
import { channelError } from "./channel.ts";
import { orderingErrors, policyErrors } from "./gates/mod.ts";
import type { PlanInput } from "./plan.ts";
import type { ResolutionNeed } from "./resolution.ts";
import { selectorError } from "./selector.ts";

/** Every spec error of `input.pool`, each naming its field (empty when the spec is fine). */
export function specErrors(input: PlanInput, need: ResolutionNeed): string[] {
  const { pool } = input;
  const errors: string[] = [];
  const nameErr = poolNameError(pool.metadata.name ?? "");
  if (nameErr) errors.push(nameErr);
  const selErr = selectorError(pool.spec.nodeSelector);
  if (selErr) errors.push(selErr);
  if (need.kind === "invalid") errors.push(need.message);
  // Every int-or-percent field the planner resolves (lib/api/budget.ts): an unreadable one
  // would fail closed deep inside a step; say so here, naming the field.
  const rollout = pool.spec.rollout;
  for (
    const [value, rule] of [
      [rollout?.maxUnavailable, POOL_MAX_UNAVAILABLE],
      [rollout?.maxStaging, MAX_STAGING],
      [rollout?.canary?.nodes, CANARY_NODES],
    ] as const
  ) {
    const err = value === undefined ? undefined : intOrPercentError(value, rule);
    if (err) errors.push(`spec.${err}`);
  }
  errors.push(...orderingErrors(pool, input.poolObjects ?? [pool]));
  errors.push(...policyErrors(pool.spec));
  const chErr = channelError(pool.spec.image.channel);
  if (chErr) errors.push(chErr);
  if (input.pullSecretIssue?.reason === PoolDegradedReason.InvalidSpec) {
    errors.push(input.pullSecretIssue.message);
  }
  return errors;
}
