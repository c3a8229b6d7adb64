// deno-lint-ignore-file no-control-regex
import assert from "node:assert/strict";
import { notFoundMessage } from "./errors.ts";
import { poolViews, renderFrame, renderLine } from "./status_view.ts";
import type { Snapshot } from "./model.ts";
import { createStyle, stripAnsi, visibleLength } from "./style.ts";
import { bootcNode, cond, NEW, node, NOW, pool, REPO } from "./testing.ts";

const plain = createStyle(false);
const color = createStyle(true);

/** A pool of five mid-rollout: two updated, one rebooting, one staged, one stalled. */
function midRollout(): Snapshot {
  return {
    pools: [
      pool({
        ref: `${REPO}:v2`,
        upToDate: cond("UpToDate", "False", "BudgetExhausted", "2/5 updated; 1 staged", 600),
        slotsInUse: 1,
        queue: ["main-4"],
      }),
      pool({
        upToDate: cond("UpToDate", "True", "AllUpdated", "1/1 nodes run …"),
        deployed: NEW,
      }, "infra"),
    ],
    bootcNodes: [
      bootcNode("main-1", { booted: NEW, bootedVersion: "2.0", idle: ["True", "Idle", 400] }),
      bootcNode("main-2", { booted: NEW, bootedVersion: "2.0", idle: ["True", "Idle", 200] }),
      bootcNode("main-3", {
        bootedVersion: "1.0",
        idle: ["False", "Rebooting"],
        staged: NEW,
        state: "Booted",
      }),
      bootcNode("main-4", { bootedVersion: "1.0", idle: ["False", "Staged"], staged: NEW }),
      bootcNode("main-5", {
        bootedVersion: "1.0",
        conditions: [cond("Stalled", "True", "StagingTimeout", "…")],
      }),
      bootcNode("infra-1", { pool: "infra", booted: NEW, idle: ["True", "Idle", 9000] }),
    ],
    nodes: [node("main-3", { slot: 30, drained: 20 }), node("main-4")],
    now: NOW,
  };
}

Deno.test("a terminal frame: headline, images, bar, slots, time left and the node tree", () => {
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

infra  ✔ AllUpdated  1/1 updated
  images     stable  stable bbbbbbbbbbbb  (the target)
  progress   [██████████████████████████████████████████████████] 100%
             █ 1 updated  ▓ 0 rebooting  ▒ 0 staged  ░ 0 staging  · 0 pending  ✗ 0 failed
  in flight  none · 0 reboot slot(s) in use (maxUnavailable 1)
  time left  done: all 1 nodes updated
  nodes
  └─ ✔ infra-1  Updated  bbbbbbbbbbbb

main  ॥ BudgetExhausted  2/5 updated
  waiting    the pool's disruption budget (maxUnavailable) is in use
  images     stable  (1.0) aaaaaaaaaaaa
             new     v2 (2.0) bbbbbbbbbbbb
  progress   [████████████████████▓▓▓▓▓▓▓▓▓▓▒▒▒▒▒▒▒▒▒▒✗✗✗✗✗✗✗✗✗✗] 40%
             █ 2 updated  ▓ 1 rebooting  ▒ 1 staged  ░ 0 staging  · 0 pending  ✗ 1 failed
  in flight  main-3 · 1 reboot slot(s) in use (maxUnavailable 1)
  queue      1 waiting for a slot: main-4
  failed     main-5 (Stalled/StagingTimeout)
  time left  ~6m40s (2 updated in this rollout, one every 3m20s; 3 to go)
  nodes
  ├─ ✔ main-1  Updated    2.0
  ├─ ✔ main-2  Updated    2.0
  ├─ ◌ main-3  Rebooting  1.0  slot  the host to come back from its reboot and its daemon to report
  ├─ ◌ main-4  Staged     1.0  #1    a reboot slot (BudgetExhausted)
  └─ ✖ main-5  Stalled    1.0        stalled (StagingTimeout): …; waiting for the daemon to start s…
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
  // The wait wraps under its label instead of losing its end; the tree is cut at the end.
  assert.match(
    stripAnsi(narrow),
    /waiting {4}the pool's disruption\n {13}budget \(maxUnavailable\) is\n {13}in use\n/,
  );
  assert.match(stripAnsi(narrow), /\n {2}├─ ◌ main-3 {2}Rebooting {2}1\.0 {2}slot {2}th…\n/);
  // Too narrow for every bucket: the legend keeps the non-empty ones (the failed one too).
  assert.match(stripAnsi(narrow), /\n {13}█ 2 updated {2}▓ 1 rebooting…\n/);
  const medium = stripAnsi(renderFrame(views, { style: color, width: 64, now: NOW }));
  assert.match(medium, /\n {13}█ 2 updated {2}▓ 1 rebooting {2}▒ 1 staged {2}✗ 1 failed\n/);
});

