/**
 * `status --watch`: refreshes every interval until interrupted (with `--timeout`, until
 * every pool is done or unhealthy, or the time ran out). On a terminal
 * the frame is redrawn in place (cursor home, each line cleared to its end, the
 * rest of the screen cleared: no flicker, no scrolling); otherwise one plain
 * line is appended per pool whenever something other than the time estimate
 * changed, so logs and pipes get a readable history.
 *
 * @module
 */
import { abortableSleep } from "../lib/clock.ts";
import { notFoundMessage } from "./errors.ts";
import { clock, errorText } from "./format.ts";
import type { Snapshot } from "./model.ts";
import { type PoolView, poolViews, renderFrame, renderLine } from "./status_view.ts";
import type { Style } from "./style.ts";

/** ANSI: clear the screen and home the cursor. */
export const CLEAR_SCREEN = "\x1b[2J\x1b[H";
/** ANSI: cursor home. */
export const HOME = "\x1b[H";
/** ANSI: clear to the end of the line. */
export const CLEAR_LINE = "\x1b[K";
/** ANSI: clear from the cursor to the end of the screen. */
export const CLEAR_BELOW = "\x1b[J";

/** The bytes that replace the screen with `frame` (the first draw clears it first). */
export function redraw(frame: string, first: boolean): string {
  const body = frame.replace(/\n$/, "").split("\n").map((l) => l + CLEAR_LINE).join("\n");
  return (first ? CLEAR_SCREEN : HOME) + body + "\n" + CLEAR_BELOW;
}

/**
 * The plain lines to append for `views`, given the keys printed last per pool
 * (updated in place): a pool's line is printed when its key changed.
 */
export function changedLines(
  views: readonly PoolView[],
  printed: Map<string, string>,
  now: Date,
): string[] {
  const out: string[] = [];
  for (const view of views) {
    const { key, text } = renderLine(view, now);
    if (printed.get(view.name) === key) continue;
    printed.set(view.name, key);
    out.push(text);
  }
  return out;
}

/** Options of {@linkcode watchStatus}. */
export interface WatchOptions {
  /** Reads a fresh snapshot. */
  read: () => Promise<Snapshot>;
  /** Writes text to stdout. */
  write: (text: string) => Promise<void>;
  /** stdout is a terminal. */
  isTerminal: boolean;
  style: Style;
  /** Terminal columns (asked on every frame: the window may be resized). */
  columns: () => number;
  pool?: string;
  intervalMs: number;
  signal: AbortSignal;
  /** Ends the watch once it holds for the pools just read (`status --timeout`). */
  until?: (views: readonly PoolView[]) => boolean;
}

/**
 * Refreshes until `signal` aborts or `until` holds; returns the pools last read. A failed
 * read is shown and retried, never fatal.
 */
export async function watchStatus(options: WatchOptions): Promise<PoolView[]> {
  const { write, style, signal } = options;
  const printed = new Map<string, string>();
  let first = true;
  let lastError = "";
  let views: PoolView[] = [];
  const header = `Every ${options.intervalMs / 1000}s: kubectl bootc status${
    options.pool ? ` ${options.pool}` : ""
  } (Ctrl-C to stop)`;
  while (!signal.aborted) {
    let error = "";
    let now = new Date();
    try {
      const snapshot = await options.read();
      now = snapshot.now;
      views = poolViews(snapshot, options.pool);
    } catch (e) {
      if (signal.aborted) break;
      error = `read failed (retrying): ${errorText(e)}`;
    }
    if (options.isTerminal) {
      const frame = renderFrame(views, {
        style,
        width: options.columns(),
        now,
        only: options.pool,
        header,
        notice: error || undefined,
      });
      await write(redraw(frame, first));
      first = false;
    } else if (error) {
      if (error !== lastError) await write(`${clock(now)} ${error}\n`);
    } else {
      if (views.length === 0 && !printed.has("")) {
        printed.set("", "");
        await write(
          `${clock(now)} ${
            options.pool ? notFoundMessage("BootcNodePool", options.pool) : "no BootcNodePools"
          }\n`,
        );
      }
      const lines = changedLines(views, printed, now);
      if (lines.length > 0) await write(lines.join("\n") + "\n");
    }
    lastError = error;
    if (!error && options.until?.(views)) break;
    await abortableSleep(options.intervalMs, signal);
  }
  return views;
}
