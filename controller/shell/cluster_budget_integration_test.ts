/**
 * Cluster-wide disruption budgets on a real API server: two pools reconciled at
 * the same moment, again and again, never together hold more reboot slots than
 * a BootcDisruptionBudget that spans them allows.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_WAS_CORDONED,
  type BootcDisruptionBudget,
  type BootcNode,
  type BootcNodePool,
} from "../../lib/api/mod.ts";
import { isConflict, Resources } from "../../lib/kube/mod.ts";
import { type ControlPlane, startControlPlane } from "../../tests/harness/control_plane.ts";
import { waitFor } from "../../tests/harness/wait.ts";
import { type Node, PoolReconciler } from "./reconciler.ts";
import type { ImageResolver } from "../pollers/resolver.ts";
import { type FakeNodeBehaviour, startFakeDaemon } from "../testing/fake_daemon.ts";

const REPO = "registry.test/os";
const OLD = `${REPO}@sha256:${"a".repeat(64)}`;
const NEW = `${REPO}@sha256:${"b".repeat(64)}`;
const resolver: ImageResolver = { resolve: () => Promise.reject(new Error("no tags here")) };

/** Applies the operator's CRDs and waits until the pool and budget kinds are served. */
async function installCrds(cp: ControlPlane): Promise<void> {
  for await (const entry of Deno.readDir(new URL("../../crds/", import.meta.url))) {
    await cp.applyYaml(
      await Deno.readTextFile(new URL(`../../crds/${entry.name}`, import.meta.url)),
    );
  }
  await waitFor(async () => {
    await cp.client.resource(Resources.bootcDisruptionBudgets).list();
    await cp.client.resource(Resources.bootcNodePools).list();
    return true;
  }, { timeoutMs: 30_000, message: "CRDs served" });
}

