/**
 * The canary's phase for a pool's current target, from the last phase in
 * status and what the members show now. Pure; the gate in `gates/canary.ts`
 * acts on the phase.
 *
 * Updating (the batch takes slots) → Soaking (every batch node verified and
 * released; the soak runs until `soakUntil`) → Passed (the rest proceeds at
 * maxUnavailable). A health failure during Updating or Soaking → Failed. A
 * new target starts over; a rollback to a known-good image skips the canary.
 *
 * @module
 */
import type { BootcNodePool, BootcNodePoolStatus } from "../lib/api/mod.ts";
import { resolveMaxUnavailable } from "./slots.ts";
import { formatTime, parseTime } from "./slots.ts";
import type { CanaryPhase } from "./gates/gate.ts";

/** `status.canary`. */
export type CanaryStatus = NonNullable<BootcNodePoolStatus["canary"]>;

/** What the canary step looks at. */
export interface CanaryInput {
  pool: BootcNodePool;
  /** The image being rolled out. */
  image: string;
  memberCount: number;
  /** Members running the image and released. */
  updated: number;
  /** True when a member failed its health checks on the image (this plan). */
  failed: boolean;
  /** True when the image is a rollback to a known-good image (no canary needed). */
  rollback: boolean;
  now: Date;
}

/** The canary's size for a pool of `memberCount` nodes, or undefined without a canary. */
export function canarySize(pool: BootcNodePool, memberCount: number): number | undefined {
  const c = pool.spec.rollout?.canary;
  if (!c) return undefined;
  return Math.min(Math.max(memberCount, 1), resolveMaxUnavailable(c.nodes, memberCount));
}

/** The canary phase now (undefined when the pool has no canary). */
export function canaryStep(input: CanaryInput): CanaryStatus | undefined {
  const { pool, image, now } = input;
  const size = canarySize(pool, input.memberCount);
  if (size === undefined) return undefined;
  const prior = pool.status?.canary?.image === image ? pool.status.canary : undefined;
  if (input.rollback) return { image, phase: "Passed", nodes: size };
  let phase: CanaryStatus = prior ?? { image, phase: "Updating", nodes: size };
  if (phase.phase === "Failed" || phase.phase === "Passed") return phase;
  if (input.failed) return { image, phase: "Failed", nodes: phase.nodes };
  if (phase.phase === "Updating" && input.updated >= phase.nodes) {
    const soakS = pool.spec.rollout?.canary?.soakSeconds ?? 0;
    phase = {
      image,
      phase: "Soaking",
      nodes: phase.nodes,
      soakUntil: formatTime(new Date(now.getTime() + soakS * 1000)),
    };
  }
  if (phase.phase === "Soaking") {
    const until = parseTime(phase.soakUntil);
    if (!until || now.getTime() >= until.getTime()) {
      return { image, phase: "Passed", nodes: phase.nodes };
    }
  }
  return phase;
}

/** The phase as gates see it. */
export function gatePhase(status: CanaryStatus | undefined): CanaryPhase | undefined {
  return status && { phase: status.phase, nodes: status.nodes, soakUntil: status.soakUntil };
}
