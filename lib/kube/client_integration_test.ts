/**
 * The client against a real control plane (etcd + kube-apiserver +
 * kube-controller-manager + kwok, from tests/harness).
 */
import assert from "node:assert/strict";
import { startControlPlane } from "../../tests/harness/control_plane.ts";
import { systemClock } from "../clock.ts";
import { KubeClient } from "./client.ts";
import { loadKubeConfig } from "./config.ts";
import {
  AlreadyExistsError,
  ConflictError,
  GoneError,
  InvalidError,
  isNotFound,
  NotFoundError,
  TooManyRequestsError,
} from "./errors.ts";
import { Informer } from "./informer.ts";
import { LeaderElector } from "./leader.ts";
import { Resources } from "./resources.ts";
import { createTransport } from "./transport.ts";
import type { KubeObject, Transport } from "./types.ts";

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Counts list (non-watch collection GET) requests through a transport. */
function countingTransport(inner: Transport) {
  const counts = { lists: 0, watches: 0 };
  const transport: Transport = {
    request(req) {
      if (req.method === "GET" && req.query?.watch) counts.watches++;
      else if (req.method === "GET" && req.query?.limit !== undefined) counts.lists++;
      return inner.request(req);
    },
    close: () => inner.close(),
  };
  return { transport, counts };
}

