import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  type BootcNode,
  findCondition,
} from "../../lib/api/mod.ts";
import {
  ControllerMetrics,
  DEGRADED_REASONS,
  type NodeLike,
  type PoolObservation,
  poolObservation,
  Registry,
  STALLED_REASONS,
} from "./metrics.ts";
import { isSlotGrant } from "../planner/plan.ts";
import { COMMIT, VERSION } from "../../lib/version.ts";
import type { RolloutObservation } from "./rollout_metrics.ts";
import { type Action, planPool } from "../planner/planner.ts";
import { emptyCounts } from "../planner/pool_status.ts";
import { bootcNode, digest, image, input, node, pool, REPO } from "../testing/fixtures.ts";

const NOW = "2026-01-01T01:00:00Z";
const EARLIER = "2026-01-01T00:59:00Z";

/** The value of the sample `name{labels}` in the text exposition, if present. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).sort().join(",");
  for (const line of text.split("\n")) {
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
    if (!m || m[1] !== name) continue;
    const got = (m[2] ?? "").split(",").filter((x) => x !== "").sort().join(",");
    if (got === want) return Number(m[3]);
  }
  return undefined;
}

function observation(overrides: Partial<PoolObservation> = {}): PoolObservation {
  return {
    counts: emptyCounts(),
    slots: 1,
    slotsInUse: 0,
    degradedReasons: new Set(),
    stalled: {},
    slotHolders: new Set(),
    waiting: true,
    ...overrides,
  };
}

function slotNode(name: string, pool = "w"): NodeLike {
  return {
    metadata: {
      name,
      annotations: { [ANNOTATION_IN_REBOOT_SLOT]: EARLIER, [ANNOTATION_SLOT_POOL]: pool },
    },
  };
}

const release = (n: string): Action => ({
  kind: "patchNode",
  node: n,
  patch: {},
  why: "release slot",
  observe: { metric: "update_seconds", seconds: 300 },
});
const grant = (n: string): Action => ({
  kind: "patchNode",
  node: n,
  patch: {},
  why: "assign slot",
  intent: "grant",
});
const at = (s: number) => new Date(Date.parse(NOW) + s * 1000);

/** Rollout facts of a pool that rolled back once and now runs revision 3 to v2. */
function rolloutFacts(overrides: Partial<RolloutObservation> = {}): RolloutObservation {
  return {
    paused: false,
    circuitOpen: false,
    startedAt: Date.parse(NOW),
    ended: { at: Date.parse(NOW) + 600_000, outcome: "Succeeded" },
    expectedSeconds: 900,
    lastRollbackAt: Date.parse(EARLIER),
    target: { target: "v2 (2.0) bbbbbbbbbbbb", version: "2.0", digest: "bbbbbbbbbbbb" },
    booted: [
      { image: { version: "2.0", digest: "bbbbbbbbbbbb" }, nodes: 2 },
      { image: { version: "1.0", digest: "aaaaaaaaaaaa" }, nodes: 1 },
    ],
    ...overrides,
  };
}

