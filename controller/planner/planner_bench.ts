/**
 * Planner time per reconcile at 100, 1,000 and 5,000 nodes: a pool mid-rollout
 * (a third updated, a third staged, the rest staging; some slots busy, ten pods per
 * node, a handful of PDBs). Run with `deno bench controller/planner/planner_bench.ts`.
 */
import { planPool } from "./planner.ts";
import { bootcNode, image, input, node, pdb, pod, pool } from "../testing/fixtures.ts";
import type { PodSummary } from "../model/types.ts";

function scenario(n: number) {
  const nodes = [];
  const bootcNodes = [];
  const pods: PodSummary[] = [];
  for (let i = 0; i < n; i++) {
    const name = `node-${String(i).padStart(5, "0")}`;
    const inSlot = i < 10;
    nodes.push(node(name, { unschedulable: inSlot }));
    const phase = i % 3 === 0 ? "idle" : i % 3 === 1 ? "staged" : "staging";
    bootcNodes.push(bootcNode(name, {
      phase,
      booted: phase === "idle" && !inSlot ? image("b") : image("a"),
      slotAt: inSlot ? "2026-01-01T00:59:00Z" : undefined,
    }));
    for (let j = 0; j < 10; j++) {
      pods.push(pod(`p-${i}-${j}`, name, { labels: { app: `app-${j % 5}` } }));
    }
  }
  const pdbs = Array.from({ length: 5 }, (_, j) => pdb(`pdb-${j}`, `app-${j}`, 2));
  return input(pool({ maxUnavailable: "5%" }), { nodes, bootcNodes, pods, pdbs });
}

for (const n of [100, 1_000, 5_000]) {
  const data = scenario(n);
  Deno.bench({
    name: `planPool ${n} nodes`,
    group: "planner",
    fn: () => {
      planPool(data);
    },
  });
}
