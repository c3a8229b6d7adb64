/**
 * The Pool Reconciler on a real control plane (etcd, kube-apiserver,
 * controller manager, scheduler, kwok nodes), with real pods, PDBs and
 * evictions. A fake daemon (controller/testing/fake_daemon.ts) plays the
 * daemon's side of the BootcNode contract; the invariant checker
 * (tests/harness/invariants.ts, shared with the end-to-end suite) watches every Node and BootcNode.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodePool,
  findCondition,
  LABEL_MANAGED,
} from "../../lib/api/mod.ts";
import {
  EventRecorder,
  isNotFound,
  KubeClient,
  type KubeObject,
  Resources,
} from "../../lib/kube/mod.ts";
import { createLogger } from "../../lib/log.ts";
import { type ControlPlane, startControlPlane } from "../../tests/harness/control_plane.ts";
import { waitFor } from "../../tests/harness/wait.ts";
import { type Node, PoolReconciler } from "./reconciler.ts";
import type { ImageResolver } from "../pollers/resolver.ts";
import { type FakeNodeBehaviour, startFakeDaemon } from "../testing/fake_daemon.ts";
import { InvariantTracker, watchInvariants } from "../../tests/harness/invariants.ts";

const REPO = "registry.test/os";
const digest = (c: string) => `sha256:${c.repeat(64)}`;
const OLD = `${REPO}@${digest("a")}`;
const NEW = `${REPO}@${digest("b")}`;

/** Tags the fake registry knows. */
const TAGS: Record<string, string> = { [`${REPO}:v2`]: digest("b") };
const resolver: ImageResolver = {
  resolve(ref) {
    const d = TAGS[ref];
    if (!d) return Promise.reject(new Error(`manifest unknown: ${ref} not found`));
    return Promise.resolve({ digest: d });
  },
};

interface Controller {
  reconciler: PoolReconciler;
  stop(): Promise<void>;
}

/** The controllers' warnings (messages only), for the steps that must see none of a kind. */
const warnings: string[] = [];
const logger = createLogger({
  level: "warn",
  write: (line) => void warnings.push(JSON.parse(line).msg),
});

/** A controller on `client` (default: the control plane's own). */
function startController(
  cp: ControlPlane,
  client: KubeClient = cp.client,
  caches: { cacheWaitMs?: number; cacheMaxUnseenMs?: number } = {},
): Controller {
  const ac = new AbortController();
  const reconciler = new PoolReconciler({
    ...caches,
    client,
    resolver,
    logger,
    events: new EventRecorder({ client: cp.client, component: "bootc-operator-controller" }),
    planner: { drainPollMs: 500, resolveRetryMs: 1000 },
  });
  const informers = reconciler.startCaches(ac.signal);
  const workers = reconciler.runWorkers(ac.signal);
  return {
    reconciler,
    async stop() {
      ac.abort();
      await workers.catch(() => {});
      await informers;
    },
  };
}

type PoolSpecInput = {
  selector: Record<string, string>;
  ref: string;
  maxUnavailable?: number | string;
  paused?: boolean;
  drainTimeoutSeconds?: number;
  rebootTimeoutSeconds?: number;
};

