import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodePool,
  CLUSTER_MAX_UNAVAILABLE,
  type Condition,
  resolveIntOrPercent,
} from "../../lib/api/mod.ts";
import { bootcNode, node as fixtureNode, pool as fixturePool } from "../testing/fixtures.ts";
import type { NodeSummary } from "../model/types.ts";
import {
  budgetUsage,
  clusterBudgetError,
  clusterBudgetGate,
  clusterSlotCaps,
  externalDisruptions,
} from "./cluster_budget.ts";
import type {
  Candidate,
  ClusterBudget,
  ClusterBudgetSpec,
  GateDecision,
  GateInput,
  UnrecordedDisruption,
  WaitingNode,
} from "./gate.ts";
import { poolBlockedReason, waitingCandidates } from "./waiting.ts";

const ZONE = "topology.kubernetes.io/zone";
const NOW = new Date("2026-03-01T12:00:00Z");

/** `NOW` minus `minutes`. */
function ago(minutes: number): Date {
  return new Date(NOW.getTime() - minutes * 60_000);
}

/** A Node; `disrupted` puts a disruption record on it (a slot held by `pool`). */
function n(
  name: string,
  labels: Record<string, string> = {},
  disrupted?: { pool: string },
): NodeSummary {
  return fixtureNode(name, {
    labels: { role: "worker", ...labels },
    annotations: disrupted
      ? {
        [ANNOTATION_IN_REBOOT_SLOT]: "2026-03-01T11:00:00Z",
        [ANNOTATION_SLOT_POOL]: disrupted.pool,
        [ANNOTATION_WAS_CORDONED]: "false",
      }
      : undefined,
  });
}

function budget(name: string, spec: ClusterBudgetSpec): ClusterBudget {
  return { name, spec };
}

interface Scenario {
  pool?: string;
  nodes: NodeSummary[];
  budgets: ClusterBudget[];
  /** Candidate names, in grant order (labels come from the nodes). */
  candidates: string[];
  /** When each candidate started waiting (minutes ago); default 1 minute. */
  since?: Record<string, number>;
  disrupted?: string[];
  waiting?: WaitingNode[];
  unrecorded?: UnrecordedDisruption[];
}

function gateInput(s: Scenario, candidates = s.candidates, disrupted = s.disrupted ?? []) {
  const byName = new Map(s.nodes.map((x) => [x.name, x]));
  const cands: Candidate[] = candidates.map((name) => ({
    name,
    labels: byName.get(name)?.labels ?? {},
    waitingSince: ago(s.since?.[name] ?? 1),
  }));
  const input: GateInput = {
    pool: fixturePool({ name: s.pool ?? "workers" }),
    candidates: cands,
    disrupted,
    memberCount: s.nodes.length,
    cluster: {
      pools: [],
      nodes: byName,
      budgets: s.budgets,
      waiting: s.waiting,
      unrecorded: s.unrecorded,
    },
    now: NOW,
  };
  return input;
}

function decide(s: Scenario, candidates?: string[], disrupted?: string[]): GateDecision {
  return clusterBudgetGate.decide(gateInput(s, candidates, disrupted));
}

function admitted(d: GateDecision): string[] {
  return d.admit.map((c) => c.name);
}

function waiting(pool: string, node: string, minutesAgo: number, labels = {}): WaitingNode {
  return { pool, node, since: ago(minutesAgo), labels: { role: "worker", ...labels } };
}

Deno.test("clusterBudgetError names the invalid field", () => {
  const cases: [ClusterBudgetSpec, RegExp | undefined][] = [
    [{ maxUnavailable: 1 }, undefined],
    [{ maxUnavailable: "20%", topologyKey: ZONE, maxUnavailablePerDomain: 1 }, undefined],
    [{ maxUnavailable: "x" }, /maxUnavailable: "x"/],
    [
      { maxUnavailable: 1, maxUnavailablePerDomain: 1 },
      /maxUnavailablePerDomain needs topologyKey/,
    ],
    [{ maxUnavailable: 1, topologyKey: ZONE, maxDomainsUnavailable: -1 }, /maxDomainsUnavailable/],
    [{ maxUnavailable: 1, topologyKey: "a/b/c" }, /topologyKey "a\/b\/c"/],
    [
      { maxUnavailable: 1, nodeSelector: { matchExpressions: [{ key: "k", operator: "Near" }] } },
      /nodeSelector.*unknown operator/,
    ],
  ];
  for (const [spec, want] of cases) {
    const err = clusterBudgetError(spec);
    if (want === undefined) assert.equal(err, undefined, JSON.stringify(spec));
    else assert.match(err ?? "", want, JSON.stringify(spec));
  }
});

Deno.test("cluster budget: no budgets or none selecting the candidates admits everything", () => {
  const nodes = [n("a"), n("b"), n("x", { role: "db" }, { pool: "db" })];
  assert.deepEqual(admitted(decide({ nodes, budgets: [], candidates: ["a", "b"] })), ["a", "b"]);
  const dbOnly = budget("db", { nodeSelector: { matchLabels: { role: "db" } }, maxUnavailable: 1 });
  const d = decide({ nodes, budgets: [dbOnly], candidates: ["a", "b"] });
  assert.deepEqual(admitted(d), ["a", "b"]);
  assert.equal(d.wait, undefined);
});

