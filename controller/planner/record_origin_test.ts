import assert from "node:assert/strict";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, image, input, node, pod, pool } from "../testing/fixtures.ts";

const EARLIER = "2026-01-01T00:59:00Z";

function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}
function about(plan: Plan, name: string): Action[] {
  return plan.actions.filter((a) => "node" in a && a.node === name);
}
function granted(plan: Plan): string[] {
  return ofKind(plan, "patchNode").filter((a) => a.why === "assign slot").map((a) => a.node);
}
function withMirror(bn: BootcNode, wasCordoned: string): BootcNode {
  bn.metadata.annotations = { ...bn.metadata.annotations, [ANNOTATION_WAS_CORDONED]: wasCordoned };
  return bn;
}

/** Pool "other"'s record on a node it drained at `drainedAt` for image a. */
function otherPoolsDrain(drainedAt: string): Record<string, string> {
  return {
    [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
    [ANNOTATION_SLOT_POOL]: "other",
    [ANNOTATION_WAS_CORDONED]: "false",
    [ANNOTATION_DRAINED_AT]: drainedAt,
    [ANNOTATION_DRAINED_FOR]: image("a"),
  };
}

/** A pool of maxUnavailable 1: n3 holds its slot (draining), n1 and n2 are staged. */
function busyPool(n1: Partial<ReturnType<typeof node>>, bn1?: BootcNode) {
  return input(pool({ maxUnavailable: 1 }), {
    nodes: [node("n1", n1), node("n2"), node("n3", { unschedulable: true })],
    bootcNodes: [
      bn1 ?? bootcNode("n1", { phase: "staged" }),
      bootcNode("n2", { phase: "staged" }),
      bootcNode("n3", { phase: "staged", slotAt: EARLIER, wasCordoned: false }),
    ],
  });
}

Deno.test("record origin: a hand-set slot annotation alone is dropped, never cordoned nor drained (adv19 F1)", () => {
  const plan = planPool(busyPool({ annotations: { [ANNOTATION_IN_REBOOT_SLOT]: EARLIER } }));
  const n1 = about(plan, "n1");
  assert.deepEqual(n1.map((a) => a.kind === "patchNode" ? a.why : a.kind), ["drop stray record"]);
  assert.deepEqual((n1[0] as Extract<Action, { kind: "patchNode" }>).patch, {
    metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: null } },
  });
  assert.deepEqual(granted(plan), [], "it counts until gone: no second slot");
  assert.ok(plan.events.some((e) => e.reason === "StrayRecordDropped"));
});

Deno.test("record origin: a stray was-cordoned false on a node the user cordoned is dropped, the cordon kept (adv19 F1)", () => {
  const plan = planPool(
    busyPool({ unschedulable: true, annotations: { [ANNOTATION_WAS_CORDONED]: "false" } }),
  );
  const n1 = about(plan, "n1");
  assert.equal(n1.length, 1);
  assert.deepEqual((n1[0] as Extract<Action, { kind: "patchNode" }>).patch, {
    metadata: { annotations: { [ANNOTATION_WAS_CORDONED]: null } },
  });
});

Deno.test("record origin: a hand-set slot and pool on an uncordoned node without a copy is dropped too (adv19 F1, two annotations)", () => {
  const plan = planPool(busyPool({
    annotations: { [ANNOTATION_IN_REBOOT_SLOT]: EARLIER, [ANNOTATION_SLOT_POOL]: "workers" },
  }));
  const n1 = about(plan, "n1");
  assert.deepEqual(n1.map((a) => a.kind === "patchNode" ? a.why : a.kind), ["drop stray record"]);
  assert.deepEqual(granted(plan), []);
});

Deno.test("record origin: one annotation with its BootcNode copy, or two of three, is a damaged grant: repaired", () => {
  // The mirror proves a grant: the slot annotation comes back (tamper tests in in_flight_test).
  const mirrored = planPool(
    busyPool(
      { unschedulable: true, annotations: { [ANNOTATION_WAS_CORDONED]: "false" } },
      withMirror(bootcNode("n1", { phase: "staged" }), "false"),
    ),
  );
  assert.ok(
    ofKind(mirrored, "patchNode").some((a) => a.node === "n1" && a.why === "repair record"),
  );
  const two = planPool(busyPool({
    unschedulable: true,
    annotations: { [ANNOTATION_SLOT_POOL]: "workers", [ANNOTATION_WAS_CORDONED]: "false" },
  }));
  assert.ok(ofKind(two, "patchNode").some((a) => a.node === "n1" && a.why === "repair record"));
});

