/**
 * End-to-end failure scenarios: a nonexistent image, nodes that never come back
 * (halt), a PDB blocking a drain, overlapping pools, and nodes joining and
 * leaving mid-rollout. Real controller and daemons, invariant-checked.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import { type BootcNodePool, findCondition } from "../../lib/api/mod.ts";
import { slotHolders, waitSlots } from "./slots.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  idleReason,
  patchPoolSpec,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";

/** Deletes a pool and waits until the controller has released its nodes. */
async function deletePool(
  stack: Awaited<ReturnType<typeof startStack>>,
  name: string,
): Promise<void> {
  const pools = stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  await pools.delete(name);
  await waitPool(stack, name, async () => {
    try {
      await pools.get(name);
      return undefined;
    } catch {
      return (await poolNodes(stack, name)).length === 0;
    }
  }, `pool ${name} was not released`);
}

Deno.test("failures: bad image, halt, blocked drain, conflicts, membership changes", async (t) => {
  const stack = await startStack({
    limits: {
      bad: { maxUnavailable: 1 },
      halt: { maxUnavailable: 2 },
      pdb: { maxUnavailable: 1 },
      left: { maxUnavailable: 1 },
      right: { maxUnavailable: 1 },
      churn: { maxUnavailable: 1 },
    },
  });
  const { v1, v2, repository } = stack.images;
  const missing = "sha256:" + "0".repeat(64);
  try {
    await step(t, "a nonexistent image: Degraded, and no reboot anywhere", async () => {
      const nodes = await addNodes(stack, "bad", 3);
      await stack.createPool("bad", poolSpec("bad", `${repository}:no-such-tag`));
      const pool = await waitPool(stack, "bad", async () => {
        const p = await getPool(stack, "bad");
        const degraded = findCondition(p.status?.conditions, "Degraded");
        return degraded?.status === "True" && degraded.reason === "ImageResolutionFailed" && p;
      }, "a missing tag should degrade the pool with the registry's message");
      assert.match(findCondition(pool.status?.conditions, "Degraded")!.message, /no-such-tag/);

      // A digest that does not exist: every daemon fails to stage; nothing reboots.
      const reboots = stack.fleet.rebootCount;
      await patchPoolSpec(stack, "bad", { image: { ref: `${repository}@${missing}` } });
      const degradedNodes = await waitNodes(
        stack,
        "bad",
        (bns) =>
          bns.length === 3 &&
          bns.every((bn) => findCondition(bn.status?.conditions, "Degraded")?.status === "True"),
        "every node should report the failed pull",
      );
      assert.match(
        findCondition(degradedNodes[0].status?.conditions, "Degraded")!.message,
        /error:.*(manifest unknown|not found)/i,
      );
      const degradedPool = await waitPool(stack, "bad", async () => {
        const p = await getPool(stack, "bad");
        return findCondition(p.status?.conditions, "Degraded")?.reason === "NodeDegraded" &&
          p.status?.degradedCount === 3 && p;
      }, "the pool should report NodeDegraded for all 3 nodes");
      assert.equal(degradedPool.status?.degradedCount, 3);
      await new Promise((r) => setTimeout(r, 2000));
      assert.equal(stack.fleet.rebootCount, reboots, "no node rebooted");
      assert.deepEqual(await slotHolders(stack, "bad"), [], "no slot taken");

      // Fixing the image recovers the pool.
      await patchPoolSpec(stack, "bad", { image: { ref: `${repository}@${v2.digest}` } });
      const healed = await waitConverged(stack, "bad", v2.digest, 3);
      assert.equal(findCondition(healed.status?.conditions, "Degraded")?.status, "False");
      await assertInvariants(stack, nodes);
      await deletePool(stack, "bad");
    });

    await step(t, "two nodes that never come back halt the rollout", async () => {
      const nodes = await addNodes(stack, "halt", 4);
      await stack.createPool(
        "halt",
        poolSpec("halt", `${repository}@${v1.digest}`, {
          maxUnavailable: 2,
          rebootTimeoutSeconds: 5,
        }),
      );
      await waitConverged(stack, "halt", v1.digest, 4);
      for (const name of nodes) stack.fleet.nodes.get(name)!.holdDown = true;
      await patchPoolSpec(stack, "halt", { image: { ref: `${repository}@${v2.digest}` } });
      const halted = await waitPool(
        stack,
        "halt",
        async () => {
          const p = await getPool(stack, "halt");
          return findCondition(p.status?.conditions, "Degraded")?.reason === "RolloutHalted" && p;
        },
        "two dead nodes in slots should halt the rollout",
        90_000,
      );
      assert.match(
        findCondition(halted.status?.conditions, "Degraded")!.message,
        /halt-\d.*halt-\d/,
      );
      const down = (await slotHolders(stack, "halt")).map((h) => h.name);
      assert.equal(down.length, 2);
      // No third node is taken while halted.
      await new Promise((r) => setTimeout(r, 3000));
      const stillInSlot = (await slotHolders(stack, "halt")).map((h) => h.name);
      assert.deepEqual(stillInSlot.sort(), down.sort());
      // A slot holder may be counted unhealthy for a reboot that started late on a loaded
      // machine (past rebootTimeoutSeconds); its machine goes down and stays down all the same.
      const dead = () => nodes.filter((n) => stack.fleet.nodes.get(n)!.rebooting).sort();
      await waitFor(() => JSON.stringify(dead()) === JSON.stringify(down.sort()), {
        timeoutMs: 30_000,
        message: () => `the slot holders ${down} are the dead machines (down: ${dead()})`,
      });
      // The machines come back: the rollout resumes and finishes.
      for (const name of nodes) stack.fleet.nodes.get(name)!.holdDown = false;
      await waitConverged(stack, "halt", v2.digest, 4, 120_000);
      await assertInvariants(stack, nodes);
      await deletePool(stack, "halt");
    });

    await step(t, "a PDB blocking a drain: timeout names the pod and the PDB", async () => {
      const nodes = await addNodes(stack, "pdb", 2);
      await stack.cp.createPod("default", "guarded", {
        nodeName: "pdb-1",
        labels: { app: "guarded" },
      });
      await stack.cp.createPdb("default", "guarded-pdb", {
        selector: { app: "guarded" },
        minAvailable: 1,
      });
      await stack.createPool(
        "pdb",
        poolSpec("pdb", `${repository}@${v1.digest}`, { drainTimeoutSeconds: 4 }),
      );
      await waitConverged(stack, "pdb", v1.digest, 2);
      await patchPoolSpec(stack, "pdb", { image: { ref: `${repository}@${v2.digest}` } });
      const blocked = await waitPool(
        stack,
        "pdb",
        async () => {
          const p = await getPool(stack, "pdb");
          const degraded = findCondition(p.status?.conditions, "Degraded");
          return degraded?.status === "True" && /guarded-pdb/.test(degraded.message) && p;
        },
        "the drain timeout should be reported with the blocking PDB",
        // Refused evictions back the pool's passes off (up to a minute between them).
        180_000,
      );
      const message = findCondition(blocked.status?.conditions, "Degraded")!.message;
      assert.match(message, /pdb-1/);
      assert.match(message, /default\/guarded/);
      const node = await stack.cp.client.resource<INode>(Resources.nodes).get("pdb-1");
      assert.equal(
        node.spec?.unschedulable,
        true,
        "the node stays cordoned while it holds its slot",
      );
      // Lifting the PDB lets the drain finish and the rollout complete.
      await stack.cp.client.resource(Resources.poddisruptionbudgets, "default").delete(
        "guarded-pdb",
      );
      await waitConverged(stack, "pdb", v2.digest, 2, 90_000);
      await assertInvariants(stack, nodes);
      await deletePool(stack, "pdb");
    });

    await step(
      t,
      "overlapping pools: the newcomer reports the conflict; the owner stays healthy",
      async () => {
        const left = await addNodes(stack, "left", 1);
        const right = await addNodes(stack, "right", 1);
        await stack.fleet.addNode("both-1", {
          image: `${repository}@${v1.digest}`,
          labels: { pool: "left", extra: "right" },
        });
        await stack.createPool("left", poolSpec("left", `${repository}@${v1.digest}`));
        await stack.createPool("right", {
          nodeSelector: {
            matchExpressions: [{ key: "pool", operator: "In", values: ["right"] }],
          },
          image: { ref: `${repository}@${v1.digest}` },
        });
        await waitConverged(stack, "right", v1.digest, 1);
        // Now make the contested node match "right" too.
        await stack.cp.client.resource<INode>(Resources.nodes).patch("both-1", {
          metadata: { labels: { pool: "left" } },
        }, { type: "merge" });
        await patchPoolSpec(stack, "right", {
          nodeSelector: {
            matchExpressions: [{ key: "pool", operator: "In", values: ["right", "left"] }],
          },
        });
        // Only the pool that cannot take the nodes reports it, and it is not UpToDate.
        const p = await waitPool(stack, "right", async () => {
          const got = await getPool(stack, "right");
          return findCondition(got.status?.conditions, "Degraded")?.reason === "NodeConflict" &&
            got;
        }, "pool right should report NodeConflict");
        assert.match(findCondition(p.status?.conditions, "Degraded")!.message, /left/);
        assert.equal(findCondition(p.status?.conditions, "UpToDate")?.reason, "NodeConflict");
        const owner = await waitPool(stack, "left", async () => {
          const got = await getPool(stack, "left");
          return findCondition(got.status?.conditions, "UpToDate")?.status === "True" && got;
        }, "pool left, which runs the nodes, is UpToDate");
        assert.equal(findCondition(owner.status?.conditions, "Degraded")?.status, "False");
        // Uncontested nodes still roll out.
        await patchPoolSpec(stack, "right", {
          nodeSelector: { matchLabels: { pool: "right" } },
          image: { ref: `${repository}@${v2.digest}` },
        });
        await waitConverged(stack, "right", v2.digest, 1);
        await assertInvariants(stack, [...left, ...right, "both-1"]);
        await deletePool(stack, "right");
        await deletePool(stack, "left");
      },
    );

    await step(t, "a node added and one removed mid-rollout", async () => {
      const nodes = await addNodes(stack, "churn", 3);
      // A holder deleted after its daemon said Rebooting keeps its slot until the reboot
      // timeout (its machine may be down): short here, so either moment converges in time.
      await stack.createPool(
        "churn",
        poolSpec("churn", `${repository}@${v1.digest}`, { rebootTimeoutSeconds: 45 }),
      );
      await waitConverged(stack, "churn", v1.digest, 3);
      await patchPoolSpec(stack, "churn", { image: { ref: `${repository}@${v2.digest}` } });
      const slotted = await waitSlots(
        stack,
        "churn",
        (holders) => holders.length > 0,
        "one node should take a slot",
      );
      const holder = slotted[0].name;
      // The slot holder's machine is deleted; a new node joins.
      await stack.fleet.removeNode(holder);
      await stack.fleet.addNode("churn-9", {
        image: `${repository}@${v1.digest}`,
        labels: { pool: "churn" },
      });
      await waitConverged(stack, "churn", v2.digest, 3, 180_000);
      const names = (await poolNodes(stack, "churn")).map((bn) => bn.metadata.name).sort();
      assert.deepEqual(names, [...nodes.filter((n) => n !== holder), "churn-9"].sort());
      assert.ok(
        (await poolNodes(stack, "churn")).every((bn) => idleReason(bn) === "Idle"),
      );
      await assertInvariants(stack, [...nodes.filter((n) => n !== holder), "churn-9"]);
    });
  } catch (error) {
    console.error(`stack logs kept in ${stack.logDir}`);
    await stack.stop({ keepLogs: true });
    throw error;
  }
  await stopStack(stack);
});
