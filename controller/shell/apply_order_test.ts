import assert from "node:assert/strict";
import { ANNOTATION_IN_REBOOT_SLOT } from "../../lib/api/mod.ts";
import { applyStages, runStages } from "./apply_order.ts";
import { type Action, isSlotGrant, isSlotRelease } from "../planner/plan.ts";

const release = (node: string): Action => ({
  kind: "patchNode",
  node,
  patch: { metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: null } } },
  why: "release slot",
  intent: "release",
});
const grant = (node: string): Action => ({
  kind: "patchNode",
  node,
  patch: { metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: "2026-11-23T00:00:00Z" } } },
  why: "assign slot",
  intent: "grant",
});
const mirror = (node: string): Action => ({
  kind: "patchBootcNode",
  node,
  patch: { metadata: { annotations: { "bootc.dev/was-cordoned": "false" } } },
  why: "mirror prior cordon state",
});
const evict = (node: string): Action => ({ kind: "evict", node, pods: [] });
const label = (a: Action) => `${a.kind}:${"node" in a ? a.node : "-"}`;
const shape = (actions: Action[]) => applyStages(actions).map((s) => s.map((l) => l.map(label)));

const repair = (node: string): Action => ({
  kind: "patchNode",
  node,
  patch: { metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: "2026-11-23T00:00:00Z" } } },
  why: "repair record",
  intent: "repairRecord",
});

Deno.test("isSlotGrant: the grant, not a release nor a repair that rewrites the slot record", () => {
  assert.equal(isSlotGrant(grant("a")), true);
  assert.equal(isSlotGrant(release("a")), false);
  assert.equal(isSlotGrant(repair("a")), false);
  assert.equal(isSlotGrant(mirror("a")), false);
  assert.equal(isSlotGrant({ kind: "addFinalizer" }), false);
  // Known by its mark, not by its words: the same `why` without the mark is no grant.
  const { intent: _, ...unmarked } = grant("a") as Extract<Action, { kind: "patchNode" }>;
  assert.equal(isSlotGrant(unmarked), false);
});

const drained = (node: string): Action => ({
  kind: "patchNode",
  node,
  patch: { metadata: { annotations: { "bootc.dev/drained-at": "2026-11-23T00:00:00Z" } } },
  why: "drain finished",
});

Deno.test("isSlotRelease: the marked writes that hand a slot back, not words alike", () => {
  assert.equal(isSlotRelease(release("a")), true);
  assert.equal(isSlotRelease({ ...mirror("a"), intent: "release" } as Action), true);
  assert.equal(isSlotRelease(grant("a")), false);
  const { intent: _, ...unmarked } = release("a") as Extract<Action, { kind: "patchNode" }>;
  assert.equal(isSlotRelease(unmarked), false);
});

Deno.test("applyStages: a lane per node, releases first then planned order, the finalizer alone", () => {
  assert.deepEqual(
    shape([
      { kind: "addFinalizer" },
      release("a"),
      mirror("b"),
      release("b"),
      grant("c"),
      mirror("c"),
      evict("c"),
      grant("d"),
      mirror("d"),
      evict("d"),
    ]),
    [
      [["addFinalizer:-"]],
      [
        ["patchNode:a"],
        ["patchBootcNode:b", "patchNode:b"],
        ["patchNode:c", "patchBootcNode:c", "evict:c"],
        ["patchNode:d", "patchBootcNode:d", "evict:d"],
      ],
    ],
  );
  // The last finalizer removal waits for every release before it.
  assert.deepEqual(shape([release("a"), release("b"), { kind: "removeFinalizer" }]), [
    [["patchNode:a"], ["patchNode:b"]],
    [["removeFinalizer:-"]],
  ]);
  assert.deepEqual(shape([]), []);
  // A restored record is written before any grant, in a stage of its own; without a
  // grant it needs none.
  assert.deepEqual(shape([repair("a"), release("b"), grant("c")]), [
    [["patchNode:a"]],
    [["patchNode:b"], ["patchNode:c"]],
  ]);
  assert.deepEqual(shape([repair("a"), release("b")]), [[["patchNode:b"], ["patchNode:a"]]]);
  // Writes that free no room (a's drain step, b's display) keep their planned place.
  assert.deepEqual(
    shape([drained("a"), mirror("b"), release("c"), grant("d"), mirror("d"), evict("e")]),
    [[
      ["patchNode:c"],
      ["patchNode:a"],
      ["patchBootcNode:b"],
      ["patchNode:d", "patchBootcNode:d"],
      ["evict:e"],
    ]],
  );
});

/** Runs `actions`, failing the labels in `fail`: what was applied, in order, and the error. */
async function runRecorded(actions: Action[], fail: string[]) {
  const applied: string[] = [];
  const error = await runStages(applyStages(actions), async (action) => {
    await new Promise((r) => setTimeout(r, 1));
    if (fail.includes(label(action))) throw new Error(`${label(action)} failed`);
    applied.push(label(action));
  }, { concurrency: 4 }).then(() => undefined, (e: Error) => e.message);
  return { applied, error };
}

