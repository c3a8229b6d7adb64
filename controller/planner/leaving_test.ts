import assert from "node:assert/strict";
import { ANNOTATION_IN_REBOOT_SLOT, type BootcNode } from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { unrecordedDisruptions } from "./leaving.ts";
import { planGonePool } from "./hand_back.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";

const EARLIER = "2026-01-01T00:59:00Z";
const LONG_AGO = "2026-01-01T00:00:00Z";

function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}
function granted(plan: Plan): string[] {
  return ofKind(plan, "patchNode").filter((a) => a.intent === "grant" || a.why === "assign slot")
    .map((a) => a.node);
}

/** "gone" left the pool (its role label changed) while rebooting in its slot. */
function leaver(bn: BootcNode, ready = false) {
  return {
    node: node("gone", {
      labels: { role: "infra", "bootc.dev/managed": "" },
      unschedulable: true,
      ready,
    }),
    bn,
  };
}
function rebooting(drainedAt = EARLIER): BootcNode {
  return bootcNode("gone", {
    phase: "rebooting",
    state: "Booted",
    slotAt: EARLIER,
    drainedAt,
    wasCordoned: false,
  });
}
function back(): BootcNode {
  return bootcNode("gone", {
    phase: "idle",
    booted: image("b"),
    state: "Booted",
    slotAt: EARLIER,
    drainedAt: EARLIER,
    wasCordoned: false,
  });
}

Deno.test("leaving mid-reboot: held (BootcNode, record, cordon kept), counted, no second slot", () => {
  const { node: gone, bn } = leaver(rebooting());
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [gone, node("next")],
    bootcNodes: [bn, bootcNode("next", { phase: "staged" })],
  }));
  assert.deepEqual(ofKind(plan, "deleteBootcNode"), []);
  assert.deepEqual(ofKind(plan, "patchNode").filter((a) => a.node === "gone"), []);
  assert.deepEqual(granted(plan), []);
  assert.equal(plan.status?.slotsInUse, 1);
  assert.ok(plan.events.some((e) => e.reason === "NodeLeavingAfterReboot" && e.onceKey));
  assert.match(
    plan.status?.conditions?.find((c) => c.type === "UpToDate")?.message ?? "",
    /gone left the pool/,
  );
  assert.ok(plan.requeueAfterMs !== undefined);
});

Deno.test("leaving mid-reboot: the next plans still hold it while the Node is down or the daemon says Rebooting", () => {
  // Booted was asked for but the daemon has not reported the reboot yet: still held.
  const asked = bootcNode("gone", {
    phase: "staged",
    state: "Booted",
    slotAt: EARLIER,
    drainedAt: EARLIER,
    wasCordoned: false,
  });
  for (const [bn, ready] of [[rebooting(), true], [asked, true], [back(), false]] as const) {
    const { node: gone } = leaver(bn, ready);
    const plan = planPool(input(pool({ maxUnavailable: 1 }), {
      nodes: [gone, node("next")],
      bootcNodes: [bn, bootcNode("next", { phase: "staged" })],
    }));
    assert.deepEqual(ofKind(plan, "deleteBootcNode"), []);
    assert.deepEqual(granted(plan), []);
  }
});

Deno.test("leaving mid-reboot: released once booted and Ready", () => {
  const { node: gone, bn } = leaver(back(), true);
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [gone, node("next")],
    bootcNodes: [bn, bootcNode("next", { phase: "staged" })],
  }));
  assert.deepEqual(ofKind(plan, "deleteBootcNode").map((a) => a.node), ["gone"]);
  const release = ofKind(plan, "patchNode").find((a) => a.node === "gone");
  assert.deepEqual(release?.patch.spec, { unschedulable: null });
  // Still counted in this pass (its release is not applied yet).
  assert.deepEqual(granted(plan), []);
});