Deno.test("cluster budget: pools reconciled concurrently never exceed it together", async () => {
  const cp = await startControlPlane();
  // Nodes never come back from their reboot, so every slot stays taken and counted.
  const behaviours = new Map<string, FakeNodeBehaviour>();
  const names = ["a1", "a2", "a3", "b1", "b2", "b3"];
  for (const n of names) behaviours.set(n, { neverReturns: true });
  const daemon = startFakeDaemon({ client: cp.client, initialImage: OLD, behaviours, tickMs: 50 });
  const ac = new AbortController();
  // No work queue: the test itself calls reconcile, both pools at once.
  const reconciler = new PoolReconciler({ client: cp.client, resolver });
  const caches = reconciler.startCaches(ac.signal);
  try {
    await installCrds(cp);
    const nodes = cp.client.resource<Node>(Resources.nodes);
    for (const n of names) await cp.createNode(n, { labels: { pool: n[0], fleet: "cb" } });
    await cp.client.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets).create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcDisruptionBudget",
      metadata: { name: "fleet" },
      spec: { nodeSelector: { matchLabels: { fleet: "cb" } }, maxUnavailable: 2 },
    });
    for (const p of ["a", "b"]) {
      await cp.client.resource<BootcNodePool>(Resources.bootcNodePools).create({
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNodePool",
        metadata: { name: p },
        spec: {
          nodeSelector: { matchLabels: { pool: p } },
          image: { ref: NEW },
          // Each pool alone would take all three nodes at once.
          rollout: {
            maxUnavailable: 3,
            // Paused until every node is staged: then both pools are let go at once.
            paused: true,
            drainTimeoutSeconds: 600,
            rebootTimeoutSeconds: 1800,
            minReadySeconds: 0,
          },
          disruption: { rebootPolicy: "RebootOnly" },
        },
      });
    }
    await reconciler.waitForSync(ac.signal);
    await waitFor(() => reconciler.budgets.store.list().length === 1, {
      timeoutMs: 10_000,
      message: "budget cached",
    });
    const slotHolders = async () =>
      (await nodes.list()).items.filter((n) =>
        names.includes(n.metadata?.name ?? "") &&
        n.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined
      ).map((n) => n.metadata!.name!);

    const poolsApi = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    const reconcileBoth = async () => {
      const results = await Promise.allSettled([
        reconciler.reconcile("a"),
        reconciler.reconcile("b"),
      ]);
      // A conflict is retried by the work queue in production; here by the next round.
      for (const r of results) {
        if (r.status === "rejected" && !isConflict(r.reason)) throw r.reason;
      }
    };
    const bootcNodes = cp.client.resource(Resources.bootcNodes);
    await waitFor(async () => {
      await reconcileBoth();
      const list = await bootcNodes.list();
      return list.items.length === 6 &&
        list.items.every((bn) =>
          (bn as { status?: { conditions?: { type: string; reason: string }[] } }).status
            ?.conditions?.some((c) => c.type === "Idle" && c.reason === "Staged")
        );
    }, { timeoutMs: 60_000, intervalMs: 200, message: "all six staged while paused" });
    // Each pool's status still says Paused when both are resumed: a pool planned on that
    // view sees the other as not competing, so only one-at-a-time planning keeps the cap.
    for (const p of ["a", "b"]) {
      await poolsApi.patch(p, { spec: { rollout: { paused: false } } }, { type: "merge" });
    }
    await waitFor(
      () => reconciler.pools.store.list().every((p) => p.spec.rollout.paused === false),
      { timeoutMs: 10_000, message: "resumed pools cached" },
    );

    let most = 0;
    let rounds = 0;
    const deadline = Date.now() + 60_000;
    // Reconcile both pools at the same moment until the budget is full, then some more.
    while (Date.now() < deadline) {
      await reconcileBoth();
      const held = await slotHolders();
      most = Math.max(most, held.length);
      assert.ok(held.length <= 2, `budget exceeded: ${held.join(", ")}`);
      if (held.length === 2 && ++rounds >= 10) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(most, 2, "the budget filled up");
    const pools = await cp.client.resource<BootcNodePool>(Resources.bootcNodePools).list();
    const reasons = pools.items.map((p) =>
      p.status?.conditions?.find((c) => c.type === "UpToDate")?.message ?? ""
    );
    assert.ok(
      reasons.some((m) => /BootcDisruptionBudget fleet|budget fleet/i.test(m)),
      `a pool says the cluster budget holds it: ${reasons.join(" | ")}`,
    );
  } finally {
    ac.abort();
    await caches;
    await daemon.stop();
    await cp.stop();
  }
});

