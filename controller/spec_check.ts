/**
 * Planner step 0: what is wrong with a pool's spec that the CRD schema cannot
 * catch (names, selectors, references, budgets, orderings, policies, channels,
 * the pull Secret's name). A pool with any of these changes no membership and
 * hands out no slot; the planner finishes or undoes what is in flight.
 *
 * @module
 */
import { PoolDegradedReason, poolNameError } from "../lib/api/mod.ts";
import { channelError } from "./channel.ts";
import { orderingErrors, policyErrors } from "./gates/mod.ts";
import type { PlanInput } from "./plan.ts";
import type { ResolutionNeed } from "./resolution.ts";
import { selectorError } from "./selector.ts";
import { resolveMaxUnavailable } from "./slots.ts";

/** Every spec error of `input.pool`, each naming its field (empty when the spec is fine). */
export function specErrors(input: PlanInput, need: ResolutionNeed): string[] {
  const { pool } = input;
  const errors: string[] = [];
  const nameErr = poolNameError(pool.metadata.name ?? "");
  if (nameErr) errors.push(nameErr);
  const selErr = selectorError(pool.spec.nodeSelector);
  if (selErr) errors.push(selErr);
  if (need.kind === "invalid") errors.push(need.message);
  try {
    resolveMaxUnavailable(pool.spec.rollout?.maxUnavailable, 1);
  } catch (e) {
    errors.push((e as Error).message);
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
