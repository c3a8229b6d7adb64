/**
 * `kubectl bootc status`: a view of each pool (pure, from a {@linkcode Snapshot})
 * and its two renderings: a block of lines for a terminal (redrawn in place by
 * `--watch`), and one plain line per change for logs and pipes.
 *
 * @module
 */
import { findCondition } from "../lib/api/conditions.ts";
import { PoolConditionType } from "../lib/api/constants.ts";
import { legend, progressBar } from "./bar.ts";
import { type Estimate, estimateTimeLeft } from "./estimate.ts";
import { clock, formatDuration, shortDigest, shortImage, truncate } from "./format.ts";
import type { SlotsStatus } from "../lib/api/schema.ts";
import type { BootcNodePool, NodeLike, Snapshot } from "./model.ts";
import {
  type Blocker,
  type BucketCounts,
  BUCKETS,
  poolBlockers,
  poolProgress,
  poolUpToDate,
  rolloutStart,
} from "./progress.ts";
import { NOT_PUBLISHED, publishedQueue, publishedSlots } from "./slot_queue.ts";
import { type Style, visibleLength } from "./style.ts";

/** How many waiting nodes the queue line names. */
const QUEUE_SHOWN = 5;

/** Everything shown about one pool. */
export interface PoolView {
  name: string;
  /** The UpToDate reason (AllUpdated, RolloutInProgress, Paused, a gate's reason) or "Unknown". */
  phase: string;
  upToDate: boolean;
  targetImage?: string;
  deployedDigest?: string;
  total: number;
  counts: BucketCounts;
  /** Members in reboot slots (or otherwise disrupted), by name. */
  inFlight: string[];
  /** Failed members with the condition that failed them: "n5 (Stalled/StagingTimeout)". */
  failed: string[];
  slotsInUse: number;
  /** The slot limit and what sets it, as the controller publishes it (absent: an older controller). */
  slots?: SlotsStatus;
  /** The first nodes waiting for a slot, in the order slots go (absent: not published). */
  queue?: string[];
  blockers: Blocker[];
  estimate: Estimate;
}

