/**
 * The Node tells its story, on a real API server (issue 23, item 2 and the
 * BootcDisruptionBudget status of item 4): two nodes roll one at a time under a
 * BootcDisruptionBudget. While one holds its slot the budget's status says it
 * is disrupted; afterwards each Node carries the annotations for people
 * (current and desired image, state), `kubectl describe node` lists its
 * cordon, drain, reboot and verification events, and the budget's status
 * says nothing is disrupted. A node that leaves the pool loses the annotations.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_CURRENT_IMAGE,
  ANNOTATION_DESIRED_IMAGE,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_NODE_STATE,
  type BootcDisruptionBudget,
  type BootcNode,
  type BootcNodePool,
  findCondition,
  NODE_INFO_ANNOTATIONS,
} from "../../lib/api/mod.ts";
import { type CoreEvent, EventRecorder, Resources } from "../../lib/kube/mod.ts";
import { startControlPlane } from "../../tests/harness/control_plane.ts";
import { waitFor } from "../../tests/harness/wait.ts";
import { type Node, PoolReconciler } from "./reconciler.ts";
import type { ImageResolver } from "../pollers/resolver.ts";
import { type FakeNodeBehaviour, startFakeDaemon } from "../testing/fake_daemon.ts";

const REPO = "registry.test/os";
const OLD = `${REPO}@sha256:${"a".repeat(64)}`;
const NEW = `${REPO}@sha256:${"b".repeat(64)}`;
const SHORT_OLD = `${REPO}@sha256:${"a".repeat(12)}`;
const SHORT_NEW = `${REPO}@sha256:${"b".repeat(12)}`;
const NEWER = `${REPO}@sha256:${"c".repeat(64)}`;
const SHORT_NEWER = `${REPO}@sha256:${"c".repeat(12)}`;
const NAMES = ["story-1", "story-2"];
const resolver: ImageResolver = { resolve: () => Promise.reject(new Error("no tags here")) };

/** The events whose object is the Node `name` (as `kubectl describe node` finds them). */
async function nodeEvents(
  cp: { client: import("../../lib/kube/mod.ts").KubeClient },
  name: string,
): Promise<CoreEvent[]> {
  const list = await cp.client.resource<CoreEvent>(Resources.events, "default").list({
    fieldSelector: `involvedObject.kind=Node,involvedObject.name=${name}`,
  });
  return list.items;
}