Deno.test("lib/kube against a real control plane", async (t) => {
  const cp = await startControlPlane();
  const config = await loadKubeConfig({ path: cp.kubeconfigPath });
  const client = await KubeClient.fromConfig(config);
  try {
    await cp.createNamespace("kt");
    const cms = client.resource<ConfigMap>(Resources.configmaps, "kt");

    await t.step("kubeconfig with client certificate: CRUD, list pagination, errors", async () => {
      assert.equal(config.source, "kubeconfig");
      assert.ok(config.clientCert && config.caCerts?.length);
      const created = await cms.create({
        metadata: { name: "a", labels: { t: "crud" } },
        data: { k: "1" },
      });
      assert.equal(created.data?.k, "1");
      await assert.rejects(() => cms.create({ metadata: { name: "a" } }), AlreadyExistsError);
      for (const n of ["b", "c", "d"]) {
        await cms.create({ metadata: { name: n, labels: { t: "crud" } } });
      }
      const all = await cms.list({ labelSelector: "t=crud", limit: 1 });
      assert.deepEqual(all.items.map((o) => o.metadata?.name), ["a", "b", "c", "d"]);
      const page = await cms.list({ labelSelector: "t=crud", limit: 2, singlePage: true });
      assert.equal(page.items.length, 2);
      assert.ok(page.metadata.continue);
      const got = await cms.get("a");
      got.data = { k: "2" };
      const updated = await cms.update(got);
      assert.equal(updated.data?.k, "2");
      await cms.delete("d");
      await assert.rejects(() => cms.get("d"), NotFoundError);
      await assert.rejects(() => cms.delete("d"), (e) => isNotFound(e));
      await assert.rejects(
        () => cms.create({ metadata: { name: "Bad_Name" } }),
        (e) => e instanceof InvalidError && e.causes.length > 0,
      );
    });

    await t.step("stale resourceVersion conflicts; delete preconditions", async () => {
      const a = await cms.get("a");
      await cms.update({ ...a, data: { k: "3" } });
      await assert.rejects(() => cms.update({ ...a, data: { k: "stale" } }), ConflictError);
      const fresh = await cms.get("a");
      await assert.rejects(
        () => cms.delete("a", { preconditions: { resourceVersion: a.metadata!.resourceVersion } }),
        ConflictError,
      );
      await cms.delete("a", { preconditions: { uid: fresh.metadata!.uid } });
    });

    await t.step("patch flavours and server-side apply with field managers", async () => {
      await cms.patch("b", { data: { m: "merge" } }, { type: "merge" });
      await cms.patch("b", [{ op: "add", path: "/data/j", value: "json" }], { type: "json" });
      await cms.patch("b", { metadata: { labels: { s: "x" } } }, { type: "strategic" });
      const applied = await cms.patch("b", { metadata: { name: "b" }, data: { owned: "one" } }, {
        type: "apply",
        fieldManager: "manager-one",
      });
      assert.deepEqual(applied.data, { m: "merge", j: "json", owned: "one" });
      assert.equal(applied.metadata?.labels?.s, "x");
      const managers = (applied.metadata?.managedFields as { manager: string }[]).map((m) =>
        m.manager
      );
      assert.ok(managers.includes("manager-one"));
      await assert.rejects(
        () =>
          cms.patch("b", { metadata: { name: "b" }, data: { owned: "two" } }, {
            type: "apply",
            fieldManager: "manager-two",
          }),
        ConflictError,
      );
      const forced = await cms.patch("b", { metadata: { name: "b" }, data: { owned: "two" } }, {
        type: "apply",
        fieldManager: "manager-two",
        force: true,
      });
      assert.equal(forced.data?.owned, "two");
    });

    await t.step("status subresource: updateStatus and patch with subresource", async () => {
      await cp.createNode("status-node");
      type NodeObj = KubeObject & {
        spec?: { unschedulable?: boolean };
        status?: { capacity?: Record<string, string> };
      };
      const nodes = client.resource<NodeObj>(Resources.nodes);
      const n = await nodes.get("status-node");
      const updated = await nodes.updateStatus({
        ...n,
        spec: { ...n.spec, unschedulable: true }, // ignored by the status endpoint
        status: { ...n.status, capacity: { ...n.status?.capacity, "example.com/a": "1" } },
      });
      assert.equal(updated.status?.capacity?.["example.com/a"], "1");
      assert.notEqual(updated.spec?.unschedulable, true);
      const patched = await nodes.patch("status-node", {
        status: { capacity: { "example.com/b": "2" } },
      }, { type: "merge", subresource: "status" });
      assert.equal(patched.status?.capacity?.["example.com/b"], "2");
    });

    await t.step("watch resumes from a resourceVersion", async () => {
      const base = await cms.create({
        metadata: { name: "w", labels: { t: "watch" } },
        data: { v: "0" },
      });
      const rv = base.metadata!.resourceVersion!;
      await cms.patch("w", { data: { v: "1" } }, { type: "merge" });
      await cms.patch("w", { data: { v: "2" } }, { type: "merge" });
      await cms.delete("w");
      const seen: string[] = [];
      const ac = new AbortController();
      for await (
        const ev of cms.watch({ resourceVersion: rv, labelSelector: "t=watch", signal: ac.signal })
      ) {
        seen.push(`${ev.type}:${(ev.object as ConfigMap).data?.v ?? ""}`);
        if (ev.type === "DELETED") ac.abort();
      }
      assert.deepEqual(seen, ["MODIFIED:1", "MODIFIED:2", "DELETED:2"]);
    });

    await t.step("a watch from a compacted resourceVersion throws GoneError", async () => {
      const o = await cms.create({ metadata: { name: "g" } });
      const rv = o.metadata!.resourceVersion!;
      for (let i = 0; i < 3; i++) {
        await cms.patch("g", { data: { i: String(i) } }, { type: "merge" });
      }
      await cp.compactEtcd();
      // The API server's watch cache still remembers recent history; restart it to drop the cache.
      await cp.restartApiServer();
      await assert.rejects(async () => {
        for await (const _ of cms.watch({ resourceVersion: rv, timeoutSeconds: 5 })) { /* none */ }
      }, GoneError);
    });

    await t.step("informer relists after compaction and keeps the store right", async () => {
      const { transport, counts } = countingTransport(createTransport(config));
      const ic = new KubeClient({ transport });
      const informer = new Informer({
        resource: ic.resource<ConfigMap>(Resources.configmaps, "kt"),
        labelSelector: "t=inf",
        backoff: { initialMs: 200, maxMs: 1000, jitter: 0.2 },
      });
      const events: string[] = [];
      informer.onAdd((o) => events.push(`add ${o.metadata?.name}`));
      informer.onDelete((o) => events.push(`delete ${o.metadata?.name}`));
      await cms.create({ metadata: { name: "i1", labels: { t: "inf" } } });
      const ac = new AbortController();
      const running = informer.start(ac.signal);
      try {
        await informer.waitForSync(ac.signal);
        assert.deepEqual(informer.store.keys(), ["kt/i1"]);
        await cms.create({ metadata: { name: "i2", labels: { t: "inf" } } });
        await until(() => informer.store.size === 2, "watch add");
        // Move etcd's revision past the informer's, compact, and drop the watch cache.
        for (let i = 0; i < 5; i++) {
          await cms.patch("b", { data: { n: String(i) } }, { type: "merge" });
        }
        const listsBefore = counts.lists;
        await cp.compactEtcd();
        await cp.restartApiServer();
        await cms.delete("i1");
        await cms.create({ metadata: { name: "i3", labels: { t: "inf" } } });
        await until(
          () => informer.store.keys().sort().join() === "kt/i2,kt/i3",
          `store after reconnect (${informer.store.keys()})`,
        );
        assert.ok(counts.lists > listsBefore, "relisted after 410");
        assert.ok(events.includes("delete i1"));
        assert.ok(events.includes("add i3"));
      } finally {
        ac.abort();
        await running;
        ic.close();
      }
    });

    await t.step("eviction honours PodDisruptionBudgets (429)", async () => {
      await cp.createNode("evict-node");
      await cp.createPod("kt", "p1", { nodeName: "evict-node", labels: { app: "e" } });
      await cp.createPod("kt", "p2", { nodeName: "evict-node", labels: { app: "e" } });
      await cp.createPdb("kt", "pdb", { selector: { app: "e" }, minAvailable: 1 });
      const pdbs = client.resource<
        KubeObject & { status?: { disruptionsAllowed?: number; currentHealthy?: number } }
      >(Resources.poddisruptionbudgets, "kt");
      let pdbStatus = "";
      await until(async () => {
        const pdb = await pdbs.get("pdb");
        pdbStatus = JSON.stringify(pdb.status);
        return pdb.status?.disruptionsAllowed === 1;
      }, "one disruption allowed").catch((e) => {
        throw new Error(`${e.message}: ${pdbStatus}`);
      });
      await client.evict("kt", "p1");
      const pods = client.resource(Resources.pods, "kt");
      await until(async () => {
        try {
          const p = await pods.get("p1");
          return !!p.metadata?.deletionTimestamp;
        } catch (e) {
          return isNotFound(e);
        }
      }, "p1 evicted");
      await until(async () => {
        const pdb = await client.resource<
          KubeObject & { status?: { disruptionsAllowed?: number } }
        >(
          Resources.poddisruptionbudgets,
          "kt",
        ).get("pdb");
        return pdb.status?.disruptionsAllowed === 0;
      }, "pdb recomputed");
      const err = await client.evict("kt", "p2").catch((e) => e);
      assert.ok(err instanceof TooManyRequestsError, String(err));
      // A dry run is checked against the budget too, and changes nothing.
      await assert.rejects(() => client.evict("kt", "p2", { dryRun: true }), TooManyRequestsError);
      assert.equal((await pods.get("p2")).metadata?.deletionTimestamp, undefined);
      await assert.rejects(() => client.evict("kt", "nope"), NotFoundError);
    });

    await t.step("leader election: two electors, release and takeover after expiry", async () => {
      const a = await KubeClient.fromConfig(config);
      const b = await KubeClient.fromConfig(config);
      const opts = {
        namespace: "kt",
        name: "lock",
        leaseDurationSeconds: 3,
        renewDeadlineSeconds: 2,
        retryPeriodSeconds: 0.3,
        clock: systemClock,
      };
      const ea = new LeaderElector({ ...opts, client: a, identity: "a" });
      const eb = new LeaderElector({ ...opts, client: b, identity: "b" });
      const acA = new AbortController();
      const acB = new AbortController();
      const log: string[] = [];
      const runA = ea.run({
        onStartedLeading: () => void log.push("a+"),
        onStoppedLeading: () => void log.push("a-"),
      }, acA.signal);
      await until(() => ea.isLeader(), "a leads");
      const runB = eb.run({
        onStartedLeading: () => void log.push("b+"),
        onStoppedLeading: () => void log.push("b-"),
      }, acB.signal);
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(eb.isLeader(), false);
      // a releases on stop: b takes over within a retry period or so.
      const released = Date.now();
      acA.abort();
      await runA;
      await until(() => eb.isLeader(), "b leads after release", 5000);
      const tookMs = Date.now() - released;
      assert.ok(tookMs < 2500, `no need to wait for expiry (took ${tookMs} ms)`);
      const lease = await client.resource<
        KubeObject & { spec?: { holderIdentity?: string; leaseTransitions?: number } }
      >(
        Resources.leases,
        "kt",
      ).get("lock");
      assert.equal(lease.spec?.holderIdentity, "b");
      assert.equal(lease.spec?.leaseTransitions, 1);

      // b dies without releasing (its transport is gone); a new candidate waits for expiry.
      b.close();
      const c = await KubeClient.fromConfig(config);
      const ec = new LeaderElector({ ...opts, client: c, identity: "c" });
      const acC = new AbortController();
      const start = Date.now();
      const runC = ec.run({ onStartedLeading: () => {}, onStoppedLeading: () => {} }, acC.signal);
      await until(() => !eb.isLeader(), "b steps down", 5000);
      await until(() => ec.isLeader(), "c leads after expiry", 10_000);
      assert.ok(Date.now() - start >= 2500, "c waited for the lease to expire");
      acB.abort();
      await runB;
      assert.deepEqual(log, ["a+", "a-", "b+", "b-"]);
      acC.abort();
      await runC;
      a.close();
      c.close();
    });
  } finally {
    client.close();
    await cp.stop();
  }
});
