import assert from "node:assert/strict";
import {
  ANNOTATION_DESIRED_SINCE,
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_SPEC_SINCE,
  findCondition,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { stallDeadlines } from "./stalled.ts";
import { bootcNode, input, node, pool } from "../testing/fixtures.ts";

function statusPatches(plan: Plan) {
  return plan.actions.filter((a): a is Extract<Action, { kind: "patchBootcNodeStatus" }> =>
    a.kind === "patchBootcNodeStatus"
  );
}
function stalledOf(plan: Plan) {
  const p = statusPatches(plan)[0];
  const conditions = (p?.patch.status as { conditions?: [] } | undefined)?.conditions;
  return findCondition(conditions, "Stalled");
}

Deno.test("stallDeadlines: pool fields, else defaults", () => {
  assert.deepEqual(stallDeadlines(undefined), {
    stagingMs: 1_800_000,
    daemonReportMs: 300_000,
    progressMs: 600_000,
  });
  assert.deepEqual(
    stallDeadlines({
      stagingTimeoutSeconds: 60,
      daemonReportTimeoutSeconds: 5,
      progressTimeoutSeconds: 30,
    }),
    // A daemon reports a pull of a new spec once it has run 5 s: 5 s counts as 30.
    { stagingMs: 60_000, daemonReportMs: 30_000, progressMs: 30_000 },
  );
  assert.equal(stallDeadlines({ daemonReportTimeoutSeconds: 40 }).daemonReportMs, 40_000);
});

Deno.test("stalled: no daemon ever reported past the deadline: DaemonNotReporting", () => {
  const bn = bootcNode("n1", { phase: "pending" });
  bn.metadata.creationTimestamp = "2026-01-01T00:50:00Z";
  bn.metadata.generation = 1;
  bn.metadata.resourceVersion = "7";
  const plan = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [bn] }));
  const c = stalledOf(plan);
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "DaemonNotReporting");
  assert.deepEqual(statusPatches(plan)[0].patch.metadata, { resourceVersion: "7" });
  const pc = findCondition(plan.status?.conditions, "Degraded");
  assert.equal(pc?.reason, "NodeStalled");
  assert.match(pc?.message ?? "", /1 node\(s\) stalled: n1 \(DaemonNotReporting/);
  assert.match(
    findCondition(plan.status?.conditions, "UpToDate")?.message ?? "",
    /1 stalled \(n1\)/,
  );
  assert.equal(plan.status?.degradedCount, 1);
  const ev = plan.events.find((e) => e.reason === "DaemonNotReporting");
  assert.ok(ev?.onceKey);
});

Deno.test("stalled: before the deadline nothing is written and a wake-up is due", () => {
  const bn = bootcNode("n1", { phase: "pending" });
  bn.metadata.creationTimestamp = "2026-01-01T00:58:00Z";
  const plan = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(statusPatches(plan).length, 0);
  assert.ok(plan.requeueAfterMs !== undefined && plan.requeueAfterMs <= 180_000);
});

Deno.test("stalled: reported but not staged within the staging deadline: StagingTimeout", () => {
  const bn = bootcNode("n1", { phase: "staging" });
  bn.metadata.generation = 2;
  bn.status!.observedGeneration = 2;
  bn.metadata.annotations = { [ANNOTATION_DESIRED_SINCE]: "2026-01-01T00:00:00Z" };
  const plan = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(stalledOf(plan)?.reason, "StagingTimeout");
});

