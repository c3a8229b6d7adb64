import assert from "node:assert/strict";
import type { BootcNode, BootcNodePool, EventLike, NodeLike } from "./model.ts";
import { createStyle } from "./style.ts";
import { bootcNode, cond, event, NEW, node, NOW, OLD, pool, REPO } from "./testing.ts";
import { explainNode, renderWhy, WHY_EVENTS } from "./why.ts";

const plain = createStyle(false);

/** Explains `name` in a cluster of the given objects. */
function why(
  name: string,
  objects: {
    bns?: BootcNode[];
    nodes?: NodeLike[];
    pools?: BootcNodePool[];
    events?: EventLike[];
  },
) {
  const bns = objects.bns ?? [];
  const nodes = new Map((objects.nodes ?? []).map((n) => [n.metadata?.name ?? "", n]));
  return explainNode({
    name,
    bootcNode: bns.find((bn) => bn.metadata.name === name),
    node: nodes.get(name),
    pools: objects.pools ?? [pool()],
    bootcNodes: bns,
    nodes,
    events: objects.events ?? [],
    now: NOW,
  });
}

const staged = (name: string, extra = {}) =>
  bootcNode(name, { idle: ["False", "Staged", 120], staged: NEW, ...extra });
const fact = (e: ReturnType<typeof why>, label: string) => e.facts.find(([l]) => l === label)?.[1];

Deno.test("why: unknown and unmanaged nodes", () => {
  assert.equal(why("ghost", {}).headline, "there is no Node and no BootcNode named ghost");
  assert.match(why("n1", { nodes: [node("n1")] }).headline, /not managed: no pool selects/);
  const orphan = bootcNode("n1");
  orphan.metadata.ownerReferences = [];
  assert.match(
    why("n1", { bns: [orphan], nodes: [node("n1")] }).headline,
    /not owned by any pool: the daemon does nothing/,
  );
  assert.match(
    why("n1", { bns: [bootcNode("n1")], nodes: [node("n1")], pools: [] }).headline,
    /its pool main does not exist/,
  );
});

Deno.test("why: up to date, downloading, waiting for the daemon", () => {
  const done = why("n1", {
    bns: [bootcNode("n1", { booted: NEW, idle: ["True", "Idle"] })],
    nodes: [node("n1")],
  });
  assert.equal(done.headline, `up to date: runs ${REPO}@sha256:bbbbbbbbbbbb`);
  assert.equal(fact(done, "disruption"), "none");
  assert.equal(fact(done, "node"), "Ready, schedulable");
  const staging = why("n1", {
    bns: [bootcNode("n1", { idle: ["False", "Staging", 30] })],
    nodes: [node("n1")],
  });
  assert.equal(
    staging.headline,
    `downloading ${REPO}@sha256:bbbbbbbbbbbb (staging since 10:09:30)`,
  );
  assert.equal(fact(staging, "phase"), "staging (Idle=False/Staging, 30s ago)");
  const idle = bootcNode("n1", { idle: ["True", "Idle"] });
  idle.metadata.generation = 2;
  idle.status!.observedGeneration = 1;
  assert.match(
    why("n1", { bns: [idle], nodes: [node("n1")] }).headline,
    /waiting for the daemon to report on its current spec/,
  );
});

Deno.test("why: queued behind the staging limit, or not yet given the target", () => {
  const queuedPool = pool({
    upToDate: cond(
      "UpToDate",
      "False",
      "StagingLimit",
      "0/3 updated; 2 staging, 1 pending; staging limit: 2/2 downloading, 1 queued",
    ),
  });
  const bn = bootcNode("n3", { desired: OLD, idle: ["True", "Idle"] });
  // A controller that publishes no status.staging: the limit holds, its use is unknown.
  assert.equal(
    why("n3", { bns: [bn], nodes: [node("n3")], pools: [queuedPool] }).headline,
    "queued for staging: a staging place (spec.rollout.maxStaging)",
  );
  queuedPool.status!.staging = { limit: 2, downloading: 2, queued: 1 };
  assert.equal(
    why("n3", { bns: [bn], nodes: [node("n3")], pools: [queuedPool] }).headline,
    "queued for staging: staging limit: 2/2 downloading, 1 queued",
  );
  assert.match(
    why("n3", { bns: [bn], nodes: [node("n3")] }).headline,
    /waiting for the controller to give it the new target \(desired aaaaaaaaaaaa, target bbbbbbbbbbbb\)/,
  );
});

