/**
 * The channel decisions of a reconcile, pure: whether a pool wants its channel's
 * tags listed and from when, with the circuit breaker's say (an open circuit
 * holds the version), and the pool as the planner plans it (its ref the version
 * the channel chose). The shell only lists the tags (`channel_checks.ts`) and
 * hands in the latest listing; it decides nothing here.
 *
 * Both run before {@linkcode planPool}: the chosen version is the ref whose tag
 * is resolved, and the resolution is an input of the plan.
 *
 * @module
 */
import type { BootcNodePool } from "../../lib/api/mod.ts";
import {
  type ChannelDecision,
  channelError,
  type ChannelListing,
  type ChannelSpec,
  channelStep,
} from "./channel.ts";
import { circuitOpen, failureRecord } from "./failure_policy.ts";
import type { PlannerOptions } from "./plan.ts";
import { pollIntervalMs } from "./resolution.ts";

/** The tag listing a channel pool wants. */
export interface ChannelWant {
  repository: string;
  /** When the next listing is due (now, when none was made yet). */
  dueAt: Date;
}

/** The pool to plan and the channel's decision for it. */
export interface ChannelPlan {
  /** The pool with `spec.image.ref` set to the chosen version (as is without a channel). */
  planned: BootcNodePool;
  channel?: ChannelDecision;
}

/** The pool's channel, when it follows a valid one and is not being deleted. */
function activeChannel(pool: BootcNodePool): ChannelSpec | undefined {
  const spec = pool.spec.image.channel;
  if (!spec || pool.metadata.deletionTimestamp || channelError(spec)) return undefined;
  return spec;
}

function stepOf(
  pool: BootcNodePool,
  now: Date,
  planner?: PlannerOptions,
  listing?: ChannelListing,
) {
  return channelStep({
    pool,
    listing,
    // The circuit is read as the failure record stands before this plan.
    circuitOpen: circuitOpen(pool, failureRecord(pool)),
    now,
    intervalMs: pollIntervalMs(pool, planner),
  })!;
}

/**
 * The listing pool wants: undefined when it follows no channel, an invalid one
 * (InvalidSpec), or is being deleted; the shell then drops its listing.
 */
export function channelWant(
  pool: BootcNodePool,
  now: Date,
  planner?: PlannerOptions,
): ChannelWant | undefined {
  const spec = activeChannel(pool);
  if (!spec) return undefined;
  return { repository: spec.repository, dueAt: stepOf(pool, now, planner).dueAt };
}

/** The channel step with the latest `listing`, and the pool as the planner sees it. */
export function plannedChannel(options: {
  pool: BootcNodePool;
  listing?: ChannelListing;
  now: Date;
  planner?: PlannerOptions;
}): ChannelPlan {
  const { pool, listing, now, planner } = options;
  if (!activeChannel(pool)) return { planned: pool };
  const channel = stepOf(pool, now, planner, listing);
  const planned = channel.ref
    ? { ...pool, spec: { ...pool.spec, image: { ...pool.spec.image, ref: channel.ref } } }
    : pool;
  return { planned, channel };
}
