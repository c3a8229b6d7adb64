/**
 * Fixtures for the gates' table tests: a pool with policy fields and a gate
 * input around it.
 *
 * @module
 */
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { pool } from "../testing/fixtures.ts";
import type { Candidate, GateInput } from "./gate.ts";
import type { PoolPolicy } from "./policy.ts";

/** A pool (the planner's fixture) with `policy` merged into its spec. */
export function policyPool(policy: PoolPolicy = {}): BootcNodePool {
  const p = pool({ maxUnavailable: policy.rollout?.maxUnavailable ?? 1 });
  return {
    ...p,
    spec: {
      ...p.spec,
      ...(policy.timeZone !== undefined ? { timeZone: policy.timeZone } : {}),
      ...(policy.maintenance !== undefined ? { maintenance: policy.maintenance } : {}),
      rollout: { ...p.spec.rollout, ...policy.rollout },
    },
  } as BootcNodePool;
}

/** Candidates `n-0` .. `n-<count-1>`. */
export function candidates(count: number): Candidate[] {
  return Array.from({ length: count }, (_, i) => ({ name: `n-${i}`, labels: {} }));
}

/** A gate input for a pool with `policy` at `now`. */
export function gateInput(o: {
  policy?: PoolPolicy;
  now: string;
  candidates?: number;
  disrupted?: number;
  memberCount?: number;
}): GateInput {
  const disrupted = Array.from({ length: o.disrupted ?? 0 }, (_, i) => `d-${i}`);
  return {
    pool: policyPool(o.policy),
    candidates: candidates(o.candidates ?? 1),
    disrupted,
    memberCount: o.memberCount ?? 10,
    cluster: { pools: [], nodes: new Map() },
    now: new Date(o.now),
  };
}
