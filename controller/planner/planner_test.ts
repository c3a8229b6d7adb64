import assert from "node:assert/strict";
import {
  ANNOTATION_DESIRED_SINCE,
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_SPEC_SINCE,
  ANNOTATION_VERIFIED_AT,
  ANNOTATION_VERIFIED_FOR,
  ANNOTATION_VERIFIED_GENERATION,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodePoolStatus,
  findCondition,
  LABEL_MANAGED,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool, POOL_FINALIZER, resolutionNeed } from "./planner.ts";
import {
  bootcNode,
  digest,
  image,
  input,
  node,
  pdb,
  pod,
  pool,
  REPO,
} from "../testing/fixtures.ts";

const NOW = "2026-01-01T01:00:00Z";
const EARLIER = "2026-01-01T00:59:00Z";

function withWhy(plan: Plan, why: string): string[] {
  return plan.actions.flatMap((a) =>
    (a.kind === "patchBootcNode" || a.kind === "patchNode") && a.why === why ? [a.node] : []
  );
}
function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}
function degraded(status: BootcNodePoolStatus | undefined) {
  return findCondition(status?.conditions, "Degraded");
}
function upToDate(status: BootcNodePoolStatus | undefined) {
  return findCondition(status?.conditions, "UpToDate");
}

/** N nodes staged and waiting, none in a slot. */
function stagedFleet(n: number) {
  const names = Array.from({ length: n }, (_, i) => `n${String(i).padStart(2, "0")}`);
  return {
    nodes: names.map((x) => node(x)),
    bootcNodes: names.map((x) => bootcNode(x, { phase: "staged" })),
  };
}

Deno.test("membership: creates an owned BootcNode and labels each new matching node", () => {
  const plan = planPool(input(pool(), {
    nodes: [
      node("a", { labels: { role: "worker" } }),
      node("b", { labels: { role: "infra" } }),
    ],
    pullSecretHash: "sha256:abc",
  }));
  const created = ofKind(plan, "createBootcNode");
  assert.deepEqual(created.map((c) => c.node), ["a"]);
  const bn = created[0].object;
  assert.equal(bn.spec.desiredImage, image("b"));
  assert.equal(bn.spec.desiredImageState, "Staged");
  assert.equal(bn.spec.pullSecretHash, "sha256:abc");
  assert.equal(bn.metadata.labels?.["bootc.dev/pool"], "workers");
  assert.deepEqual(bn.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.controller]), [[
    "BootcNodePool",
    "workers",
    true,
  ]]);
  assert.deepEqual(withWhy(plan, "label managed"), ["a"]);
  assert.equal(plan.status?.nodeCount, 1);
  assert.equal(plan.status?.targetDigest, digest("b"));
  assert.equal(plan.status?.updateAvailable, true);
});

Deno.test("membership: a pool without the finalizer gets it", () => {
  const p = pool();
  p.metadata.finalizers = [];
  assert.equal(ofKind(planPool(input(p)), "addFinalizer").length, 1);
  assert.equal(ofKind(planPool(input(pool())), "addFinalizer").length, 0);
});

Deno.test("conflict: a node matching two pools is taken by neither and both name the other", () => {
  const workers = pool();
  const gpu = pool({ name: "gpu", selector: { matchLabels: { gpu: "yes" } } });
  const nodes = [node("shared", { labels: { role: "worker", gpu: "yes" } }), node("w1")];
  const planW = planPool(input(workers, { nodes, otherPools: [gpu] }));
  const planG = planPool(input(gpu, { nodes, otherPools: [workers] }));
  assert.deepEqual(ofKind(planW, "createBootcNode").map((c) => c.node), ["w1"]);
  assert.deepEqual(ofKind(planG, "createBootcNode").map((c) => c.node), []);
  assert.equal(degraded(planW.status)?.reason, "NodeConflict");
  assert.match(degraded(planW.status)?.message ?? "", /shared also match pool gpu/);
  assert.equal(degraded(planG.status)?.reason, "NodeConflict");
  assert.match(degraded(planG.status)?.message ?? "", /shared also match pool workers/);
  assert.ok(planW.events.some((e) => e.reason === "NodeConflict"));
});

Deno.test("conflict: a node already owned by another pool is left alone", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("x")],
    bootcNodes: [bootcNode("x", { pool: "other" })],
  }));
  assert.equal(plan.actions.length, 0);
  assert.match(degraded(plan.status)?.message ?? "", /x also match pool other/);
});

Deno.test("membership: a node that stops matching is unlabelled, uncordoned as before and freed", () => {
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [
      node("gone", { labels: { role: "infra", [LABEL_MANAGED]: "" }, unschedulable: true }),
      node("next"),
    ],
    bootcNodes: [
      bootcNode("gone", { phase: "staged", slotAt: EARLIER, wasCordoned: false }),
      bootcNode("next", { phase: "staged" }),
    ],
  }));
  const release = ofKind(plan, "patchNode").find((a) => a.node === "gone");
  assert.deepEqual(release?.patch, {
    metadata: {
      annotations: {
        [ANNOTATION_IN_REBOOT_SLOT]: null,
        [ANNOTATION_SLOT_POOL]: null,
        [ANNOTATION_WAS_CORDONED]: null,
      },
      labels: { [LABEL_MANAGED]: null },
    },
    spec: { unschedulable: null },
  });
  assert.deepEqual(ofKind(plan, "deleteBootcNode").map((a) => a.node), ["gone"]);
  // The BootcNode goes first: a crash in between leaves the Node record for the orphan path.
  const order = plan.actions.map((a) => `${a.kind}/${"node" in a ? a.node : ""}`);
  assert.ok(order.indexOf("deleteBootcNode/gone") < order.indexOf("patchNode/gone"));
  // "gone" still counted as disrupted in this pass (its release is not yet applied).
  assert.deepEqual(withWhy(plan, "assign slot"), []);
});

