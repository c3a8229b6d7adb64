/**
 * A pool deleted mid-rollout under each `spec.deletionPolicy`: RollForward ends every node on
 * the target, RollBack on the image before it, Threshold picks by its share of updated
 * nodes; only then are the nodes handed back and the pool gone, nothing left cordoned or
 * recorded. The finishing rollout keeps every gate: paused at deletion, it waits, and says
 * where it will end.
 */
import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { isInvalid, isNotFound, Resources } from "../../lib/kube/mod.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { slotHolders } from "./slots.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  patchPoolSpec,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";

type Mode = "RollForward" | "RollBack" | "Threshold";

/** The image digest each of `nodes`' simulated hosts boots. */
async function bootedDigests(stack: Stack, nodes: string[]): Promise<string[]> {
  return await Promise.all(nodes.map(async (n) => {
    const { state } = await stack.fleet.nodes.get(n)!.host.readState();
    return state.booted?.image?.imageDigest ?? "none";
  }));
}

/**
 * Rolls pool `name` (3 nodes on v1) towards v2, pauses it once a node runs v2 and nothing is
 * in flight, deletes it, unpauses it, and returns its nodes and the end image it chose.
 */
async function deleteMidRollout(stack: Stack, name: string, mode: Mode) {
  const { v1, v2, repository } = stack.images;
  const nodes = await addNodes(stack, name, 3);
  await stack.createPool(
    name,
    poolSpec(name, `${repository}@${v1.digest}`, { maxUnavailable: 1 }, {
      deletionPolicy: mode === "Threshold" ? { mode, threshold: "50%" } : { mode },
    }),
  );
  await waitConverged(stack, name, v1.digest, 3);
  await patchPoolSpec(stack, name, { image: { ref: `${repository}@${v2.digest}` } });
  await waitNodes(
    stack,
    name,
    (bns) => bns.some((bn) => bn.status?.booted?.imageDigest === v2.digest),
    "a first node on v2",
    120_000,
  );
  await patchPoolSpec(stack, name, { rollout: { paused: true } });
  // Paused, the node in flight (if any) finishes; then the share on v2 stands still.
  const settled = await waitPool(
    stack,
    name,
    async () => {
      if ((await slotHolders(stack, name)).length > 0) return undefined;
      const bns = await poolNodes(stack, name);
      return bns.filter((bn) => bn.status?.booted?.imageDigest === v2.digest).length;
    },
    "the paused pool settled",
    120_000,
  );
  const pools = stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  await pools.delete(name);
  const deciding = await waitPool(
    stack,
    name,
    async () => {
      const p = await getPool(stack, name);
      return p.status?.deletion && p;
    },
    "status.deletion set",
    60_000,
  );
  return { nodes, settled, pools, end: deciding.status!.deletion! };
}

Deno.test("deletion policy: a pool deleted mid-rollout ends on one image, then goes", async (t) => {
  const modes: Mode[] = ["RollForward", "RollBack", "Threshold"];
  const names: Record<Mode, string> = { RollForward: "fwd", RollBack: "back", Threshold: "thr" };
  const stack = await startStack({
    limits: Object.fromEntries(modes.map((m) => [names[m], { maxUnavailable: 1 }])),
  });
  const { v1, v2 } = stack.images;
  try {
    await step(t, "admission names the field of a bad deletionPolicy", async () => {
      const pools = stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
      const bad = async (deletionPolicy: Record<string, unknown>, pattern: RegExp) => {
        const error = await pools.create({
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcNodePool",
          metadata: { name: "del-invalid" },
          spec: {
            nodeSelector: {},
            image: { ref: `${stack.images.repository}@${v1.digest}` },
            deletionPolicy,
          },
        } as unknown as BootcNodePool).then(() => undefined, (e) => e);
        if (!error) await pools.delete("del-invalid");
        assert.ok(error, `expected ${pattern}, but the pool was accepted`);
        assert.ok(isInvalid(error), String(error));
        assert.match(String(error.message), pattern);
      };
      await bad(
        { mode: "Sometimes" },
        /spec\.deletionPolicy\.mode: Unsupported value: "Sometimes"/,
      );
      await bad(
        { mode: "Threshold", threshold: "150%" },
        /spec\.deletionPolicy\.threshold: Invalid value.*must be a percentage from 0% to 100%/,
      );
      await bad(
        { mode: "RollForward", threshold: "50%" },
        /spec\.deletionPolicy: Invalid value.*threshold applies only to mode Threshold/,
      );
    });

    await step(t, "each policy finishes on its image; paused, it waits", async () => {
      await Promise.all(modes.map(async (mode) => {
        const name = names[mode];
        const { nodes, settled, pools, end } = await deleteMidRollout(stack, name, mode);
        const forward = mode === "RollForward" || (mode === "Threshold" && settled * 2 >= 3);
        assert.equal(end.direction, forward ? "Forward" : "Back", `${name}: ${settled}/3 on v2`);
        const want = forward ? v2.digest : v1.digest;
        assert.equal(end.digest, want);
        // Still paused: the pool stays, its nodes where they were.
        await new Promise((r) => setTimeout(r, 3_000));
        const held = await getPool(stack, name);
        assert.ok(held.metadata.deletionTimestamp, `${name} waits while paused`);
        await patchPoolSpec(stack, name, { rollout: { paused: false } });
        await waitPool(
          stack,
          name,
          async () => {
            try {
              await pools.get(name);
              return undefined;
            } catch (e) {
              if (!isNotFound(e)) throw e;
              return true;
            }
          },
          `pool ${name} finished and went`,
          180_000,
        );
        assert.deepEqual(await bootedDigests(stack, nodes), [want, want, want], name);
        await assertInvariants(stack, nodes);
      }));
    });
  } finally {
    await stopStack(stack);
  }
});
