import assert from "node:assert/strict";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  findCondition,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { planGonePool } from "./hand_back.ts";
import { bootcNode, image, input, node, pod, pool } from "../testing/fixtures.ts";

const EARLIER = "2026-01-01T00:59:00Z";

function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}
function granted(plan: Plan): string[] {
  return ofKind(plan, "patchNode").filter((a) => a.why === "assign slot").map((a) => a.node);
}
function annotationsOf(a: { patch: Record<string, unknown> } | undefined) {
  return (a?.patch.metadata as { annotations?: Record<string, string | null> } | undefined)
    ?.annotations;
}

Deno.test("tamper: Booted set by hand on a staged node without a slot is reset, with a warning", () => {
  const plan = planPool(input(pool({ paused: true }), {
    nodes: [node("n1")],
    bootcNodes: [bootcNode("n1", { phase: "staged", state: "Booted" })],
  }));
  const sync = ofKind(plan, "patchBootcNode").find((a) => a.why === "sync spec");
  assert.deepEqual(sync?.patch.spec, { desiredImageState: "Staged" });
  const ev = plan.events.find((e) => e.reason === "UnauthorizedRebootRequest");
  assert.equal(ev?.type, "Warning");
  assert.match(ev?.message ?? "", /node n1/);
});

Deno.test("tamper: Booted on a node in a slot whose drain is for another image is reset", () => {
  const n = node("n1", {
    unschedulable: true,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
      [ANNOTATION_SLOT_POOL]: "workers",
      [ANNOTATION_WAS_CORDONED]: "false",
      [ANNOTATION_DRAINED_AT]: EARLIER,
      [ANNOTATION_DRAINED_FOR]: image("z"),
    },
  });
  const bn = bootcNode("n1", { phase: "staged", state: "Booted", wasCordoned: false });
  bn.metadata.annotations = { [ANNOTATION_WAS_CORDONED]: "false" };
  const plan = planPool(input(pool(), { nodes: [n], bootcNodes: [bn] }));
  assert.ok(plan.events.some((e) => e.reason === "UnauthorizedRebootRequest"));
  // The drain is redone for the right image (no pods: done at once) and Booted asked again.
  const drained = ofKind(plan, "patchNode").find((a) => a.why === "record drain");
  assert.equal(annotationsOf(drained)?.[ANNOTATION_DRAINED_FOR], image("b"));
});

Deno.test("tamper: a slot annotation removed by hand is restored and still counts (no second slot)", () => {
  const n1 = node("n1", {
    unschedulable: true,
    annotations: { [ANNOTATION_WAS_CORDONED]: "false", [ANNOTATION_SLOT_POOL]: "workers" },
  });
  const bn1 = bootcNode("n1", { phase: "staged" });
  bn1.metadata.annotations = { [ANNOTATION_WAS_CORDONED]: "false" };
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [n1, node("n2")],
    bootcNodes: [bn1, bootcNode("n2", { phase: "staged" })],
    pods: [pod("web", "n1")],
  }));
  assert.deepEqual(granted(plan), []);
  assert.equal(plan.status?.slotsInUse, 1);
  const repair = ofKind(plan, "patchNode").find((a) => a.why === "repair record");
  assert.ok(annotationsOf(repair)?.[ANNOTATION_IN_REBOOT_SLOT]);
  assert.ok(
    plan.events.some((e) => e.reason === "DisruptionRecordRepaired" && /n1/.test(e.message)),
  );
  // The prior cordon state was not touched.
  assert.equal(annotationsOf(repair)?.[ANNOTATION_WAS_CORDONED], undefined);
});

Deno.test("tamper: a Node record deleted whole comes back from the BootcNode's mirror", () => {
  const bn1 = bootcNode("n1", { phase: "staged" });
  bn1.metadata.annotations = { [ANNOTATION_WAS_CORDONED]: "false" };
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [node("n1", { unschedulable: true }), node("n2")],
    bootcNodes: [bn1, bootcNode("n2", { phase: "staged" })],
    pods: [pod("web", "n1")],
  }));
  assert.deepEqual(granted(plan), []);
  const repair = ofKind(plan, "patchNode").find((a) => a.why === "repair record");
  assert.equal(annotationsOf(repair)?.[ANNOTATION_WAS_CORDONED], "false");
  assert.equal(annotationsOf(repair)?.[ANNOTATION_SLOT_POOL], "workers");
});