Deno.test("cluster budget: an integer maxUnavailable counts disrupted Nodes of every pool", () => {
  const nodes = [
    n("a"),
    n("b"),
    n("c"),
    n("x", {}, { pool: "infra" }), // another pool's slot counts too
    n("y", { role: "db" }, { pool: "db" }), // not selected: does not count
  ];
  const max2 = budget("max2", {
    nodeSelector: { matchLabels: { role: "worker" } },
    maxUnavailable: 2,
  });
  const d = decide({ nodes, budgets: [max2], candidates: ["a", "b", "c"] });
  assert.deepEqual(admitted(d), ["a"]);
  assert.equal(d.wait?.reason, "ClusterBudgetExhausted");
  assert.equal(
    d.wait?.message,
    "b, c wait: BootcDisruptionBudget max2: 2 of 2 allowed nodes disrupted (4 selected)",
  );
  assert.equal(d.wait?.routine, false, "another pool's node fills the budget");
});

Deno.test("cluster budget: grants earlier in the decision count although not on the Node yet", () => {
  const nodes = [n("a"), n("b"), n("c")];
  const max2 = budget("max2", { maxUnavailable: 2 });
  // The planner asks one candidate at a time, passing earlier grants in `disrupted`.
  assert.deepEqual(admitted(decide({ nodes, budgets: [max2], candidates: ["b"] }, ["b"], ["a"])), [
    "b",
  ]);
  const d = decide({ nodes, budgets: [max2], candidates: ["c"] }, ["c"], ["a", "b"]);
  assert.deepEqual(admitted(d), []);
  assert.equal(d.wait?.routine, true, "only this pool's own nodes fill the budget");
});