Deno.test("record origin: another pool's slot, its reboot not under way, is handed back, not taken over (adv19 F0)", () => {
  const record = {
    [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
    [ANNOTATION_SLOT_POOL]: "other",
    [ANNOTATION_WAS_CORDONED]: "false",
  };
  const plan = planPool(busyPool(
    { unschedulable: true, annotations: record },
    withMirror(bootcNode("n1", { phase: "staged" }), "false"),
  ));
  const n1 = about(plan, "n1");
  assert.deepEqual(
    n1.map((a) => a.kind === "patchNode" || a.kind === "patchBootcNode" ? a.why : a.kind),
    [
      "drop mirror",
      "hand back another pool's slot",
    ],
  );
  const release = n1[1] as Extract<Action, { kind: "patchNode" }>;
  assert.deepEqual(release.patch.spec, { unschedulable: null }, "uncordoned as it was before");
  assert.equal(ofKind(plan, "evict").length, 0);
  assert.deepEqual(granted(plan), [], "it counts until handed back");
  assert.ok(plan.events.some((e) => e.reason === "SlotHandedBack"));
  assert.ok(!plan.events.some((e) => e.reason === "DisruptionRecordRepaired"));
});

Deno.test("record origin: another pool's slot is never taken over; while its machine may be rebooting nothing is written (review 18 F1)", () => {
  const drained = (n1: Partial<ReturnType<typeof node>>, bn1?: BootcNode) =>
    planPool(busyPool(
      {
        unschedulable: true,
        annotations: otherPoolsDrain(EARLIER),
        ...n1,
      },
      bn1 ?? withMirror(bootcNode("n1", { phase: "staged" }), "false"),
    ));
  // Not Ready since its drain (00:59): it may be down. Nothing written, counted, said.
  const down = drained({});
  assert.deepEqual(about(down, "n1"), []);
  assert.deepEqual(granted(down), []);
  assert.ok(
    down.status?.conditions?.some((c) => /n1 carries a reboot slot of pool other/.test(c.message)),
  );
  assert.ok(!down.events.some((e) => e.reason === "DisruptionRecordRepaired"));
  // Its daemon says Rebooting: the same.
  const rebooting = drained(
    { readySince: "2026-01-01T00:59:30Z" },
    withMirror(bootcNode("n1", { phase: "rebooting" }), "false"),
  );
  assert.deepEqual(about(rebooting, "n1"), []);
  // Past the reboot timeout (30 min from 00:00): the pool is Degraded naming it.
  const overdue = planPool(input(pool({ maxUnavailable: 1, rebootTimeoutSeconds: 60 }), {
    nodes: [node("n1", {
      unschedulable: true,
      ready: false,
      annotations: otherPoolsDrain("2026-01-01T00:00:00Z"),
    })],
    bootcNodes: [withMirror(bootcNode("n1", { phase: "staged" }), "false")],
  }));
  const degraded = overdue.status?.conditions?.find((c) => c.type === "Degraded");
  assert.equal(degraded?.reason, "NodeStalled");
  assert.match(degraded?.message ?? "", /node n1 carries a reboot slot of pool other/);
  // Ready since its drain: back, so handed back (never drained or rebooted here).
  const back = drained({ readySince: "2026-01-01T00:59:30Z" });
  assert.deepEqual(
    about(back, "n1").map((a) =>
      a.kind === "patchNode" || a.kind === "patchBootcNode" ? a.why : a.kind
    ),
    ["drop mirror", "hand back another pool's slot"],
  );
  assert.equal(ofKind(back, "evict").length, 0);
});

Deno.test("record origin: a hand-back whose prior cordon state is lost says so and keeps the cordon (review 18 F6)", () => {
  const plan = planPool(busyPool({
    unschedulable: true,
    annotations: { [ANNOTATION_IN_REBOOT_SLOT]: EARLIER, [ANNOTATION_SLOT_POOL]: "other" },
  }));
  const release = ofKind(plan, "patchNode").find((a) => a.why === "hand back another pool's slot");
  assert.equal(release?.patch.spec, undefined, "left cordoned");
  assert.ok(plan.events.some((e) => e.reason === "PriorCordonStateLost"));
  assert.match(
    plan.events.find((e) => e.reason === "SlotHandedBack")?.message ?? "",
    /left cordoned \(its prior cordon state was lost\)/,
  );
});

Deno.test("record origin: the old pool counts a node that still carries its slot in another pool (adv19 F0)", () => {
  // Pool "workers" (maxUnavailable 1): n1 moved to pool "other", still carrying workers' slot.
  const other = pool({ name: "other", selector: { matchLabels: { role: "other" } } });
  const moved = bootcNode("n1", { phase: "staged", pool: "other" });
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [
      node("n1", {
        unschedulable: true,
        labels: { role: "other" },
        annotations: {
          [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
          [ANNOTATION_SLOT_POOL]: "workers",
          [ANNOTATION_WAS_CORDONED]: "false",
        },
      }),
      node("n2"),
    ],
    bootcNodes: [withMirror(moved, "false"), bootcNode("n2", { phase: "staged" })],
    otherPools: [other],
  }));
  assert.deepEqual(granted(plan), [], "n1 still takes the one slot");
  assert.deepEqual(about(plan, "n1"), [], "the pool it joined hands it back");
});