/** n1's Node object deleted while its daemon says Rebooting (since 00:00); n2 waits for a slot. */
function deletedWhileRebooting(rebootTimeoutSeconds: number) {
  return planPool(input(pool({ rebootTimeoutSeconds }), {
    nodes: [node("n2")],
    bootcNodes: [
      bootcNode("n1", { phase: "rebooting", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("n2", { phase: "staged" }),
    ],
  }));
}

Deno.test("membership: a node deleted while rebooting keeps its slot until its reboot timeout", () => {
  // The machine may be down right now, and its kubelet registers the Node again at boot:
  // freeing the slot would let n2 go down beside it.
  const plan = deletedWhileRebooting(7200);
  assert.deepEqual(ofKind(plan, "deleteBootcNode"), []);
  assert.deepEqual(withWhy(plan, "assign slot"), []);
  assert.equal(plan.status?.slotsInUse, 1);
  assert.ok(
    plan.events.some((e) =>
      e.reason === "NodeLeavingAfterReboot" &&
      /n1 left the pool \(node was deleted\)/.test(e.message)
    ),
    JSON.stringify(plan.events),
  );
  // Woken at the deadline: 00:00 + 2 h, an hour from now.
  assert.equal(plan.requeueAfterMs, 3_600_000);
});

Deno.test("membership: a node deleted while rebooting is held past its reboot timeout, Degraded naming it (adv19 F2)", () => {
  // Its machine may still be down: freeing the slot would let n2 go down beside it. Only a
  // person knows it is gone for good; they delete its BootcNode.
  const plan = deletedWhileRebooting(1800);
  assert.deepEqual(ofKind(plan, "deleteBootcNode"), []);
  assert.deepEqual(withWhy(plan, "assign slot"), []);
  assert.equal(plan.status?.slotsInUse, 1);
  const degraded = plan.status?.conditions?.find((c) => c.type === "Degraded");
  assert.equal(degraded?.reason, "NodeStalled");
  assert.match(
    degraded?.message ?? "",
    /node n1 left the pool while rebooting .*past its reboot timeout.*delete its BootcNode to let the slot go/,
  );
  assert.ok(!plan.events.some((e) => e.reason === "ReleasedUnfinished"));
});

Deno.test("membership: a node deleted when not rebooting is released at once", () => {
  const plan = planPool(input(pool({ rebootTimeoutSeconds: 7200 }), {
    nodes: [node("n2")],
    bootcNodes: [bootcNode("n1", { phase: "staged" }), bootcNode("n2", { phase: "staged" })],
  }));
  assert.deepEqual(ofKind(plan, "deleteBootcNode").map((a) => a.node), ["n1"]);
  assert.deepEqual(withWhy(plan, "assign slot"), ["n2"]);
});

Deno.test("membership: a node that stops matching keeps a cordon it had before", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("x", { labels: { [LABEL_MANAGED]: "" }, unschedulable: true })],
    bootcNodes: [bootcNode("x", { phase: "staged", slotAt: EARLIER, wasCordoned: true })],
  }));
  assert.deepEqual(ofKind(plan, "patchNode")[0].patch, {
    metadata: {
      annotations: {
        [ANNOTATION_IN_REBOOT_SLOT]: null,
        [ANNOTATION_SLOT_POOL]: null,
        [ANNOTATION_WAS_CORDONED]: null,
      },
      labels: { [LABEL_MANAGED]: null },
    },
  });
});

Deno.test("sync: a new target resets desiredImageState to Staged and drops drained-at", () => {
  const plan = planPool(input(pool({ ref: image("c") }), {
    nodes: [node("n1")],
    bootcNodes: [bootcNode("n1", {
      phase: "staged",
      state: "Booted",
      slotAt: EARLIER,
      drainedAt: EARLIER,
    })],
  }));
  const sync = ofKind(plan, "patchBootcNode").find((a) => a.why === "sync spec");
  assert.deepEqual(sync?.patch.spec, { desiredImage: image("c"), desiredImageState: "Staged" });
  // The daemon had reported on the spec before: the change carries its time too.
  assert.deepEqual(sync?.patch.metadata, {
    annotations: {
      [ANNOTATION_DESIRED_SINCE]: NOW,
      [ANNOTATION_SPEC_GENERATION]: "1",
      [ANNOTATION_SPEC_SINCE]: NOW,
    },
  });
  const undrain = ofKind(plan, "patchNode").find((a) => a.why === "withdraw drain (new image)");
  assert.deepEqual(undrain?.patch, {
    metadata: { annotations: { [ANNOTATION_DRAINED_AT]: null, [ANNOTATION_DRAINED_FOR]: null } },
  });
  // Still holds its slot, and the staged image is the old one: no reboot request.
  assert.equal(withWhy(plan, "request reboot").length, 0);
  assert.equal(plan.status?.slotsInUse, 1);
});

Deno.test("sync: pull secret ref and hash follow the pool and the Secret", () => {
  const p = pool();
  p.spec.pullSecretRef = { name: "pull", namespace: "bootc-operator" };
  const plan = planPool(input(p, {
    nodes: [node("n1")],
    bootcNodes: [bootcNode("n1", { booted: image("b") })],
    pullSecretHash: "sha256:new",
  }));
  const sync = ofKind(plan, "patchBootcNode")[0];
  assert.deepEqual(sync.patch.spec, {
    pullSecretHash: "sha256:new",
    pullSecretRef: { name: "pull", namespace: "bootc-operator" },
  });
});

Deno.test("sync: Booted is taken back from a node outside a slot that is not up to date", () => {
  const plan = planPool(input(pool({ paused: true }), {
    nodes: [node("n1")],
    bootcNodes: [bootcNode("n1", { phase: "staged", state: "Booted" })],
  }));
  assert.deepEqual(ofKind(plan, "patchBootcNode")[0].patch.spec, { desiredImageState: "Staged" });
});

const slotCases: { name: string; n: number; maxUnavailable: number | string; want: number }[] = [
  { name: "integer 1", n: 5, maxUnavailable: 1, want: 1 },
  { name: "integer 3", n: 5, maxUnavailable: 3, want: 3 },
  { name: "more slots than nodes", n: 2, maxUnavailable: 5, want: 2 },
  { name: "25% of 10 rounds up to 3", n: 10, maxUnavailable: "25%", want: 3 },
  { name: "1% of 10 is at least 1", n: 10, maxUnavailable: "1%", want: 1 },
];
for (const c of slotCases) {
  Deno.test(`slots: ${c.name}`, () => {
    const plan = planPool(input(pool({ maxUnavailable: c.maxUnavailable }), stagedFleet(c.n)));
    const assigned = withWhy(plan, "assign slot");
    assert.equal(assigned.length, c.want);
    assert.equal(plan.status?.slotsInUse, c.want);
    for (const a of ofKind(plan, "patchNode").filter((x) => x.why === "assign slot")) {
      assert.deepEqual(
        a.patch.spec,
        { unschedulable: true },
        "the grant cordons in the same write",
      );
    }
    assert.deepEqual(withWhy(plan, "mirror prior cordon state").sort(), assigned.sort());
  });
}

