/**
 * Planner step 0: what is wrong with a pool's spec that the CRD schema cannot
 * catch (names, selectors, references, budgets, orderings, policies, channels,
 * the pull Secret's name). A pool with any of these changes no membership and
 * hands out no slot; the planner finishes or undoes what is in flight.
 *
 * @module
 */
import {
  intOrPercentError,
  MAX_STAGING,
  MAX_UNHEALTHY,
  PoolDegradedReason,
  poolNameError,
} from "../../lib/api/mod.ts";
import { channelError } from "./channel.ts";
import { policyErrors } from "../gates/mod.ts";
import type { PlanInput } from "./plan.ts";
import type { ResolutionNeed } from "./resolution.ts";
import { selectorError } from "../model/selector.ts";
import { parsePublicKey } from "../../lib/registry/signatures.ts";

/** Every spec error of `input.pool`, each naming its field (empty when the spec is fine). */
export function specErrors(input: PlanInput, need: ResolutionNeed): string[] {
  const { pool } = input;
  const errors: string[] = [];
  const nameErr = poolNameError(pool.metadata.name ?? "");
  if (nameErr) errors.push(nameErr);
  const selErr = selectorError(pool.spec.nodeSelector);
  if (selErr) errors.push(selErr);
  const blocking = pool.spec.rollout?.blockingPodSelector;
  const blockingErr = blocking ? selectorError(blocking) : undefined;
  if (blockingErr) errors.push(`spec.rollout.blockingPodSelector: ${blockingErr}`);
  if (need.kind === "invalid") errors.push(need.message);
  // maxStaging is the staging step's, not a gate's: an unreadable value would fail closed
  // deep inside the step; say so here, naming the field.
  const maxStaging = pool.spec.rollout?.maxStaging;
  const stagingErr = maxStaging === undefined
    ? undefined
    : intOrPercentError(maxStaging, MAX_STAGING);
  if (stagingErr) errors.push(`spec.${stagingErr}`);
  const maxUnhealthy = pool.spec.rollout?.maxUnhealthy;
  const unhealthyErr = maxUnhealthy === undefined
    ? undefined
    : intOrPercentError(maxUnhealthy, MAX_UNHEALTHY);
  if (unhealthyErr) errors.push(`spec.${unhealthyErr}`);
  // Every rollout policy checks the fields it reads (each gate's `validate`, `gates/`).
  errors.push(...policyErrors({ pool, pools: input.poolObjects ?? [pool] }));
  const chErr = channelError(pool.spec.image.channel);
  if (chErr) errors.push(chErr);
  for (const [i, key] of (pool.spec.image.verification?.keys ?? []).entries()) {
    if (key.pem === undefined) continue; // a Secret's key: read by the shell (keyErrors)
    const parsed = parsePublicKey(key.pem);
    if (typeof parsed === "string") {
      errors.push(`spec.image.verification.keys[${i}].pem: ${parsed}`);
    }
  }
  errors.push(...input.keyErrors ?? []);
  if (input.pullSecretIssue?.reason === PoolDegradedReason.InvalidSpec) {
    errors.push(input.pullSecretIssue.message);
  }
  return errors;
}