Deno.test("a pool that is not there, and no pools at all", () => {
  const opts = { style: plain, width: 80, now: NOW };
  assert.equal(
    renderFrame(poolViews(midRollout(), "nope"), { ...opts, only: "nope" }),
    `BootcNodePool "nope" not found\n`,
  );
  assert.equal(notFoundMessage("BootcNodePool", "nope"), `BootcNodePool "nope" not found`);
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
  assert.match(paused, /^main {2}॥ Paused {2}2\/5 updated$/m);
  assert.match(paused, /waiting +spec\.rollout\.paused is true/);
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

Deno.test("a node that took its slot is in flight, not queued, before the queue is written again", () => {
  // The controller applied main-3's grant; the status it writes next still lists it first.
  const snapshot = midRollout();
  snapshot.pools[0] = pool({
    ref: `${REPO}:v2`,
    upToDate: cond("UpToDate", "False", "BudgetExhausted", "2/5 updated; 1 staged", 600),
    slotsInUse: 1,
    queue: ["main-3", "main-4"],
  });
  const [view] = poolViews(snapshot, "main");
  assert.deepEqual(view.inFlight, ["main-3"]);
  assert.deepEqual([view.queue, view.waiting], [["main-4"], 1]);
  const rows = new Map(view.nodes.map((r) => [r.name, r]));
  assert.equal(rows.get("main-3")?.place, "slot");
  assert.doesNotMatch(rows.get("main-3")?.waits ?? "", /BudgetExhausted/);
  assert.equal(rows.get("main-4")?.place, "#1");
  const text = renderFrame([view], { style: plain, width: 200, now: NOW });
  assert.match(text, /in flight +main-3 · /);
  assert.match(text, /\n {2}queue {6}1 waiting for a slot: main-4\n/);
});

/** A pool whose rollout halted: main-2 failed its host check (bad.service) in its slot. */
function halted(): Snapshot {
  const message = "node main-2 failed health checks: HostHealthy (the system is degraded: " +
    `failed units: bad.service); the rollout of 127.0.0.1:5000/bootc/os@${NEW} is halted`;
  const failed = bootcNode("main-2", {
    booted: NEW,
    bootedVersion: "2.0",
    state: "Booted",
    idle: ["True", "Idle"],
    conditions: [
      cond("Verified", "False", "CheckFailed", message.slice(0, message.indexOf(";"))),
    ],
    failedChecks: ["HostHealthy"],
  });
  failed.status!.hostHealth = {
    state: "Unhealthy",
    checkedAt: "2026-03-01T10:00:00Z",
    failedUnits: ["bad.service"],
  };
  return {
    pools: [pool({
      ref: `${REPO}:v2`,
      upToDate: cond("UpToDate", "False", "RolloutInProgress", "1/2 updated; 1 degraded", 600),
      degraded: cond("Degraded", "True", "HealthCheckFailed", message),
      slotsInUse: 1,
    })],
    bootcNodes: [
      bootcNode("main-1", { booted: NEW, bootedVersion: "2.0", idle: ["True", "Idle", 400] }),
      failed,
    ],
    nodes: [node("main-2", { slot: 300, drained: 280 })],
    now: NOW,
  };
}

Deno.test("a failure screen on 80 columns: red headline, the problem wrapped up to the unit", () => {
  const views = poolViews(halted());
  assert.equal(views[0].health, "unhealthy");
  const colored = renderFrame(views, { style: color, width: 80, now: NOW });
  for (const line of colored.split("\n")) assert.ok(visibleLength(line) <= 80, line);
  assert.match(colored, /^\x1b\[1mmain\x1b\[22m {2}\x1b\[31m✖ HealthCheckFailed\x1b\[39m {2}1\/2/);
  const text = stripAnsi(colored);
  assert.equal(
    text.split("\n").slice(0, 4).join("\n"),
    `main  ✖ HealthCheckFailed  1/2 updated
  problem    node main-2 failed health checks: HostHealthy (the system is
             degraded: failed units: bad.service); the rollout of
             127.0.0.1:5000/bootc/os@sha256:bbbbbbbbbbbb is halted`,
  );
  assert.match(text, /\n {2}time left {2}unknown \(HealthCheckFailed: none until the problem/);
  // The failed node still holds its slot: it is in flight (and failed).
  assert.match(text, /\n {2}in flight {2}main-2 · 1 reboot slot\(s\) in use/);
  assert.match(
    text,
    /\n {2}└─ ✖ main-2 {2}Failed {3}2\.0 {2}slot {2}failed HostHealthy: bad\.service\n/,
  );
  // Piped: one line, the problem with short digests.
  assert.match(
    renderLine(views[0], NOW).text,
    /main HealthCheckFailed 1\/2 updated, .*; problem: HealthCheckFailed: node main-2 .*bad\.service\).*@sha256:bbbbbbbbbbbb is halted; in flight: main-2; failed: main-2 \(Failed\/HostHealthy\)$/,
  );
});

Deno.test("a typo'd tag: all nodes updated, yet the headline is the red problem", () => {
  const snapshot = midRollout();
  snapshot.pools = [pool({
    ref: `${REPO}:nosuch`,
    deployed: NEW,
    upToDate: cond("UpToDate", "True", "AllUpdated", "5/5 updated"),
    degraded: cond(
      "Degraded",
      "True",
      "ImageResolutionFailed",
      `resolving ${REPO}:nosuch: manifest unknown`,
    ),
  })];
  snapshot.bootcNodes = snapshot.bootcNodes.filter((bn) => bn.metadata?.name === "main-1");
  const [view] = poolViews(snapshot);
  assert.equal(view.phase, "ImageResolutionFailed");
  assert.equal(view.health, "unhealthy");
  const text = renderFrame([view], { style: color, width: 80, now: NOW });
  assert.match(text, /\x1b\[31m✖ ImageResolutionFailed\x1b\[39m {2}1\/1 updated/);
  // The typo'd tag is not shown beside the digest it failed to replace.
  assert.match(stripAnsi(text), /images +stable {2}\(2\.0\) bbbbbbbbbbbb {2}\(the target\)/);
  assert.match(
    stripAnsi(text),
    /problem +resolving registry\.example\/os:nosuch: manifest unknown/,
  );
});

Deno.test("the published status.state is the headline; its kind colours it", () => {
  const snapshot = midRollout();
  const cases: [string, string, RegExp][] = [
    ["Halted", "unhealthy", /\x1b\[31m✖ Halted\x1b\[39m/],
    ["RollingOut", "progressing", /\x1b\[33m◌ RollingOut\x1b\[39m/],
    ["OutsideMaintenanceWindow", "held", /\x1b\[33m॥ OutsideMaintenanceWindow\x1b\[39m/],
    ["AllUpdated", "healthy", /\x1b\[32m✔ AllUpdated\x1b\[39m/],
  ];
  for (const [state, health, shown] of cases) {
    const p = pool({ ref: `${REPO}:v2` });
    (p.status as { state?: string }).state = state;
    snapshot.pools = [p];
    const [view] = poolViews(snapshot);
    assert.equal(view.phase, state);
    assert.equal(view.health, health, state);
    assert.match(renderFrame([view], { style: color, width: 100, now: NOW }), shown);
  }
});

Deno.test("a canary's step is shown under the images while the canary runs", () => {
  const snapshot = midRollout();
  const p = pool({ ref: `${REPO}:v2`, queue: ["main-4"], waitingFor: "CanarySoak" });
  p.status!.canary = {
    image: p.status!.targetImage!,
    phase: "Soaking",
    nodes: 1,
    soakUntil: "2026-03-01T10:15:00Z",
  };
  snapshot.pools = [p];
  const text = renderFrame(poolViews(snapshot, "main"), { style: plain, width: 100, now: NOW });
  assert.match(
    text,
    /\n {13}new {5}v2 \(2\.0\) bbbbbbbbbbbb\n {2}canary {5}step 2\/3: soaking 1 node until 10:15:00 UTC \(5m00s left\)\n/,
  );
  assert.match(text, /\n {2}├─ ॥ main-4 +Staged +1\.0 +#1 +a reboot slot \(CanarySoak\)\n/);
});
