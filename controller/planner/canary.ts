/**
 * The canary's phase for a pool's current target, from the last phase in
 * status and what the members show now. Pure; the gate in `gates/canary.ts`
 * acts on the phase.
 *
 * Updating (the batch takes slots) → Soaking (every batch node verified and
 * released; the soak runs until `soakUntil`, at least `soakSeconds` from then)
 * → Passed (the rest proceeds at maxUnavailable). A health failure during
 * Updating or Soaking → Failed; during the soak a NotReady node fails it once
 * it is NotReady for `notReadyGraceSeconds` (default 0, at most the soak), and
 * the soak never passes while one is NotReady: its end moves to the end of
 * that node's grace. A new target starts over; a rollback to a known-good
 * image skips the canary.
 *
 * @module
 */
import {
  type BootcNodePool,
  type BootcNodePoolStatus,
  CANARY_NODES,
  resolveIntOrPercent,
} from "../../lib/api/mod.ts";
import { formatTime, parseTime } from "../model/slots.ts";
import type { CanaryPhase } from "../gates/gate.ts";

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
  /**
   * When the last member that is NotReady within its grace fails (`soakVerdict`), if
   * one is: the soak cannot pass before then.
   */
  notReadyUntil?: Date;
  now: Date;
}

/** `canary.notReadyGraceSeconds` in milliseconds, never longer than the soak. */
export function soakGraceMs(pool: BootcNodePool): number {
  const c = pool.spec.rollout?.canary;
  return Math.min(c?.notReadyGraceSeconds ?? 0, c?.soakSeconds ?? 0) * 1000;
}

/** When the soak of `status` began (its end minus `soakSeconds`), if it is soaking. */
export function soakStart(pool: BootcNodePool, status: CanaryStatus | undefined): Date | undefined {
  const until = status?.phase === "Soaking" ? parseTime(status.soakUntil) : undefined;
  const soakS = pool.spec.rollout?.canary?.soakSeconds ?? 0;
  return until && new Date(until.getTime() - soakS * 1000);
}

/** `at` rounded up to the whole second (status times have second precision). */
function ceilSecond(at: Date): Date {
  return new Date(Math.ceil(at.getTime() / 1000) * 1000);
}

/** The canary's size for a pool of `memberCount` nodes, or undefined without a canary. */
export function canarySize(pool: BootcNodePool, memberCount: number): number | undefined {
  const c = pool.spec.rollout?.canary;
  if (!c) return undefined;
  return Math.min(
    Math.max(memberCount, 1),
    resolveIntOrPercent(c.nodes, memberCount, CANARY_NODES),
  );
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
    // Rounded up, so the soak is never shorter than soakSeconds.
    phase = {
      image,
      phase: "Soaking",
      nodes: phase.nodes,
      soakUntil: formatTime(ceilSecond(new Date(now.getTime() + soakS * 1000))),
    };
  }
  if (phase.phase === "Soaking") {
    const until = parseTime(phase.soakUntil);
    if (!until || now.getTime() >= until.getTime()) {
      const held = input.notReadyUntil;
      if (held && held.getTime() > now.getTime()) {
        // Over, but a node is NotReady within its grace: Ready by then passes, else fails.
        return { ...phase, soakUntil: formatTime(ceilSecond(held)) };
      }
      return { image, phase: "Passed", nodes: phase.nodes };
    }
  }
  return phase;
}

/** The phase as gates see it. */
export function gatePhase(status: CanaryStatus | undefined): CanaryPhase | undefined {
  return status && { phase: status.phase, nodes: status.nodes, soakUntil: status.soakUntil };
}