Deno.test("why: a staged node's place in the slot queue and the gate that holds it", () => {
  const bns = [staged("n1"), staged("n2"), staged("n3"), staged("n4")];
  const nodes = [node("n1", { slot: 20 }), node("n2"), node("n3"), node("n4")];
  // n1 holds the only slot: the controller published n2, n3, n4 as its queue.
  const queued = { queue: ["n2", "n3", "n4"], slotsInUse: 1 };
  const behindBudget = why("n3", { bns, nodes, pools: [pool(queued)] });
  assert.equal(
    behindBudget.headline,
    "staged, waiting for a reboot slot (2nd of 3 in the slot queue); 1/1 slot(s) in use (n1)",
  );
  assert.equal(
    fact(behindBudget, "slot queue"),
    "2nd of 3: n2, [n3], n4 · 1/1 slot(s) in use (n1)",
  );
  // A queue written before n1's grant still lists it: in flight, it is not queued.
  const stale = why("n1", { bns, nodes, pools: [pool({ ...queued, queue: ["n1", "n2"] })] });
  assert.equal(fact(stale, "slot queue"), "not a candidate · 1 waiting · 1/1 slot(s) in use (n1)");
  // A free slot: the first in line is next.
  const free = why("n2", { bns, nodes, pools: [pool({ ...queued, maxUnavailable: 2 })] });
  assert.equal(
    free.headline,
    "staged, next for a reboot slot (1st of 3 in the slot queue, 1 free)",
  );
  // Outside the maintenance window: the gate is the reason, whatever the budget.
  const windowPool = pool({
    ...queued,
    waitingFor: "OutsideMaintenanceWindow",
    maxUnavailable: 2,
    upToDate: cond(
      "UpToDate",
      "False",
      "OutsideMaintenanceWindow",
      "0/4 updated; 3 staged, 1 rebooting; outside the maintenance windows (next opens 2026-03-07T22:00:00Z)",
    ),
    notes: ["outside the maintenance windows (next opens 2026-03-07T22:00:00Z)"],
  });
  const gated = why("n4", { bns, nodes, pools: [windowPool] });
  assert.equal(
    gated.headline,
    "staged, waiting for a reboot slot (3rd of 3 in the slot queue): the pool waits (OutsideMaintenanceWindow)",
  );
  assert.equal(
    fact(gated, "pool waits"),
    "OutsideMaintenanceWindow: outside the maintenance windows (next opens 2026-03-07T22:00:00Z)",
  );
  // Halted rollouts hand out no slots.
  const halted = pool({
    ...queued,
    waitingFor: "RolloutHalted",
    degraded: cond("Degraded", "True", "RolloutHalted", "rollout halted: …"),
  });
  assert.match(why("n2", { bns, nodes, pools: [halted] }).headline, /the rollout is halted$/);
  // A NotReady node is no candidate.
  const notReady = why("n2", {
    bns,
    nodes: [node("n1", { slot: 20 }), node("n2", { ready: false })],
    pools: [pool({ queue: ["n3", "n4"], slotsInUse: 1 })],
  });
  assert.equal(notReady.headline, "staged, but its Node is not Ready: not a slot candidate");
  assert.match(fact(notReady, "slot queue")!, /^not a candidate/);
});