Deno.test("slots: assignment records the prior cordon state and the time; already cordoned nodes are not re-cordoned", () => {
  const fleet = stagedFleet(2);
  fleet.nodes[0].unschedulable = true;
  const plan = planPool(input(pool({ maxUnavailable: 2 }), fleet));
  const assigns = ofKind(plan, "patchNode").filter((a) => a.why === "assign slot");
  const ann = (i: number) =>
    (assigns[i].patch.metadata as { annotations: Record<string, string> }).annotations;
  assert.equal(ann(0)[ANNOTATION_WAS_CORDONED], "true");
  assert.equal(ann(1)[ANNOTATION_WAS_CORDONED], "false");
  assert.equal(ann(0)[ANNOTATION_IN_REBOOT_SLOT], NOW);
  assert.equal(ann(0)[ANNOTATION_SLOT_POOL], "workers");
  assert.equal(assigns[0].patch.spec, undefined, "already cordoned: not cordoned again");
  assert.deepEqual(assigns[1].patch.spec, { unschedulable: true });
  const mirrors = ofKind(plan, "patchBootcNode").filter((a) =>
    a.why === "mirror prior cordon state"
  );
  assert.deepEqual(
    mirrors.map((a) => (a.patch.metadata as { annotations: Record<string, string> }).annotations),
    [{ [ANNOTATION_WAS_CORDONED]: "true" }, { [ANNOTATION_WAS_CORDONED]: "false" }],
  );
  // The Node record is written before the BootcNode mirror.
  const order = plan.actions.map((a) => `${a.kind}/${"node" in a ? a.node : ""}`);
  assert.ok(order.indexOf("patchNode/n00") < order.indexOf("patchBootcNode/n00"));
  assert.ok(plan.events.some((e) => e.reason === "SlotAssigned"));
});

Deno.test("slots: occupied slots are counted from the annotations", () => {
  const fleet = stagedFleet(4);
  fleet.bootcNodes[0] = bootcNode("n00", {
    phase: "rebooting",
    slotAt: EARLIER,
    drainedAt: EARLIER,
    state: "Booted",
  });
  fleet.nodes[0].unschedulable = true;
  const plan = planPool(input(pool({ maxUnavailable: 2 }), fleet));
  assert.deepEqual(withWhy(plan, "assign slot"), ["n01"]);
  assert.equal(plan.status?.slotsInUse, 2);
});

Deno.test("slots: only Staged, Ready nodes are candidates", () => {
  const plan = planPool(input(pool({ maxUnavailable: 5 }), {
    nodes: ["a", "b", "c", "d", "e"].map((x) => node(x, x === "e" ? { ready: false } : {})),
    bootcNodes: [
      bootcNode("a", { phase: "staging" }),
      bootcNode("b", { phase: "degraded" }),
      bootcNode("c", { phase: "pending" }),
      bootcNode("d", { phase: "staged" }),
      bootcNode("e", { phase: "staged" }),
    ],
  }));
  assert.deepEqual(withWhy(plan, "assign slot"), ["d"]);
});

Deno.test("drain: evicts only what must leave, and requests the reboot once drained and cordoned", () => {
  const base = {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [bootcNode("n1", { phase: "staged", slotAt: EARLIER })],
  };
  const busy = planPool(input(pool(), {
    ...base,
    pods: [
      pod("web-1", "n1"),
      pod("ds", "n1", { daemonSet: true }),
      pod("m", "n1", { mirror: true }),
    ],
  }));
  assert.deepEqual(ofKind(busy, "evict").map((a) => a.pods.map((p) => p.name)), [["web-1"]]);
  assert.equal(withWhy(busy, "request reboot").length, 0);
  assert.ok(busy.draining);
  assert.ok(busy.pollAfterMs !== undefined && busy.pollAfterMs <= 5000);

  const done = planPool(input(pool(), { ...base, pods: [pod("ds", "n1", { daemonSet: true })] }));
  const drained = ofKind(done, "patchNode").find((a) => a.why === "record drain");
  assert.deepEqual(drained?.patch, {
    metadata: {
      annotations: { [ANNOTATION_DRAINED_AT]: NOW, [ANNOTATION_DRAINED_FOR]: image("b") },
    },
  });
  assert.deepEqual(drained?.observe, { metric: "drain_seconds", seconds: 60 });
  const reboot = ofKind(done, "patchBootcNode").find((a) => a.why === "request reboot");
  assert.deepEqual(reboot?.patch, {
    spec: { desiredImageState: "Booted" },
    metadata: { annotations: { [ANNOTATION_SPEC_GENERATION]: "1", [ANNOTATION_SPEC_SINCE]: NOW } },
  });
  // The Node records the finished drain before Booted is asked for.
  assert.ok(done.actions.indexOf(drained!) < done.actions.indexOf(reboot!));

  // Not before the cordon is visible in the cache.
  const uncordoned = planPool(input(pool(), {
    ...base,
    nodes: [node("n1", { unschedulable: false })],
  }));
  assert.equal(withWhy(uncordoned, "request reboot").length, 0);
  assert.deepEqual(withWhy(uncordoned, "cordon"), ["n1"]);
});

