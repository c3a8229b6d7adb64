import assert from "node:assert/strict";
import { poolViews, renderFrame, renderLine } from "./status_view.ts";
import type { Snapshot } from "./model.ts";
import { createStyle, stripAnsi, visibleLength } from "./style.ts";
import { bootcNode, cond, NEW, node, NOW, pool } from "./testing.ts";

const plain = createStyle(false);
const color = createStyle(true);

/** A pool of five mid-rollout: two updated, one rebooting, one staged, one stalled. */
function midRollout(): Snapshot {
  return {
    pools: [
      pool({
        upToDate: cond("UpToDate", "False", "BudgetExhausted", "2/5 updated; 1 staged", 600),
        slotsInUse: 1,
      }),
      pool({ upToDate: cond("UpToDate", "True", "AllUpdated", "1/1 nodes run …") }, "infra"),
    ],
    bootcNodes: [
      bootcNode("main-1", { booted: NEW, idle: ["True", "Idle", 400] }),
      bootcNode("main-2", { booted: NEW, idle: ["True", "Idle", 200] }),
      bootcNode("main-3", { idle: ["False", "Rebooting"], staged: NEW, state: "Booted" }),
      bootcNode("main-4", { idle: ["False", "Staged"], staged: NEW }),
      bootcNode("main-5", { conditions: [cond("Stalled", "True", "StagingTimeout", "…")] }),
      bootcNode("infra-1", { pool: "infra", booted: NEW, idle: ["True", "Idle", 9000] }),
    ],
    nodes: [node("main-3", { slot: 30, drained: 20 }), node("main-4")],
    now: NOW,
  };
}

Deno.test("a terminal frame: bar, counts, target, in flight, failed, the gate and time left", () => {
  const views = poolViews(midRollout());
  assert.deepEqual(views.map((v) => v.name), ["infra", "main"]);
  const text = renderFrame(views, {
    style: plain,
    width: 100,
    now: NOW,
    header: "Every 2s: kubectl bootc status",
  });
  assert.equal(
    text,
    `Every 2s: kubectl bootc status   10:10:00 UTC

infra  AllUpdated  1/1 updated
  target     registry.example/os@sha256:bbbbbbbbbbbb  (last deployed aaaaaaaaaaaa)
  progress   [██████████████████████████████████████████████████] 100%
             █ 1 updated  ▓ 0 rebooting  ▒ 0 staged  ░ 0 staging  · 0 pending  ✗ 0 failed
  in flight  none · 0 reboot slot(s) in use (maxUnavailable 1)
  time left  done: all 1 nodes updated

main  BudgetExhausted  2/5 updated
  target     registry.example/os@sha256:bbbbbbbbbbbb  (last deployed aaaaaaaaaaaa)
  progress   [████████████████████▓▓▓▓▓▓▓▓▓▓▒▒▒▒▒▒▒▒▒▒✗✗✗✗✗✗✗✗✗✗] 40%
             █ 2 updated  ▓ 1 rebooting  ▒ 1 staged  ░ 0 staging  · 0 pending  ✗ 1 failed
  in flight  main-3 · 1 reboot slot(s) in use (maxUnavailable 1)
  failed     main-5 (Stalled/StagingTimeout)
  waiting    BudgetExhausted: the pool's disruption budget (maxUnavailable) is in use
  time left  ~6m40s (2 updated in this rollout, one every 3m20s; 3 to go)
`,
  );
});

Deno.test("colour frames show the same text, and no line is wider than the terminal", () => {
  const views = poolViews(midRollout(), "main");
  const colored = renderFrame(views, { style: color, width: 100, now: NOW });
  const uncolored = renderFrame(views, { style: plain, width: 100, now: NOW });
  assert.notEqual(colored, uncolored);
  assert.equal(stripAnsi(colored), uncolored);
  const narrow = renderFrame(views, { style: color, width: 40, now: NOW });
  for (const line of narrow.split("\n")) assert.ok(visibleLength(line) <= 40, line);
  assert.match(narrow, /target +registry\.example\/os@sha256…\n/);
});

