import assert from "node:assert/strict";
import {
  ANNOTATION_DESIRED_SINCE,
  type BootcNode,
  classifyNode,
  type Condition,
  findCondition,
  type NodeClassification,
} from "../../lib/api/mod.ts";
import { factsChangedAt, findNoProgress, livenessWatches } from "./liveness.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";

const NOW = "2026-01-01T01:00:00Z";
const QUARTER_AGO = "2026-01-01T00:45:00Z";

function statusPatch(plan: Plan, name: string) {
  return plan.actions.find((a): a is Extract<Action, { kind: "patchBootcNodeStatus" }> =>
    a.kind === "patchBootcNodeStatus" && a.node === name
  );
}
function stalledOf(plan: Plan, name: string): Condition | undefined {
  const conditions = (statusPatch(plan, name)?.patch.status as { conditions?: Condition[] })
    ?.conditions;
  return findCondition(conditions, "Stalled");
}

/**
 * The daemon reported on its spec (image b) 15 minutes ago and says it has another
 * image staged, awaiting Booted: it will not stage b, the controller waits for it to.
 */
function stuckPending(): BootcNode {
  const bn = bootcNode("n1", { phase: "staged" });
  bn.metadata.generation = 3;
  bn.metadata.resourceVersion = "9";
  bn.metadata.annotations = { [ANNOTATION_DESIRED_SINCE]: QUARTER_AGO };
  bn.status!.observedGeneration = 3;
  bn.status!.staged = { image: image("c"), imageDigest: image("c").split("@")[1] };
  bn.status!.conditions = bn.status!.conditions!.map((c) =>
    c.type === "Idle"
      ? {
        ...c,
        message: `${image("c")} is staged; awaiting desiredImageState: Booted`,
        lastTransitionTime: QUARTER_AGO,
      }
      : { ...c, lastTransitionTime: QUARTER_AGO }
  );
  return bn;
}

Deno.test("liveness: a wait on the daemon with nothing changing past the bound is Stalled/NoProgress, naming it", () => {
  const plan = planPool(
    input(pool(), { nodes: [node("n1")], bootcNodes: [stuckPending()], now: NOW }),
  );
  const c = stalledOf(plan, "n1");
  assert.equal(`${c?.status}/${c?.reason}`, "True/NoProgress");
  assert.match(c?.message ?? "", /has waited 600s with nothing changing for the daemon/);
  assert.match(
    c?.message ?? "",
    /its daemon says Idle=False\/Staged: .* awaiting desiredImageState: Booted/,
  );
  const degraded = findCondition(plan.status?.conditions, "Degraded");
  assert.equal(degraded?.reason, "NodeStalled");
  assert.match(degraded?.message ?? "", /n1 \(NoProgress/);
  assert.equal(plan.status?.degradedCount, 1);
  // Not the misleading StagingTimeout, and long before its 30 minutes.
  assert.ok(!plan.events.some((e) => e.reason === "StagingTimeout"));
});

Deno.test("liveness: the bound is the pool's progressTimeoutSeconds; before it, a wake-up", () => {
  const p = pool();
  (p.spec.rollout as Record<string, unknown>).progressTimeoutSeconds = 1200;
  const plan = planPool(input(p, { nodes: [node("n1")], bootcNodes: [stuckPending()], now: NOW }));
  assert.equal(stalledOf(plan, "n1"), undefined);
  assert.ok(plan.requeueAfterMs !== undefined && plan.requeueAfterMs <= 300_000);
});

Deno.test("liveness: its own Stalled condition neither resets the clock nor changes the message", () => {
  const bn = stuckPending();
  const first = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [bn], now: NOW }));
  const written = stalledOf(first, "n1")!;
  bn.status!.conditions = [...bn.status!.conditions!, { ...written, lastTransitionTime: NOW }];
  const again = planPool(input(pool(), {
    nodes: [node("n1")],
    bootcNodes: [bn],
    now: "2026-01-01T01:00:30Z",
  }));
  assert.equal(statusPatch(again, "n1"), undefined);
  assert.equal(findCondition(again.status?.conditions, "Degraded")?.reason, "NodeStalled");
});

