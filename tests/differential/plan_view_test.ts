/**
 * A differential test of the controller's planning and the plugin's view: random
 * pools, nodes and budgets go through `planPool`, its writes are applied to the
 * objects, and the plugin's view of the result (`kubectl bootc status` and `why`)
 * must agree with the plan on the slot limit, the slot queue and each node's
 * state. An independent oracle checks the limit (the budgets are drawn with
 * known activity), and a second plan with every budget opened checks that the
 * published queue is the order slots are really handed out in.
 *
 * Deterministic: a seeded generator; a failure names its seed and scenario.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodePool,
  CLUSTER_MAX_UNAVAILABLE,
  type IntOrPercent,
  POOL_MAX_UNAVAILABLE,
  resolveIntOrPercent,
} from "../../lib/api/mod.ts";
import {
  type Action,
  type Plan,
  type PlanInput,
  planPool,
} from "../../controller/planner/planner.ts";
import { isSlotGrant } from "../../controller/planner/plan.ts";
import { bootcNode, image, input, node, pool } from "../../controller/testing/fixtures.ts";
import type { NodeSummary } from "../../controller/model/types.ts";
import type { ClusterBudget } from "../../controller/gates/gate.ts";
import type { NodeLike, Snapshot } from "../../plugin/model.ts";
import { poolProgress } from "../../plugin/progress.ts";
import { poolViews } from "../../plugin/status_view.ts";
import { explainNode } from "../../plugin/why.ts";
import { rng } from "./node_world.ts";

const SCENARIOS = 300;
/** Five minutes before the fixtures' clock: within every drain and reboot timeout. */
const EARLIER = "2026-01-01T00:55:00Z";

type Kind =
  | "updated"
  | "pending"
  | "staging"
  | "staged"
  | "draining"
  | "rebooting"
  | "degraded";
const KINDS: Kind[] = [
  "updated",
  "pending",
  "staging",
  "staged",
  "staged",
  "staged",
  "draining",
  "rebooting",
  "degraded",
];

/** A scheduled budget, with whether it is active at the fixtures' clock (01:00 UTC). */
interface DrawnBudget {
  maxUnavailable: IntOrPercent;
  schedule?: string;
  duration?: string;
  active: boolean;
}

/** One drawn cluster budget, with whether it selects every worker. */
interface DrawnClusterBudget {
  budget: ClusterBudget;
  wholePool: boolean;
}

interface Scenario {
  seed: number;
  input: PlanInput;
  maxUnavailable: IntOrPercent;
  budgets: DrawnBudget[];
  cluster: DrawnClusterBudget[];
  workers: string[];
  /** Nodes of the other pool disrupted now. */
  otherDisrupted: string[];
  /** Every Node, by name, as the scenario starts. */
  nodes: NodeSummary[];
}

function draw(seed: number): Scenario {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const n = 1 + Math.floor(r() * 10);
  const maxUnavailable = pick<IntOrPercent>([1, 1, 2, 3, "25%", "50%", "10%", "2"]);
  const budgets: DrawnBudget[] = [];
  if (r() < 0.4) {
    budgets.push(
      pick<DrawnBudget>([
        { maxUnavailable: 0, schedule: "0 0 * * *", duration: "2h", active: true },
        { maxUnavailable: 1, schedule: "0 0 * * *", duration: "2h", active: true },
        { maxUnavailable: "20%", schedule: "30 0 * * *", duration: "1h", active: true },
        { maxUnavailable: 0, schedule: "0 12 * * *", duration: "2h", active: false },
        { maxUnavailable: 1, active: true },
      ]),
    );
  }
  const p = pool({ maxUnavailable, paused: r() < 0.1 });
  if (budgets.length > 0) {
    p.spec.rollout = {
      ...p.spec.rollout,
      budgets: budgets.map(({ active: _, ...b }) => b),
    } as typeof p.spec.rollout;
  }
  const nodes: NodeSummary[] = [];
  const bns: BootcNode[] = [];
  const workers: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `w${String(i).padStart(2, "0")}`;
    workers.push(name);
    const kind = pick(KINDS);
    const zone = pick(["a", "b"]);
    nodes.push(node(name, {
      labels: { role: "worker", zone },
      ready: kind === "rebooting" ? r() < 0.5 : r() < 0.9,
      unschedulable: kind === "draining" || kind === "rebooting",
    }));
    bns.push(workerNode(name, kind));
  }
  // Another pool on other nodes: some disrupted, some staged and waiting (fairness).
  const other = pool({ name: "db", selector: { matchLabels: { role: "db" } } });
  const otherDisrupted: string[] = [];
  const m = Math.floor(r() * 4);
  for (let i = 0; i < m; i++) {
    const name = `d${i}`;
    const disrupted = r() < 0.4;
    if (disrupted) otherDisrupted.push(name);
    nodes.push(node(name, {
      labels: { role: "db", zone: pick(["a", "b"]) },
      unschedulable: disrupted,
      annotations: disrupted
        ? {
          [ANNOTATION_IN_REBOOT_SLOT]: EARLIER,
          [ANNOTATION_SLOT_POOL]: "db",
          [ANNOTATION_WAS_CORDONED]: "false",
        }
        : undefined,
    }));
    bns.push(bootcNode(name, { pool: "db", phase: "staged" }));
  }
  const cluster: DrawnClusterBudget[] = [];
  if (r() < 0.35) {
    cluster.push({
      budget: {
        name: "everything",
        spec: { maxUnavailable: pick<IntOrPercent>([1, 2, 3, "50%"]) },
      },
      wholePool: true,
    });
  }
  if (r() < 0.2) {
    cluster.push({
      budget: {
        name: "zone-a",
        spec: { maxUnavailable: 1, nodeSelector: { matchLabels: { zone: "a" } } },
      },
      wholePool: workers.every((w) => nodes.find((x) => x.name === w)?.labels.zone === "a"),
    });
  }
  const i = input(p, { nodes, bootcNodes: bns, otherPools: [other] });
  const full: PlanInput = {
    ...i,
    poolObjects: [p, other],
    budgets: cluster.map((c) => c.budget),
  };
  return {
    seed,
    input: full,
    maxUnavailable,
    budgets,
    cluster,
    workers,
    otherDisrupted,
    nodes: [...full.nodes.values()],
  };
}