Deno.test("a pool that is not there, and no pools at all", () => {
  const opts = { style: plain, width: 80, now: NOW };
  assert.equal(
    renderFrame(poolViews(midRollout(), "nope"), { ...opts, only: "nope" }),
    "BootcNodePool nope not found.\n",
  );
  assert.equal(
    renderFrame([], opts),
    "No BootcNodePools found.\n",
  );
});

Deno.test("a progressing rollout says nothing blocks it; a paused one gives no estimate", () => {
  const snapshot = midRollout();
  snapshot.pools[0] = pool({
    upToDate: cond("UpToDate", "False", "RolloutInProgress", "2/5 updated", 600),
  });
  const progressing = renderFrame(poolViews(snapshot, "main"), {
    style: plain,
    width: 120,
    now: NOW,
  });
  assert.match(progressing, /waiting +nothing: the rollout is progressing/);
  snapshot.pools[0] = pool({
    paused: true,
    upToDate: cond("UpToDate", "False", "Paused", "2/5 updated; 1 staged", 600),
  });
  const paused = renderFrame(poolViews(snapshot, "main"), { style: plain, width: 120, now: NOW });
  assert.match(paused, /waiting +Paused: spec\.rollout\.paused is true/);
  assert.match(paused, /time left +paused: no estimate/);
  assert.doesNotMatch(paused, /nothing: the rollout is progressing/);
});

Deno.test("plain lines: a new line only when something but the estimate changed", () => {
  const snapshot = midRollout();
  const first = renderLine(poolViews(snapshot, "main")[0], NOW);
  assert.equal(
    first.text,
    "10:10:00 main BudgetExhausted 2/5 updated, 1 rebooting, 1 staged, 0 staging, 0 pending, " +
      "1 failed; waiting: BudgetExhausted; in flight: main-3; failed: main-5 " +
      "(Stalled/StagingTimeout); ~6m40s left",
  );
  assert.ok(!first.text.includes("\x1b"), "plain lines carry no escape codes");
  // Ten seconds later only the estimate moved: same key.
  const later = { ...snapshot, now: new Date(NOW.getTime() + 10_000) };
  const second = renderLine(poolViews(later, "main")[0], later.now);
  assert.equal(second.key, first.key);
  assert.notEqual(second.text, first.text);
  // main-4 takes the slot: a new key.
  later.nodes = [node("main-3", { slot: 30, drained: 20 }), node("main-4", { slot: 1 })];
  const third = renderLine(poolViews(later, "main")[0], later.now);
  assert.notEqual(third.key, first.key);
  assert.match(third.key, /2 rebooting, 0 staged/);
});

Deno.test("slots and queue as the controller publishes them; an older controller says so", () => {
  const snapshot = midRollout();
  snapshot.pools[0] = pool({
    upToDate: cond("UpToDate", "False", "BudgetExhausted", "2/5 updated; 1 staged", 600),
    slotsInUse: 1,
    queue: ["main-4", "main-6", "main-7", "main-8", "main-9", "main-10"],
    slots: {
      limit: 1,
      source: "Budget",
      name: "rollout.budgets[0]",
      until: "2026-03-01T17:00:00Z",
      message: 'rollout.budgets[0] 1 ("0 9 * * 1-5" for 8h)',
      waiting: 8,
    },
  });
  const text = renderFrame(poolViews(snapshot, "main"), { style: plain, width: 200, now: NOW });
  assert.match(
    text,
    /in flight +main-3 · 1 reboot slot\(s\) in use \(rollout\.budgets\[0\] 1 \("0 9 \* \* 1-5" for 8h\) until 2026-03-01T17:00:00Z\)\n/,
  );
  assert.match(
    text,
    /\n {2}queue {6}8 waiting for a slot: main-4, main-6, main-7, main-8, main-9 and 3 more\n/,
  );
  snapshot.pools[0] = pool({ slotsInUse: 1, slots: null });
  const old = renderFrame(poolViews(snapshot, "main"), { style: plain, width: 200, now: NOW });
  assert.match(
    old,
    /1 reboot slot\(s\) in use \(limit not published by the controller \(it predates status\.slots\)\)/,
  );
  assert.doesNotMatch(old, /queue/);
});
