/**
 * What the rollout gauges of one pool show, read from facts the planner already
 * derived: the status it just planned (history, CircuitOpen, the target's short
 * form), the pool's spec (paused) and the BootcNodes' reports (which image each
 * node booted). Nothing here decides anything; it only reshapes those facts into
 * bounded label sets. Pure.
 *
 * @module
 */
import { shortDigest } from "../../lib/api/display.ts";
import {
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  entryMatches,
  findCondition,
  owningPool,
  PoolConditionType,
  type Revision,
  RevisionOutcome,
} from "../../lib/api/mod.ts";

/** The labels that name the pool's target on the version panel. */
export interface TargetLabels {
  /** `status.targetShort`: tag or channel version, bootc version, 12-hex digest. */
  target: string;
  /** `status.targetVersion`: bootc's version of the image ("" while no node reported it). */
  version: string;
  /** The first 12 hex digits of the digest. */
  digest: string;
}

/** The labels of a booted image: bootc's version as the node reports it, and 12-hex digest. */
export interface BootedLabels {
  version: string;
  digest: string;
}

/** How many booted images of one pool get a series of their own; the rest are folded into one. */
export const MAX_BOOTED_IMAGES = 8;
/** The `digest` label of the images beyond {@linkcode MAX_BOOTED_IMAGES}. */
export const OTHER_IMAGES = "other";
/** Longest label value kept (a tag or version longer than this is cut). */
const MAX_LABEL_LENGTH = 64;

/** The rollout facts of one pool, as the gauges show them. */
export interface RolloutObservation {
  /** `spec.rollout.paused`: no new reboot slot is handed out. */
  paused: boolean;
  /** The CircuitOpen condition is True. */
  circuitOpen: boolean;
  /** When the latest revision began (ms since the epoch). */
  startedAt?: number;
  /** When and how the latest revision ended; absent while it runs. */
  ended?: { at: number; outcome: string };
  /** The median duration of the pool's succeeded revisions, in seconds. */
  expectedSeconds?: number;
  /** When the newest revision that was rolled back ended (ms since the epoch). */
  lastRollbackAt?: number;
  /** The image the pool targets. */
  target?: TargetLabels;
  /** Member nodes per booted image (at most {@linkcode MAX_BOOTED_IMAGES} + 1 entries). */
  booted: { image: BootedLabels; nodes: number }[];
}

/** Reads the rollout facts of pool `pool` from its planned status, its spec and the BootcNodes. */
export function rolloutObservation(
  pool: string,
  status: BootcNodePoolStatus | undefined,
  spec: BootcNodePool["spec"] | undefined,
  bootcNodes: Iterable<BootcNode>,
): RolloutObservation {
  const members = [...bootcNodes].filter((bn) =>
    owningPool(bn) === pool && !bn.metadata.deletionTimestamp
  );
  const circuit = findCondition(status?.conditions, PoolConditionType.CircuitOpen);
  return {
    paused: spec?.rollout?.paused ?? false,
    circuitOpen: circuit?.status === "True",
    ...revisionTimes(status?.history ?? []),
    target: targetLabels(status),
    booted: bootedImages(status, members),
  };
}

/** The latest revision's start and end, the expected duration and the last rollback. */
export function revisionTimes(
  history: readonly Revision[],
): Pick<RolloutObservation, "startedAt" | "ended" | "expectedSeconds" | "lastRollbackAt"> {
  const last = history.at(-1);
  const startedAt = time(last?.startedAt);
  const endedAt = time(last?.endedAt);
  const rolledBack = [...history].reverse().find((r) => r.outcome === RevisionOutcome.RolledBack);
  return {
    startedAt,
    ended: last && last.outcome !== RevisionOutcome.Progressing && endedAt !== undefined
      ? { at: endedAt, outcome: last.outcome }
      : undefined,
    expectedSeconds: expectedRolloutSeconds(history),
    lastRollbackAt: time(rolledBack?.endedAt),
  };
}

/**
 * How long a rollout of this pool is expected to take: the median duration of
 * the succeeded revisions in its history (up to 10), gate waits included, as
 * they were. Undefined until one succeeded. An estimate from the pool's own
 * past keeps it explainable ("3× longer than it usually takes") and survives
 * restarts, as the history lives in the status.
 */
export function expectedRolloutSeconds(history: readonly Revision[]): number | undefined {
  const durations = history.filter((r) => r.outcome === RevisionOutcome.Succeeded)
    .map((r) => ((time(r.endedAt) ?? NaN) - (time(r.startedAt) ?? NaN)) / 1000)
    .filter((d) => Number.isFinite(d) && d >= 0)
    .sort((a, b) => a - b);
  if (durations.length === 0) return undefined;
  const mid = Math.floor(durations.length / 2);
  return durations.length % 2 === 1 ? durations[mid] : (durations[mid - 1] + durations[mid]) / 2;
}

/**
 * The target as the planner names it for people (`status.targetShort`,
 * `status.targetVersion`); undefined while nothing is resolved.
 */
function targetLabels(status: BootcNodePoolStatus | undefined): TargetLabels | undefined {
  if (!status?.targetDigest) return undefined;
  const digest = shortDigest(status.targetDigest);
  return {
    target: cut(status.targetShort ?? digest),
    version: cut(status.targetVersion ?? ""),
    digest,
  };
}

/**
 * Member nodes per booted image, most nodes first: a node booted into the
 * target counts under the target's digest (an index's per-platform digests
 * included); at most {@linkcode MAX_BOOTED_IMAGES} images, the rest under
 * {@linkcode OTHER_IMAGES}. Nodes that have not reported a booted image are left out.
 */
function bootedImages(
  status: BootcNodePoolStatus | undefined,
  members: readonly BootcNode[],
): RolloutObservation["booted"] {
  const desired = status?.targetImage
    ? { image: status.targetImage, platforms: status.targetPlatforms }
    : undefined;
  const byDigest = new Map<string, { version: string; nodes: number }>();
  for (const bn of members) {
    const booted = bn.status?.booted;
    if (!booted) continue;
    const onTarget = desired !== undefined && entryMatches(booted, desired);
    const d = onTarget ? status?.targetDigest : booted.imageDigest ?? digestOf(booted.image);
    if (!d) continue;
    const key = shortDigest(d);
    const entry = byDigest.get(key) ?? { version: "", nodes: 0 };
    entry.nodes++;
    if (!entry.version && booted.version) entry.version = cut(booted.version);
    byDigest.set(key, entry);
  }
  const sorted = [...byDigest].sort(([a, x], [b, y]) => y.nodes - x.nodes || a.localeCompare(b));
  const shown = sorted.slice(0, MAX_BOOTED_IMAGES).map(([digest, e]) => ({
    image: { version: e.version, digest },
    nodes: e.nodes,
  }));
  const rest = sorted.slice(MAX_BOOTED_IMAGES).reduce((n, [, e]) => n + e.nodes, 0);
  return rest > 0
    ? [...shown, { image: { version: "", digest: OTHER_IMAGES }, nodes: rest }]
    : shown;
}

function time(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : t;
}

function digestOf(reference: string | undefined): string | undefined {
  return reference ? /@(sha256:[a-f0-9]{64})$/.exec(reference)?.[1] : undefined;
}

function cut(value: string): string {
  return value.length <= MAX_LABEL_LENGTH ? value : value.slice(0, MAX_LABEL_LENGTH);
}