Deno.test("cluster budget: a node whose Node is deleted while rebooting keeps another pool waiting, then lets it go", async () => {
  const cp = await startControlPlane();
  const behaviours = new Map<string, FakeNodeBehaviour>([["i1", { neverReturns: true }]]);
  const daemon = startFakeDaemon({ client: cp.client, initialImage: OLD, behaviours, tickMs: 100 });
  const ac = new AbortController();
  const reconciler = new PoolReconciler({ client: cp.client, resolver });
  const caches = reconciler.startCaches(ac.signal);
  const workers = reconciler.runWorkers(ac.signal);
  const nodes = cp.client.resource<Node>(Resources.nodes);
  const poolsApi = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  const bootcNodes = cp.client.resource<BootcNode>(Resources.bootcNodes);
  const violations: string[] = [];
  let watching = true;
  let checker: Promise<void> | undefined;
  try {
    await installCrds(cp);
    const labels = (pool: string) => ({ pool, fleet: "held" });
    await cp.createNode("i1", { labels: labels("infra") });
    await cp.createNode("w1", { labels: labels("workers") });
    await cp.client.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets).create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcDisruptionBudget",
      metadata: { name: "one-down" },
      spec: { nodeSelector: { matchLabels: { fleet: "held" } }, maxUnavailable: 1 },
    });
    for (const [name, paused] of [["infra", false], ["workers", true]] as const) {
      await poolsApi.create({
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNodePool",
        metadata: { name },
        spec: {
          nodeSelector: { matchLabels: { pool: name } },
          image: { ref: NEW },
          rollout: {
            maxUnavailable: 1,
            paused,
            drainTimeoutSeconds: 600,
            rebootTimeoutSeconds: 1800,
            minReadySeconds: 0,
          },
          disruption: { rebootPolicy: "RebootOnly" },
        },
      });
    }
    // i1 is down for its reboot, or its Node or its BootcNode says it is in a slot: then w1
    // must not be. Checked every 50 ms for the whole test.
    const i1Disrupted = async () => {
      const node = (await nodes.list()).items.find((n) => n.metadata?.name === "i1");
      const bn = (await bootcNodes.list()).items.find((b) => b.metadata.name === "i1");
      const rebooting = bn?.status?.conditions?.some((c) =>
        c.type === "Idle" && c.reason === "Rebooting"
      );
      return !node || node.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined ||
        bn?.metadata.annotations?.[ANNOTATION_WAS_CORDONED] !== undefined || rebooting === true;
    };
    checker = (async () => {
      while (watching) {
        const w1 = await nodes.get("w1");
        if (w1.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] && await i1Disrupted()) {
          violations.push(`w1 in a slot beside i1 at ${new Date().toISOString()}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await waitFor(async () => {
      const bn = (await bootcNodes.list()).items.find((b) => b.metadata.name === "i1");
      return bn?.status?.conditions?.some((c) => c.type === "Idle" && c.reason === "Rebooting");
    }, { timeoutMs: 30_000, intervalMs: 200, message: "i1 rebooting" });
    // Its Node object is deleted (an admin cleaning up a machine that seems dead); workers
    // resumes. w1 must wait: i1 may be down right now.
    await cp.deleteNode("i1");
    await poolsApi.patch("workers", { spec: { rollout: { paused: false } } }, { type: "merge" });
    const waiting = await waitFor(async () => {
      const p = await poolsApi.get("workers");
      const m = p.status?.conditions?.find((c) => c.type === "UpToDate")?.message ?? "";
      return /one-down: 1 of 1 allowed nodes disrupted.*counted: i1/.test(m) ? m : undefined;
    }, { timeoutMs: 20_000, intervalMs: 200, message: "workers says it waits for i1" });
    assert.match(waiting, /Node object gone/);
    // The budget's status is written on its own, coalesced (budget_status_sync.ts).
    await waitFor(async () => {
      const budget = await cp.client.resource<BootcDisruptionBudget>(
        Resources.bootcDisruptionBudgets,
      ).get("one-down");
      return JSON.stringify(budget.status?.disrupted) === '["i1"]';
    }, { timeoutMs: 20_000, intervalMs: 200, message: "the budget's status names i1" });
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(
      (await nodes.get("w1")).metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT],
      undefined,
      "w1 waits while i1's Node is gone",
    );
    // The machine boots: its kubelet registers the Node again (no record on it), then its
    // daemon reports the reboot over. Infra finishes i1; only then w1 goes.
    await cp.createNode("i1", { labels: labels("infra") });
    await new Promise((r) => setTimeout(r, 1000));
    behaviours.delete("i1");
    for (const name of ["infra", "workers"]) {
      await waitFor(async () => {
        const p = await poolsApi.get(name);
        const up = p.status?.conditions?.find((c) => c.type === "UpToDate");
        return up?.status === "True" && p.status?.slotsInUse === 0;
      }, { timeoutMs: 60_000, intervalMs: 200, message: `pool ${name} updated` });
    }
    assert.deepEqual(violations, []);
  } finally {
    watching = false;
    await checker?.catch(() => {});
    ac.abort();
    await workers.catch(() => {});
    await caches;
    await daemon.stop();
    await cp.stop();
  }
});