Deno.test("liveness: a node held back by the staging limit is waiting, never stalled", () => {
  const p = pool();
  p.spec.rollout.maxStaging = 1;
  const held = (name: string) => {
    const bn = bootcNode(name, { desired: image("a"), booted: image("a"), phase: "idle" });
    bn.metadata.annotations = { [ANNOTATION_DESIRED_SINCE]: "2025-12-31T00:00:00Z" };
    return bn;
  };
  const downloading = bootcNode("n0", { phase: "staging" });
  downloading.metadata.annotations = { [ANNOTATION_DESIRED_SINCE]: NOW };
  const plan = planPool(input(p, {
    nodes: [node("n0"), node("n1")],
    bootcNodes: [downloading, held("n1")],
    now: NOW,
  }));
  assert.equal(stalledOf(plan, "n1"), undefined);
  assert.notEqual(findCondition(plan.status?.conditions, "Degraded")?.status, "True");
});

Deno.test("livenessWatches: waits with a deadline of their own, on a gate or a person are left alone", () => {
  const cls = (over: Partial<NodeClassification>) =>
    ({
      phase: "Pending",
      reason: "AwaitingDaemon",
      waitsOn: "daemon",
      ...over,
    }) as NodeClassification;
  assert.equal(livenessWatches(cls({})), true);
  assert.equal(livenessWatches(cls({ reason: "AwaitingReport" })), false);
  assert.equal(livenessWatches(cls({ phase: "Staging", reason: "Downloading" })), false);
  assert.equal(
    livenessWatches(cls({ phase: "Staged", reason: "NotReady", waitsOn: "node" })),
    true,
  );
  assert.equal(livenessWatches(cls({ phase: "Staged", waitsOn: "gate" })), false);
  assert.equal(
    livenessWatches(cls({ phase: "Draining", reason: "Draining", waitsOn: "controller" })),
    false,
  );
  assert.equal(
    livenessWatches(cls({ phase: "Draining", reason: "Draining", waitsOn: "daemon" })),
    true,
  );
  assert.equal(
    livenessWatches(cls({ phase: "Draining", reason: "DrainBlocked", waitsOn: "gate" })),
    false,
  );
  assert.equal(livenessWatches(cls({ phase: "Rebooting", reason: "Rebooting" })), false);
  assert.equal(livenessWatches(cls({ phase: "Failed", waitsOn: "user" })), false);
});

Deno.test("factsChangedAt: the latest fact, never the Stalled condition; nothing without an anchor", () => {
  const bn = stuckPending();
  const n = node("n1", { readySince: "2025-12-01T00:00:00Z" });
  assert.deepEqual(factsChangedAt(n, bn), new Date(QUARTER_AGO));
  bn.status!.conditions!.push({
    type: "Stalled",
    status: "True",
    reason: "NoProgress",
    message: "",
    lastTransitionTime: NOW,
  });
  assert.deepEqual(factsChangedAt(n, bn), new Date(QUARTER_AGO));
  const later = { ...n, readySince: "2026-01-01T00:50:00Z" };
  assert.deepEqual(factsChangedAt(later, bn), new Date("2026-01-01T00:50:00Z"));
  assert.equal(factsChangedAt(n, bootcNode("n1")), undefined);
});

Deno.test("findNoProgress: uses the classification's wait", () => {
  const bn = stuckPending();
  const n = node("n1");
  const cls = classifyNode({ bootcNode: bn, node: n, target: { image: image("b") }, member: true });
  const found = findNoProgress({ node: n, bn, cls, progressMs: 600_000, now: new Date(NOW) });
  assert.equal(found.finding?.reason, "NoProgress");
  assert.deepEqual(found.finding?.since, new Date("2026-01-01T00:55:00Z"));
  assert.ok(found.finding?.message.includes(cls.waitsFor));
});
