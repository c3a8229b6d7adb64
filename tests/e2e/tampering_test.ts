/**
 * End-to-end tampering scenarios (issue 12): what a careful operator does by
 * hand mid-flight must never reboot a node without its slot and drain, leave a
 * node cordoned, exceed maxUnavailable or overwrite the recorded prior cordon
 * state; and a silent daemon must be visible.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  findCondition,
} from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  idleReason,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";

function nodesApi(stack: Stack) {
  return stack.cp.client.resource<INode>(Resources.nodes);
}
function bootcNodesApi(stack: Stack) {
  return stack.cp.client.resource<BootcNode>(Resources.bootcNodes);
}

/** Names of the nodes among `names` whose Node holds a reboot slot. */
async function slotHolders(stack: Stack, names: string[]): Promise<string[]> {
  const list = await nodesApi(stack).list();
  return list.items.filter((n) =>
    names.includes(n.metadata?.name ?? "") &&
    n.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined
  ).map((n) => n.metadata!.name!);
}

/** Event reasons recorded about `name` (events of cluster-scoped objects go to default). */
async function eventReasons(stack: Stack, name: string): Promise<string[]> {
  const list = await stack.cp.client.resource(Resources.events, "default").list();
  return list.items.filter((e) =>
    (e as { involvedObject?: { name?: string } }).involvedObject?.name === name
  ).map((e) => (e as { reason?: string }).reason ?? "");
}

/**
 * Waits for an event about `name` with `reason`: events are recorded after the writes
 * of the reconcile that decides them, so they may trail what the test saw.
 */
async function waitForEvent(stack: Stack, name: string, reason: string): Promise<void> {
  await waitFor(async () => (await eventReasons(stack, name)).includes(reason), {
    timeoutMs: 30_000,
    message: `a ${reason} event about ${name}`,
  });
}

/** Blocks the drain of each node with a pod guarded by a PDB that allows no disruption. */
async function blockDrains(stack: Stack, ns: string, names: string[]): Promise<void> {
  await stack.cp.createNamespace(ns);
  for (const n of names) {
    await stack.cp.createPod(ns, `guarded-${n}`, { nodeName: n, labels: { app: "guarded" } });
  }
  await stack.cp.createPdb(ns, "guarded", {
    selector: { app: "guarded" },
    minAvailable: names.length,
  });
}

async function unblockDrains(stack: Stack, ns: string): Promise<void> {
  await stack.cp.client.resource(Resources.poddisruptionbudgets, ns).delete("guarded");
}