Deno.test("registry renders counters, gauges and histograms in the text format", () => {
  const r = new Registry();
  const c = r.counter("x_total", "Things.", ["pool"]);
  const g = r.gauge("y", "Level.", ["pool", "state"]);
  const h = r.histogram("z_seconds", "Time.", ["pool"], [1, 5]);
  c.inc({ pool: "a" });
  c.inc({ pool: "a" }, 2);
  g.set({ pool: "a", state: 'we"ird' }, 4);
  h.observe({ pool: "a" }, 0.5);
  h.observe({ pool: "a" }, 3);
  h.observe({ pool: "a" }, 10);
  const text = r.render();
  assert.match(text, /# TYPE x_total counter\nx_total\{pool="a"\} 3\n/);
  assert.match(text, /y\{pool="a",state="we\\"ird"\} 4\n/);
  assert.match(text, /z_seconds_bucket\{pool="a",le="1"\} 1\n/);
  assert.match(text, /z_seconds_bucket\{pool="a",le="5"\} 2\n/);
  assert.match(text, /z_seconds_bucket\{pool="a",le="\+Inf"\} 3\n/);
  assert.match(text, /z_seconds_sum\{pool="a"\} 13.5\n/);
  assert.match(text, /z_seconds_count\{pool="a"\} 3\n/);
  g.deleteMatching({ pool: "a" });
  assert.equal(g.get({ pool: "a", state: 'we"ird' }), undefined);
  c.inc({ pool: "b" });
  c.deleteMatching({ pool: "a" });
  h.deleteMatching({ pool: "a" });
  assert.equal(c.get({ pool: "a" }), 0);
  assert.equal(c.get({ pool: "b" }), 1);
  assert.equal(h.count({ pool: "a" }), 0);
  assert.doesNotMatch(r.render(), /pool="a"/);
  assert.throws(() => r.counter("x_total", "again"), /registered twice/);
  assert.throws(() => c.inc({}, -1), /only go up/);
});

Deno.test("controller metrics follow the Prometheus naming conventions", () => {
  const text = new ControllerMetrics().registry.render();
  const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]);
  assert.ok(types.length >= 17, `only ${types.length} metrics`);
  for (const [name, type] of types) {
    assert.match(name, /^bootc_[a-z][a-z0-9_]*[a-z0-9]$/, name);
    assert.match(text, new RegExp(`^# HELP ${name} \\S.+$`, "m"), `${name} has help`);
    // Counters, and only counters, end in _total; histograms measure seconds.
    assert.equal(name.endsWith("_total"), type === "counter", `${name} is a ${type}`);
    if (type === "histogram") assert.match(name, /_seconds$/, name);
    if (name.includes("timestamp")) assert.match(name, /_timestamp_seconds$/, name);
  }
  // Every label comes from a bounded set: no node, image or message labels.
  const m = new ControllerMetrics();
  m.recordPool(
    "w",
    observation({ degradedReasons: new Set(["RolloutHalted"]), rollout: rolloutFacts() }),
  );
  m.observeEvictions("w", "n1", [{ result: "refused" }], at(0));
  m.observeAction("w", release("n1"), at(0));
  m.observeAction("w", grant("n2"), at(1));
  m.observeResolution("w", { result: { ok: false } });
  m.apiWrites.inc({ kind: "patchNode" });
  m.reconcileDuration.observe({ pool: "w" }, 0.01);
  const labels = new Set(
    [...m.registry.render().matchAll(/\{([^}]*)\}/g)].flatMap((x) =>
      x[1].split(",").map((kv) => kv.split("=")[0])
    ),
  );
  // target, version and digest name a few images per pool (its target, at most 9 booted).
  assert.deepEqual([...labels].sort(), [
    "commit",
    "digest",
    "kind",
    "le",
    "outcome",
    "pool",
    "reason",
    "result",
    "state",
    "target",
    "version",
  ]);
});

Deno.test("pool gauges: states, slots, every Degraded reason as 0/1, stalled nodes by reason", () => {
  const m = new ControllerMetrics();
  m.recordPool(
    "w",
    observation({
      counts: { ...emptyCounts(), UpToDate: 3, Staged: 2 },
      slots: 2,
      slotsInUse: 1,
      degradedReasons: new Set(["RolloutHalted", "SomethingNew"]),
      stalled: { StagingTimeout: 2, Weird: 1 },
    }),
  );
  const text = m.registry.render();
  assert.equal(sample(text, "bootc_pool_nodes", { pool: "w", state: "UpToDate" }), 3);
  assert.equal(sample(text, "bootc_pool_nodes", { pool: "w", state: "Rebooting" }), 0);
  assert.equal(sample(text, "bootc_pool_slots", { pool: "w" }), 2);
  assert.equal(sample(text, "bootc_pool_slots_in_use", { pool: "w" }), 1);
  for (const reason of DEGRADED_REASONS) {
    const want = reason === "RolloutHalted" || reason === "Other" ? 1 : 0;
    assert.equal(sample(text, "bootc_pool_degraded", { pool: "w", reason }), want, reason);
  }
  assert.equal(
    sample(text, "bootc_pool_degraded", { pool: "w", reason: "SomethingNew" }),
    undefined,
  );
  assert.ok(!DEGRADED_REASONS.includes("Healthy"));
  assert.deepEqual(STALLED_REASONS, [
    "DaemonNotReporting",
    "StagingTimeout",
    "RebootTimeout",
    "NoProgress",
    "Other",
  ]);
  assert.equal(
    sample(text, "bootc_pool_stalled_nodes", { pool: "w", reason: "StagingTimeout" }),
    2,
  );
  assert.equal(sample(text, "bootc_pool_stalled_nodes", { pool: "w", reason: "RebootTimeout" }), 0);
  assert.equal(sample(text, "bootc_pool_stalled_nodes", { pool: "w", reason: "Other" }), 1);
  // Counters exist at 0 from the first reconcile, so their first increase is visible.
  assert.equal(sample(text, "bootc_image_resolution_errors_total", { pool: "w" }), 0);
  assert.equal(sample(text, "bootc_reconcile_errors_total", { pool: "w" }), 0);
});

