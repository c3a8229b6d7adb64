/**
 * Node order on the real control plane: reboot slots go by the Nodes' update priority, then
 * zone by zone, and the node the controller runs on last (among staged nodes: the pool is
 * paused until all have staged); a node with priority 0 is skipped
 * (queued as Skipped, never given a slot) until its annotation goes.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import { ANNOTATION_UPDATE_PRIORITY, findCondition } from "../../lib/api/mod.ts";
import { type KubeObject, Resources } from "../../lib/kube/mod.ts";
import { startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  patchPoolSpec,
  poolNodes,
  poolSpec,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";

type Node = INode & KubeObject;

Deno.test("node order: priority, zone by zone, the controller's node last, 0 skipped", async () => {
  // ord-1 runs "the controller": it goes last.
  const stack = await startStack({
    limits: { ord: { maxUnavailable: 1 } },
    controllerArgs: ["--node-name", "ord-1"],
  });
  const { v2, repository } = stack.images;
  try {
    const nodes = await addNodes(stack, "ord", 5);
    const zone = "topology.kubernetes.io/zone";
    const meta: Record<string, { labels: Record<string, string>; priority?: string }> = {
      "ord-1": { labels: { [zone]: "a" } },
      "ord-2": { labels: { [zone]: "b" } },
      "ord-3": { labels: { [zone]: "b" }, priority: "5" },
      "ord-4": { labels: { [zone]: "a" } },
      "ord-5": { labels: { [zone]: "a" }, priority: "0" },
    };
    const nodeApi = stack.cp.client.resource<Node>(Resources.nodes);
    for (const [name, m] of Object.entries(meta)) {
      await nodeApi.patch(name, {
        metadata: {
          labels: m.labels,
          ...(m.priority ? { annotations: { [ANNOTATION_UPDATE_PRIORITY]: m.priority } } : {}),
        },
      }, { type: "merge" });
    }
    // Paused until every node has staged: the order is the order among staged nodes.
    await stack.createPool(
      "ord",
      poolSpec("ord", `${repository}@${v2.digest}`, {
        maxUnavailable: 1,
        order: "ZoneByZone",
        paused: true,
      }),
    );
    await waitNodes(
      stack,
      "ord",
      (bns) => bns.length === 5 && bns.every((b) => b.status?.staged?.imageDigest === v2.digest),
      "every node staged",
      120_000,
    );
    await patchPoolSpec(stack, "ord", { rollout: { paused: false } });

    // ord-3 (priority 5), then zone a (ord-4), zone b (ord-2), then ord-1 (the controller's).
    const order = ["ord-3", "ord-4", "ord-2", "ord-1"];
    const skipped = await waitPool(
      stack,
      "ord",
      async () => {
        const bns = await poolNodes(stack, "ord");
        const done = bns.filter((b) => b.status?.booted?.imageDigest === v2.digest).length;
        const p = await getPool(stack, "ord");
        const entry = p.status?.queue?.find((q) => q.node === "ord-5");
        return done === 4 && entry?.waitingFor === "Skipped" ? { p, entry } : undefined;
      },
      "four nodes updated, ord-5 queued as Skipped",
      180_000,
    );
    assert.equal(skipped.entry.orderedBy, "priority 0: skipped, zone a");
    assert.equal(findCondition(skipped.p.status?.conditions, "UpToDate")?.status, "False");
    const granted = [...stack.tracker.intervals].sort((a, b) => a.start - b.start)
      .map((i) => i.node);
    assert.deepEqual(granted, order, "slot grant order");

    // The annotation goes: the skipped node updates too.
    await nodeApi.patch("ord-5", {
      metadata: { annotations: { [ANNOTATION_UPDATE_PRIORITY]: null } },
    }, { type: "merge" });
    await waitConverged(stack, "ord", v2.digest, 5, 120_000);
    assert.equal(stack.tracker.intervals.at(-1)?.node, "ord-5");
    await assertInvariants(stack, nodes);
  } finally {
    await stopStack(stack);
  }
});
