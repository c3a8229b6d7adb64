/**
 * Draws the demo's live table in place a few times, with lines longer than a
 * narrow terminal, for `screen_tmux_test.ts` (run inside a tmux pane). It uses
 * the demo's own table ({@linkcode renderTable}) and screen ({@linkcode LiveScreen}),
 * measuring the real terminal. Prints `[done]` after the last frame.
 *
 * Usage: deno run tests/demo/screen_driver.ts [FRAMES]
 *
 * @module
 */
import type { BootcNode, BootcNodePool } from "../../lib/api/mod.ts";
import { LiveScreen } from "./screen.ts";
import { renderTable, type Snapshot } from "./view.ts";

const V1 = `sha256:${"1".repeat(64)}`;
const V2 = `sha256:${"2".repeat(64)}`;
const T = "2026-01-01T00:00:00Z";

/** A pool half-way through its rollout, frame `n` of it: one node degraded with a long message. */
function snapshot(n: number): Snapshot {
  const condition = (type: string, status: string, reason: string, message = "") => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: T,
  });
  const bootcNodes = Array.from({ length: 6 }, (_, i): BootcNode => ({
    metadata: { name: `worker-${i + 1}` },
    spec: { desiredImage: `registry.example/os@${V2}`, desiredImageState: "Staged" },
    status: {
      booted: { imageDigest: i < n % 6 ? V2 : V1 },
      staged: i >= n % 6 ? { imageDigest: V2 } : undefined,
      conditions: [
        condition("Idle", "False", i >= n % 6 ? "Staged" : "Idle"),
        i === 5
          ? condition(
            "Degraded",
            "True",
            "Error",
            "staging failed: pulling the image: " +
              "registry.example/os: connection reset by peer, will retry with back-off",
          )
          : condition("Degraded", "False", "Healthy"),
      ],
    },
  } as BootcNode));
  const pool = {
    metadata: { name: "workers" },
    spec: { nodeSelector: {}, image: { ref: "registry.example/os:stable" } },
    status: {
      targetDigest: V2,
      slotsInUse: 1,
      conditions: [
        condition(
          "UpToDate",
          "False",
          "RolloutInProgress",
          `${n % 6}/6 updated; ` +
            `${6 - (n % 6)} staged; waiting for a reboot slot (maxUnavailable 1)`,
        ),
        condition("Degraded", "True", "NodeDegraded", "worker-6: staging failed"),
      ],
    },
  } as BootcNodePool;
  return { pool, bootcNodes, nodes: [] };
}

if (import.meta.main) {
  const frames = Number(Deno.args[0] ?? "8");
  const encoder = new TextEncoder();
  const out = (text: string) => Deno.stdout.writeSync(encoder.encode(text));
  out("Moving tag :stable to v2…\n");
  const screen = new LiveScreen(out);
  const names = new Map([[V1, "v1"], [V2, "v2"]]);
  for (let n = 0; n < frames; n++) {
    screen.draw(renderTable(snapshot(n), names, { pool: "workers", elapsedSeconds: n * 0.25 }));
    await new Promise((r) => setTimeout(r, 100));
  }
  out("[done]\n");
}