Deno.test("tamper: prior cordon state lost on both copies: kept cordoned, reported", () => {
  const n1 = node("n1", {
    unschedulable: true,
    annotations: { [ANNOTATION_IN_REBOOT_SLOT]: EARLIER, [ANNOTATION_SLOT_POOL]: "workers" },
  });
  const plan = planPool(input(pool(), {
    nodes: [n1],
    bootcNodes: [bootcNode("n1", { phase: "staged" })],
    pods: [pod("web", "n1")],
  }));
  const repair = ofKind(plan, "patchNode").find((a) => a.why === "repair record");
  assert.equal(annotationsOf(repair)?.[ANNOTATION_WAS_CORDONED], "true");
  assert.ok(plan.events.some((e) => e.reason === "PriorCordonStateLost"));
  assert.match(findCondition(plan.status?.conditions, "Degraded")?.message ?? "", /stay cordoned/);
});

Deno.test("tamper: a BootcNode deleted mid-drain is recreated; the node keeps its slot", () => {
  const n1 = node("n1", {
    unschedulable: true,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
      [ANNOTATION_SLOT_POOL]: "workers",
      [ANNOTATION_WAS_CORDONED]: "false",
    },
  });
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [n1, node("n2")],
    bootcNodes: [bootcNode("n2", { phase: "staged" })],
  }));
  assert.deepEqual(ofKind(plan, "createBootcNode").map((a) => a.node), ["n1"]);
  assert.deepEqual(granted(plan), []);
  assert.equal(plan.status?.slotsInUse, 1);
  assert.ok(plan.events.some((e) => e.reason === "BootcNodeRecreated"));
  // No uncordon: the update resumes.
  assert.equal(ofKind(plan, "patchNode").filter((a) => a.node === "n1" && a.patch.spec).length, 0);
});

/** Plans n1, drained for image b and asked to reboot, found uncordoned with a pod on it. */
function uncordonedAfterDrain(phase: "staged" | "rebooting"): Plan {
  const n1 = node("n1", {
    unschedulable: false,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
      [ANNOTATION_SLOT_POOL]: "workers",
      [ANNOTATION_WAS_CORDONED]: "false",
      [ANNOTATION_DRAINED_AT]: EARLIER,
      [ANNOTATION_DRAINED_FOR]: image("b"),
    },
  });
  const bn = bootcNode("n1", { phase, state: "Booted" });
  bn.metadata.annotations = { [ANNOTATION_WAS_CORDONED]: "false" };
  return planPool(input(pool(), { nodes: [n1], bootcNodes: [bn], pods: [pod("w", "n1")] }));
}

Deno.test("tamper: a node uncordoned after its drain is cordoned and drained again", () => {
  const plan = uncordonedAfterDrain("staged");
  const why = plan.actions.map((a) => "why" in a ? a.why : a.kind);
  // One write: a cordon landing without the withdrawal would read as a finished drain again
  // (adv19 F6: the node rebooted with the pod that landed while it was uncordoned).
  assert.ok(why.includes("cordon and withdraw drain"));
  const cordon = ofKind(plan, "patchNode").find((a) => a.why === "cordon and withdraw drain");
  assert.deepEqual(cordon?.patch, {
    spec: { unschedulable: true },
    metadata: { annotations: { [ANNOTATION_DRAINED_AT]: null, [ANNOTATION_DRAINED_FOR]: null } },
  });
  assert.ok(why.includes("withdraw reboot request"));
  assert.ok(plan.events.some((e) => e.reason === "DrainInvalidated"));
  assert.equal(ofKind(plan, "evict").length, 1);
});

Deno.test("tamper: a node uncordoned while it says Rebooting: cordoned, drain withdrawn, reboot request kept", () => {
  const plan = uncordonedAfterDrain("rebooting");
  const why = plan.actions.map((a) => "why" in a ? a.why : a.kind);
  // The daemon's last Node read before bootc then refuses until a new drain is recorded.
  assert.ok(why.includes("cordon and withdraw drain"), why.join(", "));
  assert.ok(!why.includes("withdraw reboot request"), "a reboot under way is not taken back");
  assert.ok(plan.events.some((e) => e.reason === "DrainInvalidated"));
  // No eviction while the daemon says Rebooting (the node may be going down); the slot stays.
  assert.equal(ofKind(plan, "evict").length, 0);
  assert.equal(plan.status?.slotsInUse, 1);
  assert.deepEqual(granted(plan), []);
});