Deno.test("why: what the controller published holds the node, or that it publishes nothing", () => {
  const bns = [staged("n1"), staged("n2"), staged("n3")];
  const nodes = [node("n1", { slot: 20 }), node("n2"), node("n3")];
  const ask = (f: Parameters<typeof pool>[0]) => why("n2", { bns, nodes, pools: [pool(f)] });
  const base = { queue: ["n2", "n3"], slotsInUse: 1, maxUnavailable: 2 };
  assert.equal(
    ask({ ...base, waitingFor: "PodDisruptionBudget" }).headline,
    "staged, waiting for a reboot slot (1st of 2 in the slot queue): its drain would wait on " +
      "a PodDisruptionBudget that a drain in flight needs",
  );
  assert.equal(
    ask({ ...base, waitingFor: "PodList" }).headline,
    "staged, waiting for a reboot slot (1st of 2 in the slot queue): the controller reads its " +
      "pods before it grants the slot",
  );
  assert.equal(
    ask({ ...base, waitingFor: "BlockingPod", blockedBy: "default/backup-1" }).headline,
    "staged, waiting for a reboot slot (1st of 2 in the slot queue): blocking pods run on it " +
      "(default/backup-1)",
  );
  assert.equal(
    ask({ ...base, waitingFor: "Skipped" }).headline,
    "staged, skipped: its Node's bootc.dev/update-priority is 0 (no reboot slot until it " +
      "changes)",
  );
  assert.match(
    fact(ask({ ...base, orderedBy: "priority 5" }), "slot queue")!,
    /^1st of 2 \(placed by priority 5\): \[n2\], n3/,
  );
  assert.equal(
    ask({ ...base, waitingFor: "ClusterBudgetExhausted" }).headline,
    "staged, waiting for a reboot slot (1st of 2 in the slot queue): it waits " +
      "(ClusterBudgetExhausted)",
  );
  // A scheduled budget of 0 sets the limit: the published limit, not maxUnavailable, counts.
  const zero = ask({
    ...base,
    slots: { limit: 0, source: "Budget", name: "rollout.budgets[0]", message: "…" },
  });
  assert.equal(
    zero.headline,
    "staged, waiting for a reboot slot (1st of 2 in the slot queue); 1/0 slot(s) in use (n1)",
  );
  // An older controller: no place, no limit, and no guess.
  const old = ask({ ...base, slots: null });
  assert.equal(
    old.headline,
    "staged, waiting for a reboot slot (place in the slot queue not published by the " +
      "controller (it predates status.slots)); 1 slot(s) in use (n1); the limit is not " +
      "published by the controller (it predates status.slots)",
  );
  assert.match(fact(old, "slot queue")!, /^not published by the controller/);
});

