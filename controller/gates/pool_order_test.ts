import assert from "node:assert/strict";
import type { BootcNodePool, Condition } from "../../lib/api/mod.ts";
import { pool as fixturePool } from "../testing/fixtures.ts";
import type { Candidate, GateDecision, GateInput } from "./gate.ts";
import { orderingErrors, poolOrderGate, unfinishedReason } from "./pool_order.ts";

const T = "2026-03-01T00:00:00Z";

interface PoolState {
  after?: string[];
  /** No status at all (never reconciled). */
  fresh?: boolean;
  upToDate?: boolean;
  degraded?: string;
  updated?: number;
  nodes?: number;
  generation?: number;
  observedGeneration?: number;
}

function p(name: string, s: PoolState = {}): BootcNodePool {
  const generation = s.generation ?? 1;
  const base = fixturePool({ name, generation });
  const rollout = { ...base.spec.rollout, after: s.after } as typeof base.spec.rollout;
  const spec = { ...base.spec, rollout };
  if (s.fresh) return { ...base, spec };
  const conditions: Condition[] = [
    {
      type: "UpToDate",
      status: s.upToDate === false ? "False" : "True",
      reason: s.upToDate === false ? "RolloutInProgress" : "AllUpdated",
      message: "",
      lastTransitionTime: T,
    },
    {
      type: "Degraded",
      status: s.degraded ? "True" : "False",
      reason: s.degraded ?? "Healthy",
      message: "",
      lastTransitionTime: T,
    },
  ];
  return {
    ...base,
    spec,
    status: {
      observedGeneration: s.observedGeneration ?? generation,
      nodeCount: s.nodes ?? 5,
      updatedCount: s.updated ?? (s.upToDate === false ? 3 : 5),
      conditions,
    },
  };
}

const CANDIDATES: Candidate[] = [{ name: "n1", labels: {} }, { name: "n2", labels: {} }];

function decide(
  self: BootcNodePool,
  others: BootcNodePool[],
  candidates = CANDIDATES,
): GateDecision {
  const all = [self, ...others];
  const input: GateInput = {
    pool: self,
    candidates,
    disrupted: [],
    memberCount: 2,
    cluster: {
      pools: all.map((x) => ({ name: x.metadata.name ?? "", pool: x, members: [] })),
      nodes: new Map(),
    },
    now: new Date(T),
  };
  return poolOrderGate.decide(input);
}

Deno.test("pool order: no rollout.after admits everything", () => {
  const d = decide(p("workers"), [p("infra", { upToDate: false })]);
  assert.equal(d.admit.length, 2);
  assert.equal(d.wait, undefined);
});

Deno.test("pool order: finished and unfinished dependencies", () => {
  const workers = p("workers", { after: ["infra"] });
  const cases: [string, BootcNodePool, string | undefined][] = [
    ["finished", p("infra"), undefined],
    ["rolling", p("infra", { upToDate: false }), "waiting for pool infra (3/5 updated)"],
    [
      "degraded",
      p("infra", { degraded: "NodeStalled" }),
      "waiting for pool infra (5/5 updated, Degraded: NodeStalled)",
    ],
    [
      "status for an older generation",
      p("infra", { generation: 4, observedGeneration: 3 }),
      "waiting for pool infra (5/5 updated, status not yet for generation 4)",
    ],
    [
      "never reconciled",
      p("infra", { fresh: true }),
      "waiting for pool infra (not reconciled yet)",
    ],
  ];
  for (const [what, infra, want] of cases) {
    const d = decide(workers, [infra]);
    if (want === undefined) {
      assert.deepEqual(d.admit, CANDIDATES, what);
      assert.equal(d.wait, undefined, what);
      assert.equal(unfinishedReason(infra), undefined, what);
    } else {
      assert.deepEqual(d.admit, [], what);
      assert.equal(d.wait?.reason, "WaitingForPool", what);
      assert.equal(d.wait?.message, want, what);
    }
  }
});

Deno.test("pool order: several dependencies, only the unfinished ones are named", () => {
  const workers = p("workers", { after: ["infra", "storage", "db"] });
  const d = decide(workers, [
    p("infra", { upToDate: false }),
    p("storage"),
    p("db", { upToDate: false, updated: 0, nodes: 2 }),
  ]);
  assert.deepEqual(d.admit, []);
  assert.equal(d.wait?.message, "waiting for pools infra (3/5 updated), db (0/2 updated)");
  const done = decide(workers, [p("infra"), p("storage"), p("db")]);
  assert.deepEqual(done.admit, CANDIDATES);
});