Deno.test("leaving before the reboot request: undone at once", () => {
  const bn = bootcNode("gone", { phase: "staged", slotAt: EARLIER, wasCordoned: false });
  const { node: gone } = leaver(bn, true);
  const plan = planPool(input(pool(), { nodes: [gone], bootcNodes: [bn] }));
  assert.deepEqual(ofKind(plan, "deleteBootcNode").map((a) => a.node), ["gone"]);
});

Deno.test("leaving mid-reboot: past the reboot timeout it stays held and the pool is Degraded", () => {
  const { node: gone, bn } = leaver(rebooting(LONG_AGO));
  const plan = planPool(input(pool({ rebootTimeoutSeconds: 600 }), {
    nodes: [gone],
    bootcNodes: [bn],
  }));
  assert.deepEqual(ofKind(plan, "deleteBootcNode"), []);
  const degraded = plan.status?.conditions?.find((c) => c.type === "Degraded");
  assert.equal(degraded?.reason, "NodeStalled");
  assert.match(degraded?.message ?? "", /gone left the pool while rebooting/);
});

Deno.test("pool deleted mid-reboot: the node is held and the finalizer stays", () => {
  const p = pool();
  p.metadata.deletionTimestamp = EARLIER;
  const bn = rebooting();
  const gone = node("gone", { unschedulable: true, ready: false });
  const plan = planPool(input(p, { nodes: [gone], bootcNodes: [bn] }));
  assert.deepEqual(ofKind(plan, "deleteBootcNode"), []);
  assert.deepEqual(ofKind(plan, "patchNode"), []);
  assert.deepEqual(ofKind(plan, "removeFinalizer"), []);
  const done = planPool(input(p, { nodes: [{ ...gone, ready: true }], bootcNodes: [back()] }));
  assert.deepEqual(ofKind(done, "deleteBootcNode").map((a) => a.node), ["gone"]);
});

Deno.test("orphan with a finished drain: held until the Node came back Ready after it", () => {
  const record = {
    "bootc.dev/in-reboot-slot": EARLIER,
    "bootc.dev/reboot-slot-pool": "gone-pool",
    "bootc.dev/was-cordoned": "false",
    "bootc.dev/drained-at": EARLIER,
    "bootc.dev/drained-for": image("b"),
  };
  const down = node("n1", { unschedulable: true, ready: true, annotations: record });
  const plan = planGonePool("gone-pool", {
    pools: [],
    nodes: new Map([["n1", down]]),
    bootcNodes: new Map(),
    now: new Date("2026-01-01T01:00:00Z"),
  });
  assert.deepEqual(plan.actions, []);
  const up = { ...down, readySince: "2026-01-01T00:59:30Z" };
  const released = planGonePool("gone-pool", {
    pools: [],
    nodes: new Map([["n1", up]]),
    bootcNodes: new Map(),
    now: new Date("2026-01-01T01:00:00Z"),
  });
  assert.equal(released.actions.length, 1);
});

