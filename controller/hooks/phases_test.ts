import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  type BootcNodePoolStatus,
  type HookPhase,
  type Revision,
} from "../../lib/api/mod.ts";
import {
  bootcNode,
  digest,
  image,
  input as plannerInput,
  node,
  pool,
} from "../testing/fixtures.ts";
import { type PlanInput, planPool } from "../planner/planner.ts";
import type { Action, PlannedEvent } from "../planner/plan.ts";
import {
  type HookOccurrence,
  hookOccurrences,
  type HookPhaseInput,
  hooksFor,
  writtenOccurrences,
} from "./phases.ts";

const NOW = new Date("2026-03-01T10:00:00Z");
const SLOT = "2026-03-01T09:00:00Z";

function rev(revision: number, seed: string, outcome: string): Revision {
  return {
    revision,
    image: image(seed),
    digest: digest(seed),
    startedAt: "2026-03-01T08:00:00Z",
    outcome,
  };
}

function status(history: Revision[], state = "RollingOut"): BootcNodePoolStatus {
  return { history, state } as BootcNodePoolStatus;
}

const grant: Action = {
  kind: "patchNode",
  node: "n1",
  intent: "grant",
  why: "assign slot",
  patch: { metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: SLOT } } },
};
const reboot: Action = {
  kind: "patchBootcNode",
  node: "n1",
  patch: { spec: { desiredImageState: "Booted" } },
  why: "request reboot",
};
const release: PlannedEvent = {
  regarding: { kind: "Node", name: "n1" },
  type: "Normal",
  reason: "NodeUpdated",
  message: "",
};
const other: Action = {
  kind: "patchNode",
  node: "n1",
  patch: { spec: { unschedulable: false } },
  why: "x",
};
const staged: Action = {
  kind: "patchBootcNode",
  node: "n1",
  patch: { spec: { desiredImageState: "Staged" } },
  why: "take back",
};

function input(parts: {
  actions?: Action[];
  events?: PlannedEvent[];
  before?: BootcNodePoolStatus;
  after?: BootcNodePoolStatus;
  slotOnNode?: boolean;
}): HookPhaseInput {
  const history = [rev(1, "a", "Succeeded"), rev(2, "b", "Progressing")];
  const after = parts.after ?? status(history);
  return {
    pool: pool({ status: parts.before ?? after }),
    plan: { actions: parts.actions ?? [], events: parts.events ?? [], status: after },
    nodes: new Map([[
      "n1",
      node("n1", parts.slotOnNode ? { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: SLOT } } : {}),
    ]]),
    bootcNodes: new Map([["n1", bootcNode("n1", { booted: image("a"), desired: image("b") })]]),
    now: NOW,
  };
}

Deno.test("hookOccurrences: the phase table", () => {
  const h1 = [rev(1, "a", "Succeeded")];
  const cases: { name: string; in: HookPhaseInput; want: [HookPhase, string?][] }[] = [
    { name: "nothing", in: input({ actions: [other, staged] }), want: [] },
    { name: "grant", in: input({ actions: [other, grant] }), want: [["NodePreDrain", "n1"]] },
    {
      name: "reboot request",
      in: input({ actions: [reboot], slotOnNode: true }),
      want: [["NodePreReboot", "n1"]],
    },
    {
      name: "verified and released",
      in: input({ events: [release], slotOnNode: true }),
      want: [["NodePostVerification", "n1"]],
    },
    {
      name: "a NodeUpdated about a BootcNode is no release of a Node",
      in: input({ events: [{ ...release, regarding: { kind: "BootcNode", name: "n1" } }] }),
      want: [],
    },
    {
      name: "new revision",
      in: input({ before: status(h1), after: status([...h1, rev(2, "b", "Progressing")]) }),
      want: [["RolloutStarted"]],
    },
    {
      name: "first reconcile",
      in: input({ before: {} as BootcNodePoolStatus, after: status(h1) }),
      want: [["RolloutStarted"], ["RolloutCompleted"]],
    },
    {
      name: "completed",
      in: input({
        before: status([rev(1, "a", "Progressing")]),
        after: status([rev(1, "a", "Succeeded")]),
      }),
      want: [["RolloutCompleted"]],
    },
    {
      name: "rolled back and the rollback's revision starts",
      in: input({
        before: status([...h1, rev(2, "b", "Progressing")]),
        after: status([...h1, rev(2, "b", "RolledBack"), rev(3, "a", "Progressing")]),
      }),
      want: [["RolloutRolledBack"], ["RolloutStarted"]],
    },
    {
      name: "halted by onFailure (Failed) and state Halted: one event",
      in: input({
        before: status([rev(1, "a", "Progressing")]),
        after: status([rev(1, "a", "Failed")], "Halted"),
      }),
      want: [["RolloutHalted"]],
    },
    {
      name: "halted by two unhealthy slots (state only)",
      in: input({
        before: status([rev(1, "a", "Progressing")]),
        after: status([rev(1, "a", "Progressing")], "Halted"),
      }),
      want: [["RolloutHalted"]],
    },
    {
      name: "still halted: nothing new",
      in: input({
        before: status([rev(1, "a", "Progressing")], "Halted"),
        after: status([rev(1, "a", "Progressing")], "Halted"),
      }),
      want: [],
    },
    {
      name: "node phases before pool phases",
      in: input({
        actions: [grant],
        events: [release],
        before: status([rev(1, "a", "Progressing")]),
        after: status([rev(1, "a", "Succeeded")]),
      }),
      want: [["NodePostVerification", "n1"], ["NodePreDrain", "n1"], ["RolloutCompleted"]],
    },
    {
      name: "a release goes out before the grant of the slot it frees",
      in: input({
        actions: [{ ...grant, node: "n2" }, { ...reboot, node: "n3" }],
        events: [{ ...release, regarding: { kind: "Node", name: "n1" } }],
      }),
      want: [["NodePostVerification", "n1"], ["NodePreReboot", "n3"], ["NodePreDrain", "n2"]],
    },
  ];
  for (const c of cases) {
    const got = hookOccurrences(c.in).map((o) => o.node ? [o.phase, o.node] : [o.phase]);
    assert.deepEqual(got, c.want, c.name);
  }
});

