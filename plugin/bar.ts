/**
 * The progress bar: one cell run per bucket, each with its own glyph (so the
 * bar reads without colour) and colour (when colour is on).
 *
 * @module
 */
import { type Bucket, type BucketCounts, BUCKETS } from "./progress.ts";
import type { Style } from "./style.ts";

/** The glyph of each bucket's cells. */
export const GLYPHS: Readonly<Record<Bucket, string>> = {
  updated: "█",
  rebooting: "▓",
  staged: "▒",
  staging: "░",
  pending: "·",
  failed: "✗",
};

/** The colour of each bucket. */
export function paint(style: Style, bucket: Bucket, text: string): string {
  switch (bucket) {
    case "updated":
      return style.green(text);
    case "rebooting":
      return style.yellow(text);
    case "staged":
      return style.cyan(text);
    case "staging":
      return style.blue(text);
    case "pending":
      return style.dim(text);
    case "failed":
      return style.red(text);
  }
}

/**
 * Splits `width` cells among the buckets in proportion to their counts (largest
 * remainder), giving every non-empty bucket at least one cell when there is room,
 * so a single failed node among hundreds still shows.
 */
export function allocateCells(counts: BucketCounts, width: number): BucketCounts {
  const total = BUCKETS.reduce((sum, b) => sum + counts[b], 0);
  const cells = { updated: 0, rebooting: 0, staged: 0, staging: 0, pending: 0, failed: 0 };
  if (total === 0 || width <= 0) return cells;
  const nonEmpty = BUCKETS.filter((b) => counts[b] > 0);
  const floor = nonEmpty.length <= width ? 1 : 0;
  let left = width - floor * nonEmpty.length;
  const shares = nonEmpty.map((b) => ({ b, exact: (counts[b] / total) * left }));
  for (const s of shares) cells[s.b] = floor + Math.floor(s.exact);
  left -= shares.reduce((sum, s) => sum + Math.floor(s.exact), 0);
  // Ties go to the bucket earlier in bar order (updated first).
  const byRemainder = [...shares].sort((x, y) =>
    (y.exact - Math.floor(y.exact)) - (x.exact - Math.floor(x.exact))
  );
  for (let i = 0; left > 0 && byRemainder.length > 0; i++, left--) {
    cells[byRemainder[i % byRemainder.length].b]++;
  }
  return cells;
}

/** The bar, `width` cells wide (an empty pool gives a row of spaces). */
export function progressBar(counts: BucketCounts, width: number, style: Style): string {
  const cells = allocateCells(counts, width);
  const used = BUCKETS.reduce((sum, b) => sum + cells[b], 0);
  return BUCKETS.map((b) => paint(style, b, GLYPHS[b].repeat(cells[b]))).join("") +
    " ".repeat(Math.max(0, width - used));
}

/**
 * "█ 3 updated  ▓ 1 rebooting  ▒ 1 staged  ░ 0 staging  · 0 pending  ✗ 0 failed";
 * `compact` leaves out the empty buckets (for a narrow terminal: the failed
 * count must not be the part that is cut).
 */
export function legend(counts: BucketCounts, style: Style, compact = false): string {
  const shown = compact ? BUCKETS.filter((b) => counts[b] > 0) : BUCKETS;
  return shown.map((b) => {
    const text = `${GLYPHS[b]} ${counts[b]} ${b}`;
    return counts[b] > 0 ? paint(style, b, text) : style.dim(text);
  }).join("  ");
}