Deno.test("cluster budget: a percentage is of every selected Node, rounded up", () => {
  const nodes = Array.from({ length: 10 }, (_, i) => n(`w${i}`));
  nodes.push(n("db0", { role: "db" }), n("db1", { role: "db" }));
  const sel = { matchLabels: { role: "worker" } };
  const cases: [string, number][] = [["25%", 3], ["10%", 1], ["1%", 1], ["100%", 10], ["0%", 0]];
  for (const [pct, want] of cases) {
    const d = decide({
      nodes,
      budgets: [budget("pct", { nodeSelector: sel, maxUnavailable: pct })],
      candidates: nodes.map((x) => x.name),
    });
    assert.equal(admitted(d).filter((x) => x.startsWith("w")).length, want, pct);
    assert.deepEqual(admitted(d).filter((x) => x.startsWith("db")), ["db0", "db1"], pct);
  }
  const d = decide({
    nodes,
    budgets: [budget("pct", { nodeSelector: sel, maxUnavailable: "25%" })],
    candidates: ["w0", "w1", "w2", "w3"],
  });
  assert.match(d.wait?.message ?? "", /3 of 3 allowed nodes disrupted \(maxUnavailable 25% of 10/);
});

Deno.test("cluster budget: every budget selecting a node must hold", () => {
  const nodes = [
    n("a1", { [ZONE]: "a" }),
    n("a2", { [ZONE]: "a" }, { pool: "infra" }),
    n("b1", { [ZONE]: "b" }),
    n("b2", { [ZONE]: "b" }),
  ];
  const all = budget("all", { maxUnavailable: 2 });
  const zoneA = budget("zone-a", {
    nodeSelector: { matchLabels: { [ZONE]: "a" } },
    maxUnavailable: 1,
  });
  const d = decide({ nodes, budgets: [all, zoneA], candidates: ["a1", "b1", "b2"] });
  // a1: zone-a full (all has room); b1: all has room (2 of 2 then); b2: all full.
  assert.deepEqual(admitted(d), ["b1"]);
  assert.match(d.wait?.message ?? "", /a1 waits: BootcDisruptionBudget zone-a: 1 of 1 allowed/);
  assert.match(d.wait?.message ?? "", /b2 waits: BootcDisruptionBudget all: 2 of 2 allowed/);
});

Deno.test("cluster budget: at most maxUnavailablePerDomain per topology domain", () => {
  const nodes = [
    n("a1", { [ZONE]: "a" }, { pool: "infra" }),
    n("a2", { [ZONE]: "a" }),
    n("b1", { [ZONE]: "b" }),
    n("b2", { [ZONE]: "b" }),
    n("c1", { [ZONE]: "c" }),
  ];
  const zones = budget("zones", {
    maxUnavailable: 10,
    topologyKey: ZONE,
    maxUnavailablePerDomain: 1,
  });
  const d = decide({ nodes, budgets: [zones], candidates: ["a2", "b1", "b2", "c1"] });
  assert.deepEqual(admitted(d), ["b1", "c1"]);
  assert.match(
    d.wait?.message ?? "",
    /a2 waits: BootcDisruptionBudget zones: 1 of 1 allowed nodes disrupted in topology\.kubernetes\.io\/zone=a/,
  );
  assert.match(d.wait?.message ?? "", /b2 waits: .* in topology\.kubernetes\.io\/zone=b/);
});

Deno.test("cluster budget: at most maxDomainsUnavailable domains with any disruption", () => {
  const nodes = [
    n("a1", { [ZONE]: "a" }, { pool: "infra" }),
    n("a2", { [ZONE]: "a" }),
    n("a3", { [ZONE]: "a" }),
    n("b1", { [ZONE]: "b" }),
  ];
  const oneZone = budget("one-zone", {
    maxUnavailable: 10,
    topologyKey: ZONE,
    maxUnavailablePerDomain: 2,
    maxDomainsUnavailable: 1,
  });
  const d = decide({ nodes, budgets: [oneZone], candidates: ["b1", "a2", "a3"] });
  assert.deepEqual(admitted(d), ["a2"]);
  assert.match(
    d.wait?.message ?? "",
    /b1 waits: BootcDisruptionBudget one-zone: 1 of 1 allowed topology\.kubernetes\.io\/zone domains have disrupted nodes \(a\)/,
  );
  assert.match(d.wait?.message ?? "", /a3 waits: .* 2 of 2 allowed nodes disrupted in .*=a/);
  // Nothing disrupted: the first candidate's zone becomes the one zone.
  const fresh = nodes.map((x) => ({ ...x, annotations: undefined }));
  assert.deepEqual(
    admitted(decide({ nodes: fresh, budgets: [oneZone], candidates: ["b1", "a2"] })),
    [
      "b1",
    ],
  );
});

Deno.test("cluster budget: a node without the topology label is refused while a domain limit is set", () => {
  const nodes = [n("u1"), n("a1", { [ZONE]: "a" })];
  const perZone = budget("zones", {
    maxUnavailable: 5,
    topologyKey: ZONE,
    maxUnavailablePerDomain: 1,
  });
  const d = decide({ nodes, budgets: [perZone], candidates: ["u1", "a1"] });
  assert.deepEqual(admitted(d), ["a1"]);
  assert.match(d.wait?.message ?? "", /u1 waits: .*no topology\.kubernetes\.io\/zone label/);
  assert.equal(d.wait?.routine, false);
  // topologyKey without a domain limit: nothing to refuse.
  const keyOnly = budget("key-only", { maxUnavailable: 5, topologyKey: ZONE });
  assert.deepEqual(admitted(decide({ nodes, budgets: [keyOnly], candidates: ["u1", "a1"] })), [
    "u1",
    "a1",
  ]);
  // A disrupted node without the label counts as a domain of its own.
  const withUnlabeled = [n("u0", {}, { pool: "infra" }), ...nodes];
  const oneDomain = budget("one", {
    maxUnavailable: 5,
    topologyKey: ZONE,
    maxDomainsUnavailable: 1,
  });
  const d2 = decide({ nodes: withUnlabeled, budgets: [oneDomain], candidates: ["a1"] });
  assert.deepEqual(admitted(d2), []);
  assert.match(d2.wait?.message ?? "", /domains have disrupted nodes \(\(unlabeled\)\)/);
});

Deno.test("cluster budget: an invalid budget fails closed", () => {
  const nodes = [n("a"), n("d", { role: "db" })];
  const badMax = budget("bad", {
    nodeSelector: { matchLabels: { role: "db" } },
    maxUnavailable: "lots",
  });
  const d = decide({ nodes, budgets: [badMax], candidates: ["a", "d"] });
  assert.deepEqual(admitted(d), ["a"], "only the nodes it selects are held");
  assert.match(
    d.wait?.message ?? "",
    /d waits: BootcDisruptionBudget bad is invalid: maxUnavailable/,
  );
  const badSelector = budget("bad-sel", {
    nodeSelector: { matchExpressions: [{ key: "role", operator: "Sometimes" }] },
    maxUnavailable: 1,
  });
  const d2 = decide({ nodes, budgets: [badSelector], candidates: ["a", "d"] });
  assert.deepEqual(admitted(d2), [], "no one knows which nodes it meant");
  assert.match(d2.wait?.message ?? "", /bad-sel is invalid: .*no node gets a reboot slot/);
});

Deno.test("fairness: an older waiting node of another pool goes first", () => {
  const nodes = [n("a"), n("b"), n("w1")];
  const shared = budget("shared", { maxUnavailable: 1 });
  const s: Scenario = {
    nodes,
    budgets: [shared],
    candidates: ["a"],
    since: { a: 5 },
    waiting: [waiting("infra", "w1", 10)],
  };
  const d = decide(s);
  assert.deepEqual(admitted(d), []);
  assert.equal(d.wait?.reason, "ClusterBudgetExhausted");
  assert.equal(
    d.wait?.message,
    "a waits: BootcDisruptionBudget shared: node w1 of pool infra, waiting since " +
      "2026-03-01T11:50:00Z, goes first (0 of 1 allowed nodes disrupted)",
  );
  assert.equal(d.wait?.routine, false);
  // Younger than ours: it waits for us.
  assert.deepEqual(admitted(decide({ ...s, waiting: [waiting("infra", "w1", 2)] })), ["a"]);
  // Room for both: nobody is held back.
  const roomy = { ...s, budgets: [budget("shared", { maxUnavailable: 2 })] };
  assert.deepEqual(admitted(decide(roomy)), ["a"]);
  // With room for 2 and two older nodes of others, ours waits.
  const two = { ...roomy, waiting: [waiting("infra", "w1", 10), waiting("db", "b", 9)] };
  const d2 = decide(two);
  assert.deepEqual(admitted(d2), []);
  assert.match(d2.wait?.message ?? "", /node w1 of pool infra, .* and 1 more older waiting node/);
  // This pool's own waiting nodes are its candidates, never competitors.
  assert.deepEqual(admitted(decide({ ...s, waiting: [waiting("workers", "b", 10)] })), ["a"]);
});

Deno.test("fairness: one view asked for two pools reserves the other pool's nodes for each", () => {
  const nodes = [n("a"), n("b")];
  const s: Scenario = {
    pool: "alpha",
    nodes,
    budgets: [budget("shared", { maxUnavailable: 1 })],
    candidates: ["a"],
    since: { a: 10 },
    waiting: [waiting("alpha", "a", 10), waiting("beta", "b", 5)],
  };
  const view = gateInput(s);
  assert.deepEqual(admitted(clusterBudgetGate.decide(view)), ["a"], "alpha's a is older");
  const asBeta: GateInput = {
    ...view,
    pool: fixturePool({ name: "beta" }),
    candidates: [{ name: "b", labels: nodes[1].labels, waitingSince: ago(5) }],
  };
  assert.deepEqual(admitted(clusterBudgetGate.decide(asBeta)), [], "beta waits for alpha's a");
});

Deno.test("fairness: equal waiting times are ordered by pool name, so exactly one side waits", () => {
  const nodes = [n("a"), n("b")];
  const shared = budget("shared", { maxUnavailable: 1 });
  const fromA = decide({
    pool: "alpha",
    nodes,
    budgets: [shared],
    candidates: ["a"],
    since: { a: 5 },
    waiting: [waiting("beta", "b", 5)],
  });
  const fromB = decide({
    pool: "beta",
    nodes,
    budgets: [shared],
    candidates: ["b"],
    since: { b: 5 },
    waiting: [waiting("alpha", "a", 5)],
  });
  assert.deepEqual([admitted(fromA), admitted(fromB)], [["a"], []]);
});

Deno.test("fairness: an older node that could not go anyway does not hold others back", () => {
  const nodes = [
    n("a1", { [ZONE]: "a" }, { pool: "infra" }),
    n("w-a", { [ZONE]: "a" }),
    n("b1", { [ZONE]: "b" }),
  ];
  const zones = budget("zones", {
    maxUnavailable: 5,
    topologyKey: ZONE,
    maxUnavailablePerDomain: 1,
  });
  // w-a (older, other pool) is in zone a, which is full: b1 in zone b may go.
  const s: Scenario = {
    nodes,
    budgets: [zones],
    candidates: ["b1"],
    since: { b1: 1 },
    waiting: [waiting("infra", "w-a", 60, { [ZONE]: "a" })],
  };
  assert.deepEqual(admitted(decide(s)), ["b1"]);
  // An older node held back by another budget that selects only it does not count either.
  const nodes2 = [n("x", { role: "db" }, { pool: "db" }), n("w", { role: "db" }), n("c")];
  const s2: Scenario = {
    nodes: nodes2,
    budgets: [
      budget("shared", { nodeSelector: {}, maxUnavailable: 2 }),
      budget("db", { nodeSelector: { matchLabels: { role: "db" } }, maxUnavailable: 1 }),
    ],
    candidates: ["c"],
    waiting: [{ pool: "db", node: "w", since: ago(60), labels: { role: "db" } }],
  };
  assert.deepEqual(admitted(decide(s2)), ["c"]);
  // Without the db budget w could go, and it is older: c waits.
  assert.deepEqual(admitted(decide({ ...s2, budgets: [s2.budgets[0]] })), []);
});

/**
 * Two pools share a budget of 1; in every round the node in the slot finishes,
 * then the pools are planned, always `workers` first (the unfair order). Slots
 * must still go strictly by waiting time, alternating between the pools.
 */
Deno.test("fairness: pools sharing a budget take turns by waiting time (no pool starves)", () => {
  const names = ["w0", "i0", "w1", "i1", "w2", "i2"]; // waiting since 60, 59, 58, … minutes
  const poolOf = (x: string) => (x.startsWith("w") ? "workers" : "infra");
  const since = Object.fromEntries(names.map((x, i) => [x, 60 - i]));
  const order = grantOrder(names, poolOf, since, { blocked: [] });
  assert.deepEqual(order, names);
  // A blocked pool (its nodes not listed as waiting) holds nobody back.
  assert.deepEqual(grantOrder(names, poolOf, since, { blocked: ["infra"] }), ["w0", "w1", "w2"]);
});

function grantOrder(
  names: string[],
  poolOf: (x: string) => string,
  since: Record<string, number>,
  opts: { blocked: string[] },
): string[] {
  const order: string[] = [];
  const done = new Set<string>();
  let inSlot: string | undefined;
  for (let round = 0; round < 20; round++) {
    if (inSlot) done.add(inSlot);
    inSlot = undefined;
    const nodes = names.map((x) => n(x, {}, undefined));
    const left = names.filter((x) => !done.has(x) && !opts.blocked.includes(poolOf(x)));
    for (const pool of ["workers", "infra"]) {
      if (opts.blocked.includes(pool)) continue;
      const mine = left.filter((x) => poolOf(x) === pool && x !== inSlot);
      const others = left.filter((x) => poolOf(x) !== pool && x !== inSlot);
      const current = nodes.map((
        x,
      ) => (x.name === inSlot ? n(x.name, {}, { pool: poolOf(x.name) }) : x));
      const d = decide({
        pool,
        nodes: current,
        budgets: [budget("shared", { maxUnavailable: 1 })],
        candidates: mine,
        since,
        waiting: others.map((x) => waiting(poolOf(x), x, since[x])),
      });
      if (d.admit.length > 0) {
        assert.equal(d.admit.length, 1);
        assert.equal(inSlot, undefined, "budget of 1 exceeded");
        inSlot = d.admit[0].name;
        order.push(inSlot);
      }
    }
    if (!inSlot && left.length === 0) break;
  }
  return order;
}

/** Deterministic PRNG (mulberry32) for the property test. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomScenario(r: () => number): Scenario {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const zones = ["a", "b", "c"];
  const nodes: NodeSummary[] = [];
  for (let i = 0; i < 12; i++) {
    const labels: Record<string, string> = { role: pick(["worker", "db"]) };
    if (r() < 0.9) labels[ZONE] = pick(zones);
    const disrupted = r() < 0.2 ? { pool: pick(["infra", "workers"]) } : undefined;
    nodes.push(n(`n${i}`, labels, disrupted));
  }
  const budgets: ClusterBudget[] = [];
  const count = 1 + Math.floor(r() * 3);
  for (let i = 0; i < count; i++) {
    const spec: ClusterBudgetSpec = {
      maxUnavailable: r() < 0.5 ? Math.floor(r() * 5) : `${pick([10, 25, 50, 100])}%`,
    };
    if (r() < 0.5) spec.nodeSelector = { matchLabels: { role: pick(["worker", "db"]) } };
    if (r() < 0.6) {
      spec.topologyKey = ZONE;
      if (r() < 0.7) spec.maxUnavailablePerDomain = 1 + Math.floor(r() * 2);
      if (r() < 0.7) spec.maxDomainsUnavailable = 1 + Math.floor(r() * 2);
    }
    budgets.push(budget(`b${i}`, spec));
  }
  const free = nodes.filter((x) => !x.annotations);
  const candidates = free.filter(() => r() < 0.6).map((x) => x.name);
  const rest = free.filter((x) => !candidates.includes(x.name));
  const waitingNodes = rest.filter(() => r() < 0.7).map((x) =>
    waiting(pick(["infra", "db"]), x.name, Math.floor(r() * 30), x.labels)
  );
  const since = Object.fromEntries(candidates.map((x) => [x, Math.floor(r() * 30)]));
  return { nodes, budgets, candidates, since, waiting: waitingNodes };
}

/** Every budget holds over the disrupted Nodes plus `granted` (an independent check). */
function budgetsHold(s: Scenario, granted: readonly string[]): string | undefined {
  const out = new Set(
    s.nodes.filter((x) => x.annotations?.[ANNOTATION_IN_REBOOT_SLOT]).map((x) => x.name),
  );
  for (const g of granted) out.add(g);
  for (const b of s.budgets) {
    const sel = s.nodes.filter((x) => {
      const want = b.spec.nodeSelector?.matchLabels ?? {};
      return Object.entries(want).every(([k, v]) => x.labels[k] === v);
    });
    const down = sel.filter((x) => out.has(x.name));
    const limit = resolveIntOrPercent(b.spec.maxUnavailable, sel.length, CLUSTER_MAX_UNAVAILABLE);
    if (down.length > limit && granted.some((g) => down.some((x) => x.name === g))) {
      return `${b.name}: ${down.length} > ${limit}`;
    }
    if (!b.spec.topologyKey) continue;
    const domainOf = (x: NodeSummary) => x.labels[ZONE] ?? `unlabeled:${x.name}`;
    const before = new Set(down.filter((x) => !granted.includes(x.name)).map(domainOf));
    const perDomain = new Map<string, number>();
    for (const x of down) perDomain.set(domainOf(x), (perDomain.get(domainOf(x)) ?? 0) + 1);
    for (const g of granted) {
      const x = sel.find((y) => y.name === g);
      if (!x) continue;
      const d = x.labels[ZONE];
      const limited = b.spec.maxUnavailablePerDomain !== undefined ||
        b.spec.maxDomainsUnavailable !== undefined;
      if (limited && d === undefined) return `${b.name}: granted unlabeled ${g}`;
      if (d === undefined) continue;
      const per = b.spec.maxUnavailablePerDomain;
      if (per !== undefined && (perDomain.get(d) ?? 0) > per) return `${b.name}: zone ${d}`;
      const maxD = b.spec.maxDomainsUnavailable;
      // A grant may not open a new domain beyond the limit (domains already out stay out).
      if (maxD !== undefined && perDomain.size > Math.max(before.size, maxD)) {
        return `${b.name}: ${perDomain.size} zones`;
      }
    }
  }
  return undefined;
}

function subsets<T>(xs: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let mask = 0; mask < 1 << xs.length; mask++) {
    out.push(xs.filter((_, i) => mask & (1 << i)));
  }
  return out;
}