Deno.test("why: draining (the pool's note names the PDB), drained, reboot refused, rebooting, back", () => {
  const pdbPool = pool({
    upToDate: cond(
      "UpToDate",
      "False",
      "RolloutInProgress",
      "0/2 updated; 1 staged, 1 rebooting; draining n1: PodDisruptionBudget default/web allows 0 disruptions",
    ),
    notes: ["draining n1: PodDisruptionBudget default/web allows 0 disruptions"],
  });
  const draining = why("n1", {
    bns: [staged("n1", { mirror: "false" }), staged("n10")],
    nodes: [node("n1", { slot: 45 }), node("n10")],
    pools: [pdbPool],
  });
  assert.equal(
    draining.headline,
    "holds a reboot slot (taken 45s ago); draining: cordoned, evicting its pods",
  );
  assert.equal(
    fact(draining, "disruption"),
    "reboot slot since 10:09:15 (45s ago) for pool main; was cordoned before: false",
  );
  assert.equal(fact(draining, "node"), "Ready, cordoned");
  // The pool's notes are facts of their own, read from status.notes.
  assert.equal(
    fact(draining, "pool note"),
    "draining n1: PodDisruptionBudget default/web allows 0 disruptions",
  );

  const drainedNode = node("n1", { slot: 45, drained: 10 });
  const drained = why("n1", { bns: [staged("n1")], nodes: [drainedNode] });
  assert.match(drained.headline, /^drained; waiting for the controller to request the reboot/);
  assert.match(
    fact(drained, "disruption")!,
    /drained 10:09:50 \(10s ago\) for .*\(the desired image\)/,
  );

  const refused = staged("n1", {
    state: "Booted",
    conditions: [cond("RebootAllowed", "False", "AwaitingDrain", "the Node is not cordoned")],
  });
  assert.equal(
    why("n1", { bns: [refused], nodes: [drainedNode] }).headline,
    "reboot requested, but the daemon refuses (AwaitingDrain): the Node is not cordoned",
  );
  const allowed = staged("n1", {
    state: "Booted",
    conditions: [cond("RebootAllowed", "True", "SlotAndDrain", "ok")],
  });
  assert.match(
    why("n1", { bns: [allowed], nodes: [drainedNode] }).headline,
    /reboot requested and allowed; waiting for the daemon/,
  );
  const rebooting = bootcNode("n1", {
    state: "Booted",
    idle: ["False", "Rebooting", 5],
    staged: NEW,
  });
  assert.equal(
    why("n1", { bns: [rebooting], nodes: [drainedNode] }).headline,
    `rebooting into ${REPO}@sha256:bbbbbbbbbbbb (since 5s ago)`,
  );
  const back = bootcNode("n1", { state: "Booted", booted: NEW, idle: ["True", "Idle", 2] });
  assert.match(
    why("n1", { bns: [back], nodes: [node("n1", { slot: 60, drained: 30, ready: false })] })
      .headline,
    /back on the target image; waiting for the Node to become Ready/,
  );
  assert.match(
    why("n1", { bns: [back], nodes: [drainedNode] }).headline,
    /back on the target image and Ready; being verified \(health checks\), then the slot is released once minReadySeconds/,
  );
  const verified = bootcNode("n1", {
    state: "Booted",
    booted: NEW,
    idle: ["True", "Idle", 2],
    // Verified 5 s ago, in its slot (45 s old): soaking.
    conditions: [cond("Verified", "True", "ChecksPassed", `verified ${REPO}@${NEW}: …`, 5)],
  });
  assert.match(
    why("n1", { bns: [verified], nodes: [drainedNode] }).headline,
    /back on the target image, Ready and verified; the slot is released once minReadySeconds/,
  );
  // A Verified from before this slot (an earlier update of the image) is not this soak's.
  const earlier = bootcNode("n1", {
    state: "Booted",
    booted: NEW,
    idle: ["True", "Idle", 2],
    conditions: [cond("Verified", "True", "ChecksPassed", `verified ${REPO}@${NEW}: …`, 60)],
  });
  assert.match(
    why("n1", { bns: [earlier], nodes: [drainedNode] }).headline,
    /being verified \(health checks\)/,
  );
});

Deno.test("why: a node that failed its verification says so, naming the check", () => {
  // onFailure Halt: it is back on the target, Ready, and keeps its slot.
  const failed = bootcNode("n1", {
    state: "Booted",
    booted: NEW,
    idle: ["True", "Idle", 200],
    conditions: [
      cond(
        "Verified",
        "False",
        "CheckFailed",
        "node n1 failed health checks: HostHealthy (failed units: app.service)",
      ),
    ],
    failedChecks: ["HostHealthy"],
  });
  const e = why("n1", { bns: [failed], nodes: [node("n1", { slot: 300, drained: 250 })] });
  assert.equal(
    e.headline,
    "failed verification (HostHealthy): node n1 failed health checks: HostHealthy (failed " +
      "units: app.service) (it holds its reboot slot: the pool's onFailure policy decides what " +
      "comes next)",
  );
  assert.doesNotMatch(e.headline, /back on the target/);
  assert.equal(fact(e, "phase"), "failed (Idle=True/Idle, 3m20s ago)");
  assert.equal(fact(e, "state"), "Failed/CheckFailed");
});

