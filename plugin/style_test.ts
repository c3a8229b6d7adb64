import assert from "node:assert/strict";
import { colorEnabled, createStyle, stripAnsi, visibleLength } from "./style.ts";

Deno.test("colour only on a terminal, and never with NO_COLOR set or --no-color", () => {
  assert.equal(colorEnabled({ isTerminal: true, noColorEnv: undefined }), true);
  assert.equal(colorEnabled({ isTerminal: false, noColorEnv: undefined }), false);
  assert.equal(colorEnabled({ isTerminal: true, noColorEnv: "1" }), false);
  // no-color.org: an empty NO_COLOR does not disable colour.
  assert.equal(colorEnabled({ isTerminal: true, noColorEnv: "" }), true);
  assert.equal(colorEnabled({ isTerminal: true, noColorEnv: undefined, noColorFlag: true }), false);
});

Deno.test("styles wrap in SGR codes only when colour is on", () => {
  const on = createStyle(true);
  const off = createStyle(false);
  assert.equal(on.red("x"), "\x1b[31mx\x1b[39m");
  assert.equal(on.red(""), "");
  assert.equal(off.red("x"), "x");
  assert.equal(off.bold("x"), "x");
  assert.equal(stripAnsi(on.green("█") + on.dim("·")), "█·");
  assert.equal(visibleLength(on.cyan("▒▒") + "ab"), 4);
});
