/**
 * One node, one state name in every view. A rollout is held at each of its steps
 * (converged; staged while the pool is paused; one node in its slot, its drain
 * blocked by a PodDisruptionBudget, the others queued; updated), and at each the
 * default `kubectl get bn` STATE column, the Node's `bootc.dev/state` annotation and
 * the node tree of `kubectl bootc status -o json` must name the same state for every
 * node: the one that step is.
 *
 * The three are written or computed at different moments, so each check waits (within
 * a bound) until they settle; a disagreement that lasts fails with all three shown.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import { ANNOTATION_NODE_STATE, LABEL_POOL, NodeState } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  idleReason,
  kubectlBootc,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
} from "./scenario.ts";
import { slotHolders } from "./slots.ts";

const POOL = "views";
/** How long the views may take to settle on one state after the world did. */
const SETTLE_MS = 45_000;

/** Each view's state per node: the column, the annotation, the plugin. */
interface Views {
  column: Map<string, string>;
  annotation: Map<string, string>;
  plugin: Map<string, string>;
}

/** The STATE column of the default `kubectl get bn` rows of the pool's nodes. */
async function columnStates(stack: Stack): Promise<Map<string, string>> {
  const out = await stack.cp.kubectl(["get", "bn", "-l", `${LABEL_POOL}=${POOL}`]);
  const [header, ...rows] = out.stdout.trim().split("\n");
  const at = header.split(/\s+/).indexOf("STATE");
  assert.ok(at >= 0, `no STATE column in ${header}`);
  return new Map(rows.map((r) => r.split(/\s+/)).map((cells) => [cells[0], cells[at]]));
}

async function annotationStates(stack: Stack, nodes: string[]): Promise<Map<string, string>> {
  const list = await stack.cp.client.resource<INode>(Resources.nodes).list();
  const out = new Map<string, string>();
  for (const n of list.items) {
    const name = n.metadata?.name ?? "";
    if (nodes.includes(name)) out.set(name, n.metadata?.annotations?.[ANNOTATION_NODE_STATE] ?? "");
  }
  return out;
}

async function pluginStates(stack: Stack): Promise<Map<string, string>> {
  // 0 healthy or progressing, 1 a pool with a problem: both print the views.
  const text = await kubectlBootc(stack, ["status", POOL, "-o", "json"], [0, 1]);
  const views = JSON.parse(text) as { nodes: { name: string; state: string }[] }[];
  return new Map(views[0].nodes.map((n) => [n.name, n.state]));
}

async function readViews(stack: Stack, nodes: string[]): Promise<Views> {
  const [column, annotation, plugin] = await Promise.all([
    columnStates(stack),
    annotationStates(stack, nodes),
    pluginStates(stack),
  ]);
  return { column, annotation, plugin };
}

function render(views: Views, nodes: string[]): string {
  return nodes.map((n) =>
    `${n}: column=${views.column.get(n)} annotation=${views.annotation.get(n)} ` +
    `plugin=${views.plugin.get(n)}`
  ).join("\n");
}

/** Waits until every view names `expected(node)` for every node; fails showing all three. */
async function assertViewsAgree(
  stack: Stack,
  nodes: string[],
  expected: (node: string) => string,
  what: string,
): Promise<void> {
  let last: Views | undefined;
  await waitFor(async () => {
    last = await readViews(stack, nodes);
    const v = last;
    return nodes.every((n) =>
      v.column.get(n) === expected(n) && v.annotation.get(n) === expected(n) &&
      v.plugin.get(n) === expected(n)
    );
  }, { timeoutMs: SETTLE_MS, intervalMs: 500, message: what }).catch((e) => {
    throw new Error(`${e instanceof Error ? e.message : e}\n${last ? render(last, nodes) : ""}`);
  });
}

Deno.test("views: the column, the Node annotation and the plugin name one state per node", async (t) => {
  const stack = await startStack({ limits: { [POOL]: { maxUnavailable: 1 } } });
  const { repository, v1, v2 } = stack.images;
  try {
    const nodes = await addNodes(stack, POOL, 3);
    await stack.createPool(POOL, poolSpec(POOL, `${repository}@${v1.digest}`));
    await waitConverged(stack, POOL, v1.digest, 3, 180_000);
    await stack.cp.createNamespace(POOL);
    for (const n of nodes) {
      await stack.cp.createPod(POOL, `pinned-${n}`, { nodeName: n, labels: { app: "pinned" } });
    }

    await step(t, "converged: every view says Updated", async () => {
      await assertViewsAgree(stack, nodes, () => NodeState.Updated, "all Updated");
    });

    await step(t, "a new target while paused: every view says Staged", async () => {
      await patchPoolSpec(stack, POOL, {
        image: { ref: `${repository}@${v2.digest}` },
        rollout: { paused: true, maxUnavailable: 1 },
      });
      await waitNodes(
        stack,
        POOL,
        (bns) => bns.length === 3 && bns.every((bn) => idleReason(bn) === "Staged"),
        "all staged",
      );
      await assertViewsAgree(stack, nodes, () => NodeState.Staged, "all Staged");
    });

    await step(t, "a drain a PDB blocks: the slot holder Draining, the rest Staged", async () => {
      await stack.cp.createPdb(POOL, "pinned", { selector: { app: "pinned" }, minAvailable: 3 });
      await patchPoolSpec(stack, POOL, { rollout: { paused: false, maxUnavailable: 1 } });
      let holder = "";
      await waitFor(async () => {
        holder = (await slotHolders(stack, POOL))[0]?.name ?? "";
        return holder !== "";
      }, { timeoutMs: 60_000, message: "a node takes its slot" });
      await assertViewsAgree(
        stack,
        nodes,
        (n) => n === holder ? NodeState.Draining : NodeState.Staged,
        `${holder} Draining, the others Staged`,
      );
    });

    await step(t, "the PDB gone, the rollout converges: every view says Updated", async () => {
      await stack.cp.client.resource(Resources.poddisruptionbudgets, POOL).delete("pinned");
      await waitConverged(stack, POOL, v2.digest, 3, 180_000);
      await assertViewsAgree(stack, nodes, () => NodeState.Updated, "all Updated again");
      await assertInvariants(stack, nodes);
    });
  } finally {
    await stopStack(stack);
  }
});
