/**
 * `rollout.strategy: External` through the whole plan: no slot is granted, nothing
 * is cordoned, drained or asked to reboot; a staged node (even NotReady while the
 * orchestrator reboots it) waits, never stalls; a node booted into the target by
 * the orchestrator is counted updated and left as the orchestrator left it; a node
 * already in flight finishes; back to RollingUpdate the operator takes over.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_DESIRED_SINCE,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodePool,
  type Condition,
  findCondition,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";

const NOW = "2026-01-01T01:00:00Z";
const QUARTER_AGO = "2026-01-01T00:45:00Z";

function withStrategy(strategy?: string): BootcNodePool {
  const p = pool({ maxUnavailable: 2 });
  if (strategy) (p.spec.rollout as { strategy?: string }).strategy = strategy;
  return p;
}

/** Staged on the target (b), reported a quarter of an hour ago. */
function staged(name: string): BootcNode {
  const bn = bootcNode(name, { phase: "staged" });
  bn.status!.staged = { image: image("b"), imageDigest: image("b").split("@")[1] };
  bn.metadata.annotations = { [ANNOTATION_DESIRED_SINCE]: QUARTER_AGO };
  bn.status!.conditions = bn.status!.conditions!.map((c) => ({
    ...c,
    lastTransitionTime: QUARTER_AGO,
  }));
  return bn;
}

function nodePatches(plan: Plan): Extract<Action, { kind: "patchNode" }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: "patchNode" }> =>
    a.kind === "patchNode" && a.intent !== "annotate"
  );
}

function bootedRequests(plan: Plan): string[] {
  return plan.actions.filter((a) =>
    a.kind === "patchBootcNode" &&
    (a.patch.spec as { desiredImageState?: string } | undefined)?.desiredImageState === "Booted"
  ).map((a) => (a as { node: string }).node);
}

function stalled(plan: Plan, name: string): Condition | undefined {
  const patch = plan.actions.find((a) => a.kind === "patchBootcNodeStatus" && a.node === name) as
    | { patch: { status?: { conditions?: Condition[] } } }
    | undefined;
  return findCondition(patch?.patch.status?.conditions, "Stalled");
}

Deno.test("External: staged nodes get no slot; the pool names the wait on the orchestrator", () => {
  const nodes = [node("n1"), node("n2")];
  const bns = [staged("n1"), staged("n2")];
  const external = planPool(input(withStrategy("External"), { nodes, bootcNodes: bns, now: NOW }));
  assert.deepEqual(nodePatches(external), [], "no cordon, no slot record");
  assert.deepEqual(bootedRequests(external), []);
  assert.equal(external.actions.some((a) => a.kind === "evict"), false);
  const up = findCondition(external.status?.conditions, "UpToDate");
  assert.equal(up?.reason, "ExternalOrchestrator");
  assert.match(up?.message ?? "", /2 staged, waiting for the external orchestrator to reboot them/);
  assert.equal(external.status?.state, "ExternalOrchestrator");
  assert.deepEqual(
    external.status?.queue?.map((q) => q.waitingFor),
    ["ExternalOrchestrator", "ExternalOrchestrator"],
  );
  // The control: the same pool rolling itself grants both slots.
  const rolling = planPool(input(withStrategy(), { nodes, bootcNodes: bns, now: NOW }));
  assert.equal(nodePatches(rolling).filter((a) => a.intent === "grant").length, 2);
});

Deno.test("External: a staged node NotReady (the orchestrator rebooting it) waits, never stalls", () => {
  const nodes = [node("n1", { ready: false, unschedulable: true, readySince: QUARTER_AGO })];
  const bns = [staged("n1")];
  const external = planPool(input(withStrategy("External"), { nodes, bootcNodes: bns, now: NOW }));
  assert.equal(stalled(external, "n1"), undefined);
  assert.notEqual(findCondition(external.status?.conditions, "Degraded")?.status, "True");
  // The control: rolling itself, the same NotReady wait on the Node is a stall.
  const rolling = planPool(input(withStrategy(), { nodes, bootcNodes: bns, now: NOW }));
  assert.equal(stalled(rolling, "n1")?.reason, "NoProgress");
});

Deno.test("External: booted into the target by the orchestrator: updated, its cordon left alone", () => {
  const done = bootcNode("n1", { booted: image("b"), desired: image("b"), phase: "idle" });
  const nodes = [node("n1", { unschedulable: true }), node("n2")];
  const plan = planPool(input(withStrategy("External"), {
    nodes,
    bootcNodes: [done, staged("n2")],
    now: NOW,
  }));
  assert.equal(plan.status?.updatedCount, 1);
  assert.deepEqual(nodePatches(plan), [], "the orchestrator's cordon is its own");
  const up = findCondition(plan.status?.conditions, "UpToDate");
  assert.match(up?.message ?? "", /1 staged, waiting for the external orchestrator to reboot it/);
});

Deno.test("External: a node already in its slot when the pool switches finishes its update", () => {
  const inFlight = bootcNode("n1", {
    phase: "staged",
    state: "Booted",
    slotAt: "2026-01-01T00:59:00Z",
    drainedAt: "2026-01-01T00:59:30Z",
    wasCordoned: false,
  });
  inFlight.status!.staged = { image: image("b"), imageDigest: image("b").split("@")[1] };
  const nodes = [node("n1", { unschedulable: true })];
  const plan = planPool(input(withStrategy("External"), {
    nodes,
    bootcNodes: [inFlight],
    now: NOW,
  }));
  // Booted stands (no UnauthorizedRebootRequest reset), the record is not withdrawn.
  assert.equal(
    plan.actions.some((a) =>
      a.kind === "patchBootcNode" &&
      (a.patch.spec as { desiredImageState?: string } | undefined)?.desiredImageState === "Staged"
    ),
    false,
  );
  assert.deepEqual(nodePatches(plan), []);
  assert.equal(plan.events.some((e) => e.reason === "UnauthorizedRebootRequest"), false);
});

Deno.test("back to RollingUpdate: a node the orchestrator left cordoned gets its slot as was-cordoned", () => {
  const nodes = [node("n1", { unschedulable: true })];
  const plan = planPool(input(withStrategy("RollingUpdate"), {
    nodes,
    bootcNodes: [staged("n1")],
    now: NOW,
  }));
  const grant = nodePatches(plan).find((a) => a.intent === "grant");
  assert.ok(grant, "the staged node gets a slot");
  const annotations = (grant.patch.metadata as { annotations: Record<string, string> })
    .annotations;
  assert.equal(annotations[ANNOTATION_WAS_CORDONED], "true");
});