Deno.test("hookOccurrences: ids are deterministic and carry revision, images and slot time", () => {
  const [pre] = hookOccurrences(input({ actions: [grant] }));
  const [again] = hookOccurrences(input({ actions: [grant] }));
  assert.equal(pre.id, again.id);
  assert.equal(pre.id, `workers/r2/n1/NodePreDrain/${SLOT}`);
  assert.equal(pre.revision, 2);
  assert.deepEqual(pre.target, { image: image("b"), digest: digest("b") });
  assert.equal(pre.booted?.image, image("a"));
  assert.equal(pre.time, "2026-03-01T10:00:00Z");
  const [reb] = hookOccurrences(input({ actions: [reboot], slotOnNode: true }));
  assert.equal(reb.id, `workers/r2/n1/NodePreReboot/${SLOT}`);
  const [started] = hookOccurrences(input({
    before: status([rev(1, "a", "Succeeded")]),
    after: status([rev(1, "a", "Succeeded"), rev(2, "b", "Progressing")]),
  }));
  assert.equal(started.id, "workers/r2/RolloutStarted");
  assert.deepEqual(started.target, { image: image("b"), digest: digest("b") });
});

Deno.test("hooksFor: unset phases mean all", () => {
  const base = { url: "http://x" };
  const hooks = [
    { ...base, name: "all" },
    { ...base, name: "pre", phases: ["NodePreDrain" as const] },
  ];
  assert.deepEqual(hooksFor(hooks, "NodePreDrain").map((h) => h.name), ["all", "pre"]);
  assert.deepEqual(hooksFor(hooks, "RolloutStarted").map((h) => h.name), ["all"]);
  assert.deepEqual(hooksFor(undefined, "RolloutStarted"), []);
});

/** The node phases hookOccurrences finds in a real plan of `plannerInput`. */
function phasesOfPlan(plannerInput: PlanInput): string[] {
  const plan = planPool(plannerInput);
  return hookOccurrences({
    pool: plannerInput.pool,
    plan,
    nodes: plannerInput.nodes,
    bootcNodes: plannerInput.bootcNodes,
    now: plannerInput.now,
  }).filter((o) => o.node).map((o) => `${o.phase} ${o.node}`);
}

Deno.test("hookOccurrences on real plans: grant, reboot request, verified release", () => {
  const now = "2026-01-01T01:00:00Z";
  const slotAt = "2026-01-01T00:50:00Z";
  // Staged with a free slot: the grant.
  assert.deepEqual(
    phasesOfPlan(plannerInput(pool(), {
      now,
      nodes: [node("n1")],
      bootcNodes: [bootcNode("n1", { phase: "staged" })],
    })),
    ["NodePreDrain n1"],
  );
  // Cordoned and drained: the reboot request.
  assert.deepEqual(
    phasesOfPlan(plannerInput(pool(), {
      now,
      nodes: [node("n1", { unschedulable: true })],
      bootcNodes: [bootcNode("n1", { phase: "staged", slotAt })],
    })),
    ["NodePreReboot n1"],
  );
  // Back on the target, verified and Ready: the release.
  assert.deepEqual(
    phasesOfPlan(plannerInput(pool(), {
      now,
      nodes: [node("n1", { unschedulable: true, readySince: "2026-01-01T00:58:00Z" })],
      bootcNodes: [bootcNode("n1", {
        booted: image("b"),
        slotAt,
        drainedAt: "2026-01-01T00:55:00Z",
        state: "Booted",
        verifiedAt: "2026-01-01T00:58:00Z",
      })],
    })),
    ["NodePostVerification n1"],
  );
});

Deno.test("writtenOccurrences: a phase is sent only when its write went through", () => {
  const occ = (phase: HookOccurrence["phase"], node?: string): HookOccurrence => ({
    id: `hk/r1/${node ?? "-"}/${phase}`,
    phase,
    pool: "hk",
    ...(node ? { node } : {}),
    revision: 1,
    target: { image: "registry.test/os@sha256:b", digest: "sha256:b" },
    time: "2026-11-26T04:00:00Z",
  });
  const all = [
    occ("RolloutStarted"),
    occ("NodePreDrain", "n1"),
    occ("NodePreReboot", "n2"),
    occ("NodePostVerification", "n3"),
  ];
  // Nothing written (a conflict on the first write): nothing is sent; the next plan repeats it.
  assert.deepEqual(writtenOccurrences(all, []), []);
  const sent = writtenOccurrences(all, [
    { store: "nodes", name: "n1" }, // n1's grant (record + cordon)
    { store: "bootcNodes", name: "n2" }, // n2's Booted
    { store: "nodes", name: "other" },
  ]);
  assert.deepEqual(sent.map((o) => o.id), ["hk/r1/n1/NodePreDrain", "hk/r1/n2/NodePreReboot"]);
  // A pool phase needs the pool's status write.
  assert.deepEqual(
    writtenOccurrences(all, [{ store: "pools", name: "hk" }]).map((o) => o.phase),
    ["RolloutStarted"],
  );
});