/** Builds the view of every pool in the snapshot (or of `only`), sorted by name. */
export function poolViews(snapshot: Snapshot, only?: string): PoolView[] {
  const nodes = new Map<string, NodeLike>(
    snapshot.nodes.map((n) => [n.metadata?.name ?? "", n]),
  );
  return snapshot.pools
    .filter((p) => only === undefined || p.metadata?.name === only)
    .sort((a, b) => (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1)
    .map((p) => poolView(p, snapshot, nodes));
}

function poolView(
  pool: BootcNodePool,
  snapshot: Snapshot,
  nodes: ReadonlyMap<string, NodeLike>,
): PoolView {
  const name = pool.metadata?.name ?? "";
  const progress = poolProgress(pool, snapshot.bootcNodes, nodes);
  // Failed members as their classification says: "n5 (Stalled/StagingTimeout)", "n2 (Failed/Pods)".
  const failed: string[] = [];
  for (const [node, cls] of progress.classes) {
    if (progress.buckets.get(node) !== "failed") continue;
    failed.push(`${node} (${cls.state}/${cls.failedCheck ?? cls.reason})`);
  }
  const up = findCondition(pool.status?.conditions, PoolConditionType.UpToDate);
  const slots = publishedSlots(pool);
  return {
    name,
    phase: up?.reason || "Unknown",
    upToDate: poolUpToDate(pool),
    targetImage: pool.status?.targetImage,
    deployedDigest: pool.status?.deployedDigest,
    total: progress.total,
    counts: progress.counts,
    inFlight: [...progress.buckets].filter(([, b]) => b === "rebooting").map(([n]) => n),
    failed,
    slotsInUse: slots?.inUse ?? pool.status?.slotsInUse ?? 0,
    slots,
    queue: publishedQueue(pool)?.map((e) => e.node),
    blockers: poolBlockers(pool),
    estimate: estimateTimeLeft({
      total: progress.total,
      updated: progress.counts.updated,
      start: rolloutStart(pool),
      completions: progress.completions,
      paused: pool.spec?.rollout?.paused ?? false,
      now: snapshot.now,
    }),
  };
}

/** "~1m20s (3 updated in this rollout, one every 40s; 2 to go)" and the like. */
export function formatEstimate(estimate: Estimate, view: Pick<PoolView, "total">): string {
  switch (estimate.kind) {
    case "done":
      return `done: all ${view.total} nodes updated`;
    case "paused":
      return "paused: no estimate";
    case "unknown":
      return `unknown (${estimate.why})`;
    case "estimate":
      return `~${formatDuration(estimate.leftMs)} (${estimate.measured} updated in this ` +
        `rollout, one every ${formatDuration(estimate.cycleMs)}; ${estimate.remaining} to go)`;
  }
}

/** Options of {@linkcode renderPool} and {@linkcode renderFrame}. */
export interface RenderOptions {
  style: Style;
  /** Terminal columns; lines are cut to fit (Infinity: never cut). */
  width: number;
}

/** The lines of one pool's block. */
export function renderPool(view: PoolView, options: RenderOptions): string[] {
  const { style, width } = options;
  const lines: string[] = [];
  const percent = view.total > 0 ? Math.floor((100 * view.counts.updated) / view.total) : 0;
  const phase = view.upToDate
    ? style.green(view.phase)
    : view.blockers.some((b) => b.kind === "degraded")
    ? style.red(view.phase)
    : style.yellow(view.phase);
  lines.push(`${style.bold(view.name)}  ${phase}  ${view.counts.updated}/${view.total} updated`);
  const deployed = view.deployedDigest && view.targetImage?.endsWith(view.deployedDigest)
    ? ""
    : `  (last deployed ${shortDigest(view.deployedDigest)})`;
  lines.push(`  target     ${shortImage(view.targetImage)}${view.targetImage ? deployed : ""}`);
  const barWidth = Math.max(10, Math.min(50, (Number.isFinite(width) ? width : 80) - 20));
  lines.push(`  progress   [${progressBar(view.counts, barWidth, style)}] ${percent}%`);
  lines.push(`             ${legend(view.counts, style)}`);
  const limit = view.slots
    ? `${view.slots.message}${view.slots.until ? ` until ${view.slots.until}` : ""}`
    : `limit ${NOT_PUBLISHED}`;
  lines.push(
    `  in flight  ${view.inFlight.length > 0 ? style.yellow(view.inFlight.join(", ")) : "none"}` +
      ` · ${view.slotsInUse} reboot slot(s) in use (${limit})`,
  );
  const waiting = view.slots?.waiting ?? 0;
  if (view.queue && waiting > 0) {
    const shown = view.queue.slice(0, QUEUE_SHOWN);
    const more = waiting > shown.length ? ` and ${waiting - shown.length} more` : "";
    lines.push(`  queue      ${waiting} waiting for a slot: ${shown.join(", ")}${more}`);
  }
  if (view.failed.length > 0) lines.push(`  failed     ${style.red(view.failed.join(", "))}`);
  for (const b of view.blockers) {
    const label = b.kind === "wait"
      ? "waiting  "
      : b.kind === "degraded"
      ? "degraded "
      : "note     ";
    const text = b.reason ? `${b.reason}: ${b.message}` : b.message;
    lines.push(`  ${label}  ${b.kind === "degraded" ? style.red(text) : text}`);
  }
  if (!view.upToDate && view.blockers.every((b) => b.kind !== "wait" && b.kind !== "degraded")) {
    lines.push(`  waiting    nothing: the rollout is progressing`);
  }
  lines.push(`  time left  ${formatEstimate(view.estimate, view)}`);
  return lines.map((line) => fit(line, width));
}

/** Cuts a (possibly coloured) line to `width` visible columns. */
function fit(line: string, width: number): string {
  if (!Number.isFinite(width) || visibleLength(line) <= width) return line;
  // Cutting through escape codes is not worth it: drop colour from an overlong line.
  // deno-lint-ignore no-control-regex
  return truncate(line.replace(/\x1b\[[0-9;]*m/g, ""), width);
}

/** Inputs of {@linkcode renderFrame}. */
export interface FrameOptions extends RenderOptions {
  now: Date;
  /** A header line for `--watch` ("every 2s"). */
  header?: string;
  /** A line under the header, e.g. the last read's error. */
  notice?: string;
  /** The pool asked for, for the "not found" line. */
  only?: string;
}

/** The whole screen (or one-shot output): every pool's block, separated by blank lines. */
export function renderFrame(views: readonly PoolView[], options: FrameOptions): string {
  const out: string[] = [];
  if (options.header) {
    out.push(
      fit(options.style.dim(`${options.header}   ${clock(options.now)} UTC`), options.width),
    );
  }
  if (options.notice) out.push(fit(options.style.red(options.notice), options.width));
  if (options.header || options.notice) out.push("");
  if (views.length === 0) {
    out.push(
      options.only ? `BootcNodePool ${options.only} not found.` : "No BootcNodePools found.",
    );
  }
  views.forEach((v, i) => {
    if (i > 0) out.push("");
    out.push(...renderPool(v, options));
  });
  return out.join("\n") + "\n";
}

/** One plain line per pool, and the part of it whose change is worth a new line. */
export function renderLine(view: PoolView, now: Date): { key: string; text: string } {
  const counts = BUCKETS.filter((b) => b !== "updated").map((b) => `${view.counts[b]} ${b}`);
  const parts = [
    `${view.name} ${view.phase} ${view.counts.updated}/${view.total} updated, ${counts.join(", ")}`,
  ];
  for (const b of view.blockers) {
    if (b.kind === "wait") parts.push(`waiting: ${b.reason}`);
    if (b.kind === "degraded") parts.push(`degraded: ${b.reason}: ${b.message}`);
  }
  if (view.inFlight.length > 0) parts.push(`in flight: ${view.inFlight.join(", ")}`);
  if (view.failed.length > 0) parts.push(`failed: ${view.failed.join(", ")}`);
  const key = parts.join("; ");
  const e = view.estimate;
  const tail = e.kind === "estimate"
    ? `; ~${formatDuration(e.leftMs)} left`
    : e.kind === "done"
    ? "; done"
    : "";
  return { key, text: `${clock(now)} ${key}${tail}` };
}
