/**
 * `kubectl bootc status`: a view of each pool (pure, from a {@linkcode Snapshot})
 * and its two renderings: a block of lines for a terminal (redrawn in place by
 * `--watch`), and one plain line per change for logs and pipes.
 *
 * @module
 */
import { legend, progressBar } from "./bar.ts";
import { type Estimate, estimateTimeLeft } from "./estimate.ts";
import { notFoundMessage } from "./errors.ts";
import { clock, formatDuration, shortenDigests, truncate, wrap } from "./format.ts";
import { HEALTH_ICON, paintHealth, poolHeadline, type PoolHealth } from "./health.ts";
import { canaryText, type ImagesView, poolImages, renderImages } from "./images.ts";
import { type NodeRow, nodeRow, renderTree } from "./node_tree.ts";
import type { SlotsStatus } from "../lib/api/schema.ts";
import type { BootcNodePool, NodeLike, Snapshot } from "./model.ts";
import {
  type Blocker,
  type BucketCounts,
  BUCKETS,
  poolBlockers,
  poolMembers,
  poolProgress,
  poolUpToDate,
  rolloutStart,
} from "./progress.ts";
import { NOT_PUBLISHED, publishedSlots, waitingQueue } from "./slot_queue.ts";
import { type Style, visibleLength } from "./style.ts";

/** How many waiting nodes the queue line names. */
const QUEUE_SHOWN = 5;
/** How many lines a problem or a wait may take on a terminal before it is cut. */
const MESSAGE_LINES = 4;
/** The label column of a pool's lines. */
const LABEL = 13;