Deno.test("tampering: hand edits and deletions mid-flight keep every invariant", async (t) => {
  const stack = await startStack({
    limits: {
      hand: { maxUnavailable: 1 },
      lost: { maxUnavailable: 1 },
      bad: { maxUnavailable: 1 },
      gone: { maxUnavailable: 1 },
      silent: { maxUnavailable: 1 },
    },
    rebootDelayMs: 500,
  });
  const { v1, v2, repository } = stack.images;
  const ref1 = `${repository}@${v1.digest}`;
  const ref2 = `${repository}@${v2.digest}`;
  try {
    await step(t, "Booted set by hand without a slot, controller down: no reboot", async () => {
      const nodes = await addNodes(stack, "hand", 2);
      await stack.createPool("hand", poolSpec("hand", ref1));
      await waitConverged(stack, "hand", v1.digest, 2);
      await patchPoolSpec(stack, "hand", { image: { ref: ref2 }, rollout: { paused: true } });
      await waitNodes(
        stack,
        "hand",
        (bns) => bns.length === 2 && bns.every((bn) => idleReason(bn) === "Staged"),
        "both staged while paused",
      );
      await stack.killController();
      await bootcNodesApi(stack).patch("hand-1", { spec: { desiredImageState: "Booted" } }, {
        type: "merge",
      });
      const refused = await waitFor(async () => {
        const bn = await bootcNodesApi(stack).get("hand-1");
        const c = findCondition(bn.status?.conditions, "RebootAllowed");
        return c?.status === "False" && c.reason === "NoRebootSlot" ? bn : undefined;
      }, { timeoutMs: 30_000, message: "the daemon refuses and says why" });
      assert.equal(refused.status?.booted?.imageDigest, v1.digest);
      await waitFor(
        async () => (await eventReasons(stack, "hand-1")).includes("RebootRefused"),
        { timeoutMs: 15_000, message: "a RebootRefused event" },
      );
      // Give a misbehaving daemon every chance to reboot anyway.
      await new Promise((r) => setTimeout(r, 3000));
      const still = await bootcNodesApi(stack).get("hand-1");
      assert.equal(still.status?.booted?.imageDigest, v1.digest, "hand-1 did not reboot");
      assert.ok(!stack.tracker.reboots.some((r) => r.node === "hand-1"), "no reboot recorded");

      await stack.startController();
      await waitFor(async () => {
        const bn = await bootcNodesApi(stack).get("hand-1");
        return bn.spec.desiredImageState === "Staged";
      }, { timeoutMs: 30_000, message: "the controller resets the hand-set Booted" });
      await waitFor(
        async () => (await eventReasons(stack, "hand-1")).includes("UnauthorizedRebootRequest"),
        { timeoutMs: 15_000, message: "an UnauthorizedRebootRequest event" },
      );
      await patchPoolSpec(stack, "hand", { rollout: { paused: false } });
      await waitConverged(stack, "hand", v2.digest, 2);
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "BootcNode deleted and slot annotation removed mid-drain: no second slot, cordon restored exactly",
      async () => {
        const nodes = await addNodes(stack, "lost", 3, { unschedulable: ["lost-3"] });
        stack.tracker.markPreCordoned("lost-3");
        await stack.createPool("lost", poolSpec("lost", ref1));
        await waitConverged(stack, "lost", v1.digest, 3);
        await blockDrains(stack, "lost", nodes);
        await patchPoolSpec(stack, "lost", { image: { ref: ref2 } });
        const [holder] = await waitFor(async () => {
          const h = await slotHolders(stack, nodes);
          return h.length === 1 ? h : undefined;
        }, { timeoutMs: 60_000, message: "one node in its slot, drain blocked" });
        const before = (await nodesApi(stack).get(holder)).metadata?.annotations ?? {};
        const prior = before[ANNOTATION_WAS_CORDONED];
        assert.ok(prior === "true" || prior === "false");

        await bootcNodesApi(stack).delete(holder);
        await waitFor(
          async () => (await eventReasons(stack, holder)).includes("BootcNodeRecreated"),
          { timeoutMs: 30_000, message: "BootcNode recreated with an event" },
        );
        await new Promise((r) => setTimeout(r, 3000));
        assert.deepEqual(await slotHolders(stack, nodes), [holder], "still exactly one slot");
        const node = await nodesApi(stack).get(holder);
        assert.equal(node.spec?.unschedulable, true, "still cordoned while in flight");
        assert.equal(node.metadata?.annotations?.[ANNOTATION_WAS_CORDONED], prior);

        await nodesApi(stack).patch(holder, {
          metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: null } },
        }, { type: "merge" });
        await waitFor(async () => {
          const n = await nodesApi(stack).get(holder);
          return n.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined;
        }, { timeoutMs: 30_000, message: "slot annotation restored" });
        await new Promise((r) => setTimeout(r, 2000));
        assert.deepEqual(await slotHolders(stack, nodes), [holder], "no second slot");
        assert.equal(
          (await nodesApi(stack).get(holder)).metadata?.annotations?.[ANNOTATION_WAS_CORDONED],
          prior,
          "prior cordon state never overwritten",
        );
        await waitForEvent(stack, holder, "DisruptionRecordRepaired");

        await unblockDrains(stack, "lost");
        await waitConverged(stack, "lost", v2.digest, 3, 180_000);
        const after = await nodesApi(stack).list();
        for (const n of after.items.filter((x) => nodes.includes(x.metadata?.name ?? ""))) {
          assert.equal(
            n.spec?.unschedulable === true,
            n.metadata?.name === "lost-3",
            `${n.metadata?.name} cordon state restored exactly`,
          );
        }
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "a spec that turns invalid mid-drain undoes the drain", async () => {
      const nodes = await addNodes(stack, "bad", 2);
      await stack.createPool("bad", poolSpec("bad", ref1));
      await waitConverged(stack, "bad", v1.digest, 2);
      await blockDrains(stack, "bad", nodes);
      await patchPoolSpec(stack, "bad", { image: { ref: ref2 } });
      const [holder] = await waitFor(async () => {
        const h = await slotHolders(stack, nodes);
        return h.length === 1 ? h : undefined;
      }, { timeoutMs: 60_000, message: "one node in its slot, drain blocked" });
      // A pull Secret in a namespace the daemons cannot read: refused as InvalidSpec.
      await patchPoolSpec(stack, "bad", {
        pullSecretRef: { name: "nowhere", namespace: "kube-public" },
      });
      await waitPool(stack, "bad", async () => {
        const p = await getPool(stack, "bad");
        return findCondition(p.status?.conditions, "Degraded")?.reason === "InvalidSpec";
      }, "InvalidSpec");
      await waitFor(async () => {
        const n = await nodesApi(stack).get(holder);
        return n.spec?.unschedulable !== true &&
          n.metadata?.annotations?.[ANNOTATION_WAS_CORDONED] === undefined;
      }, { timeoutMs: 30_000, message: "the undrained node is uncordoned and its record gone" });
      await waitForEvent(stack, holder, "UpdateUndone");
      assert.deepEqual(await slotHolders(stack, nodes), []);
      await unblockDrains(stack, "bad");
      await patchPoolSpec(stack, "bad", { pullSecretRef: null });
      await waitConverged(stack, "bad", v2.digest, 2, 180_000);
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "a pool deleted without its finalizer mid-drain: its node is handed back",
      async () => {
        const nodes = await addNodes(stack, "gone", 2);
        await stack.createPool("gone", poolSpec("gone", ref1));
        await waitConverged(stack, "gone", v1.digest, 2);
        await blockDrains(stack, "gone", nodes);
        await patchPoolSpec(stack, "gone", { image: { ref: ref2 } });
        const [holder] = await waitFor(async () => {
          const h = await slotHolders(stack, nodes);
          return h.length === 1 ? h : undefined;
        }, { timeoutMs: 60_000, message: "one node in its slot, drain blocked" });
        const pools = stack.cp.client.resource(Resources.bootcNodePools);
        await pools.patch("gone", { metadata: { finalizers: null } }, { type: "merge" });
        await pools.delete("gone");
        await waitFor(async () => {
          const n = await nodesApi(stack).get(holder);
          return n.spec?.unschedulable !== true &&
            n.metadata?.annotations?.[ANNOTATION_WAS_CORDONED] === undefined &&
            n.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] === undefined;
        }, {
          timeoutMs: 60_000,
          message: "the node of the vanished pool is uncordoned, record gone",
        });
        await unblockDrains(stack, "gone");
        // Its BootcNodes go with the pool (garbage collection); no invariant was broken.
        await waitFor(async () => {
          const list = await bootcNodesApi(stack).list();
          return !list.items.some((bn) => nodes.includes(bn.metadata.name ?? ""));
        }, { timeoutMs: 60_000, message: "the pool's BootcNodes collected" });
        assert.deepEqual(stack.tracker.violations, []);
      },
    );

    await step(t, "a silent daemon is reported Stalled/DaemonNotReporting", async () => {
      const nodes = await addNodes(stack, "silent", 2);
      await stack.createPool(
        "silent",
        poolSpec("silent", ref1, { daemonReportTimeoutSeconds: 30 }),
      );
      await waitConverged(stack, "silent", v1.digest, 2);
      await stack.fleet.killDaemon("silent-2", { keepDown: true });
      await patchPoolSpec(stack, "silent", { image: { ref: ref2 } });
      const bn = await waitFor(async () => {
        const b = await bootcNodesApi(stack).get("silent-2");
        const c = findCondition(b.status?.conditions, "Stalled");
        return c?.status === "True" && c.reason === "DaemonNotReporting" ? b : undefined;
      }, { timeoutMs: 60_000, message: "silent-2 Stalled" });
      assert.match(findCondition(bn.status?.conditions, "Stalled")!.message, /silent-2/);
      const p = await waitPool(stack, "silent", async () => {
        const x = await getPool(stack, "silent");
        return /1 stalled \(silent-2\)/.test(
            findCondition(x.status?.conditions, "UpToDate")?.message ?? "",
          )
          ? x
          : undefined;
      }, "the pool counts the stalled node");
      assert.match(
        findCondition(p.status?.conditions, "Degraded")?.message ?? "",
        /silent-2 \(DaemonNotReporting/,
      );
      await waitForEvent(stack, "silent-2", "DaemonNotReporting");
      stack.fleet.allowDaemon("silent-2");
      await waitConverged(stack, "silent", v2.digest, 2, 180_000);
      // The daemon rewrites its whole status from its cache, so it may briefly put back the
      // controller's older Stalled=True; the controller corrects it on the next reconcile.
      await waitFor(async () => {
        const healed = await bootcNodesApi(stack).get("silent-2");
        return findCondition(healed.status?.conditions, "Stalled")?.status === "False";
      }, { timeoutMs: 30_000, message: "silent-2 no longer Stalled" });
      await assertInvariants(stack, nodes);
    });
  } finally {
    await stopStack(stack);
  }
});