Deno.test("drain: a drain past its timeout degrades the pool naming pods and PDBs, keeps the slot", () => {
  const plan = planPool(input(pool({ drainTimeoutSeconds: 30 }), {
    nodes: [node("n1", { unschedulable: true }), node("n2")],
    bootcNodes: [
      bootcNode("n1", { phase: "staged", slotAt: EARLIER }),
      bootcNode("n2", { phase: "staged" }),
    ],
    pods: [pod("web-1", "n1")],
    pdbs: [pdb("web-pdb", "web", 0)],
  }));
  assert.equal(degraded(plan.status)?.reason, "NodeDegraded");
  assert.match(
    degraded(plan.status)?.message ?? "",
    /drain of node n1 did not finish within 30s: pod default\/web-1 \(PodDisruptionBudget default\/web-pdb allows 0/,
  );
  assert.equal(plan.status?.slotsInUse, 1);
  assert.equal(plan.status?.degradedCount, 1);
  assert.equal(withWhy(plan, "assign slot").length, 0);
  const ev = plan.events.find((e) => e.reason === "DrainBlocked");
  assert.ok(ev?.onceKey);
  // Evictions are still retried: the budget may allow one later.
  assert.equal(ofKind(plan, "evict").length, 1);
});

Deno.test("drain: no second slot for a node whose drain needs a disruption a draining node waits for", () => {
  const plan = planPool(input(pool({ maxUnavailable: 3 }), {
    nodes: [node("n1", { unschedulable: true }), node("n2"), node("n3")],
    bootcNodes: [
      bootcNode("n1", { phase: "staged", slotAt: EARLIER }),
      bootcNode("n2", { phase: "staged" }),
      bootcNode("n3", { phase: "staged" }),
    ],
    pods: [pod("web-1", "n1"), pod("web-2", "n2"), pod("db-0", "n3", { labels: { app: "db" } })],
    pdbs: [pdb("web-pdb", "web", 1), pdb("db-pdb", "db", 1)],
  }));
  assert.deepEqual(withWhy(plan, "assign slot"), ["n3"]);
  assert.match(upToDate(plan.status)?.message ?? "", /waiting on disruption budgets: n2/);
});

Deno.test("drain: with no drain running a PDB-blocked node still gets a slot (one at a time)", () => {
  const plan = planPool(input(pool({ maxUnavailable: 2 }), {
    nodes: [node("n1"), node("n2")],
    bootcNodes: [bootcNode("n1", { phase: "staged" }), bootcNode("n2", { phase: "staged" })],
    pods: [pod("web-1", "n1"), pod("web-2", "n2")],
    pdbs: [pdb("web-pdb", "web", 0)],
  }));
  assert.deepEqual(withWhy(plan, "assign slot"), ["n1"]);
});

const releaseCases: {
  name: string;
  wasCordoned: boolean;
  ready: boolean;
  readySince?: string;
  minReadySeconds?: number;
  released: boolean;
  uncordon: boolean;
}[] = [
  {
    name: "ready: released and uncordoned",
    wasCordoned: false,
    ready: true,
    released: true,
    uncordon: true,
  },
  {
    name: "was cordoned before: stays cordoned",
    wasCordoned: true,
    ready: true,
    released: true,
    uncordon: false,
  },
  {
    name: "not Ready: slot held",
    wasCordoned: false,
    ready: false,
    released: false,
    uncordon: false,
  },
  {
    name: "Ready for less than minReadySeconds: slot held",
    wasCordoned: false,
    ready: true,
    readySince: "2026-01-01T00:59:50Z",
    minReadySeconds: 30,
    released: false,
    uncordon: false,
  },
  {
    // The Node's clock ahead of the controller's: no minReadySeconds, nothing to wait for.
    name: "Ready since a time still ahead of the controller's clock: released",
    wasCordoned: false,
    ready: true,
    readySince: "2026-01-04T00:00:00Z",
    released: true,
    uncordon: true,
  },
  {
    name: "Ready for longer than minReadySeconds: released",
    wasCordoned: false,
    ready: true,
    readySince: "2026-01-01T00:59:00Z",
    minReadySeconds: 30,
    released: true,
    uncordon: true,
  },
];
for (const c of releaseCases) {
  Deno.test(`release: ${c.name}`, () => {
    const bn = bootcNode("n1", {
      booted: image("b"),
      slotAt: "2026-01-01T00:50:00Z",
      drainedAt: EARLIER,
      wasCordoned: c.wasCordoned,
      state: "Booted",
      verifiedAt: c.readySince,
    });
    // Its daemon reported on the reboot request (and booted the target).
    bn.metadata.generation = 3;
    bn.status!.observedGeneration = 3;
    const plan = planPool(input(pool({ minReadySeconds: c.minReadySeconds ?? 0 }), {
      nodes: [node("n1", {
        unschedulable: true,
        ready: c.ready,
        readySince: c.readySince ?? "2026-01-01T00:00:00Z",
      })],
      bootcNodes: [bn],
    }));
    const nodeRelease = ofKind(plan, "patchNode").find((a) => a.why === "release slot");
    const bnRelease = ofKind(plan, "patchBootcNode").find((a) => a.why === "release slot");
    assert.equal(nodeRelease !== undefined, c.released);
    assert.equal(nodeRelease?.patch.spec !== undefined, c.uncordon);
    assert.equal(plan.status?.slotsInUse, c.released ? 0 : 1);
    if (c.released) {
      assert.deepEqual(nodeRelease?.observe, { metric: "update_seconds", seconds: 600 });
      assert.deepEqual(nodeRelease?.patch.metadata, {
        annotations: Object.fromEntries(
          [
            ANNOTATION_IN_REBOOT_SLOT,
            ANNOTATION_SLOT_POOL,
            ANNOTATION_WAS_CORDONED,
            ANNOTATION_DRAINED_AT,
            ANNOTATION_DRAINED_FOR,
          ].map((k) => [k, null]),
        ),
      });
      // The mirror and the reboot request go first, then the Node record.
      // The revoke carries its time: the daemon's report on it is due from then.
      assert.deepEqual(bnRelease?.patch, {
        metadata: {
          annotations: {
            [ANNOTATION_WAS_CORDONED]: null,
            [ANNOTATION_SPEC_GENERATION]: "4",
            [ANNOTATION_SPEC_SINCE]: NOW,
            // The verdict rides in the release: the daemon records Verified and Updated
            // when it acknowledges the revoke (no status write of the controller's).
            [ANNOTATION_VERIFIED_FOR]: image("b"),
            [ANNOTATION_VERIFIED_AT]: NOW,
            // Its generation: no later spec change, by any writer, brings it back.
            [ANNOTATION_VERIFIED_GENERATION]: "4",
          },
        },
        spec: { desiredImageState: "Staged" },
      });
      assert.deepEqual(ofKind(plan, "patchBootcNodeStatus"), []);
      assert.deepEqual(plan.actions, [bnRelease, nodeRelease]);
      assert.ok(plan.events.some((e) => e.reason === "NodeUpdated"));
    }
    if (!c.released && c.minReadySeconds) assert.equal(plan.requeueAfterMs, 20_000);
  });
}

/** n1 verified on the target and Ready (released by the plan), and staged nodes waiting. */
function handOffScene(p: ReturnType<typeof pool>, waiting: string[]) {
  return input(p, {
    nodes: [
      node("n1", { unschedulable: true, readySince: "2026-01-01T00:00:00Z" }),
      ...waiting.map((n) => node(n)),
    ],
    bootcNodes: [
      bootcNode("n1", {
        booted: image("b"),
        slotAt: "2026-01-01T00:50:00Z",
        drainedAt: EARLIER,
        wasCordoned: false,
        state: "Booted",
        verifiedAt: "2026-01-01T00:00:00Z",
      }),
      ...waiting.map((n) => bootcNode(n, { phase: "staged" })),
    ],
  });
}

Deno.test("hand-off: a slot this plan releases goes to the next node in the same plan, after the release", () => {
  const plan = planPool(handOffScene(pool({ maxUnavailable: 1 }), ["n2", "n3"]));
  const release = plan.actions.findIndex((a) => a.kind === "patchNode" && a.why === "release slot");
  const grant = plan.actions.findIndex((a) => a.kind === "patchNode" && a.intent === "grant");
  assert.ok(release >= 0 && grant > release, `release at ${release}, grant at ${grant}`);
  assert.deepEqual(withWhy(plan, "assign slot"), ["n2"]);
  assert.equal(plan.status?.slotsInUse, 1);
  assert.equal(plan.status?.slots?.inUse, 1);
  assert.deepEqual(plan.status?.queue?.map((q) => q.node), ["n3"]);
});

Deno.test("hand-off: a canary node released by this plan counts as updated, not as room for one more", () => {
  const p = pool({ maxUnavailable: 2 });
  p.spec.rollout = { ...p.spec.rollout, canary: { nodes: 1, soakSeconds: 60 } };
  const plan = planPool(handOffScene(p, ["n2", "n3"]));
  assert.ok(plan.actions.some((a) => a.kind === "patchNode" && a.why === "release slot"));
  assert.deepEqual(withWhy(plan, "assign slot"), []);
});

Deno.test("hand-off under a cluster budget: the released node still counts there, and the wait stays the pool's own pace", () => {
  const i = handOffScene(pool({ maxUnavailable: 1 }), ["n2"]);
  i.budgets = [{ name: "all", spec: { maxUnavailable: 1 } }];
  const plan = planPool(i);
  assert.deepEqual(withWhy(plan, "assign slot"), []);
  const upToDate = plan.status?.conditions?.find((c) => c.type === "UpToDate");
  assert.equal(upToDate?.reason, "RolloutInProgress");
  assert.deepEqual(plan.events.filter((e) => e.type === "Warning" || e.reason === "Waiting"), []);
});

Deno.test("halt: two unhealthy slot nodes stop new assignments", () => {
  const plan = planPool(input(pool({ maxUnavailable: 3 }), {
    nodes: [node("a", { unschedulable: true }), node("b", { unschedulable: true }), node("c")],
    bootcNodes: [
      bootcNode("a", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("b", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("c", { phase: "staged" }),
    ],
  }));
  assert.equal(withWhy(plan, "assign slot").length, 0);
  assert.equal(degraded(plan.status)?.reason, "RolloutHalted");
  assert.match(degraded(plan.status)?.message ?? "", /a reports Degraded; b reports Degraded/);
  assert.ok(plan.events.some((e) => e.reason === "RolloutHalted" && e.type === "Warning"));
});

Deno.test("halt: one unhealthy slot node does not stop the rollout", () => {
  const plan = planPool(input(pool({ maxUnavailable: 2 }), {
    nodes: [node("a", { unschedulable: true }), node("c")],
    bootcNodes: [
      bootcNode("a", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("c", { phase: "staged" }),
    ],
  }));
  assert.deepEqual(withWhy(plan, "assign slot"), ["c"]);
  assert.equal(degraded(plan.status)?.reason, "NodeDegraded");
});

Deno.test("halt: a node that does not come back within rebootTimeoutSeconds is unhealthy and reported", () => {
  const nodes = [
    node("a", { unschedulable: true, ready: false }),
    node("b", { unschedulable: true, ready: false }),
    node("c"),
  ];
  const bns = [
    bootcNode("a", { phase: "rebooting", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
    bootcNode("b", { phase: "rebooting", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
    bootcNode("c", { phase: "staged" }),
  ];
  const inTime = planPool(input(pool({ maxUnavailable: 3, rebootTimeoutSeconds: 120 }), {
    nodes,
    bootcNodes: bns,
  }));
  assert.deepEqual(withWhy(inTime, "assign slot"), ["c"]);
  assert.equal(inTime.pollAfterMs, 5_000);
  const late = planPool(input(pool({ maxUnavailable: 3, rebootTimeoutSeconds: 30 }), {
    nodes,
    bootcNodes: bns,
  }));
  assert.equal(withWhy(late, "assign slot").length, 0);
  assert.equal(degraded(late.status)?.reason, "RolloutHalted");
  assert.match(degraded(late.status)?.message ?? "", /did not come back/);
  assert.equal(late.events.filter((e) => e.reason === "RebootTimedOut").length, 2);
});

Deno.test("pause: no new slots, sync goes on, UpToDate says Paused", () => {
  const fleet = stagedFleet(3);
  fleet.bootcNodes[2] = bootcNode("n02", { phase: "idle", desired: image("a") });
  const plan = planPool(input(pool({ paused: true }), fleet));
  assert.equal(withWhy(plan, "assign slot").length, 0);
  assert.deepEqual(withWhy(plan, "sync spec"), ["n02"]);
  assert.equal(upToDate(plan.status)?.reason, "Paused");
  assert.match(upToDate(plan.status)?.message ?? "", /paused/);
});

Deno.test("rollback: changing the image back rolls updated nodes through the normal cycle", () => {
  // Target was b; n1 already updated to b, n2 still on a. The user goes back to a.
  const plan = planPool(input(pool({ ref: image("a") }), {
    nodes: [node("n1"), node("n2")],
    bootcNodes: [
      bootcNode("n1", { booted: image("b"), desired: image("b"), state: "Booted" }),
      bootcNode("n2", { booted: image("a"), desired: image("b"), phase: "staged" }),
    ],
  }));
  const syncs = ofKind(plan, "patchBootcNode").filter((a) => a.why === "sync spec");
  assert.deepEqual(
    syncs.map((s) => [s.node, s.patch.spec]),
    [
      ["n1", { desiredImage: image("a"), desiredImageState: "Staged" }],
      ["n2", { desiredImage: image("a") }],
    ],
  );
  // n2 runs a: up to date. n1 must stage a first; no slot yet.
  assert.equal(plan.status?.updatedCount, 1);
  assert.equal(withWhy(plan, "assign slot").length, 0);
});

Deno.test("status: breakdown message, counts and deployedDigest", () => {
  const plan = planPool(input(pool({ paused: true }), {
    nodes: ["a", "b", "c", "d", "e", "f"].map((x) => node(x)),
    bootcNodes: [
      bootcNode("a", { booted: image("b") }),
      bootcNode("b", { booted: image("b") }),
      bootcNode("c", { phase: "staging" }),
      bootcNode("d", { phase: "staged" }),
      bootcNode("e", { phase: "rebooting" }),
      bootcNode("f", { phase: "degraded" }),
    ],
  }));
  assert.equal(
    upToDate(plan.status)?.message,
    "2/6 updated; 1 staging, 1 staged, 1 rebooting, 1 degraded; no new reboot slots while paused",
  );
  assert.deepEqual(
    [
      plan.status?.nodeCount,
      plan.status?.updatedCount,
      plan.status?.updatingCount,
      plan.status?.degradedCount,
    ],
    [6, 2, 3, 1],
  );
  assert.equal(plan.status?.deployedDigest, undefined);
  assert.equal(degraded(plan.status)?.reason, "NodeDegraded");
  assert.match(degraded(plan.status)?.message ?? "", /node f: error: boom/);

  const done = planPool(input(pool(), {
    nodes: [node("a")],
    bootcNodes: [bootcNode("a", { booted: image("b"), state: "Booted" })],
  }));
  assert.equal(upToDate(done.status)?.status, "True");
  assert.equal(upToDate(done.status)?.reason, "AllUpdated");
  assert.equal(done.status?.deployedDigest, digest("b"));
  assert.equal(done.status?.updateAvailable, false);
  assert.equal(degraded(done.status)?.reason, "Healthy");
  assert.equal(done.status?.observedGeneration, 1);
  assert.ok(done.events.some((e) => e.reason === "RolloutComplete"));
});

Deno.test("status: unchanged inputs give an equal status (no write), conditions keep their time", () => {
  const args = { nodes: [node("a")], bootcNodes: [bootcNode("a", { phase: "staging" })] };
  const first = planPool(input(pool({ paused: true }), args));
  const again = planPool({
    ...input(pool({ paused: true, status: first.status }), args),
    now: new Date("2026-01-01T02:00:00Z"),
  });
  assert.deepEqual(again.status, first.status);
  assert.equal(again.events.length, 0);
});

Deno.test("invalid spec: a bad selector or image ref degrades with InvalidSpec and touches nothing", () => {
  const badSel = planPool(input(
    pool({ selector: { matchExpressions: [{ key: "role", operator: "In", values: [] }] } }),
    {
      nodes: [node("a", { labels: { role: "infra", [LABEL_MANAGED]: "" } })],
      bootcNodes: [bootcNode("a")],
    },
  ));
  assert.equal(badSel.actions.length, 0);
  assert.equal(degraded(badSel.status)?.reason, "InvalidSpec");
  assert.match(degraded(badSel.status)?.message ?? "", /requires at least one value/);

  const badRef = planPool(input(pool({ ref: "Quay.io/UPPER CASE" }), { nodes: [node("a")] }));
  assert.equal(badRef.actions.length, 0);
  assert.match(degraded(badRef.status)?.message ?? "", /invalid image reference .*whitespace/);
});

Deno.test("target: a tag resolves through the registry; failures keep the old target and say why", () => {
  const tagged = pool({ ref: `${REPO}:latest` });
  const at = new Date("2026-01-01T00:58:00Z");
  assert.equal(resolutionNeed(tagged, new Date(NOW), undefined).kind, "resolve");
  const ok = planPool(input(tagged, {
    nodes: [node("a")],
    resolution: {
      generation: 1,
      at,
      result: {
        ok: true,
        digest: digest("c"),
        platforms: [{ os: "linux", architecture: "amd64", digest: digest("d") }],
      },
    },
  }));
  assert.equal(ok.status?.targetDigest, digest("c"));
  assert.equal(ok.status?.targetImage, image("c"));
  assert.equal(ok.status?.lastResolvedTime, "2026-01-01T00:58:00Z");
  assert.deepEqual(ok.status?.targetPlatforms?.map((p) => p.digest), [digest("d")]);
  // Next resolution is due one poll interval (5 min) after the last: 3 min from now.
  assert.equal(ok.requeueAfterMs, 3 * 60_000);
  const okPool = pool({ ref: `${REPO}:latest`, status: ok.status });
  assert.equal(resolutionNeed(okPool, new Date(NOW), undefined).kind, "fresh");
  assert.equal(resolutionNeed(okPool, new Date("2026-01-01T01:03:00Z"), undefined).kind, "resolve");
  okPool.spec.image.pollIntervalSeconds = 60;
  assert.equal(resolutionNeed(okPool, new Date(NOW), undefined).kind, "resolve");

  const failed = planPool(input(okPool, {
    nodes: [node("a")],
    resolution: {
      generation: 1,
      at: new Date(NOW),
      result: { ok: false, message: "unauthorized: bad creds" },
    },
  }));
  assert.equal(failed.status?.targetDigest, digest("c"));
  assert.equal(degraded(failed.status)?.reason, "ImageResolutionFailed");
  assert.match(
    degraded(failed.status)?.message ?? "",
    /resolving quay.io\/example\/os:latest: unauthorized: bad creds/,
  );
  // After a restart (no memo) a pool that last failed resolves again at once.
  const failedPool = pool({ ref: `${REPO}:latest`, status: failed.status });
  assert.equal(resolutionNeed(failedPool, new Date(NOW), undefined).kind, "resolve");
  // With the memo, the retry waits.
  const memo = { generation: 1, at: new Date(NOW), result: { ok: false as const, message: "x" } };
  assert.equal(resolutionNeed(failedPool, new Date(NOW), memo).kind, "fresh");
  // A spec change (new generation) resolves at once.
  failedPool.metadata.generation = 2;
  assert.equal(resolutionNeed(failedPool, new Date(NOW), memo).kind, "resolve");
});

Deno.test("target: a multi-arch node is up to date on the per-arch digest", () => {
  const index = digest("1");
  const plan = planPool(input(pool({ ref: `${REPO}:v2` }), {
    nodes: [node("arm")],
    bootcNodes: [bootcNode("arm", {
      desired: `${REPO}@${index}`,
      booted: `${REPO}:v2`,
      bootedDigest: digest("2"),
      arch: "arm64",
    })],
    resolution: {
      generation: 1,
      at: new Date(NOW),
      result: {
        ok: true,
        digest: index,
        platforms: [{ os: "linux", architecture: "arm64", digest: digest("2") }],
      },
    },
  }));
  assert.equal(plan.status?.updatedCount, 1);
  assert.equal(plan.status?.deployedDigest, index);
});

Deno.test("deletion: a pool being deleted hands its nodes back, then drops its finalizer", () => {
  const p = pool();
  p.metadata.deletionTimestamp = NOW;
  const plan = planPool(input(p, {
    nodes: [node("a", { unschedulable: true })],
    bootcNodes: [bootcNode("a", { phase: "staged", slotAt: EARLIER, wasCordoned: false })],
  }));
  assert.deepEqual(plan.actions.map((a) => a.kind), ["deleteBootcNode", "patchNode"]);
  assert.equal(plan.status, undefined);
  const empty = planPool(input(p, { nodes: [node("a")] }));
  assert.deepEqual(empty.actions, [{ kind: "removeFinalizer" }]);
  assert.ok(p.metadata.finalizers?.includes(POOL_FINALIZER));
});

Deno.test("membership: a slot holder leaving while its BootcNode is held does not hold the budget", () => {
  const p = pool({ maxUnavailable: 1 });
  const held = bootcNode("a", { phase: "staged", slotAt: EARLIER, wasCordoned: false });
  held.metadata.finalizers = ["example.com/hold"];
  const b = bootcNode("b", { phase: "staged" });
  // Pass 1: relabelled out of the pool while in its slot; deleted and restored.
  const first = planPool(input(p, {
    nodes: [
      node("a", { labels: { role: "other", "bootc.dev/managed": "" }, unschedulable: true }),
      node("b"),
    ],
    bootcNodes: [held, b],
  }));
  assert.deepEqual(first.actions.map((a) => `${a.kind}:${"node" in a ? a.node : ""}`), [
    "deleteBootcNode:a",
    "patchNode:a",
  ]);
  assert.equal(
    withWhy(first, "assign slot").length,
    0,
    "a still counts in the pass that restores it",
  );
  // Pass 2: the Node is restored, the BootcNode terminating with its cordon mirror.
  const terminating = structuredClone(held);
  terminating.metadata.deletionTimestamp = NOW;
  // (The fixture keeps the Node's record on the BootcNode; the restored Node has none.)
  delete terminating.metadata.annotations![ANNOTATION_IN_REBOOT_SLOT];
  const restored = node("a", { labels: { role: "other" } });
  const second = planPool(input(p, { nodes: [restored, node("b")], bootcNodes: [terminating, b] }));
  assert.deepEqual(withWhy(second, "assign slot"), ["b"]);
  assert.deepEqual(withWhy(second, "drop mirror"), ["a"]);
  assert.equal(ofKind(second, "deleteBootcNode").length, 0);
});

Deno.test("deletion: a BootcNode already terminating is not deleted again on every pass", () => {
  const p = pool();
  p.metadata.deletionTimestamp = NOW;
  const held = bootcNode("a", { phase: "idle" });
  held.metadata.deletionTimestamp = EARLIER; // someone else's finalizer holds it
  held.metadata.finalizers = ["example.com/hold"];
  const released = node("a", { labels: { role: "worker" } }); // its first pass unlabelled it
  const plan = planPool(input(p, { nodes: [released], bootcNodes: [held] }));
  // Nothing left to do for it, and the pool keeps its finalizer until it is gone.
  assert.deepEqual(plan.actions, []);
  assert.equal(plan.events.filter((e) => e.reason === "NodeRemoved").length, 0);
  // A disrupted Node is still restored.
  const disrupted = bootcNode("a", { phase: "staged", slotAt: EARLIER, wasCordoned: false });
  disrupted.metadata.deletionTimestamp = EARLIER;
  const again = planPool(input(p, {
    nodes: [node("a", { unschedulable: true })],
    bootcNodes: [disrupted],
  }));
  assert.deepEqual(again.actions.map((a) => a.kind), ["patchNode"]);
});

Deno.test("pods: with podsListed, unknown nodes are neither drained nor given a slot, and are asked for", () => {
  const args = input(pool({ maxUnavailable: 2 }), {
    nodes: [node("n1", { unschedulable: true }), node("n2"), node("n3")],
    bootcNodes: [
      bootcNode("n1", { phase: "staged", slotAt: EARLIER }),
      bootcNode("n2", { phase: "staged" }),
      bootcNode("n3", { phase: "staged" }),
    ],
  });
  const first = planPool({ ...args, podsListed: new Set() });
  assert.deepEqual(first.needPods, ["n1", "n2", "n3"]);
  assert.equal(withWhy(first, "assign slot").length, 0);
  assert.equal(withWhy(first, "request reboot").length, 0);
  const second = planPool({ ...args, podsListed: new Set(first.needPods) });
  assert.deepEqual(second.needPods, []);
  assert.deepEqual(withWhy(second, "request reboot"), ["n1"]);
  assert.deepEqual(withWhy(second, "assign slot"), ["n2"]);
});

/**
 * Pool "infra" holds n1 (its Node object deleted while its daemon says Rebooting since 00:00;
 * its BootcNode mirrors the slot unless `mirror` is false); pool "workers" has n2 staged; one
 * cluster-wide budget allows one node down.
 */
function otherPoolHoldsDeletedNode(
  infraRebootTimeoutSeconds: number,
  options: { mirror?: boolean; n1?: boolean } = {},
) {
  const workers = pool({ name: "workers" });
  const infra = pool({ name: "infra", rebootTimeoutSeconds: infraRebootTimeoutSeconds });
  const rebootingN1 = bootcNode("n1", {
    pool: "infra",
    phase: "rebooting",
    ...(options.mirror === false ? {} : { slotAt: EARLIER }),
    drainedAt: EARLIER,
    state: "Booted",
  });
  return planPool({
    ...input(workers, {
      nodes: [node("n2")],
      bootcNodes: [
        ...(options.n1 === false ? [] : [rebootingN1]),
        bootcNode("n2", { phase: "staged" }),
      ],
      otherPools: [infra],
    }),
    poolObjects: [workers, infra],
    budgets: [{ name: "one-down", spec: { maxUnavailable: 1 } }],
  });
}

Deno.test("cluster budget: another pool's node rebooting after its Node was deleted still counts", () => {
  // n1 has no Node, so no disruption record to count by; it may be down right now.
  const held = otherPoolHoldsDeletedNode(7200);
  assert.deepEqual(withWhy(held, "assign slot"), []);
  assert.match(
    upToDate(held.status)?.message ?? "",
    /BootcDisruptionBudget one-down: 1 of 1 allowed nodes disrupted .*counted: n1, disrupted with its Node object gone/,
  );
  // Its mirror removed too, the daemon's Rebooting keeps it counted within infra's timeout,
  // and workers is planned again when that passes (02:00, an hour from now): no write marks it.
  const unmirrored = otherPoolHoldsDeletedNode(7200, { mirror: false });
  assert.deepEqual(withWhy(unmirrored, "assign slot"), []);
  assert.equal(unmirrored.requeueAfterMs, 3_600_000);
  // ... and past it too: infra holds it until a person deletes its BootcNode (adv19 F2).
  assert.deepEqual(withWhy(otherPoolHoldsDeletedNode(1800, { mirror: false }), "assign slot"), []);
  assert.deepEqual(withWhy(otherPoolHoldsDeletedNode(1800), "assign slot"), []);
  // Its BootcNode deleted: nothing holds it any more.
  assert.deepEqual(withWhy(otherPoolHoldsDeletedNode(1800, { n1: false }), "assign slot"), ["n2"]);
});

Deno.test("cluster budget: another pool's node back without its record still counts (its mirror)", () => {
  // n1's Node is back (NotReady, no record yet: infra restores it on its next pass).
  const workers = pool({ name: "workers" });
  const infra = pool({ name: "infra", selector: { matchLabels: { role: "infra" } } });
  const plan = planPool({
    ...input(workers, {
      nodes: [node("n1", { labels: { role: "infra" }, ready: false }), node("n2")],
      bootcNodes: [
        bootcNode("n1", { pool: "infra", phase: "rebooting", slotAt: EARLIER, state: "Booted" }),
        bootcNode("n2", { phase: "staged" }),
      ],
      otherPools: [infra],
    }),
    poolObjects: [workers, infra],
    budgets: [{ name: "one-down", spec: { maxUnavailable: 1 } }],
  });
  assert.deepEqual(withWhy(plan, "assign slot"), []);
  assert.match(upToDate(plan.status)?.message ?? "", /one-down: 1 of 1 allowed nodes disrupted/);
});

Deno.test("membership: an orphaned node's record goes with its BootcNode's mirror, mirror first", () => {
  // n1 carries this pool's record but no longer matches (its label changed); its BootcNode
  // is still there (orphaned). The mirror left on it would read as a lost record to a pool
  // adopting it later, and be "repaired" into a slot no gate granted.
  const plan = planPool(input(pool(), {
    nodes: [
      node("n1", {
        labels: { role: "infra", [LABEL_MANAGED]: "" },
        unschedulable: true,
        annotations: {
          [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
          [ANNOTATION_SLOT_POOL]: "workers",
          [ANNOTATION_WAS_CORDONED]: "false",
        },
      }),
    ],
    bootcNodes: [{
      ...bootcNode("n1", { phase: "idle", slotAt: EARLIER, wasCordoned: false }),
      metadata: {
        ...bootcNode("n1", { slotAt: EARLIER, wasCordoned: false }).metadata,
        ownerReferences: [],
      },
    }],
  }));
  const n1 = plan.actions.filter((a) => "node" in a && a.node === "n1");
  const kinds = n1.map((a) => `${a.kind}/${"why" in a ? a.why : ""}`);
  const mirror = kinds.indexOf("patchBootcNode/drop mirror");
  const restore = kinds.indexOf("patchNode/restore orphaned node");
  assert.ok(mirror >= 0 && restore > mirror, kinds.join(", "));
});

/** n1's BootcNode left ownerless by an earlier pool, still mirroring a prior cordon ("false"). */
function ownerlessWithMirror(opts: Parameters<typeof bootcNode>[1]): BootcNode {
  const orphan = bootcNode("n1", opts);
  return {
    ...orphan,
    metadata: {
      ...orphan.metadata,
      annotations: { ...orphan.metadata.annotations, [ANNOTATION_WAS_CORDONED]: "false" },
      ownerReferences: [],
    },
  };
}

Deno.test("membership: a pool adopting a BootcNode drops a mirror no record backs (no ungated slot)", () => {
  // n1's BootcNode was left by an earlier pool (orphaned mid-rollout) with its mirror; its
  // Node carries no record. Read as a lost record, the mirror would be repaired into a slot.
  const plan = planPool(input(pool({ paused: true }), {
    nodes: [node("n1")],
    bootcNodes: [ownerlessWithMirror({ phase: "staged" })],
  }));
  assert.deepEqual(ofKind(plan, "patchNode").filter((a) => a.why === "repair record"), []);
  assert.deepEqual(withWhy(plan, "assign slot"), []);
  const sync = ofKind(plan, "patchBootcNode").find((a) => a.node === "n1");
  const annotations = (sync?.patch.metadata as { annotations?: Record<string, unknown> })
    ?.annotations;
  assert.equal(annotations?.[ANNOTATION_WAS_CORDONED], null, JSON.stringify(sync));
  assert.ok(plan.events.some((e) => e.reason === "StaleMirrorDropped"));
  assert.equal(plan.status?.slotsInUse, 0);
});

Deno.test("membership: adopting a stale mirror finishes its release: uncordoned as before, then dropped", () => {
  // n1 was cordoned by an earlier pool's grant (it was not cordoned before: mirror "false");
  // that pool is gone, the record on the Node removed, no reboot under way.
  const plan = planPool(input(pool({ paused: true }), {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [ownerlessWithMirror({ phase: "staged" })],
  }));
  const n1 = plan.actions.filter((a) => "node" in a && a.node === "n1");
  const whys = n1.map((a) => ("why" in a ? a.why : a.kind));
  assert.deepEqual(whys.slice(0, 2), ["restore cordon (stale mirror)", "sync spec"], whys.join());
  const uncordon = ofKind(plan, "patchNode").find((a) => a.why === "restore cordon (stale mirror)");
  assert.deepEqual(uncordon?.patch, { spec: { unschedulable: null } });
  assert.deepEqual(withWhy(plan, "assign slot"), []);
});

Deno.test("membership: adopting a mirror while its reboot is under way repairs the record (it may be down)", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [ownerlessWithMirror({ phase: "rebooting", state: "Booted" })],
  }));
  assert.ok(!plan.events.some((e) => e.reason === "StaleMirrorDropped"));
  assert.ok(
    ofKind(plan, "patchNode").some((a) => a.why === "repair record"),
    JSON.stringify(plan.actions.map((a) => "why" in a ? a.why : a.kind)),
  );
  assert.equal(plan.status?.slotsInUse, 1);
});