Deno.test("the Node tells its story; the BootcDisruptionBudget says what it holds", async () => {
  const cp = await startControlPlane();
  // Both nodes stay down after their reboot until the budget was seen holding one.
  const behaviours = new Map<string, FakeNodeBehaviour>(
    NAMES.map((n) => [n, { neverReturns: true }]),
  );
  const daemon = startFakeDaemon({ client: cp.client, initialImage: OLD, behaviours, tickMs: 100 });
  const ac = new AbortController();
  const reconciler = new PoolReconciler({
    client: cp.client,
    resolver,
    events: new EventRecorder({ client: cp.client, component: "bootc-operator-controller" }),
    planner: { drainPollMs: 500 },
  });
  const caches = reconciler.startCaches(ac.signal);
  let workers: Promise<void> | undefined;
  try {
    for await (const entry of Deno.readDir(new URL("../../crds/", import.meta.url))) {
      await cp.applyYaml(
        await Deno.readTextFile(new URL(`../../crds/${entry.name}`, import.meta.url)),
      );
    }
    const budgets = cp.client.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets);
    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    const nodes = cp.client.resource<Node>(Resources.nodes);
    await waitFor(async () => {
      await budgets.list();
      await pools.list();
      return true;
    }, { timeoutMs: 30_000, message: "CRDs served" });
    for (const n of NAMES) await cp.createNode(n, { labels: { suite: "story" } });
    await budgets.create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcDisruptionBudget",
      metadata: { name: "story" },
      spec: { nodeSelector: { matchLabels: { suite: "story" } }, maxUnavailable: 1 },
    });
    workers = reconciler.runWorkers(ac.signal);
    // Every value of the state annotation each Node went through (for the report).
    const seen = new Map<string, string[]>(NAMES.map((n) => [n, []]));
    const noteState = (n: Node) => {
      const list = seen.get(n.metadata?.name ?? "");
      const state = n.metadata?.annotations?.[ANNOTATION_NODE_STATE] ?? "-";
      if (list && list.at(-1) !== state) list.push(state);
    };
    reconciler.nodes.onAdd(noteState);
    reconciler.nodes.onUpdate((_, n) => noteState(n));
    const budgetStatus = (ok: (s: BootcDisruptionBudget["status"]) => boolean, what: string) =>
      waitFor(async () => {
        const b = await budgets.get("story");
        return ok(b.status) ? b : undefined;
      }, { timeoutMs: 60_000, intervalMs: 200, message: `budget status: ${what}` });

    // Before any pool: the budget's status is written all the same.
    const idle = await budgetStatus(
      (s) => s?.selectedNodes === 2 && s.allowed === 1 && s.disruptedNodes === 0,
      "2 selected, 1 allowed, none disrupted",
    );
    assert.equal(idle.status?.observedGeneration, idle.metadata.generation);
    assert.deepEqual(idle.status?.disrupted, []);
    assert.equal(findCondition(idle.status?.conditions, "Degraded")?.status, "False");

    const writesBefore = { ...reconciler.writes };
    await pools.create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNodePool",
      metadata: { name: "story" },
      spec: {
        nodeSelector: { matchLabels: { suite: "story" } },
        image: { ref: NEW },
        rollout: {
          maxUnavailable: 2,
          paused: false,
          drainTimeoutSeconds: 600,
          rebootTimeoutSeconds: 1800,
          minReadySeconds: 0,
        },
        disruption: { rebootPolicy: "RebootOnly" },
      },
    });

    // One node in its slot (down, its daemon says it reboots): the budget holds it.
    const holding = await budgetStatus(
      (s) => s?.disruptedNodes === 1 && s.disrupted?.length === 1,
      "one node disrupted",
    );
    const first = holding.status!.disrupted![0];
    const other = NAMES.find((n) => n !== first)!;
    assert.equal(holding.status?.allowed, 1);
    const inSlot = await waitFor(async () => {
      const n = await nodes.get(first);
      const a = n.metadata?.annotations ?? {};
      return a[ANNOTATION_NODE_STATE] === "Rebooting" ? a : undefined;
    }, { timeoutMs: 30_000, intervalMs: 200, message: `${first} says Rebooting` });
    assert.ok(inSlot[ANNOTATION_IN_REBOOT_SLOT]);
    assert.equal(inSlot[ANNOTATION_DESIRED_IMAGE], SHORT_NEW);
    assert.equal(inSlot[ANNOTATION_CURRENT_IMAGE], SHORT_OLD);
    // The other waits its turn, the cluster budget holding it back: staged (its daemon says),
    // Pending on its Node (Staged costs no Node write of its own) and no slot.
    const bootcNodes = cp.client.resource<BootcNode>(Resources.bootcNodes);
    await waitFor(async () => {
      const a = (await nodes.get(other)).metadata?.annotations ?? {};
      const phase = findCondition((await bootcNodes.get(other)).status?.conditions, "Idle");
      return a[ANNOTATION_NODE_STATE] === "Pending" && phase?.reason === "Staged" &&
        a[ANNOTATION_IN_REBOOT_SLOT] === undefined;
    }, { timeoutMs: 30_000, intervalMs: 200, message: `${other} staged, Pending, no slot` });

    // Let both come back: the rollout finishes one at a time.
    behaviours.clear();
    await waitFor(async () => {
      const p = await pools.get("story");
      return findCondition(p.status?.conditions, "UpToDate")?.status === "True" &&
        p.status?.slotsInUse === 0;
    }, { timeoutMs: 120_000, intervalMs: 200, message: "pool updated, slots free" });
    for (const n of NAMES) {
      const a = await waitFor(async () => {
        const annotations = (await nodes.get(n)).metadata?.annotations ?? {};
        return annotations[ANNOTATION_NODE_STATE] === "Updated" ? annotations : undefined;
      }, { timeoutMs: 30_000, intervalMs: 200, message: `${n} says Updated` });
      assert.equal(a[ANNOTATION_CURRENT_IMAGE], SHORT_NEW, n);
      assert.equal(a[ANNOTATION_DESIRED_IMAGE], SHORT_NEW, n);
    }
    const done = await budgetStatus(
      (s) => s?.disruptedNodes === 0 && s.disrupted?.length === 0,
      "nothing disrupted after the rollout",
    );
    assert.deepEqual([done.status?.selectedNodes, done.status?.allowed], [2, 1]);

    // Events about the Nodes themselves, as kubelet records its own.
    let eventCount = 0;
    for (const n of NAMES) {
      const uid = (await nodes.get(n)).metadata?.uid;
      const events = await waitFor(async () => {
        const list = await nodeEvents(cp, n);
        return list.some((e) => e.reason === "NodeUpdated") ? list : undefined;
      }, { timeoutMs: 30_000, intervalMs: 200, message: `${n}'s NodeUpdated event` });
      const reasons = new Set(events.map((e) => e.reason));
      // The controller's part of the story: granted (cordoned, draining), drained (reboot
      // asked for), verified (released); the daemon's Rebooting comes between.
      for (const r of ["SlotAssigned", "DrainCompleted", "NodeUpdated"]) {
        assert.ok(reasons.has(r), `${n}: no ${r} event on the Node; saw ${[...reasons]}`);
      }
      for (const e of events) {
        assert.deepEqual(
          [e.metadata?.namespace, e.involvedObject.apiVersion, e.involvedObject.uid],
          ["default", "v1", uid],
        );
      }
      const all = await cp.client.resource<CoreEvent>(Resources.events, "default").list({
        fieldSelector: `involvedObject.name=${n}`,
      });
      eventCount += all.items.reduce((sum, e) => sum + (e.count ?? 1), 0);
    }
    const described = await cp.kubectl(["describe", "node", first]);
    assert.equal(described.code, 0, described.stderr);
    for (const text of ["SlotAssigned", "DrainCompleted", "asked to boot", "NodeUpdated"]) {
      assert.ok(
        described.stdout.includes(text),
        `describe node shows ${text}:\n${described.stdout}`,
      );
    }
    assert.match(described.stdout, /bootc\.dev\/state: +Updated/);
    if (Deno.env.get("SHOW_DESCRIBE")) console.log(described.stdout);

    const delta: Record<string, number> = {};
    for (const [k, v] of Object.entries(reconciler.writes)) {
      const d = v - (writesBefore[k] ?? 0);
      if (d > 0) delta[k] = d;
    }
    console.log(
      `2-node rollout under a BootcDisruptionBudget: controller writes ${JSON.stringify(delta)}; ` +
        `Node annotation-only writes per node ${
          ((delta.patchNodeAnnotations ?? 0) / 2).toFixed(1)
        }; ` +
        `events per node (controller, BootcNode and Node) ${(eventCount / 2).toFixed(1)}; ` +
        `states: ${[...seen].map(([n, s]) => `${n} ${s.join(" > ")}`).join("; ")}`,
    );

    // Staging and Staged ride along: at most one annotation-only Node write per node (its
    // booted image while its verification waits), none for the phases before its slot.
    assert.ok((delta.patchNodeAnnotations ?? 0) <= NAMES.length, JSON.stringify(delta));

    // A rollout of nodes already in the pool: what the annotations cost a retarget.
    const retargetBefore = { ...reconciler.writes };
    await pools.patch("story", { spec: { image: { ref: NEWER } } }, { type: "merge" });
    for (const n of NAMES) {
      await waitFor(async () => {
        const a = (await nodes.get(n)).metadata?.annotations ?? {};
        return a[ANNOTATION_NODE_STATE] === "Updated" &&
          a[ANNOTATION_CURRENT_IMAGE] === SHORT_NEWER;
      }, { timeoutMs: 120_000, intervalMs: 200, message: `${n} updated to the newer image` });
    }
    const retarget = reconciler.writes.patchNodeAnnotations -
      (retargetBefore.patchNodeAnnotations ?? 0);
    console.log(
      `retarget of 2 nodes: ${(retarget / 2).toFixed(1)} annotation-only Node writes per node`,
    );
    // The new desired image (Pending) is the one a retarget costs on its own.
    assert.ok(retarget <= NAMES.length, `${retarget} annotation-only Node writes`);

    // A node that leaves the pool loses the annotations (the budget no longer selects it).
    await nodes.patch(other, { metadata: { labels: { suite: null } } }, { type: "merge" });
    await waitFor(async () => {
      const a = (await nodes.get(other)).metadata?.annotations ?? {};
      return NODE_INFO_ANNOTATIONS.every((k) => a[k] === undefined);
    }, { timeoutMs: 30_000, intervalMs: 200, message: `${other} lost its annotations` });
    await budgetStatus((s) => s?.selectedNodes === 1, "one node selected");
  } finally {
    ac.abort();
    await workers?.catch(() => {});
    await caches;
    await daemon.stop();
    await cp.stop();
  }
});