Deno.test("orphan: a node carrying this pool's record but no longer a member is restored", () => {
  const n1 = node("n1", {
    labels: { role: "other" },
    unschedulable: true,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
      [ANNOTATION_SLOT_POOL]: "workers",
      [ANNOTATION_WAS_CORDONED]: "false",
    },
  });
  const plan = planPool(input(pool(), { nodes: [n1] }));
  const restore = ofKind(plan, "patchNode").find((a) => a.why === "restore orphaned node");
  assert.deepEqual(restore?.patch.spec, { unschedulable: null });
  assert.equal(annotationsOf(restore)?.[ANNOTATION_IN_REBOOT_SLOT], null);
  assert.ok(plan.events.some((e) => e.reason === "OrphanRestored"));
});

Deno.test("orphan: a record of this pool on a node another pool matches is restored here; once that pool has its BootcNode, counted only", () => {
  const other = pool({ name: "infra", selector: { matchLabels: { role: "infra" } } });
  const n1 = node("n1", {
    labels: { role: "infra" },
    unschedulable: true,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
      [ANNOTATION_SLOT_POOL]: "workers",
      [ANNOTATION_WAS_CORDONED]: "false",
    },
  });
  // No BootcNode: the pool it joined may have no target to create one; this pool restores it.
  const mine = planPool(input(pool(), { nodes: [n1], otherPools: [other] }));
  const restore = ofKind(mine, "patchNode").find((a) => a.why === "restore orphaned node");
  assert.deepEqual(restore?.patch.spec, { unschedulable: null });
  // Its BootcNode owned by the pool it joined: that pool hands it back (record_origin.ts);
  // here it counts, and is named, until then.
  const owned = bootcNode("n1", { phase: "staged", pool: "infra" });
  const counted = planPool(input(pool(), {
    nodes: [n1, node("n2")],
    bootcNodes: [owned, bootcNode("n2", { phase: "staged" })],
    otherPools: [other],
  }));
  assert.equal(ofKind(counted, "patchNode").filter((a) => a.node === "n1").length, 0);
  assert.equal(counted.status?.slotsInUse, 1, "n2 waits: n1 still takes the one slot");
  assert.match(
    JSON.stringify(counted.status?.conditions),
    /n1 \(now in pool infra\) still carries this pool's slot/,
  );
  // The pool it joined counts it and hands it back (no reboot under way): never taken over.
  const theirs = planPool(input(other, { nodes: [n1], bootcNodes: [owned], otherPools: [pool()] }));
  assert.equal(theirs.status?.slotsInUse, 1);
  assert.ok(ofKind(theirs, "patchNode").some((a) => a.why === "hand back another pool's slot"));
});