Deno.test("pool order: an unknown pool holds everything back (fail closed)", () => {
  const d = decide(p("workers", { after: ["ghost"] }), [p("infra")]);
  assert.deepEqual(d.admit, []);
  assert.equal(d.wait?.message, "waiting for pool ghost (not found)");
});

Deno.test("pool order: all or nothing, so any subset of what it admits is admitted", () => {
  const workers = p("workers", { after: ["infra"] });
  for (const sub of [[], [CANDIDATES[0]], [CANDIDATES[1]], CANDIDATES]) {
    assert.deepEqual(decide(workers, [p("infra")], sub).admit, sub);
    assert.deepEqual(decide(workers, [p("infra", { upToDate: false })], sub).admit, []);
  }
});

Deno.test("orderingErrors: unknown names", () => {
  const workers = p("workers", { after: ["infra", "ghost", "spook"] });
  assert.deepEqual(orderingErrors(workers, [workers, p("infra")]), [
    'rollout.after: unknown pools "ghost", "spook"',
  ]);
  assert.deepEqual(orderingErrors(p("workers", { after: ["ghost"] }), [p("infra")]), [
    'rollout.after: unknown pool "ghost"',
  ]);
});

Deno.test("orderingErrors: cycles of one, two and three pools, named in order", () => {
  const self = p("workers", { after: ["workers"] });
  assert.deepEqual(orderingErrors(self, [self]), ["rollout.after: cycle workers → workers"]);

  const w2 = p("workers", { after: ["infra"] });
  const i2 = p("infra", { after: ["workers"] });
  assert.deepEqual(orderingErrors(w2, [w2, i2]), [
    "rollout.after: cycle workers → infra → workers",
  ]);
  assert.deepEqual(orderingErrors(i2, [w2, i2]), ["rollout.after: cycle infra → workers → infra"]);

  const w3 = p("workers", { after: ["infra"] });
  const i3 = p("infra", { after: ["storage"] });
  const s3 = p("storage", { after: ["workers"] });
  const all = [w3, i3, s3];
  assert.deepEqual(orderingErrors(w3, all), [
    "rollout.after: cycle workers → infra → storage → workers",
  ]);
  assert.deepEqual(orderingErrors(s3, all), [
    "rollout.after: cycle storage → workers → infra → storage",
  ]);
  // The shortest cycle is named when there are several.
  const wMany = p("workers", { after: ["infra", "db"] });
  const db = p("db", { after: ["workers"] });
  assert.deepEqual(orderingErrors(wMany, [wMany, i3, s3, db]), [
    "rollout.after: cycle workers → db → workers",
  ]);
  // Unknown names and a cycle together.
  const both = p("workers", { after: ["ghost", "infra"] });
  assert.deepEqual(orderingErrors(both, [both, i2]), [
    'rollout.after: unknown pool "ghost"',
    "rollout.after: cycle workers → infra → workers",
  ]);
});

Deno.test("orderingErrors: chains and diamonds are fine; others' cycles are theirs", () => {
  const a = p("a", { after: ["b", "c"] });
  const b = p("b", { after: ["d"] });
  const c = p("c", { after: ["d"] });
  const d = p("d");
  for (const x of [a, b, c, d]) {
    assert.deepEqual(orderingErrors(x, [a, b, c, d]), [], x.metadata.name);
  }
  // workers waits on infra, which is in a cycle with storage: infra and storage report it.
  const w = p("workers", { after: ["infra"] });
  const i = p("infra", { after: ["storage"] });
  const s = p("storage", { after: ["infra"] });
  assert.deepEqual(orderingErrors(w, [w, i, s]), []);
  assert.deepEqual(orderingErrors(i, [w, i, s]), ["rollout.after: cycle infra → storage → infra"]);
  // The pool passed in wins over a stale copy of itself in the list.
  const stale = p("workers", { after: ["infra"] });
  const fixed = p("workers");
  assert.deepEqual(orderingErrors(fixed, [stale, p("infra", { after: ["workers"] })]), []);
});