Deno.test("why: the target is the host's rollback deployment: staged, ready for a slot", () => {
  const bn = bootcNode("n1", {
    idle: ["False", "Staged", 60],
    staged: OLD,
    conditions: [
      cond("ImageStaged", "True", "RollbackDeployment", `${REPO}@${NEW} is the rollback`),
    ],
  });
  bn.status!.rollback = { image: `${REPO}@${NEW}`, imageDigest: NEW };
  const e = why("n1", { bns: [bn], nodes: [node("n1")], pools: [pool({ queue: ["n1"] })] });
  assert.match(
    e.headline,
    /^staged \(the target is its rollback deployment\), next for a reboot slot/,
  );
  assert.equal(fact(e, "waits for"), "a reboot slot (gate)");
});

Deno.test("why: degraded and stalled nodes say so first", () => {
  const degraded = staged("n1", {
    conditions: [cond("Degraded", "True", "Error", "bootc switch: manifest unknown")],
  });
  assert.equal(
    why("n1", { bns: [degraded], nodes: [node("n1", { slot: 5 })] }).headline,
    "degraded: bootc switch: manifest unknown (it holds its reboot slot until it recovers or " +
      "the controller gives up)",
  );
  const stalled = bootcNode("n1", {
    idle: ["False", "Staging", 4000],
    conditions: [cond("Stalled", "True", "StagingTimeout", "not staged within 30m")],
  });
  assert.equal(
    why("n1", { bns: [stalled], nodes: [node("n1")] }).headline,
    "stalled (StagingTimeout): not staged within 30m",
  );
});

Deno.test("why: the rendering lists facts, conditions and the latest events in order", () => {
  const events = Array.from(
    { length: WHY_EVENTS + 2 },
    (_, i) => event("n2", `Reason${i}`, `message ${i}`, 100 - i * 10),
  );
  events.push(event("other", "Elsewhere", "not about n2", 1));
  events.push({
    ...event("n2", "DrainBlocked", "evicting pod web-1", 3),
    type: "Warning",
    count: 4,
  });
  const bns = [
    staged("n2", {
      conditions: [
        cond("RebootAllowed", "False", "NotRequested", "desiredImageState is not Booted", 120),
        cond("Stalled", "False", "Progressing", "", 120),
      ],
    }),
  ];
  const e = why("n2", { bns, nodes: [node("n2")], events, pools: [pool({ queue: ["n2"] })] });
  assert.equal(e.events.length, WHY_EVENTS);
  assert.equal(e.events.at(-1)?.reason, "DrainBlocked");
  const text = renderWhy(e, plain, NOW);
  assert.equal(
    text,
    `n2: staged, next for a reboot slot (1st of 1 in the slot queue, 1 free)

  pool        main → ${REPO}@sha256:bbbbbbbbbbbb
  phase       staged (Idle=False/Staged, 2m00s ago)
  state       Staged/ReadyForSlot
  waits for   a reboot slot (gate)
  desired     ${REPO}@sha256:bbbbbbbbbbbb (Staged)
  booted      ${REPO}@sha256:aaaaaaaaaaaa
  staged      ${REPO}@sha256:bbbbbbbbbbbb
  node        Ready, schedulable
  disruption  none
  slot queue  1st of 1: [n2] · 0/1 slot(s) in use

Conditions:
  TYPE           STATUS  REASON        AGE    MESSAGE
  Idle           False   Staged        2m00s
  RebootAllowed  False   NotRequested  2m00s  desiredImageState is not Booted
  Stalled        False   Progressing   2m00s

Events (latest ${WHY_EVENTS}):
  AGE    TYPE     REASON        MESSAGE
  1m10s  Normal   Reason3       message 3
  1m00s  Normal   Reason4       message 4
  50s    Normal   Reason5       message 5
  40s    Normal   Reason6       message 6
  30s    Normal   Reason7       message 7
  3s     Warning  DrainBlocked  evicting pod web-1 (×4)
`,
  );
  const colored = renderWhy(e, createStyle(true), NOW);
  assert.ok(colored.includes("\x1b[33m  3s     Warning"), "warnings are yellow");
});
