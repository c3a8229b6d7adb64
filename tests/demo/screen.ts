/**
 * The demo's live screen: each refresh replaces the previous frame in place.
 *
 * A frame is moved over by counting the terminal rows it took, so no line may
 * wrap: every line is cut to the terminal's width (the last column left free,
 * where some terminals wrap early), and a frame taller than the terminal keeps
 * its first and last lines. The pure functions build the bytes; {@linkcode LiveScreen}
 * measures the terminal before each frame (a resize takes effect at once).
 *
 * @module
 */

/** A terminal's size in character cells. */
export interface TerminalSize {
  columns: number;
  rows: number;
}

/** What is assumed when the size cannot be read (not a terminal). */
export const DEFAULT_SIZE: TerminalSize = { columns: 80, rows: 24 };

/** `line` cut to fit in `columns - 1` cells, its end marked with `…` when cut. */
export function fitLine(line: string, columns: number): string {
  const room = Math.max(1, columns - 1);
  const chars = [...line];
  if (chars.length <= room) return line;
  return chars.slice(0, Math.max(0, room - 1)).join("") + "…";
}

/**
 * `lines` made to fit the terminal: each line cut to its width and, when there
 * are more lines than rows (one row is kept for the cursor), the first lines and
 * the last one (the progress line), with a note of how many were left out.
 */
export function fitFrame(lines: readonly string[], size: TerminalSize): string[] {
  const room = Math.max(2, size.rows - 1);
  let kept = [...lines];
  if (kept.length > room) {
    const head = kept.slice(0, room - 2);
    const left = kept.length - head.length - 1;
    kept = [...head, `… ${left} more line${left === 1 ? "" : "s"}`, kept.at(-1)!];
  }
  return kept.map((l) => fitLine(l, size.columns));
}

/**
 * The bytes that replace a frame of `previousRows` rows (0: none yet) by
 * `lines`, which must already fit ({@linkcode fitFrame}): up to the previous
 * frame's first row, clear to the end of the screen, write the new frame.
 */
export function redraw(previousRows: number, lines: readonly string[]): string {
  const up = previousRows > 0 ? `\x1b[${previousRows}F\x1b[J` : "";
  return up + lines.map((l) => `${l}\n`).join("");
}

/** Draws frames in place on a terminal. */
export class LiveScreen {
  #rows = 0;
  readonly #write: (text: string) => void;
  readonly #size: () => TerminalSize;

  /** `write` outputs text; `size` measures the terminal (default: `Deno.consoleSize`). */
  constructor(write: (text: string) => void, size: () => TerminalSize = consoleSize) {
    this.#write = write;
    this.#size = size;
  }

  /** Replaces the previous frame with `lines`. */
  draw(lines: readonly string[]): void {
    const frame = fitFrame(lines, this.#size());
    this.#write(redraw(this.#rows, frame));
    this.#rows = frame.length;
  }

  /** Leaves the last frame on screen; the next draw starts below it. */
  release(): void {
    this.#rows = 0;
  }
}

/** The size of the terminal on stdout, or {@linkcode DEFAULT_SIZE}. */
export function consoleSize(): TerminalSize {
  try {
    const { columns, rows } = Deno.consoleSize();
    return columns > 0 && rows > 0 ? { columns, rows } : DEFAULT_SIZE;
  } catch {
    return DEFAULT_SIZE;
  }
}