Deno.test("poolObservation: a halt masked by a more severe reason still shows", () => {
  // Two degraded nodes in slots halt the rollout while the tag fails to resolve: the
  // Degraded condition names ImageResolutionFailed only, the metric shows both.
  const tagged = pool({
    ref: `${REPO}:latest`,
    maxUnavailable: 3,
    status: { targetDigest: digest("b"), targetImage: image("b") },
  });
  const bootcNodes = [
    bootcNode("a", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
    bootcNode("b", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
    bootcNode("c", { phase: "staged" }),
  ];
  const plan = planPool(input(tagged, {
    nodes: [node("a", { unschedulable: true }), node("b", { unschedulable: true }), node("c")],
    bootcNodes,
    now: NOW,
    resolution: { generation: 1, at: new Date(NOW), result: { ok: false, message: "timeout" } },
  }));
  assert.equal(findCondition(plan.status?.conditions, "Degraded")?.reason, "ImageResolutionFailed");
  const o = poolObservation("workers", plan, {
    bootcNodes,
    nodes: [slotNode("a", "workers"), slotNode("b", "workers"), slotNode("x", "other")],
  });
  assert.ok(o.degradedReasons.has("ImageResolutionFailed"));
  assert.ok(o.degradedReasons.has("RolloutHalted"));
  assert.deepEqual([...o.slotHolders].sort(), ["a", "b"]);
  assert.equal(o.waiting, true);
});

Deno.test("poolObservation: Stalled from the BootcNodes, with the plan's own patches on top", () => {
  const stalled = (
    bn: BootcNode,
    reason: string,
    status: "True" | "False" = "True",
  ): BootcNode => ({
    ...bn,
    status: {
      ...bn.status,
      conditions: [
        ...(bn.status?.conditions ?? []),
        { type: "Stalled", status, reason, message: "", lastTransitionTime: EARLIER },
      ],
    },
  });
  const bootcNodes = [
    stalled(bootcNode("a"), "DaemonNotReporting"),
    stalled(bootcNode("b"), "StagingTimeout"),
    stalled(bootcNode("c"), "Progressing", "False"),
    stalled(bootcNode("d", { pool: "other" }), "StagingTimeout"),
    bootcNode("e"),
  ];
  const patchStalled = (n: string, status: string, reason: string): Action => ({
    kind: "patchBootcNodeStatus",
    node: n,
    patch: { status: { conditions: [{ type: "Stalled", status, reason, message: "" }] } },
    why: "stalled",
  });
  const o = poolObservation("workers", {
    actions: [
      patchStalled("b", "False", "Progressing"),
      patchStalled("e", "True", "RebootTimeout"),
      { kind: "deleteBootcNode", node: "a" },
    ],
    status: {},
    counts: emptyCounts(),
    slots: 1,
  }, { bootcNodes, nodes: [] });
  assert.deepEqual(o.stalled, { RebootTimeout: 1 });
  assert.equal(o.waiting, false);
});

Deno.test("isSlotGrant knows the planner's grants and nothing else", () => {
  const plan = planPool(input(pool({ maxUnavailable: 2 }), {
    nodes: [node("n1"), node("n2"), node("n3", { unschedulable: true })],
    bootcNodes: [
      bootcNode("n1", { phase: "staged" }),
      bootcNode("n2", { phase: "staged" }),
      // n3 is done: its slot is released in the same plan.
      bootcNode("n3", {
        phase: "idle",
        booted: image("b"),
        slotAt: EARLIER,
        drainedAt: EARLIER,
        state: "Booted",
      }),
    ],
    now: NOW,
  }));
  // n3's release hands its slot on in this plan: two grants, the release no grant.
  const grants = plan.actions.filter(isSlotGrant).map((a) => "node" in a ? a.node : "");
  assert.deepEqual(grants, ["n1", "n2"]);
  assert.equal(plan.events.filter((e) => e.reason === "SlotAssigned").length, 2);
  assert.ok(plan.actions.some((a) => a.kind === "patchNode" && a.why === "release slot"));
  assert.ok(plan.actions.some((a) => a.kind === "patchBootcNode" && a.node === "n1"));
});

Deno.test("slot hand-off: a release paired with the next grant in the same pool", () => {
  const m = new ControllerMetrics();
  m.observeAction("w", grant("n0"), at(0)); // no release before it: not a hand-off
  assert.equal(m.slotHandoffDuration.count({ pool: "w" }), 0);
  m.observeAction("w", release("n1"), at(10));
  assert.equal(m.nodeUpdateDuration.count({ pool: "w" }), 1);
  m.observeAction("v", grant("x"), at(11)); // another pool's grant takes nothing
  m.observeAction("w", grant("n2"), at(13));
  assert.equal(m.slotHandoffDuration.count({ pool: "w" }), 1);
  assert.equal(m.slotHandoffDuration.sum({ pool: "w" }), 3);
  assert.equal(m.slotHandoffDuration.count({ pool: "v" }), 0);
  // A release after which nobody waits is no hand-off (the next rollout may be days away).
  m.observeAction("w", release("n2"), at(20));
  m.recordPool("w", observation({ waiting: false }));
  m.observeAction("w", grant("n3"), at(90_000));
  assert.equal(m.slotHandoffDuration.count({ pool: "w" }), 1);
  // At most one pending release per slot is kept.
  for (let i = 0; i < 4; i++) m.observeAction("w", release(`r${i}`), at(100 + i));
  m.recordPool("w", observation({ slots: 2 }));
  m.observeAction("w", grant("g1"), at(110));
  m.observeAction("w", grant("g2"), at(110));
  m.observeAction("w", grant("g3"), at(110));
  assert.equal(m.slotHandoffDuration.count({ pool: "w" }), 3);
  assert.equal(m.slotHandoffDuration.sum({ pool: "w" }), 3 + 8 + 7);
});

Deno.test("drain blocked: refused passes set since-when, an accepted pass or the release clears it", () => {
  const m = new ControllerMetrics();
  const text = () => m.registry.render();
  m.observeEvictions("w", "n1", [{ result: "evicted" }, { result: "refused" }], at(0));
  m.observeEvictions("w", "n1", [{ result: "refused" }], at(60));
  m.observeEvictions("w", "n2", [{ result: "refused" }], at(120));
  assert.equal(sample(text(), "bootc_pool_drains_blocked", { pool: "w" }), 2);
  const since = sample(text(), "bootc_pool_drain_blocked_since_timestamp_seconds", { pool: "w" });
  assert.equal(since, at(0).getTime() / 1000);
  assert.equal(sample(text(), "bootc_evictions_total", { pool: "w", result: "refused" }), 3);
  assert.equal(sample(text(), "bootc_evictions_total", { pool: "w", result: "evicted" }), 1);
  // n1's evictions go through: n2 is now the oldest blocked drain.
  m.observeEvictions("w", "n1", [{ result: "evicted" }], at(180));
  assert.equal(
    sample(text(), "bootc_pool_drain_blocked_since_timestamp_seconds", { pool: "w" }),
    at(120).getTime() / 1000,
  );
  // n1 refused again starts a new streak; its drain finishing ends it.
  m.observeEvictions("w", "n1", [{ result: "refused" }], at(200));
  m.observeAction("w", {
    kind: "patchNode",
    node: "n1",
    patch: {},
    why: "record drain",
    observe: { metric: "drain_seconds", seconds: 200 },
  }, at(210));
  assert.equal(m.drainDuration.count({ pool: "w" }), 1);
  assert.equal(sample(text(), "bootc_pool_drains_blocked", { pool: "w" }), 1);
  // n2 leaves the pool's slots (released, undone, deleted): the series goes away.
  m.recordPool("w", observation({ slotHolders: new Set(["n9"]) }));
  assert.equal(sample(text(), "bootc_pool_drains_blocked", { pool: "w" }), 0);
  assert.equal(
    sample(text(), "bootc_pool_drain_blocked_since_timestamp_seconds", { pool: "w" }),
    undefined,
  );
});

Deno.test("build info: 1 with this build's version and commit, on every replica", () => {
  const m = new ControllerMetrics(undefined, { version: "1.2.3", commit: "abc1234" });
  const text = m.registry.render();
  assert.match(text, /^# TYPE bootc_operator_build_info gauge$/m);
  assert.equal(
    sample(text, "bootc_operator_build_info", { version: "1.2.3", commit: "abc1234" }),
    1,
  );
  // A replica that stops leading drops the pool gauges, not what it runs.
  m.setLeading(true);
  m.setLeading(false);
  assert.equal(
    sample(m.registry.render(), "bootc_operator_build_info", {
      version: "1.2.3",
      commit: "abc1234",
    }),
    1,
  );
  // By default, this very build (run from source: commit "dev").
  const own = new ControllerMetrics().registry.render();
  assert.equal(sample(own, "bootc_operator_build_info", { version: VERSION, commit: COMMIT }), 1);
  assert.equal(COMMIT, "dev");
});

Deno.test("resolutions, leadership and deleted pools", () => {
  const m = new ControllerMetrics();
  assert.equal(sample(m.registry.render(), "bootc_controller_leader"), 0);
  m.setLeading(true);
  m.observeResolution("w", { result: { ok: true } });
  m.observeResolution("w", { result: { ok: false } });
  m.observeResolution("w", undefined);
  assert.equal(m.resolutions.get({ pool: "w" }), 2);
  assert.equal(m.resolutionErrors.get({ pool: "w" }), 1);
  m.recordPool("w", observation({ slots: 3 }));
  m.recordPool("v", observation({ slots: 1 }));
  m.observeEvictions("v", "n", [{ result: "refused" }], at(0));
  let text = m.registry.render();
  assert.equal(sample(text, "bootc_controller_leader"), 1);
  m.forgetPool("w");
  text = m.registry.render();
  assert.doesNotMatch(text, /pool="w"/);
  assert.match(text, /pool="v"/);
  // A replica that stops leading drops the pool gauges (the new leader owns them now).
  m.setLeading(false);
  text = m.registry.render();
  assert.equal(sample(text, "bootc_controller_leader"), 0);
  assert.equal(sample(text, "bootc_pool_slots", { pool: "v" }), undefined);
  assert.equal(sample(text, "bootc_pool_drains_blocked", { pool: "v" }), undefined);
  assert.equal(sample(text, "bootc_evictions_total", { pool: "v", result: "refused" }), 1);
});

Deno.test("rollout gauges: pause, circuit, rollout times, target and booted images", () => {
  const m = new ControllerMetrics();
  m.recordPool("w", observation({ rollout: rolloutFacts({ paused: true, circuitOpen: true }) }));
  let text = m.registry.render();
  const t = Date.parse(NOW) / 1000;
  assert.equal(sample(text, "bootc_pool_paused", { pool: "w" }), 1);
  assert.equal(sample(text, "bootc_pool_circuit_open", { pool: "w" }), 1);
  assert.equal(sample(text, "bootc_pool_rollout_start_timestamp_seconds", { pool: "w" }), t);
  assert.equal(
    sample(text, "bootc_pool_rollout_end_timestamp_seconds", { pool: "w", outcome: "Succeeded" }),
    t + 600,
  );
  assert.equal(sample(text, "bootc_pool_rollout_expected_duration_seconds", { pool: "w" }), 900);
  assert.equal(
    sample(text, "bootc_pool_last_rollback_timestamp_seconds", { pool: "w" }),
    Date.parse(EARLIER) / 1000,
  );
  assert.equal(
    sample(text, "bootc_pool_target_info", {
      pool: "w",
      target: "v2 (2.0) bbbbbbbbbbbb",
      version: "2.0",
      digest: "bbbbbbbbbbbb",
    }),
    1,
  );
  assert.equal(
    sample(text, "bootc_pool_booted_nodes", { pool: "w", version: "1.0", digest: "aaaaaaaaaaaa" }),
    1,
  );
  // The next rollout: the end, the old target and images nobody boots any more go away.
  m.recordPool(
    "w",
    observation({
      rollout: rolloutFacts({
        ended: undefined,
        expectedSeconds: undefined,
        lastRollbackAt: undefined,
        target: { target: "v3 cccccccccccc", version: "", digest: "cccccccccccc" },
        booted: [{ image: { version: "2.0", digest: "bbbbbbbbbbbb" }, nodes: 3 }],
      }),
    }),
  );
  text = m.registry.render();
  assert.equal(sample(text, "bootc_pool_paused", { pool: "w" }), 0);
  assert.doesNotMatch(text, /^bootc_pool_rollout_end_timestamp_seconds\{/m);
  assert.doesNotMatch(text, /^bootc_pool_rollout_expected_duration_seconds\{/m);
  assert.doesNotMatch(text, /^bootc_pool_last_rollback_timestamp_seconds\{/m);
  assert.equal((text.match(/^bootc_pool_target_info\{/gm) ?? []).length, 1);
  assert.match(
    text,
    /^bootc_pool_target_info\{pool="w",target="v3 cccccccccccc",version="",digest="cccccccccccc"\} 1$/m,
  );
  assert.equal((text.match(/^bootc_pool_booted_nodes\{/gm) ?? []).length, 1);
  // An observation without rollout facts leaves those gauges alone.
  m.recordPool("w", observation());
  assert.match(m.registry.render(), /^bootc_pool_target_info\{pool="w",target="v3 /m);
  // A replica that stops leading drops them with the other pool gauges.
  m.setLeading(false);
  text = m.registry.render();
  for (
    const name of [
      "bootc_pool_paused",
      "bootc_pool_circuit_open",
      "bootc_pool_rollout_start_timestamp_seconds",
      "bootc_pool_target_info",
      "bootc_pool_booted_nodes",
    ]
  ) assert.doesNotMatch(text, new RegExp(`^${name}\\{`, "m"), name);
});

Deno.test("observePool reads pause from the pool's spec and the target from the planned status", () => {
  const m = new ControllerMetrics();
  const status = {
    targetDigest: digest("b"),
    targetImage: image("b"),
    targetShort: "v2 bbbbbbbbbbbb",
    history: [{
      revision: 1,
      image: image("b"),
      digest: digest("b"),
      startedAt: EARLIER,
      outcome: "Progressing" as const,
    }],
  };
  m.observePool("workers", { actions: [], status, counts: emptyCounts(), slots: 1 }, {
    bootcNodes: [bootcNode("n1", { booted: image("b") })],
    nodes: [],
    spec: pool({ paused: true, ref: `${REPO}:v2` }).spec,
  });
  const text = m.registry.render();
  assert.equal(sample(text, "bootc_pool_paused", { pool: "workers" }), 1);
  assert.equal(
    sample(text, "bootc_pool_rollout_start_timestamp_seconds", { pool: "workers" }),
    Date.parse(EARLIER) / 1000,
  );
  assert.equal(
    sample(text, "bootc_pool_target_info", {
      pool: "workers",
      target: "v2 bbbbbbbbbbbb",
      version: "",
      digest: "bbbbbbbbbbbb",
    }),
    1,
  );
  assert.equal(
    sample(text, "bootc_pool_booted_nodes", {
      pool: "workers",
      version: "",
      digest: "bbbbbbbbbbbb",
    }),
    1,
  );
});