Deno.test("pool reconciler on a real control plane", async (t) => {
  const cp = await startControlPlane();
  const behaviours = new Map<string, FakeNodeBehaviour>();
  const daemon = startFakeDaemon({ client: cp.client, initialImage: OLD, behaviours, tickMs: 100 });
  let controller = startController(cp);
  const poolsApi = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  const bnApi = cp.client.resource<BootcNode>(Resources.bootcNodes);
  const nodesApi = cp.client.resource<Node>(Resources.nodes);

  const createPool = (name: string, s: PoolSpecInput) =>
    poolsApi.create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNodePool",
      metadata: { name },
      spec: {
        nodeSelector: { matchLabels: s.selector },
        image: { ref: s.ref },
        rollout: {
          maxUnavailable: s.maxUnavailable ?? 1,
          paused: s.paused ?? false,
          drainTimeoutSeconds: s.drainTimeoutSeconds ?? 600,
          rebootTimeoutSeconds: s.rebootTimeoutSeconds ?? 1800,
          minReadySeconds: 0,
        },
        disruption: { rebootPolicy: "RebootOnly" },
      },
    });
  const pool = (name: string) => poolsApi.get(name);
  const cond = (p: BootcNodePool, type: string) => findCondition(p.status?.conditions, type);
  const waitPool = (
    name: string,
    ok: (p: BootcNodePool) => boolean,
    what: string,
    timeoutMs = 60_000,
  ) =>
    waitFor(async () => {
      const p = await pool(name);
      return ok(p) ? p : undefined;
    }, { timeoutMs, intervalMs: 200, message: `pool ${name}: ${what}` });
  const bn = async (name: string) => {
    try {
      return await bnApi.get(name);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  };
  const deletePool = async (name: string) => {
    await poolsApi.delete(name);
    await waitFor(async () => {
      try {
        await poolsApi.get(name);
        return false;
      } catch (e) {
        return isNotFound(e);
      }
    }, { timeoutMs: 30_000, message: `pool ${name} deleted (finalizer released its nodes)` });
  };
  const upToDate = (p: BootcNodePool) => cond(p, "UpToDate")?.status === "True";

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

    await t.step("membership, conflicts, release and resolution errors", async () => {
      // Both pools exist before the nodes: the contested node is taken by neither.
      await createPool("alpha", { selector: { suite: "m" }, ref: NEW });
      await createPool("beta", { selector: { gpu: "yes" }, ref: NEW });
      await cp.createNode("m1", { labels: { suite: "m" } });
      await cp.createNode("m2", { labels: { suite: "m", gpu: "yes" } });
      const alpha = await waitPool(
        "alpha",
        (p) => cond(p, "Degraded")?.reason === "NodeConflict" && p.status?.nodeCount === 1,
        "NodeConflict with one member",
      );
      assert.match(cond(alpha, "Degraded")!.message, /m2 also match pool beta/);
      const beta = await waitPool(
        "beta",
        (p) => cond(p, "Degraded")?.reason === "NodeConflict",
        "NodeConflict",
      );
      assert.match(cond(beta, "Degraded")!.message, /m2 also match pool alpha/);
      const m1 = await waitFor(() => bn("m1"), { timeoutMs: 10_000, message: "BootcNode m1" });
      assert.equal(m1.metadata.ownerReferences?.[0].name, "alpha");
      assert.equal(m1.metadata.ownerReferences?.[0].controller, true);
      assert.equal(m1.metadata.labels?.["bootc.dev/pool"], "alpha");
      assert.equal(m1.spec.desiredImage, NEW);
      assert.equal(await bn("m2"), undefined);
      assert.ok(Object.hasOwn((await nodesApi.get("m1")).metadata?.labels ?? {}, LABEL_MANAGED));
      // m1 updated; the contested m2 runs nothing of alpha's, so alpha is not UpToDate.
      await waitPool(
        "alpha",
        (p) => p.status?.updatedCount === 1 && cond(p, "UpToDate")?.reason === "NodeConflict",
        "m1 updated, alpha not UpToDate while m2 is contested",
      );

      // m1 stops matching: BootcNode and label go.
      await nodesApi.patch("m1", { metadata: { labels: { suite: null } } }, { type: "merge" });
      await waitFor(async () => (await bn("m1")) === undefined, {
        timeoutMs: 20_000,
        message: "BootcNode m1 deleted",
      });
      await waitFor(async () => {
        const n = await nodesApi.get("m1");
        return !Object.hasOwn(n.metadata?.labels ?? {}, LABEL_MANAGED);
      }, { timeoutMs: 10_000, message: "m1 unlabelled" });

      // A tag the registry does not know degrades the pool with the registry's message.
      await poolsApi.patch("beta", { spec: { image: { ref: `${REPO}:missing` } } }, {
        type: "merge",
      });
      const failed = await waitPool(
        "beta",
        (p) => cond(p, "Degraded")?.reason === "ImageResolutionFailed",
        "ImageResolutionFailed",
      );
      assert.match(
        cond(failed, "Degraded")!.message,
        /manifest unknown: registry.test\/os:missing not found/,
      );
      await deletePool("alpha");
      await deletePool("beta");
      await cp.deleteNode("m1");
      await cp.deleteNode("m2");
    });

    await t.step(
      "full rollout within maxUnavailable, prior cordon kept; writes per node",
      async () => {
        const names = ["r1", "r2", "r3", "r4", "r5"];
        for (const n of names) {
          await cp.createNode(n, { labels: { suite: "roll" }, unschedulable: n === "r2" });
        }
        await cp.createNamespace("apps");
        for (const n of names) {
          await cp.createPod("apps", `web-${n}`, { nodeName: n, labels: { app: "web" } });
        }
        await cp.createPod("apps", "static-r1", { nodeName: "r1", mirror: true });
        await cp.createPod("apps", "agent-r1", { nodeName: "r1", ownerDaemonSet: "agent" });
        const tracker = new InvariantTracker({
          limits: { rollout: { maxUnavailable: 2 } },
          preCordoned: ["r2"],
        });
        const watch = watchInvariants(cp.client, tracker);
        await watch.synced;
        const before = { ...controller.reconciler.writes };
        const daemonBefore = daemon.writes;
        try {
          await createPool("rollout", {
            selector: { suite: "roll" },
            ref: `${REPO}:v2`,
            maxUnavailable: 2,
          });
          const done = await waitPool(
            "rollout",
            (p) => upToDate(p) && p.status?.slotsInUse === 0,
            "all five updated and slots free",
            120_000,
          );
          assert.equal(done.status?.deployedDigest, digest("b"));
          assert.equal(done.status?.targetImage, NEW);
          assert.equal(done.status?.updatedCount, 5);
          for (const n of names) {
            const node = await nodesApi.get(n);
            assert.equal(
              node.spec?.unschedulable === true,
              n === "r2",
              `${n} cordon restored exactly`,
            );
            const b = await bn(n);
            assert.equal(b?.status?.booted?.image, NEW);
            assert.equal(node.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT], undefined);
            assert.equal(node.metadata?.annotations?.[ANNOTATION_WAS_CORDONED], undefined);
          }
          // Web pods were evicted; the mirror and DaemonSet pods were left alone.
          const pods = await cp.client.resource(Resources.pods, "apps").list();
          const left = pods.items.map((p) => p.metadata?.name).sort();
          assert.ok(
            left.includes("static-r1") && left.some((n) => n?.startsWith("agent")),
            left.join(),
          );
          assert.ok(!left.some((n) => n?.startsWith("web-")), left.join());
          await new Promise((r) => setTimeout(r, 300));
          assert.deepEqual(tracker.violations, []);
          assert.equal(tracker.maxDisrupted, 2, "two nodes rebooted in parallel");
          const after = controller.reconciler.writes;
          const delta: Record<string, number> = {};
          let total = 0;
          for (const [k, v] of Object.entries(after)) {
            const d = v - (before[k] ?? 0);
            if (d > 0) delta[k] = d;
            if (k !== "poolStatus" && k !== "poolFinalizer") total += d;
          }
          console.log(
            `API writes for a 5-node update: controller ${JSON.stringify(delta)}; ` +
              `${(total / 5).toFixed(1)} per node (excluding pool status), ` +
              `${delta.poolStatus ?? 0} pool status writes; fake daemon ${
                ((daemon.writes - daemonBefore) / 5).toFixed(1)
              } status writes per node`,
          );
        } finally {
          await watch.stop();
        }
        await deletePool("rollout");
        for (const n of names) await cp.deleteNode(n);
      },
    );

    await t.step("pause stops new slots while staging goes on; resume finishes", async () => {
      for (const n of ["p1", "p2"]) await cp.createNode(n, { labels: { suite: "pause" } });
      await createPool("paused", { selector: { suite: "pause" }, ref: NEW, paused: true });
      await waitFor(async () => {
        const all = await Promise.all(["p1", "p2"].map(bn));
        return all.every((b) => findCondition(b?.status?.conditions, "Idle")?.reason === "Staged");
      }, { timeoutMs: 30_000, message: "both staged while paused" });
      await new Promise((r) => setTimeout(r, 1500));
      for (const n of ["p1", "p2"]) {
        assert.equal(
          (await nodesApi.get(n)).metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT],
          undefined,
        );
      }
      const paused = await waitPool(
        "paused",
        (p) => cond(p, "UpToDate")?.reason === "Paused",
        "Paused",
      );
      assert.match(cond(paused, "UpToDate")!.message, /0\/2 updated; 2 staged/);
      await poolsApi.patch("paused", { spec: { rollout: { paused: false } } }, { type: "merge" });
      await waitPool("paused", upToDate, "updated after resume");
      await deletePool("paused");
      for (const n of ["p1", "p2"]) {
        await cp.deleteNode(n);
      }
    });

    await t.step("two unhealthy nodes in slots halt the rollout", async () => {
      behaviours.set("h1", { failOnBoot: true });
      behaviours.set("h2", { failOnBoot: true });
      for (const n of ["h1", "h2", "h3"]) await cp.createNode(n, { labels: { suite: "halt" } });
      await createPool("halting", { selector: { suite: "halt" }, ref: NEW, maxUnavailable: 2 });
      const halted = await waitPool(
        "halting",
        (p) => cond(p, "Degraded")?.reason === "RolloutHalted",
        "RolloutHalted",
      );
      assert.match(cond(halted, "Degraded")!.message, /h1 reports Degraded; h2 reports Degraded/);
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(
        (await nodesApi.get("h3")).metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT],
        undefined,
      );
      const events = await cp.client.resource(Resources.events, "default").list();
      assert.ok(
        events.items.some((e) => (e as { reason?: string }).reason === "RolloutHalted"),
        "RolloutHalted event recorded",
      );
      // A deleted pool holds nodes still in a reboot until they are back, past their reboot
      // timeout too (a machine may be down: freeing its slot would let another go down);
      // these never come back: deleting their BootcNodes (a person saying they are gone)
      // lets the deletion finish.
      await poolsApi.patch("halting", { spec: { rollout: { rebootTimeoutSeconds: 1 } } }, {
        type: "merge",
      });
      await poolsApi.delete("halting");
      await new Promise((r) => setTimeout(r, 2_500));
      assert.equal((await poolsApi.get("halting")).metadata.name, "halting", "still held");
      for (const n of ["h1", "h2"]) await bnApi.delete(n);
      await deletePool("halting");
      for (const n of ["h1", "h2", "h3"]) await cp.deleteNode(n);
    });

    await t.step("a PDB-blocked drain times out naming the pod and the PDB", async () => {
      await cp.createNode("b1", { labels: { suite: "pdb" } });
      await cp.createNamespace("guarded");
      await cp.createPod("guarded", "db-0", { nodeName: "b1", labels: { app: "db" } });
      await cp.createPdb("guarded", "db-pdb", { selector: { app: "db" }, minAvailable: 1 });
      await createPool("blocked", { selector: { suite: "pdb" }, ref: NEW, drainTimeoutSeconds: 3 });
      const p = await waitPool(
        "blocked",
        (x) => cond(x, "Degraded")?.reason === "NodeDegraded",
        "NodeDegraded after the drain timeout",
      );
      assert.match(
        cond(p, "Degraded")!.message,
        /drain of node b1 did not finish within 3s: pod guarded\/db-0 \(PodDisruptionBudget guarded\/db-pdb allows 0 disruption/,
      );
      assert.equal(p.status?.slotsInUse, 1, "the slot is kept");
      assert.equal(p.status?.degradedCount, 1);
      assert.equal((await nodesApi.get("b1")).spec?.unschedulable, true);
      await deletePool("blocked");
      assert.notEqual(
        (await nodesApi.get("b1")).spec?.unschedulable,
        true,
        "released node uncordoned",
      );
      await cp.deleteNode("b1");
    });

    await t.step(
      "a node deleted while rebooting keeps its slot past its reboot timeout, until its BootcNode is deleted",
      async () => {
        // Long enough that d1's Node is deleted well before its reboot timeout on a loaded
        // machine: a reboot overdue while its Node is still there fails the node and halts the
        // rollout (RebootTimeout), another story.
        const rebootTimeoutS = 15;
        behaviours.set("d1", { neverReturns: true });
        await cp.createNode("d1", { labels: { suite: "del" } });
        await createPool("deleting", {
          selector: { suite: "del" },
          ref: NEW,
          rebootTimeoutSeconds: rebootTimeoutS,
        });
        let rebootingSince = 0;
        await waitFor(async () => {
          const idle = findCondition((await bn("d1"))?.status?.conditions, "Idle");
          rebootingSince = Date.parse(idle?.lastTransitionTime ?? "");
          return idle?.reason === "Rebooting";
        }, { timeoutMs: 30_000, message: "d1 rebooting in its slot" });
        // d2 joins while d1 reboots (so it is surely the second to update) and waits.
        await cp.createNode("d2", { labels: { suite: "del" } });
        await waitFor(async () => (await bn("d2"))?.status?.staged !== undefined, {
          timeoutMs: 30_000,
          message: "d2 staged",
        });
        // The machine is down (its daemon never comes back) and its Node object is deleted:
        // d2 gets no slot beside it, past d1's reboot timeout too (the pool says so, naming
        // d1), until a person deletes d1's BootcNode.
        await cp.deleteNode("d1");
        const stalled = await waitPool(
          "deleting",
          (x) => /node d1 left the pool while rebooting/.test(cond(x, "Degraded")?.message ?? ""),
          "Degraded naming d1 past its reboot timeout",
          60_000,
        );
        assert.equal(cond(stalled, "Degraded")?.reason, "NodeStalled");
        assert.ok(Date.now() >= rebootingSince + rebootTimeoutS * 1000);
        assert.equal(
          (await nodesApi.get("d2")).metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT],
          undefined,
          "no slot for d2 while d1 may be down",
        );
        await bnApi.delete("d1");
        const p = await waitPool(
          "deleting",
          (x) => upToDate(x) && x.status?.nodeCount === 1,
          "d2 updated",
        );
        assert.equal(p.status?.slotsInUse, 0);
        await deletePool("deleting");
        await cp.deleteNode("d2");
      },
    );

    await t.step("a user's cordon racing the slot grant survives the update", async () => {
      await cp.createNode("c1", { labels: { suite: "race" } });
      // The user cordons c1 right before the grant reaches the API server: the plan read it
      // uncordoned, so written as planned the grant would record "was not cordoned" and the
      // release would remove the user's cordon.
      await controller.stop();
      let raced = false;
      const transport = cp.client.transport;
      controller = startController(
        cp,
        new KubeClient({
          transport: {
            async request(req) {
              if (
                !raced && req.method === "PATCH" && req.path === "/api/v1/nodes/c1" &&
                req.body?.includes(ANNOTATION_IN_REBOOT_SLOT)
              ) {
                raced = true;
                await nodesApi.patch("c1", { spec: { unschedulable: true } }, { type: "merge" });
              }
              return await transport.request(req);
            },
            close: () => {},
          },
        }),
      );
      await createPool("race", { selector: { suite: "race" }, ref: NEW });
      await waitPool("race", (p) => upToDate(p) && p.status?.slotsInUse === 0, "c1 updated");
      assert.ok(raced, "the grant met the user's cordon");
      const c1 = await nodesApi.get("c1");
      assert.equal(c1.spec?.unschedulable, true, "the user's cordon is kept");
      assert.equal(c1.metadata?.annotations?.[ANNOTATION_WAS_CORDONED], undefined);
      const events = await cp.client.resource<KubeObject & { reason?: string; message?: string }>(
        Resources.events,
        "default",
      ).list({ fieldSelector: "involvedObject.name=c1,reason=SlotAssigned" });
      assert.deepEqual(
        events.items.map((e) => /already cordoned/.test(e.message ?? "")),
        [true],
        "one SlotAssigned event, for the grant that happened",
      );
      await deletePool("race");
      await cp.deleteNode("c1");
    });

    await t.step(
      "a Node watch that stops delivering slows the rollout, says so, never stops it",
      async () => {
        await cp.createNode("s1", { labels: { suite: "silent" } });
        // Every watch of Nodes the controller opens from now on delivers nothing: only its
        // lists show the Node's changes, its own writes (label, grant, release) included.
        await controller.stop();
        const transport = cp.client.transport;
        controller = startController(
          cp,
          new KubeClient({
            transport: {
              request(req) {
                if (req.method !== "GET" || req.path !== "/api/v1/nodes" || !req.query?.watch) {
                  return transport.request(req);
                }
                const body = new ReadableStream<Uint8Array>({
                  start(c) {
                    req.signal?.addEventListener("abort", () => c.close(), { once: true });
                  },
                });
                return Promise.resolve(new Response(body, { status: 200 }));
              },
              close: () => {},
            },
          }),
          { cacheWaitMs: 500, cacheMaxUnseenMs: 2_000 },
        );
        try {
          const relists = warnings.filter((w) => /listing afresh/.test(w)).length;
          await createPool("silent", { selector: { suite: "silent" }, ref: NEW });
          await waitPool("silent", (p) => upToDate(p) && p.status?.slotsInUse === 0, "s1 updated");
          assert.ok(
            warnings.filter((w) => /listing afresh/.test(w)).length > relists,
            "the controller listed its caches afresh",
          );
          const said = await cp.client.resource<KubeObject & { type?: string; message?: string }>(
            Resources.events,
            "default",
          ).list({ fieldSelector: "involvedObject.name=silent,reason=CachesBehind" });
          // The wait's start (the relist, if any, is a second event).
          const start = said.items.find((e) =>
            /caches do not show its earlier writes yet \(.*nodes\/s1/.test(e.message ?? "")
          );
          assert.ok(start, `the pool said why planning waited: ${JSON.stringify(said.items)}`);
          assert.equal(start.type, "Warning");
          assert.match(start.message ?? "", /resumes by \d{4}-\d\d-\d\dT/);
        } finally {
          // The silent watch goes with this controller, whatever the assertions said.
          await controller.stop();
          controller = startController(cp);
        }
        await deletePool("silent");
        await cp.deleteNode("s1");
      },
    );

    await t.step("a controller killed mid-drain resumes the drain after a restart", async () => {
      await cp.createNode("k1", { labels: { suite: "kill" } });
      await cp.createNamespace("kill");
      await cp.createPod("kill", "db-0", { nodeName: "k1", labels: { app: "db" } });
      await cp.createPdb("kill", "db-pdb", { selector: { app: "db" }, minAvailable: 1 });
      await createPool("killed", { selector: { suite: "kill" }, ref: NEW });
      await waitFor(async () => {
        const b = await bn("k1");
        const n = await nodesApi.get("k1");
        return b !== undefined &&
          n.metadata?.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined &&
          n.spec?.unschedulable === true;
      }, { timeoutMs: 30_000, message: "k1 in its slot, cordoned, drain blocked" });
      await controller.stop();
      await cp.client.resource(Resources.poddisruptionbudgets, "kill").delete("db-pdb");
      await new Promise((r) => setTimeout(r, 1000));
      const pods = await cp.client.resource(Resources.pods, "kill").list();
      assert.equal(pods.items.length, 1, "nobody drains while the controller is down");
      controller = startController(cp);
      await waitPool(
        "killed",
        (p) => upToDate(p) && p.status?.slotsInUse === 0,
        "k1 updated after restart",
      );
      assert.notEqual((await nodesApi.get("k1")).spec?.unschedulable, true);
      const left = await cp.client.resource(Resources.pods, "kill").list();
      assert.equal(left.items.length, 0, "the pod was evicted by the new controller");
      await deletePool("killed");
      await cp.deleteNode("k1");
    });

    await t.step("a node moved between pools stalls no pool's planning", async () => {
      const side = (name: string) => ({ selector: { suite: "move", side: name }, ref: OLD });
      await createPool("left", side("l"));
      await createPool("right", side("r"));
      for (const [n, s] of [["mv1", "l"], ["mv2", "l"], ["mv3", "r"]]) {
        await cp.createNode(n, { labels: { suite: "move", side: s } });
      }
      const members = (n: number) => (p: BootcNodePool) =>
        upToDate(p) && p.status?.nodeCount === n && p.status?.updatedCount === n;
      await waitPool("left", members(2), "left: mv1 and mv2 up to date");
      await waitPool("right", members(1), "right: mv3 up to date");
      const before = (await bn("mv1"))!;
      warnings.length = 0;
      // Left deletes mv1's BootcNode and right creates its own of the same name at once.
      await nodesApi.patch("mv1", { metadata: { labels: { side: "r" } } }, { type: "merge" });
      await waitFor(async () => {
        const b = await bn("mv1");
        return b?.metadata.uid !== before.metadata.uid && b?.metadata.labels?.["bootc.dev/pool"] ===
            "right";
      }, { timeoutMs: 10_000, message: "mv1's BootcNode recreated by right" });
      // Both pools roll out now: their slots are handed out and back without a stall.
      for (const p of ["left", "right"]) {
        await poolsApi.patch(p, { spec: { image: { ref: NEW } } }, { type: "merge" });
      }
      const onNew = (n: number) => (p: BootcNodePool) =>
        members(n)(p) && p.status?.targetImage === NEW && p.status?.slotsInUse === 0;
      await waitPool("left", onNew(1), "left: mv2 updated", 15_000);
      await waitPool("right", onNew(2), "right: mv1 and mv3 updated", 15_000);
      assert.deepEqual(warnings.filter((w) => /caches/.test(w)), []);
      await deletePool("left");
      await deletePool("right");
      for (const n of ["mv1", "mv2", "mv3"]) await cp.deleteNode(n);
    });
  } finally {
    await controller.stop();
    await daemon.stop();
    await cp.stop();
  }
});