Deno.test("invalid spec mid-rollout: an undrained node is undone, a rebooting node finishes", () => {
  const p = pool({ maxUnavailable: "lots" });
  const record = (drained: boolean) => ({
    [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
    [ANNOTATION_SLOT_POOL]: "workers",
    [ANNOTATION_WAS_CORDONED]: "false",
    ...(drained ? { [ANNOTATION_DRAINED_AT]: EARLIER, [ANNOTATION_DRAINED_FOR]: image("b") } : {}),
  });
  const draining = bootcNode("a", { phase: "staged" });
  draining.metadata.annotations = { [ANNOTATION_WAS_CORDONED]: "false" };
  const rebooting = bootcNode("b", { phase: "rebooting", state: "Booted" });
  rebooting.metadata.annotations = { [ANNOTATION_WAS_CORDONED]: "false" };
  const plan = planPool(input(p, {
    nodes: [
      node("a", { unschedulable: true, annotations: record(false) }),
      node("b", { unschedulable: true, annotations: record(true) }),
    ],
    bootcNodes: [draining, rebooting],
    pods: [pod("web", "a")],
  }));
  assert.equal(findCondition(plan.status?.conditions, "Degraded")?.reason, "InvalidSpec");
  const undo = ofKind(plan, "patchNode").find((a) => a.node === "a" && a.why === "release slot");
  assert.deepEqual(undo?.patch.spec, { unschedulable: null });
  assert.ok(plan.events.some((e) => e.reason === "UpdateUndone"));
  assert.equal(ofKind(plan, "patchNode").filter((a) => a.node === "b").length, 0);
  assert.equal(plan.status?.slotsInUse, 1);
  assert.equal(ofKind(plan, "evict").length, 0);

  // Once b runs the target and is Ready, it is released under the invalid spec too.
  const done = bootcNode("b", { booted: image("b"), state: "Booted" });
  done.metadata.annotations = { [ANNOTATION_WAS_CORDONED]: "false" };
  const later = planPool(input(p, {
    nodes: [node("b", { unschedulable: true, annotations: record(true) })],
    bootcNodes: [done],
  }));
  const rel = ofKind(later, "patchNode").find((a) => a.node === "b" && a.why === "release slot");
  assert.deepEqual(rel?.patch.spec, { unschedulable: null });
});

Deno.test("pull secret: InvalidSpec stops new slots; another issue only degrades", () => {
  const fleet = { nodes: [node("n1")], bootcNodes: [bootcNode("n1", { phase: "staged" })] };
  const invalid = planPool(input(pool(), {
    ...fleet,
    pullSecretIssue: { reason: "InvalidSpec", message: "Secret ns/x has type Opaque" },
  }));
  assert.equal(findCondition(invalid.status?.conditions, "Degraded")?.reason, "InvalidSpec");
  assert.deepEqual(granted(invalid), []);
  const degraded = planPool(input(pool(), {
    ...fleet,
    pullSecretIssue: { reason: "NodeDegraded", message: "Secret ns/x: bad base64" },
  }));
  assert.match(findCondition(degraded.status?.conditions, "Degraded")?.message ?? "", /bad base64/);
  assert.deepEqual(granted(degraded), ["n1"]);
});

Deno.test("orphan: records of a pool that no longer exists are restored by planGonePool", () => {
  const n1 = node("n1", {
    labels: { role: "gone" },
    unschedulable: true,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
      [ANNOTATION_SLOT_POOL]: "deleted",
      [ANNOTATION_WAS_CORDONED]: "false",
    },
  });
  const n2 = node("n2", {
    labels: { role: "gone" },
    unschedulable: true,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
      [ANNOTATION_SLOT_POOL]: "deleted",
      [ANNOTATION_WAS_CORDONED]: "true",
    },
  });
  const plan = planGonePool("deleted", {
    pools: [],
    nodes: new Map([["n1", n1], ["n2", n2]]),
    bootcNodes: new Map(),
    now: new Date("2026-01-01T01:00:00Z"),
  });
  const patches = ofKind(plan as unknown as Plan, "patchNode");
  assert.deepEqual(patches.map((a) => a.node), ["n1", "n2"]);
  assert.deepEqual(patches[0].patch.spec, { unschedulable: null });
  assert.equal(patches[1].patch.spec, undefined, "n2 was cordoned before: stays cordoned");
});

Deno.test("crash mid-release: BootcNode released, Node not yet: the release ends, no mirror comes back", () => {
  const verified = () =>
    bootcNode("n1", {
      booted: image("b"),
      slotAt: "2026-01-01T00:50:00Z",
      drainedAt: EARLIER,
      state: "Booted",
    });
  const nodes = [node("n1", { unschedulable: true, readySince: "2026-01-01T00:00:00Z" })];
  const whole = planPool(input(pool(), { nodes, bootcNodes: [verified()] }));
  assert.deepEqual(
    whole.actions.filter((a) => "why" in a && a.why === "release slot").map((a) => a.kind),
    ["patchBootcNode", "patchNode"],
  );
  // The controller died after the release's BootcNode patch (mirror gone, Booted → Staged).
  const cut = input(pool(), { nodes, bootcNodes: [verified()] });
  const bn = cut.bootcNodes.get("n1")!;
  delete bn.metadata.annotations?.[ANNOTATION_WAS_CORDONED];
  bn.spec.desiredImageState = "Staged";
  const resumed = planPool(cut);
  const whys = resumed.actions.map((a) => `${a.kind} ${"why" in a ? a.why : ""}`);
  assert.ok(whys.includes("patchNode release slot"), whys.join(", "));
  assert.ok(
    !whys.some((w) => w.includes("mirror prior cordon state")),
    `the mirror would outlive the record: ${whys.join(", ")}`,
  );
});
