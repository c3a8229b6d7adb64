import assert from "node:assert/strict";
import { planPool } from "./planner.ts";
import { bootcNode, input, node, pod, pool } from "../testing/fixtures.ts";

Deno.test("blockingPodSelector: a node running a selected pod waits, uncordoned; the others go", () => {
  const p = pool({ maxUnavailable: 2 });
  p.spec.rollout!.blockingPodSelector = { matchLabels: { app: "backup" } };
  const plan = planPool(input(p, {
    nodes: [node("n1"), node("n2"), node("n3")],
    bootcNodes: ["n1", "n2", "n3"].map((n) => bootcNode(n, { phase: "staged" })),
    pods: [
      pod("backup-1", "n1", { labels: { app: "backup" } }),
      // A finished pod never blocks, nor does one the selector does not select.
      pod("backup-0", "n2", { labels: { app: "backup" }, completed: true }),
      pod("web-1", "n3"),
    ],
  }));
  const grants = plan.actions.filter((a) => a.kind === "patchNode" && a.why === "assign slot")
    .map((a) => "node" in a ? a.node : "");
  assert.deepEqual(grants, ["n2", "n3"]);
  assert.ok(!plan.actions.some((a) => "node" in a && a.node === "n1"), "n1 is not touched");
  assert.deepEqual(plan.status?.queue, [
    { node: "n1", position: 1, waitingFor: "BlockingPod", blockedBy: "default/backup-1" },
  ]);
  assert.match(
    JSON.stringify(plan.status?.notes),
    /held by blocking pods: n1 \(default\/backup-1\)/,
  );
});