Deno.test("record origin: a slot or drain time in the future is replaced (its timeout could never fire; adv19 F4)", () => {
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [node("n1", {
      unschedulable: true,
      annotations: {
        [ANNOTATION_IN_REBOOT_SLOT]: "2099-01-01T00:00:00Z",
        [ANNOTATION_SLOT_POOL]: "workers",
        [ANNOTATION_WAS_CORDONED]: "false",
        [ANNOTATION_DRAINED_AT]: "2099-01-01T00:00:00Z",
        [ANNOTATION_DRAINED_FOR]: image("b"),
      },
    })],
    bootcNodes: [withMirror(bootcNode("n1", { phase: "rebooting", state: "Booted" }), "false")],
  }));
  const repair = ofKind(plan, "patchNode").find((a) => a.why === "repair record");
  const set = (repair?.patch.metadata as { annotations: Record<string, string> }).annotations;
  assert.equal(set[ANNOTATION_DRAINED_AT], "2026-01-01T01:00:00Z");
  assert.equal(set[ANNOTATION_IN_REBOOT_SLOT], "2026-01-01T01:00:00Z");
});

Deno.test("drain proof: a finished-drain record written by hand on a slot holder with pods to evict is withdrawn, no reboot asked (adv19)", () => {
  const forged = (booted: boolean, listed = true) => {
    const i = input(pool({ maxUnavailable: 1 }), {
      nodes: [node("n1", { unschedulable: true })],
      bootcNodes: [
        bootcNode("n1", {
          phase: "staged",
          slotAt: EARLIER,
          wasCordoned: false,
          drainedAt: EARLIER,
          ...(booted ? { state: "Booted" as const } : {}),
        }),
      ],
      pods: [pod("web-1", "n1")],
    });
    if (!listed) i.podsListed = new Set();
    return planPool(i);
  };
  const whys = (plan: Plan) =>
    about(plan, "n1").map((a) =>
      a.kind === "patchNode" || a.kind === "patchBootcNode" ? a.why : a.kind
    );
  const plan = forged(false);
  assert.deepEqual(whys(plan), ["withdraw unproven drain"]);
  assert.ok(plan.events.some((e) => e.reason === "DrainRecordWithdrawn"));
  // With a reboot request written by hand too: the record goes first, then the request.
  assert.deepEqual(whys(forged(true)), ["withdraw unproven drain", "revoke reboot request"]);
  // Its pods unknown: asked for, nothing asked of the node meanwhile.
  const unknown = forged(false, false);
  assert.ok(unknown.needPods.includes("n1"));
  assert.deepEqual(whys(unknown), []);
});

Deno.test("drain proof: a finished drain with nothing left to evict asks for the reboot", () => {
  const plan = planPool(input(pool({ maxUnavailable: 1 }), {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [
      bootcNode("n1", { phase: "staged", slotAt: EARLIER, wasCordoned: false, drainedAt: EARLIER }),
    ],
  }));
  assert.ok(
    about(plan, "n1").some((a) => a.kind === "patchBootcNode" && a.why === "request reboot"),
  );
});

Deno.test("record origin: another pool's drained node Ready past the reboot timeout is handed back (it is not rebooting; adv20 N1)", () => {
  const plan = planPool(input(pool({ maxUnavailable: 1, rebootTimeoutSeconds: 60 }), {
    nodes: [node("n1", {
      unschedulable: true,
      annotations: otherPoolsDrain("2026-01-01T00:00:00Z"),
    })],
    bootcNodes: [withMirror(bootcNode("n1", { phase: "staged" }), "false")],
  }));
  assert.ok(
    about(plan, "n1").some((a) =>
      a.kind === "patchNode" && a.why === "hand back another pool's slot"
    ),
  );
  assert.notEqual(
    plan.status?.conditions?.find((c) => c.type === "Degraded")?.reason,
    "NodeStalled",
  );
});

/** n1 drained and asked to reboot at 00:59, its daemon not rebooting yet. */
function awaitingReboot(opts: { listed?: boolean; now?: string; rebootTimeoutSeconds?: number }) {
  const i = input(pool({ maxUnavailable: 1, rebootTimeoutSeconds: opts.rebootTimeoutSeconds }), {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [
      bootcNode("n1", {
        phase: "staged",
        slotAt: EARLIER,
        wasCordoned: false,
        drainedAt: EARLIER,
        state: "Booted",
      }),
    ],
    now: opts.now,
  });
  if (opts.listed === false) i.podsListed = new Set();
  return planPool(i);
}

Deno.test("drain proof: checked again every drain poll while the node waits for its daemon (a pod landing wakes nothing)", () => {
  const plan = awaitingReboot({});
  assert.deepEqual(about(plan, "n1"), []);
  assert.equal(plan.pollAfterMs, 5_000);
});

Deno.test("drain proof: pods that cannot be listed never suspend the reboot timeout (adv20 N3)", () => {
  const plan = awaitingReboot({ listed: false, now: "2026-01-01T02:00:00Z" });
  assert.ok(plan.needPods.includes("n1"), "still asked for");
  const stalled = plan.events.find((e) => e.reason === "RebootTimedOut");
  assert.ok(stalled, JSON.stringify(plan.events.map((e) => e.reason)));
  assert.ok(
    !about(plan, "n1").some((a) => a.kind === "patchBootcNode" && a.why === "request reboot"),
  );
});
