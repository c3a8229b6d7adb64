/**
 * The demo's live table in a real terminal 60 columns wide (a tmux pane whose
 * screen `capture-pane` reads): its lines are longer than that, yet after many
 * refreshes the table is on screen once, in place, with nothing wrapped.
 */
import assert from "node:assert/strict";
import { waitFor } from "../harness/wait.ts";
import { TABLE_HEADER } from "./view.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const COLUMNS = 60;
const FRAMES = 12;

Deno.test("demo screen in a 60-column tmux pane: the header does not stack up", async () => {
  const socket = `bootc-demo-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const decoder = new TextDecoder();
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: Deno.env.get("HOME") ?? "/tmp",
    LANG: "C.UTF-8",
  };
  const denoDir = Deno.env.get("DENO_DIR");
  if (denoDir) env.DENO_DIR = denoDir;
  const tmux = async (...args: string[]) => {
    const out = await new Deno.Command("tmux", {
      args: ["-u", "-L", socket, "-f", "/dev/null", ...args],
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`tmux ${args[0]} failed: ${decoder.decode(out.stderr).trim()}`);
    }
    return decoder.decode(out.stdout);
  };
  try {
    await tmux(
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
    let screen = "";
    try {
      // Starting Deno on a loaded machine can take a while.
      await waitFor(async () => {
        screen = await tmux("capture-pane", "-p", "-t", "demo");
        return screen.includes("[done]") ? true : undefined;
      }, { timeoutMs: 120_000, intervalMs: 250, message: "the driver finished its frames" });
    } catch (e) {
      throw new Error(`${(e as Error).message}\nthe screen showed:\n${screen}`);
    }
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
    await new Deno.Command("tmux", { args: ["-L", socket, "kill-server"], stderr: "null" })
      .output();
  }
});