Deno.test("cluster budget: safe, monotone, and one-at-a-time asks agree with the whole set", () => {
  const r = rng(1313);
  let nonTrivial = 0;
  for (let trial = 0; trial < 300; trial++) {
    const s = randomScenario(r);
    const whole = admitted(decide(s));
    const why = budgetsHold(s, whole);
    assert.equal(why, undefined, `trial ${trial}: budget broken: ${why}`);
    if (whole.length > 0 && whole.length < s.candidates.length) nonTrivial++;
    // Monotone: any subset of what was admitted is admitted in full.
    for (const sub of subsets(whole.slice(0, 6))) {
      assert.deepEqual(admitted(decide(s, sub)), sub, `trial ${trial}: subset ${sub}`);
    }
    // The planner's way: one candidate at a time on the same view (the gate caches
    // per view), earlier grants in `disrupted`.
    const view = gateInput(s);
    const granted: string[] = [];
    for (const c of view.candidates) {
      const d = clusterBudgetGate.decide({ ...view, candidates: [c], disrupted: [...granted] });
      if (d.admit.length === 1) granted.push(c.name);
    }
    assert.deepEqual(granted, whole, `trial ${trial}: one at a time`);
  }
  assert.ok(nonTrivial > 30, `only ${nonTrivial} trials held some candidates back`);
});

