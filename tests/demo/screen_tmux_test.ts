/**
 * The demo's live table in a real terminal 60 columns wide (a tmux pane whose
 * screen `capture-pane` reads): its lines are longer than that, yet after many
 * refreshes the table is on screen once, in place, with nothing wrapped.
 */
import assert from "node:assert/strict";
import { Tmux } from "../harness/tmux.ts";
import { TABLE_HEADER } from "./view.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const COLUMNS = 60;
const FRAMES = 12;

Deno.test("demo screen in a 60-column tmux pane: the header does not stack up", async () => {
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: Deno.env.get("HOME") ?? "/tmp",
    LANG: "C.UTF-8",
  };
  const denoDir = Deno.env.get("DENO_DIR");
  if (denoDir) env.DENO_DIR = denoDir;
  const tmux = new Tmux({ name: "bootc-demo", env });
  try {
    await tmux.run(
      "new-session",
      "-d",
      "-x",
      String(COLUMNS),
      "-y",
      "30",
      "-c",
      ROOT,
      "-s",
      "demo",
      // The shell stays after the driver, so its last screen (or an error) can be read.
      `'${Deno.execPath()}' run tests/demo/screen_driver.ts ${FRAMES}; sleep 86400`,
    );
    // Starting Deno on a loaded machine can take a while.
    const screen = await tmux.waitScreen("demo", (text) => text.includes("[done]"), {
      what: "the driver finished its frames",
      timeoutMs: 120_000,
    });
    const lines = screen.split("\n").map((l) => l.trimEnd()).filter((l) => l !== "");
    const header = TABLE_HEADER.slice(0, 20);
    assert.equal(lines.filter((l) => l.startsWith(header)).length, 1, screen);
    assert.equal(lines.filter((l) => l.startsWith("Moving tag")).length, 1, screen);
    assert.equal(lines.filter((l) => /^\[[\d.]+s\] pool workers/.test(l)).length, 1, screen);
    assert.equal(lines.filter((l) => l.startsWith("worker-")).length, 6, screen);
    // Intro, header, six nodes, progress, [done]: nothing else, nothing wrapped.
    assert.equal(lines.length, 10, screen);
    for (const l of lines) assert.ok([...l].length < COLUMNS, `cut to the width: ${l}`);
    assert.match(screen, /…/, "the long lines were cut, and say so");
  } finally {
    await tmux.close();
  }
});
