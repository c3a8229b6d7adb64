import assert from "node:assert/strict";
import { ANNOTATION_UPDATE_PRIORITY, type BootcNodePool } from "../../lib/api/mod.ts";
import type { NodeSummary } from "../model/types.ts";
import type { Member } from "./membership.ts";
import { orderCandidates, ZONE_LABEL } from "./node_order.ts";
import { planPool } from "./planner.ts";
import { bootcNode, input, node, pool } from "../testing/fixtures.ts";

const members = (...nodes: NodeSummary[]) => nodes.map((n) => ({ node: n }) as Member);
const names = (ms: readonly Member[]) => ms.map((m) => m.node.name);
const prio = (p: string) => ({ annotations: { [ANNOTATION_UPDATE_PRIORITY]: p } });

function ordered(p: BootcNodePool, ms: Member[], controllerNode?: string) {
  return orderCandidates(ms, p, controllerNode);
}

Deno.test("node order: priority first, then the pool's order, then the name", () => {
  const p = pool();
  const ms = members(node("c"), node("a", prio("5")), node("b"), node("d", prio("0")));
  const { ordered: out, places } = ordered(p, ms);
  assert.deepEqual(names(out), ["a", "b", "c", "d"]);
  assert.equal(places.get("a")?.orderedBy, "priority 5");
  assert.equal(places.get("b")?.orderedBy, undefined);
  assert.deepEqual(places.get("d"), { skipped: true, orderedBy: "priority 0: skipped" });
  const bad = ordered(p, members(node("x", prio("high")))).places.get("x");
  assert.equal(bad?.skipped, false);
  assert.match(bad?.orderedBy ?? "", /"high" ignored \(not 0-1000\)/);
});

Deno.test("node order: zone by zone, oldest or newest first; no key goes after", () => {
  const p = pool();
  const zone = (z?: string): Partial<NodeSummary> => ({
    labels: z ? { [ZONE_LABEL]: z } : {},
  });
  const zoned = members(
    node("a", zone("z2")),
    node("b", zone()),
    node("c", zone("z1")),
    node("d", zone("z2")),
  );
  p.spec.rollout.order = "ZoneByZone";
  assert.deepEqual(names(ordered(p, zoned).ordered), ["c", "a", "d", "b"]);
  assert.equal(ordered(p, zoned).places.get("c")?.orderedBy, "zone z1");
  const aged = members(
    node("old", { created: "2025-01-01T00:00:00Z" }),
    node("new", { created: "2026-06-01T00:00:00Z" }),
    node("unknown"),
  );
  p.spec.rollout.order = "OldestFirst";
  assert.deepEqual(names(ordered(p, aged).ordered), ["old", "new", "unknown"]);
  p.spec.rollout.order = "NewestFirst";
  assert.deepEqual(names(ordered(p, aged).ordered), ["new", "old", "unknown"]);
});

Deno.test("node order: the controller's node goes last, whatever its priority", () => {
  const ms = members(node("a"), node("b", prio("9")), node("c"));
  const { ordered: out, places } = ordered(pool(), ms, "b");
  assert.deepEqual(names(out), ["a", "c", "b"]);
  assert.equal(places.get("b")?.orderedBy, "priority 9, runs the controller: last");
  // Alone, it is also the first.
  assert.deepEqual(names(ordered(pool(), members(node("b")), "b").ordered), ["b"]);
});

Deno.test("node order: grants follow it; a skipped node waits as Skipped, never granted", () => {
  const p = pool({ maxUnavailable: 1 });
  const fleet = {
    nodes: [node("n1"), node("n2", prio("0")), node("n3", prio("3"))],
    bootcNodes: ["n1", "n2", "n3"].map((n) => bootcNode(n, { phase: "staged" })),
  };
  const plan = planPool({ ...input(p, fleet), controllerNode: "n1" });
  const granted = plan.actions.flatMap((a) =>
    a.kind === "patchNode" && a.why === "assign slot" ? [a.node] : []
  );
  assert.deepEqual(granted, ["n3"]);
  assert.deepEqual(
    plan.status?.queue?.map((q) => [q.node, q.position, q.waitingFor, q.orderedBy]),
    [
      ["n1", 1, "BudgetExhausted", "runs the controller: last"],
      ["n2", 2, "Skipped", "priority 0: skipped"],
    ],
  );
});