// --- waitingCandidates ---

function withIdleSince(bn: BootcNode, at: string): BootcNode {
  const conditions = (bn.status?.conditions ?? []).map((c: Condition) =>
    c.type === "Idle" ? { ...c, lastTransitionTime: at } : c
  );
  return { ...bn, status: { ...bn.status!, conditions } };
}

function poolWith(
  name: string,
  opts: {
    maxUnavailable?: number;
    paused?: boolean;
    upToDate?: string;
    degraded?: string;
  } = {},
): BootcNodePool {
  const conditions: Condition[] = [];
  const t = "2026-03-01T00:00:00Z";
  if (opts.upToDate) {
    conditions.push({
      type: "UpToDate",
      status: "False",
      reason: opts.upToDate,
      message: "",
      lastTransitionTime: t,
    });
  }
  if (opts.degraded) {
    conditions.push({
      type: "Degraded",
      status: "True",
      reason: opts.degraded,
      message: "",
      lastTransitionTime: t,
    });
  }
  return fixturePool({
    name,
    maxUnavailable: opts.maxUnavailable ?? 1,
    paused: opts.paused,
    status: { conditions },
  });
}

Deno.test("waitingCandidates: staged, Ready, undisrupted nodes of unblocked pools, oldest first", () => {
  const nodes = new Map<string, NodeSummary>();
  const add = (x: NodeSummary) => nodes.set(x.name, x);
  const bns: BootcNode[] = [];
  // infra: room 2 (maxUnavailable 2, nothing disrupted): its two oldest staged nodes.
  for (const [name, at] of [["i1", "10:00"], ["i2", "09:00"], ["i3", "11:00"]]) {
    add(n(name, { zone: "a" }));
    bns.push(
      withIdleSince(bootcNode(name, { pool: "infra", phase: "staged" }), `2026-03-01T${at}:00Z`),
    );
  }
  add(n("i4"));
  bns.push(bootcNode("i4", { pool: "infra", phase: "staging" })); // not staged yet
  add(n("i5", {}, undefined));
  nodes.set("i5", { ...nodes.get("i5")!, ready: false });
  bns.push(bootcNode("i5", { pool: "infra", phase: "staged" })); // not Ready
  // workers: room 0 (maxUnavailable 1, one disrupted): none of its nodes compete.
  add(n("w1", {}, { pool: "workers" }));
  bns.push(bootcNode("w1", { pool: "workers", phase: "staged" }));
  add(n("w2"));
  bns.push(bootcNode("w2", { pool: "workers", phase: "staged" }));
  // db: paused.
  add(n("d1"));
  bns.push(bootcNode("d1", { pool: "db", phase: "staged" }));
  // Not owned by any pool.
  const orphan = bootcNode("o1", { phase: "staged" });
  orphan.metadata.ownerReferences = [];
  add(n("o1"));
  bns.push(orphan);

  const pools = [
    poolWith("infra", { maxUnavailable: 2, upToDate: "ClusterBudgetExhausted" }),
    poolWith("workers"),
    poolWith("db", { paused: true }),
  ];
  const got = waitingCandidates({ pools, bootcNodes: bns, nodes, now: NOW });
  assert.deepEqual(got.map((w) => [w.pool, w.node, w.since.toISOString()]), [
    ["infra", "i2", "2026-03-01T09:00:00.000Z"],
    ["infra", "i1", "2026-03-01T10:00:00.000Z"],
  ]);
  assert.deepEqual(got[0].labels, nodes.get("i2")!.labels);
});