function workerNode(name: string, kind: Kind): BootcNode {
  switch (kind) {
    case "updated":
      return bootcNode(name, { booted: image("b") });
    case "pending":
      return bootcNode(name, { phase: "pending" });
    case "staging":
      return bootcNode(name, { phase: "staging" });
    case "staged":
      return bootcNode(name, { phase: "staged" });
    case "draining":
      return bootcNode(name, { phase: "staged", slotAt: EARLIER });
    case "rebooting":
      return bootcNode(name, {
        phase: "rebooting",
        slotAt: EARLIER,
        drainedAt: EARLIER,
        state: "Booted",
      });
    case "degraded":
      return bootcNode(name, { phase: "degraded" });
  }
}

/** The limit the budgets allow, computed from the draw (activity known by construction). */
function oracleLimit(s: Scenario): number {
  const members = s.workers.length;
  let limit = resolveIntOrPercent(s.maxUnavailable, members, POOL_MAX_UNAVAILABLE);
  for (const b of s.budgets) {
    if (!b.active) continue;
    limit = Math.min(
      limit,
      resolveIntOrPercent(b.maxUnavailable, members, { ...POOL_MAX_UNAVAILABLE, minimum: 0 }),
    );
  }
  for (const c of s.cluster) {
    if (!c.wholePool) continue;
    const selected = s.nodes.filter((x) =>
      Object.entries(c.budget.spec.nodeSelector?.matchLabels ?? {}).every(([k, v]) =>
        x.labels[k] === v
      )
    );
    const elsewhere = selected.filter((x) => s.otherDisrupted.includes(x.name)).length;
    const room = resolveIntOrPercent(
      c.budget.spec.maxUnavailable,
      selected.length,
      CLUSTER_MAX_UNAVAILABLE,
    );
    limit = Math.min(limit, Math.max(0, room - elsewhere));
  }
  return limit;
}

/** Applies a JSON merge patch to a plain object (null deletes). */
function merge(
  target: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (typeof v === "object" && !Array.isArray(v)) {
      out[k] = merge((out[k] ?? {}) as Record<string, unknown>, v as Record<string, unknown>);
    } else out[k] = v;
  }
  return out;
}

/** The scenario's objects after the plan's writes (Node, BootcNode and its status, the pool's status). */
function applied(s: Scenario, plan: Plan) {
  const nodes = new Map(s.nodes.map((x) => [x.name, structuredClone(x)]));
  const bns = new Map([...s.input.bootcNodes].map(([k, v]) => [k, structuredClone(v)]));
  for (const a of plan.actions) {
    if (a.kind === "patchNode") {
      const x = nodes.get(a.node)!;
      const meta = (a.patch.metadata ?? {}) as { annotations?: Record<string, unknown> };
      x.annotations = merge(x.annotations ?? {}, meta.annotations ?? {}) as Record<string, string>;
      const spec = a.patch.spec as { unschedulable?: boolean } | undefined;
      if (spec?.unschedulable !== undefined) x.unschedulable = spec.unschedulable;
    }
    if (a.kind === "patchBootcNode" || a.kind === "patchBootcNodeStatus") {
      const bn = bns.get(a.node);
      if (bn) bns.set(a.node, merge(bn, a.patch) as unknown as BootcNode);
    }
  }
  const pool: BootcNodePool = { ...s.input.pool, status: plan.status };
  return { nodes, bns, pool };
}

function asNodeLike(x: NodeSummary): NodeLike {
  return {
    metadata: { name: x.name, labels: x.labels, annotations: x.annotations },
    spec: { unschedulable: x.unschedulable },
    status: { conditions: [{ type: "Ready", status: x.ready ? "True" : "False" }] },
  };
}

