import assert from "node:assert/strict";
import { fitFrame, fitLine, LiveScreen, redraw, type TerminalSize } from "./screen.ts";

/**
 * A small terminal: it wraps a line that reaches the last column at the next
 * character (as xterm and tmux do), scrolls at the bottom, and understands the
 * two sequences the demo sends (CPL `ESC[nF`, ED `ESC[J`). Everything ever
 * shown stays in `buffer` (scrollback and screen), to count what stacked up.
 */
class Terminal {
  buffer: string[][] = [[]];
  #top = 0;
  #row = 0;
  #col = 0;
  #pendingWrap = false;

  constructor(readonly size: TerminalSize) {}

  write(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const rest = text.slice(i);
      // deno-lint-ignore no-control-regex
      const esc = /^\x1b\[(\d*)([FJ])/.exec(rest);
      if (esc) {
        if (esc[2] === "F") this.#up(Number(esc[1] || "1"));
        else this.#clearBelow();
        i += esc[0].length - 1;
      } else if (text[i] === "\n") {
        this.#newline();
      } else {
        this.#put(text[i]);
      }
    }
  }

  /** The text of every row ever shown, scrollback first. */
  lines(): string[] {
    return this.buffer.map((r) => r.join("").trimEnd());
  }

  #put(ch: string): void {
    if (this.#pendingWrap) this.#newline();
    this.buffer[this.#row][this.#col] = ch;
    if (this.#col === this.size.columns - 1) this.#pendingWrap = true;
    else this.#col++;
  }

  #newline(): void {
    this.#pendingWrap = false;
    this.#col = 0;
    if (this.#row === this.#top + this.size.rows - 1) this.#top++;
    this.#row++;
    while (this.buffer.length <= this.#row) this.buffer.push([]);
  }

  #up(n: number): void {
    this.#pendingWrap = false;
    this.#col = 0;
    this.#row = Math.max(this.#top, this.#row - n);
  }

  #clearBelow(): void {
    this.buffer[this.#row].length = this.#col;
    for (let r = this.#row + 1; r < this.buffer.length; r++) this.buffer[r] = [];
  }
}

const HEADER = "NODE          BOOTED  STAGED  STATE       SLOT  CORDONED  READY  DEGRADED";

/** A frame like the demo's: the header, a row per node, the (long) progress line. */
function frame(n: number): string[] {
  return [
    HEADER,
    ...Array.from(
      { length: 6 },
      (_, i) => `worker-${i + 1}      v1      v2      Staged      ${i === n % 6 ? "yes" : "   "}`,
    ),
    `[${n}.0s] pool workers: target stable (2.0) 3f2a9c1d4e5b · RolloutInProgress: ` +
    `${n}/6 updated; 2 staging, 1 staged, 1 rebooting · slots 1 · healthy`,
  ];
}

const headers = (t: Terminal) => t.lines().filter((l) => l.startsWith("NODE ")).length;

Deno.test("fitLine keeps a line under the width, marking a cut with …", () => {
  assert.equal(fitLine("short", 60), "short");
  assert.equal(fitLine("x".repeat(59), 60), "x".repeat(59));
  assert.equal(fitLine("x".repeat(60), 60), `${"x".repeat(58)}…`);
  assert.equal([...fitLine("é·".repeat(50), 20)].length, 19, "cut by characters, not bytes");
  assert.equal(fitLine("abc", 1), "…");
});

Deno.test("fitFrame: every line fits; a frame taller than the terminal keeps its head and its last line", () => {
  const fitted = fitFrame(frame(3), { columns: 40, rows: 24 });
  assert.equal(fitted.length, 8);
  assert.ok(fitted.every((l) => [...l].length <= 39));
  assert.match(fitted.at(-1)!, /^\[3\.0s\] pool workers/);
  const short = fitFrame(frame(3), { columns: 200, rows: 6 });
  assert.deepEqual(short, [HEADER, frame(3)[1], frame(3)[2], "… 4 more lines", frame(3).at(-1)]);
});

Deno.test("redraw: up over the previous frame's rows, clear, then the new frame", () => {
  assert.equal(redraw(0, ["a", "b"]), "a\nb\n");
  assert.equal(redraw(8, ["a"]), "\x1b[8F\x1b[Ja\n");
});

Deno.test("a 60-column terminal: the table stays put over many refreshes (the header once)", () => {
  const size = { columns: 60, rows: 30 };
  const term = new Terminal(size);
  term.write("Moving tag :stable to v2…\n");
  const screen = new LiveScreen((t) => term.write(t), () => size);
  for (let n = 0; n < 12; n++) screen.draw(frame(n));
  assert.equal(headers(term), 1, term.lines().join("\n"));
  const lines = term.lines().filter((l) => l !== "");
  assert.equal(lines[0], "Moving tag :stable to v2…", "the line above the table is untouched");
  assert.match(lines.at(-1)!, /^\[11\.0s\] pool workers/);
  assert.equal(lines.length, 1 + 8);
});

Deno.test("without cutting the lines the header stacks up (what the screen used to do)", () => {
  const size = { columns: 60, rows: 30 };
  const term = new Terminal(size);
  let previous = 0;
  for (let n = 0; n < 5; n++) {
    term.write(redraw(previous, frame(n)));
    previous = frame(n).length; // lines, not the rows they wrapped into
  }
  assert.ok(headers(term) > 1, "the wrapped progress line leaves headers behind");
});

Deno.test("a frame taller than a short terminal stays put too", () => {
  const size = { columns: 80, rows: 5 };
  const term = new Terminal(size);
  const screen = new LiveScreen((t) => term.write(t), () => size);
  for (let n = 0; n < 6; n++) screen.draw(frame(n));
  assert.equal(headers(term), 1, term.lines().join("\n"));
});