Deno.test("poolBlockedReason: blocked pools do not compete for cluster budgets", () => {
  const cases: [BootcNodePool, string | undefined][] = [
    [poolWith("p"), undefined],
    [poolWith("p", { upToDate: "RolloutInProgress" }), undefined],
    [poolWith("p", { upToDate: "ClusterBudgetExhausted" }), undefined],
    [poolWith("p", { upToDate: "StagingLimit" }), undefined],
    [poolWith("p", { degraded: "NodeDegraded" }), undefined],
    [poolWith("p", { paused: true }), "Paused"],
    [poolWith("p", { upToDate: "Paused" }), "Paused"],
    [poolWith("p", { upToDate: "OutsideMaintenanceWindow" }), "OutsideMaintenanceWindow"],
    [poolWith("p", { upToDate: "Blackout" }), "Blackout"],
    [poolWith("p", { upToDate: "WaitingForPool" }), "WaitingForPool"],
    [poolWith("p", { upToDate: "BudgetExhausted" }), "BudgetExhausted"],
    [poolWith("p", { degraded: "RolloutHalted" }), "RolloutHalted"],
    [poolWith("p", { degraded: "InvalidSpec" }), "InvalidSpec"],
  ];
  for (const [p, want] of cases) {
    assert.equal(poolBlockedReason(p), want, JSON.stringify(p.status?.conditions));
  }
});