function grantsOf(plan: Plan): string[] {
  return plan.actions.filter(isSlotGrant).map((a) =>
    (a as Extract<Action, { kind: "patchNode" }>).node
  );
}

const BUCKET_OF_COUNT = {
  UpToDate: "updated",
  Rebooting: "rebooting",
  Staged: "staged",
  Staging: "staging",
  Pending: "pending",
  Degraded: "failed",
} as const;

function check(s: Scenario): void {
  const plan = planPool(s.input);
  const after = applied(s, plan);
  const nodeLikes = [...after.nodes.values()].map(asNodeLike);
  const snapshot: Snapshot = {
    pools: [after.pool],
    bootcNodes: [...after.bns.values()],
    nodes: nodeLikes,
    now: s.input.now,
  };
  const [view] = poolViews(snapshot, "workers");

  // The slot limit: the oracle, the plan (metrics) and the plugin's view agree.
  const limit = oracleLimit(s);
  assert.equal(plan.slots, limit, "plan.slots");
  assert.equal(plan.status?.slots?.limit, limit, "status.slots.limit");
  assert.equal(view.slots?.limit, limit, "the plugin's limit");
  assert.equal(view.slotsInUse, plan.status?.slotsInUse, "slots in use");
  // Never more granted than the room the limit leaves.
  const before =
    s.workers.filter((w) =>
      s.nodes.find((x) => x.name === w)?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined
    ).length;
  assert.ok(grantsOf(plan).length <= Math.max(0, limit - before), "grants within the limit");

  // The queue: the plugin shows the controller's, in its order, for every waiting node.
  const queue = (plan.status?.queue ?? []).map((e) => e.node);
  assert.deepEqual(view.queue, queue, "the plugin's queue");
  const nodes = new Map(nodeLikes.map((x) => [x.metadata?.name ?? "", x]));
  for (const [i, name] of queue.entries()) {
    const why = explainNode({
      name,
      bootcNode: after.bns.get(name),
      node: nodes.get(name),
      pools: [after.pool],
      bootcNodes: snapshot.bootcNodes,
      nodes,
      events: [],
      now: s.input.now,
    });
    const place = why.facts.find(([l]) => l === "slot queue")?.[1] ?? "";
    assert.match(place, new RegExp(`^${ordinalRe(i + 1)} of ${queue.length}: `), `why ${name}`);
  }

  // The queue is the order slots go in: open every budget and plan again.
  const open = structuredClone(after.pool);
  open.spec.rollout = {
    ...open.spec.rollout,
    maxUnavailable: 1000,
    paused: false,
    budgets: [],
  } as typeof open.spec.rollout;
  const again = planPool({
    ...s.input,
    pool: open,
    poolObjects: [open, ...(s.input.poolObjects ?? []).slice(1)],
    budgets: [],
    nodes: after.nodes,
    bootcNodes: after.bns,
  });
  if (!(again.issues ?? []).some((i) => i.reason === "RolloutHalted")) {
    const openable = new Set(["BudgetExhausted", "Paused", "ClusterBudgetExhausted"]);
    const expected = (plan.status?.queue ?? []).filter((e) => openable.has(e.waitingFor))
      .map((e) => e.node);
    assert.deepEqual(
      grantsOf(again).filter((g) => expected.includes(g)),
      expected,
      "opened budgets grant the queue in its order",
    );
  }
  checkStates(plan, after, snapshot, nodes, queue);
}

/** Each node's state: the plugin's buckets are the controller's counts. */
function checkStates(
  plan: Plan,
  after: ReturnType<typeof applied>,
  snapshot: Snapshot,
  nodes: ReadonlyMap<string, NodeLike>,
  queue: readonly string[],
): void {
  const progress = poolProgress(after.pool, snapshot.bootcNodes, nodes);
  const want: Record<string, number> = {};
  for (const [state, count] of Object.entries(plan.counts)) {
    const bucket = BUCKET_OF_COUNT[state as keyof typeof BUCKET_OF_COUNT];
    want[bucket] = (want[bucket] ?? 0) + count;
  }
  assert.deepEqual({ ...progress.counts }, { ...emptyBuckets(), ...want }, "node states");
  for (const name of queue) {
    assert.equal(progress.buckets.get(name), "staged", `${name} waits for a slot: staged`);
  }
}

function emptyBuckets() {
  return { updated: 0, rebooting: 0, staged: 0, staging: 0, pending: 0, failed: 0 };
}

function ordinalRe(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13
    ? "th"
    : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th";
  return `${n}${suffix}`;
}

Deno.test("differential: the plan and the plugin's view agree on limit, queue and node states", () => {
  const failures: string[] = [];
  for (let seed = 1; seed <= SCENARIOS; seed++) {
    const s = draw(seed);
    try {
      check(s);
    } catch (e) {
      failures.push(`seed ${seed}: ${(e as Error).message.split("\n").slice(0, 12).join("\n")}`);
    }
  }
  assert.deepEqual(
    failures.slice(0, 5),
    [],
    `${failures.length} of ${SCENARIOS} scenarios disagree`,
  );
});