Deno.test("unrecordedDisruptions: disrupted by the BootcNode's account, no record on the Node", () => {
  const infra = pool({ name: "infra", rebootTimeoutSeconds: 7200 });
  const quick = pool({ name: "quick", rebootTimeoutSeconds: 1800 });
  const inSlot = { slotAt: EARLIER, wasCordoned: false };
  const bootcNodes = [
    bootcNode("held", { pool: "infra", phase: "rebooting" }), // since 00:00, due 02:00
    bootcNode("overdue", { pool: "quick", phase: "rebooting" }), // due 00:30
    bootcNode("mirror-no-node", { pool: "quick", phase: "staged", ...inSlot }),
    bootcNode("back", { pool: "infra", phase: "rebooting", ...inSlot }),
    bootcNode("recorded", { pool: "infra", phase: "rebooting", ...inSlot }),
    bootcNode("has-node", { pool: "infra", phase: "rebooting" }),
    bootcNode("staged", { pool: "infra", phase: "staged" }),
    bootcNode("no-pool", { pool: "gone-pool", phase: "rebooting" }),
    // A mirror no existing pool will ever resolve does not count for ever.
    bootcNode("orphan-mirror", { pool: "gone-pool", phase: "idle", ...inSlot }),
  ];
  const nodes = new Map([
    ["back", node("back", { labels: { zone: "a" }, ready: false })],
    ["recorded", node("recorded", { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: EARLIER } })],
    ["has-node", node("has-node")],
  ]);
  const out = unrecordedDisruptions({
    pools: [infra, quick],
    bootcNodes,
    nodes,
    now: new Date("2026-01-01T01:00:00Z"),
  });
  assert.deepEqual(out, [
    // The Node is back without its record: counted by its labels.
    { node: "back", labels: nodes.get("back")!.labels },
    // Held by its daemon's Rebooting alone: until infra's reboot timeout, which no write marks.
    {
      node: "held",
      poolSelector: infra.spec.nodeSelector,
      until: new Date("2026-01-01T02:00:00Z"),
    },
    // "mirror-no-node": its Node gone and not rebooting, a mirror alone does not count (its
    // pool releases it; an invalid pool would not, and nothing would end the count).
    // Past its pool's reboot timeout: still counted, with no end of its own (its pool holds
    // it, and says so, until a person deletes its BootcNode).
    { node: "overdue", poolSelector: quick.spec.nodeSelector },
    // "no-pool" (its pool gone): the default reboot timeout, 30 min, has passed; nobody
    // would report it, so it counts no longer.
  ]);
  const early = unrecordedDisruptions({
    pools: [infra, quick],
    bootcNodes,
    nodes,
    now: new Date("2026-01-01T00:10:00Z"),
  });
  assert.ok(early.some((u) => u.node === "no-pool" && u.poolSelector === undefined));
});

Deno.test("leaving mid-reboot with no readable time: held and reported at once, not silently", () => {
  const gone = node("gone", {
    labels: { role: "infra", "bootc.dev/managed": "" },
    unschedulable: true,
    ready: false,
    annotations: {
      [ANNOTATION_IN_REBOOT_SLOT]: "yesterday",
      "bootc.dev/reboot-slot-pool": "workers",
      "bootc.dev/was-cordoned": "false",
      "bootc.dev/drained-at": "yesterday",
      "bootc.dev/drained-for": image("b"),
    },
  });
  const bn = bootcNode("gone", { phase: "idle", state: "Booted" });
  bn.metadata.annotations = { "bootc.dev/was-cordoned": "false" };
  const plan = planPool(input(pool(), { nodes: [gone], bootcNodes: [bn] }));
  assert.deepEqual(ofKind(plan, "patchNode").filter((a) => a.node === "gone"), [], "held");
  const stalled = (plan.issues ?? []).find((i) => i.reason === "NodeStalled");
  assert.match(stalled?.message ?? "", /no readable time to bound the wait/);
});

Deno.test("a lone pool annotation is no record: a stale mirror beside it is not driven", () => {
  // n2 holds the only slot and reboots; n1's BootcNode was left ownerless with its mirror.
  const orphan = bootcNode("n1", { phase: "staged" });
  orphan.metadata.annotations = { "bootc.dev/was-cordoned": "false" };
  orphan.metadata.ownerReferences = [];
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [
      node("n1", { unschedulable: true, annotations: { "bootc.dev/reboot-slot-pool": "workers" } }),
      node("n2", { unschedulable: true, ready: false }),
    ],
    bootcNodes: [
      orphan,
      bootcNode("n2", {
        phase: "rebooting",
        state: "Booted",
        slotAt: LONG_AGO,
        drainedAt: LONG_AGO,
      }),
    ],
  }));
  const n1 = plan.actions.filter((a) => "node" in a && a.node === "n1").map((a) =>
    "why" in a ? a.why : a.kind
  );
  assert.ok(!n1.includes("request reboot"), `n1: ${n1}`);
  assert.ok(!n1.includes("record drain"), `n1: ${n1}`);
  assert.ok(!n1.some((w) => w?.startsWith("repair")), `n1: ${n1}`);
});