Deno.test("waitingCandidates feeds the gate: a paused pool's old nodes hold nobody back", () => {
  const nodes = new Map<string, NodeSummary>([["a", n("a")], ["d1", n("d1")]]);
  const old = withIdleSince(
    bootcNode("d1", { pool: "db", phase: "staged" }),
    "2026-01-01T00:00:00Z",
  );
  const shared = budget("shared", { maxUnavailable: 1 });
  const ask = (db: BootcNodePool) =>
    admitted(decide({
      nodes: [...nodes.values()],
      budgets: [shared],
      candidates: ["a"],
      waiting: waitingCandidates({
        pools: [poolWith("workers"), db],
        bootcNodes: [old],
        nodes,
        now: NOW,
      }),
    }));
  assert.deepEqual(ask(poolWith("db")), [], "an unblocked older pool goes first");
  assert.deepEqual(ask(poolWith("db", { paused: true })), ["a"]);
  assert.deepEqual(ask(poolWith("db", { upToDate: "OutsideMaintenanceWindow" })), ["a"]);
  assert.deepEqual(ask(poolWith("db", { degraded: "RolloutHalted" })), ["a"]);
});

Deno.test("waitingCandidates: a pool's room follows its active scheduled budget, not bare maxUnavailable", () => {
  const nodes = new Map<string, NodeSummary>([["i1", n("i1")], ["i2", n("i2")]]);
  const bns = ["i1", "i2"].map((x) => bootcNode(x, { pool: "infra", phase: "staged" }));
  const infra = (budgets: { maxUnavailable: number; schedule?: string; duration?: string }[]) => {
    const p = poolWith("infra", { maxUnavailable: 2 });
    p.spec.rollout = { ...p.spec.rollout, budgets } as typeof p.spec.rollout;
    return p;
  };
  const names = (p: BootcNodePool) =>
    waitingCandidates({ pools: [p], bootcNodes: bns, nodes, now: NOW }).map((w) => w.node);
  assert.deepEqual(names(infra([])), ["i1", "i2"]);
  // A budget of 0 active now (12:00 UTC, "0 11 * * *" for 2h): the pool has no room.
  assert.deepEqual(
    names(infra([{ maxUnavailable: 0, schedule: "0 11 * * *", duration: "2h" }])),
    [],
  );
  // Inactive now: maxUnavailable rules again.
  assert.deepEqual(
    names(infra([{ maxUnavailable: 0, schedule: "0 20 * * *", duration: "2h" }])),
    ["i1", "i2"],
  );
  assert.deepEqual(names(infra([{ maxUnavailable: 1 }])).length, 1);
});

Deno.test("clusterSlotCaps: only budgets selecting every member cap the pool, less other pools' disruptions", () => {
  const s: Scenario = {
    nodes: [
      n("w1", { [ZONE]: "a" }),
      n("w2", { [ZONE]: "b" }),
      n("o1", { [ZONE]: "a" }, { pool: "other" }),
      n("w3", { [ZONE]: "a" }, { pool: "workers" }),
    ],
    budgets: [
      budget("all", { maxUnavailable: 2 }),
      budget("zone-a", { maxUnavailable: 1, nodeSelector: { matchLabels: { [ZONE]: "a" } } }),
      budget("bad", { maxUnavailable: "lots" }),
    ],
    candidates: [],
  };
  const cluster = gateInput(s).cluster;
  const caps = clusterSlotCaps(cluster, "workers", ["w1", "w2", "w3"], new Set(["w3"]));
  assert.deepEqual(caps.map((c) => [c.name, c.selected, c.disruptedElsewhere, c.invalid]), [
    ["all", 4, 1, undefined],
    [
      "bad",
      4,
      1,
      'maxUnavailable: "lots" must be an integer >= 0 or a percentage from 0% to ' +
      '100% (for example 0, 2 or "25%")',
    ],
  ]);
  assert.deepEqual(clusterSlotCaps(cluster, "workers", [], new Set()), []);
});

Deno.test("cluster budget: an External pool's orchestrator disruptions count (cordoned or NotReady)", () => {
  const mco = fixturePool({ name: "mco" });
  (mco.spec.rollout as { strategy?: string }).strategy = "External";
  const nodes = [
    n("a"),
    n("b"),
    { ...n("e1"), unschedulable: true }, // cordoned by the orchestrator
    { ...n("e2"), ready: false }, // rebooting under the orchestrator
    { ...n("e3") }, // an External member left alone: not disrupted
  ];
  const max3 = budget("max3", {
    nodeSelector: { matchLabels: { role: "worker" } },
    maxUnavailable: 3,
  });
  const input = gateInput({ nodes, budgets: [max3], candidates: ["a", "b"] });
  const external = {
    ...input,
    cluster: { ...input.cluster, pools: [{ name: "mco", pool: mco, members: ["e1", "e2", "e3"] }] },
  };
  const d = clusterBudgetGate.decide(external);
  assert.deepEqual(admitted(d), ["a"], "3 allowed, 2 down under the orchestrator");
  assert.match(
    d.wait?.message ?? "",
    /3 of 3 allowed nodes disrupted/,
    "a granted, e1 and e2 down",
  );
  // The same nodes in a pool the operator rolls: their cordon is not a disruption of ours.
  const rolling = {
    ...mco,
    spec: { ...mco.spec, rollout: { ...mco.spec.rollout, strategy: "RollingUpdate" } },
  };
  const own = clusterBudgetGate.decide({
    ...input,
    cluster: {
      ...input.cluster,
      pools: [{ name: "mco", pool: rolling as BootcNodePool, members: ["e1", "e2", "e3"] }],
    },
  });
  assert.deepEqual(admitted(own), ["a", "b"]);
  // The budget's status counts them alike (one rule).
  assert.deepEqual(
    budgetUsage(
      max3,
      new Map(nodes.map((x) => [x.name, x])),
      externalDisruptions(external.cluster.pools, external.cluster.nodes),
    ).disrupted,
    ["e1", "e2"],
  );
});