Deno.test("stalled: a node that catches up gets Stalled=False once, then nothing", () => {
  const bn = bootcNode("n1", { phase: "staged" });
  bn.metadata.generation = 2;
  bn.status!.observedGeneration = 2;
  bn.status!.conditions!.push({
    type: "Stalled",
    status: "True",
    reason: "StagingTimeout",
    message: "x",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  });
  const plan = planPool(input(pool({ paused: true }), { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(stalledOf(plan)?.status, "False");
  bn.status!.conditions = bn.status!.conditions!.filter((c) => c.type !== "Stalled");
  const quiet = planPool(input(pool({ paused: true }), { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(statusPatches(quiet).length, 0);
});

Deno.test("stalled: the controller's own spec change restarts the daemon's report clock", () => {
  // Updated on the target, released 1 s ago (the revoke bumped the generation); its image
  // was set long before the report deadline: not a silent daemon.
  const bn = bootcNode("n1", { phase: "idle" });
  bn.metadata.annotations = {
    ...bn.metadata.annotations,
    [ANNOTATION_DESIRED_SINCE]: "2026-01-01T00:30:00Z",
    [ANNOTATION_SPEC_SINCE]: "2026-01-01T00:59:59Z",
  };
  bn.metadata.generation = 4;
  bn.status!.observedGeneration = 3;
  const plan = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(stalledOf(plan), undefined);
  assert.ok(!plan.events.some((e) => e.reason === "DaemonNotReporting"));
  // Without the time of that change the old image time counts: reported stalled.
  delete bn.metadata.annotations[ANNOTATION_SPEC_SINCE];
  const stale = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(stalledOf(stale)?.reason, "DaemonNotReporting");
});

Deno.test("stalled: a report clock anchored in the future is ignored", () => {
  const bn = bootcNode("n1", { phase: "idle" });
  bn.metadata.creationTimestamp = "2026-01-01T00:30:00Z";
  bn.metadata.annotations = {
    ...bn.metadata.annotations,
    [ANNOTATION_SPEC_SINCE]: "2099-01-01T00:00:00Z",
    [ANNOTATION_DESIRED_SINCE]: "2099-01-01T00:00:00Z",
  };
  bn.metadata.generation = 4;
  bn.status!.observedGeneration = 3;
  const plan = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [bn] }));
  assert.equal(stalledOf(plan)?.reason, "DaemonNotReporting");
});

Deno.test("stalled: a hand edit of the spec is no silent daemon; its revert starts a clock", () => {
  // The daemon reported on the controller's last spec (generation 3) long ago; a person
  // edited the spec since (generation 4).
  const edited = (observed: number, written?: string) => {
    const bn = bootcNode("n1", { phase: "idle" });
    bn.metadata.annotations = {
      ...bn.metadata.annotations,
      [ANNOTATION_SPEC_SINCE]: "2026-01-01T00:30:00Z",
      ...(written ? { [ANNOTATION_SPEC_GENERATION]: written } : {}),
    };
    bn.spec.desiredImageState = "Booted"; // the edit (no slot, no drain: reverted)
    bn.metadata.generation = 4;
    bn.status!.observedGeneration = observed;
    return bn;
  };
  const plan = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [edited(3, "3")] }));
  assert.equal(stalledOf(plan), undefined);
  assert.ok(!plan.events.some((e) => e.reason === "DaemonNotReporting"));
  const revert = plan.actions.find((a) => a.kind === "patchBootcNode" && a.why === "sync spec");
  assert.deepEqual(
    (revert as Extract<Action, { kind: "patchBootcNode" }>).patch.metadata,
    {
      annotations: {
        [ANNOTATION_SPEC_GENERATION]: "5",
        [ANNOTATION_SPEC_SINCE]: "2026-01-01T01:00:00Z",
      },
    },
    "the revert is the controller's change: its own generation and clock",
  );
  // Not known whose the change was: judged as before.
  const unknown = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [edited(3)] }));
  assert.equal(stalledOf(unknown)?.reason, "DaemonNotReporting");
  // A daemon behind the controller's own spec is reported, edit or not.
  const dead = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [edited(2, "3")] }));
  assert.equal(stalledOf(dead)?.reason, "DaemonNotReporting");
  // The record edited down, the spec untouched (nothing to revert): a silent daemon is
  // reported all the same.
  const tampered = edited(3, "3");
  tampered.spec.desiredImageState = "Staged";
  const plain = planPool(input(pool(), { nodes: [node("n1")], bootcNodes: [tampered] }));
  assert.ok(!plain.actions.some((a) => a.kind === "patchBootcNode" && a.patch.spec));
  assert.equal(stalledOf(plain)?.reason, "DaemonNotReporting");
});