Deno.test("runStages: a grant takes only the room a succeeded release freed", async () => {
  // Two grants on the room of two releases: a's release fails, so only one grant goes.
  const one = await runRecorded(
    [release("a"), release("b"), grant("c"), mirror("c"), grant("d"), mirror("d")],
    ["patchNode:a"],
  );
  assert.equal(one.error, "patchNode:a failed");
  assert.deepEqual(one.applied, ["patchNode:b", "patchNode:c", "patchBootcNode:c"]);
  // Both releases fail: no grant at all.
  const none = await runRecorded(
    [release("a"), release("b"), grant("c"), grant("d")],
    ["patchNode:a", "patchNode:b"],
  );
  assert.deepEqual(none.applied, []);
  // A pool over its limit (2 in flight beside the released a and b, limit 2): the one grant
  // the plan made needs both releases; with b's failing it never goes.
  const over = await runRecorded([release("a"), release("b"), grant("c")], ["patchNode:b"]);
  assert.deepEqual(over.applied, ["patchNode:a"]);
  const overOk = await runRecorded([release("a"), release("b"), grant("c")], []);
  assert.deepEqual(overOk.applied, ["patchNode:a", "patchNode:b", "patchNode:c"]);
  // A failed repair of a record stops every grant.
  const repairFailed = await runRecorded([repair("a"), release("b"), grant("c")], ["patchNode:a"]);
  assert.deepEqual(repairFailed.applied, []);
  // A lane that frees no room failing stops no grant.
  const other = await runRecorded([drained("a"), release("b"), grant("c")], ["patchNode:a"]);
  assert.equal(other.error, "patchNode:a failed");
  assert.deepEqual(other.applied, ["patchNode:b", "patchNode:c"]);
});

Deno.test("runStages: grants within the room there was go at once; each other one waits for a release", async () => {
  const done: string[] = [];
  let finishA!: () => void;
  const aReleased = new Promise<void>((r) => finishA = r);
  // Two grants beside one release: one fits without it, the other waits for it.
  const run = runStages(applyStages([release("a"), grant("b"), grant("c")]), async (action) => {
    if (label(action) === "patchNode:a") await aReleased;
    done.push(label(action));
  }, { concurrency: 4 });
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(done, ["patchNode:b"]);
  finishA();
  await run;
  assert.deepEqual(done, ["patchNode:b", "patchNode:a", "patchNode:c"]);
});

Deno.test("runStages: a grant refused unwritten (a plan gone stale) gives its room to the next (review 13 F4)", async () => {
  const stale = new Error("stale");
  const run = async (error: Error) => {
    const applied: string[] = [];
    const failed = await runStages(
      applyStages([release("a"), grant("c"), mirror("c"), grant("d")]),
      async (action) => {
        await Promise.resolve(); // each write answers later, as the API does
        // c takes the room there is and is refused; d waits for room.
        if (label(action) === "patchNode:c") throw error;
        // a's release fails: no room comes from it.
        if (label(action) === "patchNode:a") throw new Error("refused");
        applied.push(label(action));
      },
      { concurrency: 1 + 2, minor: (e) => e === stale },
    ).then(() => undefined, (e: Error) => e);
    return { applied, failed };
  };
  // One release beside two grants: the room is one (the other grant needs the release, which
  // fails); c took it and was refused unwritten, so d goes.
  const refused = await run(stale);
  assert.equal(refused.failed?.message, "refused");
  assert.deepEqual(refused.applied, ["patchNode:d"]);
  // Any other failure may have landed: c keeps the room, d does not go.
  const other = await run(new Error("timeout"));
  assert.deepEqual(other.applied, []);
});

Deno.test("runStages: a minor error (a plan gone stale) is thrown only when nothing else failed", async () => {
  class Minor extends Error {}
  const run = (failures: Record<string, Error>) =>
    runStages(
      applyStages([grant("a"), drained("b")]),
      async (action) => {
        await new Promise((r) => setTimeout(r, label(action) === "patchNode:b" ? 5 : 1));
        const e = failures[label(action)];
        if (e) throw e;
      },
      { concurrency: 4, minor: (e) => e instanceof Minor },
    );
  await assert.rejects(
    run({ "patchNode:a": new Minor("stale"), "patchNode:b": new Error("boom") }),
    /boom/,
  );
  await assert.rejects(run({ "patchNode:a": new Minor("stale") }), /stale/);
  await assert.rejects(
    run({ "patchNode:a": new Error("first"), "patchNode:b": new Error("second") }),
    /first/,
  );
});

Deno.test("runStages: a grant left without room is told to `skipped`, never started", async () => {
  const skipped: string[] = [];
  const applied: string[] = [];
  await assert.rejects(
    runStages(applyStages([release("a"), grant("b"), mirror("b")]), async (action) => {
      await Promise.resolve();
      if (label(action) === "patchNode:a") throw new Error("denied");
      applied.push(label(action));
    }, { concurrency: 4, skipped: (lane) => skipped.push(...lane.map(label)) }),
    /denied/,
  );
  assert.deepEqual(applied, []);
  assert.deepEqual(skipped, ["patchNode:b", "patchBootcNode:b"]);
});

Deno.test("runStages: a lane stops at its failure; at most `concurrency` lanes at once", async () => {
  const applied: string[] = [];
  let running = 0;
  let most = 0;
  const actions = ["a", "b", "c", "d", "e"].flatMap((n) => [grant(n), mirror(n), evict(n)]);
  await assert.rejects(
    runStages(applyStages(actions), async (action) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 1));
      running--;
      if (label(action) === "patchBootcNode:b") throw new Error("gone");
      applied.push(label(action));
    }, { concurrency: 2 }),
    /gone/,
  );
  assert.equal(most, 2);
  // b's eviction never ran; every other lane ran in order.
  assert.ok(!applied.includes("evict:b"));
  for (const n of ["a", "c", "d", "e"]) {
    const mine = applied.filter((x) => x.endsWith(`:${n}`));
    assert.deepEqual(mine, [`patchNode:${n}`, `patchBootcNode:${n}`, `evict:${n}`]);
  }
});