/** Everything shown about one pool. */
export interface PoolView {
  name: string;
  /**
   * The headline: `status.state` when the controller publishes it, else the Degraded
   * reason, CircuitOpen, or the UpToDate reason (AllUpdated, RolloutInProgress, a gate).
   */
  phase: string;
  /** How the pool is doing: the headline's colour and icon, and `status`'s exit code. */
  health: PoolHealth;
  upToDate: boolean;
  /** Stable and new images, each in its short form. */
  images: ImagesView;
  /** The canary's step, when the pool has a canary for its target. */
  canary?: { text: string; failed: boolean };
  total: number;
  counts: BucketCounts;
  /** Members in reboot slots (or otherwise disrupted, failed ones included), by name. */
  inFlight: string[];
  /** Failed members with the condition that failed them: "n5 (Stalled/StagingTimeout)". */
  failed: string[];
  slotsInUse: number;
  /** The slot limit and what sets it, as the controller publishes it (absent: an older controller). */
  slots?: SlotsStatus;
  /**
   * The first nodes waiting for a slot, in the order slots go, none of them in
   * flight (absent: not published).
   */
  queue?: string[];
  /** How many nodes wait for a slot (those in flight left out). */
  waiting: number;
  blockers: Blocker[];
  estimate: Estimate;
  /** One row per member, in name order. */
  nodes: NodeRow[];
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
  const slots = publishedSlots(pool);
  // Disrupted members: in a slot or rebooting, a failed one holding its slot too. A node is
  // in flight or queued, never both: the classification decides, the queue orders the rest.
  const inFlight = [...progress.classes].filter(([n, c]) =>
    c.disrupted || progress.buckets.get(n) === "rebooting"
  ).map(([n]) => n);
  const queue = waitingQueue(pool, new Set(inFlight));
  const headline = poolHeadline(pool);
  const paused = pool.spec?.rollout?.paused ?? false;
  const members = poolMembers(name, snapshot.bootcNodes);
  return {
    name,
    phase: headline.state,
    health: headline.health,
    upToDate: poolUpToDate(pool),
    images: poolImages(pool, members),
    canary: canaryText(pool, progress.counts.updated, snapshot.now),
    total: progress.total,
    counts: progress.counts,
    inFlight,
    failed,
    slotsInUse: slots?.inUse ?? pool.status?.slotsInUse ?? 0,
    slots,
    queue: queue?.entries.map((e) => e.node),
    waiting: queue?.waiting ?? 0,
    blockers: poolBlockers(pool),
    estimate: estimateTimeLeft({
      total: progress.total,
      updated: progress.counts.updated,
      start: rolloutStart(pool),
      completions: progress.completions,
      paused,
      blocked: headline.health === "unhealthy" ? headline.state : undefined,
      now: snapshot.now,
    }),
    nodes: members.map((bn) =>
      nodeRow({
        bn,
        cls: progress.classes.get(bn.metadata?.name ?? "")!,
        queued: queue?.entries.find((e) => e.node === bn.metadata?.name),
        paused,
      })
    ),
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

/**
 * The lines of one pool's block: the headline (icon, name, state, counts) in
 * the colour of the pool's health, the problem and what it waits for (wrapped,
 * never cut before the end of a terminal's width allows), images, canary,
 * progress, slots, time left, then the node tree. Lines are at most `width`
 * columns; the important words come first on each.
 */
export function renderPool(view: PoolView, options: RenderOptions): string[] {
  const { style, width } = options;
  const percent = view.total > 0 ? Math.floor((100 * view.counts.updated) / view.total) : 0;
  const headline = paintHealth(style, view.health, `${HEALTH_ICON[view.health]} ${view.phase}`);
  const lines: string[] = [
    `${style.bold(view.name)}  ${headline}  ${view.counts.updated}/${view.total} updated`,
  ];
  lines.push(...blockerLines(view, options));
  lines.push(...renderImages(view.images));
  if (view.canary) {
    const text = view.canary.failed ? style.red(view.canary.text) : view.canary.text;
    lines.push(`${label("canary")}${text}`);
  }
  const barWidth = Math.max(10, Math.min(50, (Number.isFinite(width) ? width : 80) - 20));
  lines.push(`${label("progress")}[${progressBar(view.counts, barWidth, style)}] ${percent}%`);
  const full = legend(view.counts, style);
  const room = Number.isFinite(width) ? width - LABEL : Infinity;
  lines.push(
    `${" ".repeat(LABEL)}${visibleLength(full) <= room ? full : legend(view.counts, style, true)}`,
  );
  const limit = view.slots
    ? `${view.slots.message}${view.slots.until ? ` until ${view.slots.until}` : ""}`
    : `limit ${NOT_PUBLISHED}`;
  lines.push(
    `${label("in flight")}${
      view.inFlight.length > 0 ? style.yellow(view.inFlight.join(", ")) : "none"
    } · ${view.slotsInUse} reboot slot(s) in use (${limit})`,
  );
  const waiting = view.waiting;
  if (view.queue && waiting > 0) {
    const shown = view.queue.slice(0, QUEUE_SHOWN);
    const more = waiting > shown.length ? ` and ${waiting - shown.length} more` : "";
    lines.push(`${label("queue")}${waiting} waiting for a slot: ${shown.join(", ")}${more}`);
  }
  if (view.failed.length > 0) lines.push(`${label("failed")}${style.red(view.failed.join(", "))}`);
  lines.push(`${label("time left")}${formatEstimate(view.estimate, view)}`);
  const fitted = lines.map((line) => fit(line, width));
  if (view.nodes.length > 0) fitted.push(`${label("nodes")}`.trimEnd());
  return [...fitted, ...renderTree(view.nodes, style, width)];
}

function label(text: string): string {
  return `  ${text}`.padEnd(LABEL);
}

/**
 * The problem, wait and note lines, each wrapped under its label on a terminal
 * (at most {@linkcode MESSAGE_LINES}): the reason is left out where the
 * headline already says it, and full digests are shortened.
 */
function blockerLines(view: PoolView, options: RenderOptions): string[] {
  const { style, width } = options;
  const out: string[] = [];
  const add = (name: string, text: string, paint: (t: string) => string) => {
    const room = Number.isFinite(width) ? Math.max(20, width - LABEL) : Infinity;
    wrap(shortenDigests(text), room, MESSAGE_LINES).forEach((part, i) => {
      out.push(`${i === 0 ? label(name) : " ".repeat(LABEL)}${paint(part)}`);
    });
  };
  for (const b of view.blockers) {
    const text = b.reason && b.reason !== view.phase ? `${b.reason}: ${b.message}` : b.message;
    if (b.kind === "degraded") add("problem", text, style.red);
    else add(b.kind === "wait" ? "waiting" : "note", text, (t) => t);
  }
  if (!view.upToDate && view.blockers.every((b) => b.kind !== "wait" && b.kind !== "degraded")) {
    out.push(`${label("waiting")}nothing: the rollout is progressing`);
  }
  return out;
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
      options.only ? notFoundMessage("BootcNodePool", options.only) : "No BootcNodePools found.",
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
    if (b.kind === "degraded") parts.push(`problem: ${b.reason}: ${shortenDigests(b.message)}`);
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
