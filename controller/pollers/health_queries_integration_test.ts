/**
 * The Prometheus health check wired into the Pool Reconciler on a real control
 * plane: the node holding the pool's reboot slot is queried (with its name in
 * the query), it is not released while the query returns series nor before the
 * result stayed empty for `forSeconds`, and its key is dropped once released.
 * The fake daemon (controller/testing/fake_daemon.ts) plays the host; a small
 * HTTP server answers the Prometheus query API.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  type BootcNode,
  type BootcNodePool,
  findCondition,
  NodeConditionType,
  VerifiedReason,
} from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { startControlPlane } from "../../tests/harness/control_plane.ts";
import { waitFor } from "../../tests/harness/wait.ts";
import { type Node, PoolReconciler } from "../shell/reconciler.ts";
import type { ImageResolver } from "./resolver.ts";
import { startFakeDaemon } from "../testing/fake_daemon.ts";

const REPO = "registry.test/os";
const OLD = `${REPO}@sha256:${"a".repeat(64)}`;
const NEW = `${REPO}@sha256:${"b".repeat(64)}`;
const FOR_SECONDS = 3;

const resolver: ImageResolver = {
  resolve: (ref) => Promise.reject(new Error(`no tags here: ${ref}`)),
};

/** Answers `ALERTS{…node="<name>"}` with a firing alert for the nodes in `firing`. */
function startFakePrometheus() {
  const firing = new Set<string>();
  /** Per node: answers served, and when the first empty one was sent (ms). */
  const served = new Map<string, { count: number; firstEmptyAt?: number }>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const query = new URL(req.url).searchParams.get("query") ?? "";
    const node = /node="([^"]*)"/.exec(query)?.[1] ?? "";
    const entry = served.get(node) ?? { count: 0 };
    served.set(node, entry);
    entry.count++;
    const result = firing.has(node)
      ? [{ metric: { __name__: "ALERTS", alertstate: "firing", node }, value: [0, "1"] }]
      : [];
    if (result.length === 0) entry.firstEmptyAt ??= Date.now();
    return Response.json({ status: "success", data: { resultType: "vector", result } });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, firing, served, server };
}

Deno.test("the Prometheus health check gates a node's release on a real control plane", async () => {
  const cp = await startControlPlane();
  const prom = startFakePrometheus();
  const daemon = startFakeDaemon({ client: cp.client, initialImage: OLD, tickMs: 100 });
  const ac = new AbortController();
  const reconciler = new PoolReconciler({
    client: cp.client,
    resolver,
    planner: { drainPollMs: 500 },
    healthQueries: { intervalMs: 200, timeoutMs: 5_000 },
  });
  const caches = reconciler.startCaches(ac.signal);
  const workers = reconciler.runWorkers(ac.signal);
  const poolsApi = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  const bnApi = cp.client.resource<BootcNode>(Resources.bootcNodes);
  const nodesApi = cp.client.resource<Node>(Resources.nodes);
  const slotOf = async (name: string) =>
    (await nodesApi.get(name)).metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT];
  try {
    for await (const entry of Deno.readDir(new URL("../../crds/", import.meta.url))) {
      await cp.applyYaml(
        await Deno.readTextFile(new URL(`../../crds/${entry.name}`, import.meta.url)),
      );
    }
    await waitFor(async () => {
      await poolsApi.list();
      return true;
    }, { timeoutMs: 30_000, message: "CRDs served" });

    prom.firing.add("h1");
    await cp.createNode("h1", { labels: { suite: "prom" } });
    await poolsApi.create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNodePool",
      metadata: { name: "gated" },
      spec: {
        nodeSelector: { matchLabels: { suite: "prom" } },
        image: { ref: NEW },
        rollout: {
          maxUnavailable: 1,
          paused: false,
          drainTimeoutSeconds: 600,
          rebootTimeoutSeconds: 1800,
          minReadySeconds: 0,
          health: {
            timeoutSeconds: 300,
            prometheus: {
              url: prom.url,
              query: 'ALERTS{alertstate="firing", node="$node"}',
              forSeconds: FOR_SECONDS,
            },
          },
        },
        disruption: { rebootPolicy: "RebootOnly" },
      },
    });

    // h1 reboots into the target while the alert fires: it keeps its slot.
    await waitFor(async () => (await bnApi.get("h1")).status?.booted?.image === NEW, {
      timeoutMs: 60_000,
      message: "h1 booted the target",
    });
    const atBoot = prom.served.get("h1")?.count ?? 0;
    await waitFor(() => (prom.served.get("h1")?.count ?? 0) >= atBoot + 10, {
      timeoutMs: 30_000,
      message: "ten more queries for h1 after its reboot",
    });
    const node = await nodesApi.get("h1");
    assert.equal(node.metadata?.annotations?.[ANNOTATION_SLOT_POOL], "gated");
    assert.ok(await slotOf("h1"), "h1 holds its slot while the query returns series");
    assert.equal(prom.served.get("h1")?.firstEmptyAt, undefined);
    assert.deepEqual([...prom.served.keys()], ["h1"], "only the slot holder is queried");
    const pending = await waitFor(async () => {
      const p = await poolsApi.get("gated");
      const message = findCondition(p.status?.conditions, "UpToDate")?.message ?? "";
      return /verifying h1: .*Prometheus \(query returned 1 series: ALERTS\{/.test(message)
        ? message
        : undefined;
    }, { timeoutMs: 30_000, message: "the pool names the pending Prometheus check" });
    assert.match(pending, /alertstate="firing",node="h1"\} = 1/);

    // The alert resolves: released once the result stayed empty for forSeconds, not before.
    prom.firing.delete("h1");
    await waitFor(() => prom.served.get("h1")?.firstEmptyAt !== undefined, {
      timeoutMs: 10_000,
      message: "the first empty answer",
    });
    const firstEmptyAt = prom.served.get("h1")!.firstEmptyAt!;
    // A read that completed before firstEmptyAt + forSeconds must still show the slot.
    for (;;) {
      const slot = await slotOf("h1");
      if (Date.now() >= firstEmptyAt + FOR_SECONDS * 1000) break;
      assert.ok(slot, `h1 released ${Date.now() - firstEmptyAt}ms after the first empty answer`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await waitFor(async () => (await slotOf("h1")) === undefined, {
      timeoutMs: 30_000,
      message: "h1 released after the query stayed empty",
    });
    // The verdict rides in the release; the daemon's acknowledgement records it.
    const verified = await waitFor(
      async () =>
        findCondition((await bnApi.get("h1")).status?.conditions, NodeConditionType.Verified),
      {
        timeoutMs: 10_000,
        message: "h1's daemon records Verified",
      },
    );
    assert.equal(verified?.status, "True");
    assert.equal(verified?.reason, VerifiedReason.ChecksPassed);

    // Released: its key is dropped, so the queries stop.
    let last = -1;
    let stableSince = Date.now();
    await waitFor(() => {
      const count = prom.served.get("h1")?.count ?? 0;
      if (count !== last) {
        last = count;
        stableSince = Date.now();
      }
      return Date.now() - stableSince >= 1_500;
    }, { timeoutMs: 30_000, intervalMs: 100, message: "queries for h1 to stop" });
  } finally {
    ac.abort();
    await workers.catch(() => {});
    await caches;
    await daemon.stop();
    await prom.server.shutdown();
    await cp.stop();
  }
});