Deno.test("cluster budget: a node disrupted with its Node object gone counts where it may be selected", () => {
  // "gone" (pool infra, role=worker) has no Node, so no labels: each budget its pool's
  // selector does not rule out counts it, as a domain of its own and in every domain.
  const gone: UnrecordedDisruption = {
    node: "gone",
    poolSelector: { matchLabels: { role: "worker" } },
  };
  const nodes = [n("a", { [ZONE]: "a" }), n("b", { [ZONE]: "b" }), n("g", { role: "gpu" })];
  const max1 = budget("max1", { maxUnavailable: 1 });
  const d = decide({ nodes, budgets: [max1], candidates: ["a"], unrecorded: [gone] });
  assert.deepEqual(admitted(d), []);
  assert.match(
    d.wait?.message ?? "",
    /max1: 1 of 1 allowed nodes disrupted \(3 selected\); counted: gone, disrupted with its Node object gone/,
  );
  // One zone at a time: "gone" is a zone down.
  const oneZone = budget("one-zone", {
    maxUnavailable: 10,
    topologyKey: ZONE,
    maxDomainsUnavailable: 1,
  });
  const z = decide({ nodes, budgets: [oneZone], candidates: ["a"], unrecorded: [gone] });
  assert.deepEqual(admitted(z), []);
  assert.match(
    z.wait?.message ?? "",
    /1 of 1 allowed .* domains have disrupted nodes \(\(unlabeled\)\)/,
  );
  // One per zone: "gone" may be in a's zone (or b's): neither goes beside it.
  const perZone = budget("per-zone", {
    maxUnavailable: 10,
    topologyKey: ZONE,
    maxUnavailablePerDomain: 1,
  });
  const p = decide({ nodes, budgets: [perZone], candidates: ["a", "b"], unrecorded: [gone] });
  assert.deepEqual(admitted(p), []);
  assert.match(p.wait?.message ?? "", /1 of 1 allowed nodes disrupted in .*zone=a/);
  // A budget its pool's selector rules out (gpu nodes only) does not count it.
  const gpu = budget("gpu", { maxUnavailable: 1, nodeSelector: { matchLabels: { role: "gpu" } } });
  assert.deepEqual(
    admitted(decide({ nodes, budgets: [gpu], candidates: ["g"], unrecorded: [gone] })),
    ["g"],
  );
  // Without it, every budget admits a.
  assert.deepEqual(
    admitted(decide({ nodes, budgets: [max1, oneZone, perZone], candidates: ["a"] })),
    [
      "a",
    ],
  );
});

Deno.test("cluster budget: a Node back without its record counts by its labels while its pool's mirror says disrupted", () => {
  const nodes = [n("back", { [ZONE]: "a" }), n("a", { [ZONE]: "a" }), n("b", { [ZONE]: "b" })];
  const back: UnrecordedDisruption = { node: "back", labels: { role: "worker", [ZONE]: "a" } };
  const perZone = budget("per-zone", {
    maxUnavailable: 10,
    topologyKey: ZONE,
    maxUnavailablePerDomain: 1,
  });
  const d = decide({ nodes, budgets: [perZone], candidates: ["a", "b"], unrecorded: [back] });
  assert.deepEqual(admitted(d), ["b"], "zone a already has back down; zone b is free");
  const usage = budgetUsage(perZone, new Map(nodes.map((x) => [x.name, x])), new Set(), [back]);
  assert.deepEqual(usage.disrupted, ["back"]);
});

Deno.test("waitingCandidates: a node its own pool holds back for its own reason reserves nothing", () => {
  const nodes = new Map<string, NodeSummary>();
  const bns: BootcNode[] = [];
  for (const [name, at] of [["a1", "09:00"], ["a2", "10:00"], ["a3", "11:00"]]) {
    nodes.set(name, n(name));
    bns.push(
      withIdleSince(bootcNode(name, { pool: "a", phase: "staged" }), `2026-03-01T${at}:00Z`),
    );
  }
  const pool = poolWith("a", { maxUnavailable: 3 });
  pool.status = {
    ...pool.status,
    queue: [
      { node: "a1", position: 1, waitingFor: "NodeNotReadyLongEnough" },
      { node: "a2", position: 2, waitingFor: "ClusterBudgetExhausted" },
    ],
  } as BootcNodePool["status"];
  const got = waitingCandidates({ pools: [pool], bootcNodes: bns, nodes, now: NOW });
  // a1 waits for its own pool's gate; a2 waits for room; a3 is not in the published queue.
  assert.deepEqual(got.map((w) => w.node), ["a2", "a3"]);
});
