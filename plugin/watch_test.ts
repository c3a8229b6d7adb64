import assert from "node:assert/strict";
import type { Snapshot } from "./model.ts";
import { createStyle, stripAnsi } from "./style.ts";
import type { PoolView } from "./status_view.ts";
import { bootcNode, NEW, node, NOW, pool } from "./testing.ts";
import { CLEAR_BELOW, CLEAR_LINE, CLEAR_SCREEN, HOME, redraw, watchStatus } from "./watch.ts";

const at = (s: number) => new Date(NOW.getTime() + s * 1000);

/** Snapshots of a 2-node pool: both staged, then one in a slot, then both updated. */
function rollout(): Snapshot[] {
  const staged = (n: string) => bootcNode(n, { idle: ["False", "Staged"], staged: NEW });
  const done = (n: string) => bootcNode(n, { booted: NEW, idle: ["True", "Idle", 0] });
  return [
    { pools: [pool()], bootcNodes: [staged("a"), staged("b")], nodes: [], now: at(0) },
    { pools: [pool()], bootcNodes: [staged("a"), staged("b")], nodes: [], now: at(2) },
    {
      pools: [pool()],
      bootcNodes: [staged("a"), staged("b")],
      nodes: [node("a", { slot: 0 })],
      now: at(4),
    },
    { pools: [pool()], bootcNodes: [done("a"), done("b")], nodes: [], now: at(6) },
  ];
}

/** Runs watchStatus over `reads` (a function throws), stopping after the last. */
async function run(reads: (Snapshot | Error)[], isTerminal: boolean, color = false) {
  return (await follow(reads, isTerminal, color)).writes;
}

/** {@linkcode run}, ended by `until`: what was written, the pools last read, reads made. */
async function follow(
  reads: (Snapshot | Error)[],
  isTerminal: boolean,
  color = false,
  until?: (views: readonly PoolView[]) => boolean,
) {
  const writes: string[] = [];
  const controller = new AbortController();
  let i = 0;
  const views = await watchStatus({
    read: () => {
      // Past the last one: stop (the loop ignores a read that fails because it stopped).
      if (i >= reads.length) controller.abort();
      const next = reads[i++] ?? new Error("stopped");
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
    write: (text) => {
      writes.push(text);
      return Promise.resolve();
    },
    isTerminal,
    style: createStyle(color),
    columns: () => 100,
    intervalMs: 1,
    signal: controller.signal,
    until,
  });
  return { writes, views, reads: i };
}

Deno.test("redraw: clear once, then home; every line cleared to its end; the rest below", () => {
  assert.equal(
    redraw("a\nb\n", true),
    `${CLEAR_SCREEN}a${CLEAR_LINE}\nb${CLEAR_LINE}\n${CLEAR_BELOW}`,
  );
  assert.ok(redraw("a\n", false).startsWith(HOME));
});

Deno.test("on a terminal every refresh redraws the whole frame in place", async () => {
  const writes = await run(rollout(), true, true);
  assert.equal(writes.length, 4);
  assert.ok(writes[0].startsWith(CLEAR_SCREEN));
  for (const w of writes.slice(1)) assert.ok(w.startsWith(HOME) && !w.includes(CLEAR_SCREEN));
  assert.ok(writes[0].includes("\x1b[36m"), "colour on a terminal");
  const last = stripAnsi(writes[3]);
  assert.match(last, /Every 0\.001s: kubectl bootc status \(Ctrl-C to stop\) +10:10:06 UTC/);
  assert.match(last, /main +◌ RolloutInProgress +2\/2 updated/);
  assert.match(last, /\[█+\] 100%/);
});

Deno.test("off a terminal: one plain line per change, none for a mere tick", async () => {
  const writes = await run(rollout(), false);
  assert.deepEqual(writes, [
    "10:10:00 main RolloutInProgress 0/2 updated, 0 rebooting, 2 staged, 0 staging, 0 pending, " +
    "0 failed\n",
    "10:10:04 main RolloutInProgress 0/2 updated, 1 rebooting, 1 staged, 0 staging, 0 pending, " +
    "0 failed; in flight: a\n",
    "10:10:06 main RolloutInProgress 2/2 updated, 0 rebooting, 0 staged, 0 staging, 0 pending, " +
    "0 failed; done\n",
  ]);
  for (const w of writes) assert.ok(!w.includes("\x1b"), "no escape codes in plain lines");
});

Deno.test("until: the watch ends at the first read it holds for, with those pools", async () => {
  const done = (views: readonly PoolView[]) => views.every((v) => v.counts.updated === v.total);
  const ended = await follow(rollout(), false, false, done);
  assert.equal(ended.reads, 4, "it stopped at the finished rollout, reading no more");
  assert.equal(ended.views[0].counts.updated, 2);
  assert.match(ended.writes.at(-1)!, /2\/2 updated.*; done\n$/);
  const never = await follow(rollout(), false, false, () => false);
  assert.equal(never.reads, 5, "without it holding, only the signal ends the watch");
});

Deno.test("a failed read is shown and retried, once per distinct error off a terminal", async () => {
  const [first] = rollout();
  const down = new Error("connection refused");
  const plain = await run([first, down, down, first], false);
  assert.equal(plain.length, 2);
  assert.match(plain[1], /^\d\d:\d\d:\d\d read failed \(retrying\): connection refused\n$/);
  const tty = await run([first, down], true);
  assert.match(stripAnsi(tty[1]), /read failed \(retrying\): connection refused/);
  // The last good frame stays on screen under the error.
  assert.match(stripAnsi(tty[1]), /main +◌ RolloutInProgress/);
});
