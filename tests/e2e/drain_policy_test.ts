/**
 * End-to-end checks of the drain policy (issue 26, `spec.rollout.drain`) on the
 * real control plane, with real PodDisruptionBudgets (the disruption controller
 * computes them) and pods on kwok nodes. One stack; each scenario has its own
 * pool, nodes and namespace, and hands its nodes back when done.
 *
 * - a: pods matching `podSelector` stay Running (same uid, never terminating)
 *   through the drain and the reboot while the others are evicted, and the
 *   rollout completes;
 * - b: a PDB-blocked pod is never deleted with `onTimeout: Degrade` (the node
 *   stays degraded naming the PDB), and is deleted with `Force`, named with its
 *   PDB in a Warning event, after which the rollout completes;
 * - c: a node with a pod with an emptyDir volume gets no slot (it waits in the
 *   queue, `DrainPolicy`, the pod and the field to set named in the pool's
 *   message) until `deleteEmptyDirData: true`;
 * - f: a node running a pod `blockingPodSelector` selects gets no slot and is not cordoned
 *   (its queue entry names the pod) while the pool's other node updates; once the pod is
 *   gone, it updates too;
 * - d: the grace override reaches the eviction: the API server's
 *   `deletionGracePeriodSeconds` of the evicted pods (held by a finalizer so it
 *   can be read) is the override, or the pod's own when that is shorter;
 * - e: `onTimeout: Force` deletes a PDB-pinned pod within seconds of the drain
 *   timeout, though the refused evictions back off past it;
 * - g: with `waitForVolumeDetach`, a VolumeAttachment that lingers on the node holds
 *   its reboot (no finished drain, no reboot request), is named when the drain times
 *   out into Degraded, and once it is gone the node updates.
 */
import assert from "node:assert/strict";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import type { IPod } from "kubernetes-models/v1/Pod";
import {
  ANNOTATION_IN_REBOOT_SLOT as SLOT,
  type BootcNode,
  findCondition,
  holdsRebootSlot,
} from "../../lib/api/mod.ts";
import { isNotFound, Resources } from "../../lib/kube/mod.ts";
import { FAST_POD_ANNOTATIONS } from "../harness/kwok.ts";
import type { VolumeAttachmentLike } from "../../controller/model/drain.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  nodesByName,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

/** Generous bound for a rollout of a few nodes on a loaded 2-core machine. */
const LONG_MS = 180_000;
const POOLS = ["dkeep", "dpdb", "dempty", "dblock", "dgrace", "dtime", "dvolume"];
const HOLD_FINALIZER = "bootc-test/hold";

type Pod = IPod & { metadata: NonNullable<IPod["metadata"]> };

function podsApi(stack: Stack, namespace: string) {
  return stack.cp.client.resource<Pod>(Resources.pods, namespace);
}

/** Creates a pod bound to `node` (kwok runs it) and waits until it is Running. */
async function makePod(
  stack: Stack,
  namespace: string,
  name: string,
  node: string,
  options: {
    labels?: Record<string, string>;
    emptyDir?: boolean;
    finalizer?: boolean;
    terminationGracePeriodSeconds?: number;
  } = {},
): Promise<Pod> {
  const api = podsApi(stack, namespace);
  await api.create({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      labels: options.labels ?? {},
      annotations: { ...FAST_POD_ANNOTATIONS },
      finalizers: options.finalizer ? [HOLD_FINALIZER] : undefined,
    },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: options.terminationGracePeriodSeconds ?? 1,
      containers: [{
        name: "app",
        image: "registry.invalid/bootc-test/pause:1",
        volumeMounts: options.emptyDir ? [{ name: "scratch", mountPath: "/scratch" }] : undefined,
      }],
      volumes: options.emptyDir ? [{ name: "scratch", emptyDir: {} }] : undefined,
    },
  });
  let last: Pod | undefined;
  return await waitFor(async () => {
    last = await api.get(name);
    return last.status?.phase === "Running" ? last : undefined;
  }, {
    timeoutMs: 30_000,
    message: () => `pod ${namespace}/${name} Running (kwok); phase ${last?.status?.phase}`,
  });
}

/** The pod, or undefined when it is gone. */
async function findPod(stack: Stack, namespace: string, name: string): Promise<Pod | undefined> {
  try {
    return await podsApi(stack, namespace).get(name);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** The events about `node` with `reason` (recorded in "default", as kubelet's). */
async function nodeEvents(stack: Stack, node: string, reason: string): Promise<string[]> {
  const list = await stack.cp.client.resource<CoreEvent>(Resources.events, "default").list({
    fieldSelector: `involvedObject.name=${node},reason=${reason}`,
  });
  return list.items.map((e) => e.message ?? "");
}

/** The node of `nodes` that holds a reboot slot now, if any. */
async function slotHolder(stack: Stack, nodes: string[]): Promise<string | undefined> {
  const objs = await nodesByName(stack);
  return nodes.find((n) => holdsRebootSlot(objs.get(n) ?? {}));
}

function bootcNode(stack: Stack, name: string): Promise<BootcNode> {
  return stack.cp.client.resource<BootcNode>(Resources.bootcNodes).get(name);
}

/** A pool of `count` nodes converged on v1, and a namespace of the same name. */
async function setUp(
  stack: Stack,
  pool: string,
  count: number,
  rollout: Record<string, unknown>,
): Promise<string[]> {
  const nodes = await addNodes(stack, pool, count);
  const ref1 = `${stack.images.repository}@${stack.images.v1.digest}`;
  await stack.createPool(pool, poolSpec(pool, ref1, { maxUnavailable: 1, ...rollout }));
  await waitConverged(stack, pool, stack.images.v1.digest, count, LONG_MS);
  await stack.cp.createNamespace(pool);
  return nodes;
}

/** Starts the rollout to v2. */
async function rollOut(stack: Stack, pool: string): Promise<void> {
  await patchPoolSpec(stack, pool, {
    image: { ref: `${stack.images.repository}@${stack.images.v2.digest}` },
  });
}

/** Hands a scenario's nodes back (best effort): deletes the pool, removes the hosts. */
async function retire(stack: Stack, pool: string, nodes: string[]): Promise<void> {
  const pools = stack.cp.client.resource(Resources.bootcNodePools);
  await pools.delete(pool).catch(() => {});
  await waitFor(async () => !(await getPool(stack, pool).catch(() => undefined)), {
    timeoutMs: 60_000,
    message: `pool ${pool} deleted`,
  }).catch((e) => console.error(`retire: ${e instanceof Error ? e.message : e}`));
  for (const n of nodes) await stack.fleet.removeNode(n).catch(() => {});
}

/**
 * Samples the pods `keys` (namespace/name → uid) every 250 ms until `signal`
 * aborts; returns every moment one was not Running with its uid, or terminating.
 */
async function watchKept(
  stack: Stack,
  kept: Map<string, string>,
  signal: AbortSignal,
): Promise<string[]> {
  const seen: string[] = [];
  while (!signal.aborted) {
    for (const [key, uid] of kept) {
      const [ns, name] = key.split("/");
      try {
        const p = await findPod(stack, ns, name);
        if (!p) seen.push(`${key} gone`);
        else if (p.metadata.uid !== uid) seen.push(`${key} replaced`);
        else if (p.metadata.deletionTimestamp) seen.push(`${key} terminating`);
        else if (p.status?.phase !== "Running") seen.push(`${key} ${p.status?.phase}`);
      } catch {
        // A transient API error: sample again.
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return seen;
}

Deno.test("drain policy (issue 26): podSelector, Force vs Degrade, emptyDir, grace", async (t) => {
  const stack = await startStack({
    limits: Object.fromEntries(POOLS.map((p) => [p, { maxUnavailable: 1 }])),
  });
  const { v2 } = stack.images;
  try {
    await step(
      t,
      "a: podSelector pods stay Running through the drain; the rest are evicted",
      async () => {
        const pool = "dkeep";
        const nodes = await setUp(stack, pool, 2, {
          drain: { podSelector: { matchLabels: { app: "longhorn-manager" } } },
        });
        const kept = new Map<string, string>();
        for (const n of nodes) {
          const im = await makePod(stack, pool, `im-${n}`, n, {
            labels: { app: "longhorn-manager" },
          });
          kept.set(`${pool}/im-${n}`, im.metadata.uid ?? "");
          await makePod(stack, pool, `web-${n}`, n, { labels: { app: "web" } });
        }
        const stop = new AbortController();
        const sampling = watchKept(stack, kept, stop.signal);
        try {
          await rollOut(stack, pool);
          await waitConverged(stack, pool, v2.digest, 2, LONG_MS);
        } finally {
          stop.abort();
        }
        assert.deepEqual([...new Set(await sampling)], [], "a kept pod was disturbed");
        for (const n of nodes) {
          assert.equal(await findPod(stack, pool, `web-${n}`), undefined, `web-${n} evicted`);
        }
        const events = await nodeEvents(stack, nodes[0], "SlotAssigned");
        assert.ok(events.some((m) => m.includes("1 left alone (podSelector)")), events.join("\n"));
        await assertInvariants(stack, nodes);
        await retire(stack, pool, nodes);
      },
    );

    await step(
      t,
      "b: a PDB-blocked pod: Degrade names the PDB and deletes nothing; Force deletes it, named",
      async () => {
        const pool = "dpdb";
        const pdb = "pinned";
        const nodes = await setUp(stack, pool, 2, { drainTimeoutSeconds: 10 });
        const uids = new Map<string, string>();
        for (const n of nodes) {
          const p = await makePod(stack, pool, `pinned-${n}`, n, { labels: { app: "pinned" } });
          uids.set(n, p.metadata.uid ?? "");
        }
        await stack.cp.createPdb(pool, pdb, { selector: { app: "pinned" }, minAvailable: 2 });
        await rollOut(stack, pool);
        const holder = await waitPool(
          stack,
          pool,
          () => slotHolder(stack, nodes),
          "a node takes its slot",
          LONG_MS,
        );
        // Degrade (the default): past the 10 s timeout the pool is degraded naming the PDB.
        await waitPool(
          stack,
          pool,
          async () => {
            const p = await getPool(stack, pool);
            const degraded = findCondition(p.status?.conditions, "Degraded");
            return degraded?.status === "True" &&
              degraded.message?.includes(`PodDisruptionBudget ${pool}/${pdb} `) &&
              (await nodeEvents(stack, holder, "DrainBlocked")).some((m) =>
                m.includes("did not finish within 10s")
              );
          },
          `pool ${pool} degraded naming PodDisruptionBudget ${pool}/${pdb}`,
          90_000,
        );
        const intact = await findPod(stack, pool, `pinned-${holder}`);
        assert.equal(intact?.metadata.uid, uids.get(holder), "the pod was not replaced");
        assert.equal(intact?.metadata.deletionTimestamp, undefined, "nothing deleted it");
        assert.deepEqual(await nodeEvents(stack, holder, "DrainForced"), []);
        assert.ok(await slotHolder(stack, [holder]), "the node stays in its slot, cordoned");
        assert.notEqual((await bootcNode(stack, holder)).status?.booted?.imageDigest, v2.digest);

        // Force: the pods evictions could not remove are deleted, each named with the PDB.
        await patchPoolSpec(stack, pool, { rollout: { drain: { onTimeout: "Force" } } });
        await waitConverged(stack, pool, v2.digest, 2, LONG_MS);
        for (const n of nodes) {
          const forced = await nodeEvents(stack, n, "DrainForced");
          assert.equal(forced.length, 1, `one DrainForced event on ${n}: ${forced.join("\n")}`);
          assert.match(forced[0], new RegExp(`pod ${pool}/pinned-${n} on node ${n}`));
          assert.match(forced[0], new RegExp(`overriding PodDisruptionBudget ${pool}/${pdb}`));
          assert.equal(await findPod(stack, pool, `pinned-${n}`), undefined);
        }
        // The budget itself is untouched.
        await stack.cp.client.resource(Resources.poddisruptionbudgets, pool).get(pdb);
        await assertInvariants(stack, nodes);
        await retire(stack, pool, nodes);
      },
    );

    await step(
      t,
      "c: an emptyDir pod holds its node out of the slots, named, until deleteEmptyDirData: true",
      async () => {
        const pool = "dempty";
        const nodes = await setUp(stack, pool, 2, {});
        for (const n of nodes) await makePod(stack, pool, `cache-${n}`, n, { emptyDir: true });
        await rollOut(stack, pool);
        // Its drain could never finish: the node is held in the queue, named, never cordoned.
        const named = (text: string, n: string) =>
          text.includes(`${pool}/cache-${n}`) &&
          text.includes("spec.rollout.drain.deleteEmptyDirData");
        await waitPool(
          stack,
          pool,
          async () => {
            const p = await getPool(stack, pool);
            const queue = p.status?.queue ?? [];
            const poolText = (p.status?.conditions ?? []).map((c) => c.message ?? "").join("\n");
            return nodes.every((n) =>
              queue.some((q) => q.node === n && q.waitingFor === "DrainPolicy") &&
              named(poolText, n)
            );
          },
          `the emptyDir pods are named in pool ${pool}'s message and its nodes wait (DrainPolicy)`,
          LONG_MS,
        );
        assert.equal(await slotHolder(stack, nodes), undefined, "no node took a slot");
        const objs = await nodesByName(stack);
        for (const n of nodes) {
          assert.ok(!objs.get(n)?.spec?.unschedulable, `${n} is not cordoned`);
          const cache = await findPod(stack, pool, `cache-${n}`);
          assert.equal(cache?.metadata.deletionTimestamp, undefined, "the emptyDir pod stays");
          assert.equal(cache?.status?.phase, "Running");
        }

        await patchPoolSpec(stack, pool, { rollout: { drain: { deleteEmptyDirData: true } } });
        await waitConverged(stack, pool, v2.digest, 2, LONG_MS);
        for (const n of nodes) assert.equal(await findPod(stack, pool, `cache-${n}`), undefined);
        await assertInvariants(stack, nodes);
        await retire(stack, pool, nodes);
      },
    );

    await step(
      t,
      "f: a blocking pod holds its node back, uncordoned and named, while the other updates",
      async () => {
        const pool = "dblock";
        const nodes = await setUp(stack, pool, 2, {
          blockingPodSelector: { matchLabels: { app: "backup" } },
        });
        const [busy, free] = nodes;
        await makePod(stack, pool, "backup", busy, { labels: { app: "backup" } });
        await rollOut(stack, pool);
        const ref2 = `${stack.images.repository}@${v2.digest}`;
        const held = await waitPool(
          stack,
          pool,
          async () => {
            const p = await getPool(stack, pool);
            const entry = (p.status?.queue ?? []).find((q) => q.node === busy);
            const done = (await bootcNode(stack, free)).status?.booted?.image === ref2;
            return done && entry?.waitingFor === "BlockingPod" ? entry : undefined;
          },
          `${free} updated while ${busy} waits on its blocking pod`,
          LONG_MS,
        );
        assert.equal(held.blockedBy, `${pool}/backup`);
        const objs = await nodesByName(stack);
        assert.ok(!objs.get(busy)?.spec?.unschedulable, `${busy} is not cordoned`);
        assert.equal((await findPod(stack, pool, "backup"))?.status?.phase, "Running");

        await podsApi(stack, pool).delete("backup");
        await waitConverged(stack, pool, v2.digest, 2, LONG_MS);
        await assertInvariants(stack, nodes);
        await retire(stack, pool, nodes);
      },
    );

    await step(
      t,
      "d: the grace override reaches the eviction, never above the pod's own",
      async () => {
        const pool = "dgrace";
        const nodes = await setUp(stack, pool, 1, { drain: { gracePeriodSeconds: 7 } });
        const [n] = nodes;
        // The finalizer holds each evicted pod terminating, so its grace period can be read.
        await makePod(stack, pool, "slow", n, {
          finalizer: true,
          terminationGracePeriodSeconds: 120,
        });
        await makePod(stack, pool, "quick", n, {
          finalizer: true,
          terminationGracePeriodSeconds: 3,
        });
        await rollOut(stack, pool);
        const graces = await waitPool(
          stack,
          pool,
          async () => {
            const [slow, quick] = await Promise.all(
              ["slow", "quick"].map((name) => findPod(stack, pool, name)),
            );
            if (!slow?.metadata.deletionTimestamp || !quick?.metadata.deletionTimestamp) return;
            return [
              slow.metadata.deletionGracePeriodSeconds,
              quick.metadata.deletionGracePeriodSeconds,
            ];
          },
          "both pods evicted",
          LONG_MS,
        );
        assert.deepEqual(graces, [7, 3], "slow: the override (7 < 120); quick: its own (3 < 7)");
        for (const name of ["slow", "quick"]) {
          await podsApi(stack, pool).patch(name, { metadata: { finalizers: null } }, {
            type: "merge",
          });
        }
        await waitConverged(stack, pool, v2.digest, 1, LONG_MS);
        await assertInvariants(stack, nodes);
        await retire(stack, pool, nodes);
      },
    );
    await step(
      t,
      "g: a lingering VolumeAttachment holds the reboot, is named at the timeout, then detaches",
      async () => {
        const pool = "dvolume";
        const [n] = await setUp(stack, pool, 1, {
          drainTimeoutSeconds: 15,
          drain: { waitForVolumeDetach: true },
        });
        const attachments = stack.cp.client.resource<VolumeAttachmentLike>(
          Resources.volumeattachments,
        );
        const name = `csi-${n}`;
        await attachments.create({
          apiVersion: "storage.k8s.io/v1",
          kind: "VolumeAttachment",
          metadata: { name },
          spec: {
            attacher: "fake.csi.bootc.test",
            nodeName: n,
            source: { persistentVolumeName: `pv-${n}` },
          },
        });
        await rollOut(stack, pool);
        // Its pods gone, the node says what it waits for before the timeout.
        await waitPool(
          stack,
          pool,
          async () => {
            const drained = findCondition(
              (await bootcNode(stack, n)).status?.conditions,
              "Drained",
            );
            return drained?.message?.includes(`waiting for VolumeAttachment ${name}`);
          },
          `${n}'s Drained condition names VolumeAttachment ${name}`,
          LONG_MS,
        );
        const degraded = await waitPool(
          stack,
          pool,
          async () => {
            const c = findCondition((await getPool(stack, pool)).status?.conditions, "Degraded");
            return c?.status === "True" && c.message?.includes(`VolumeAttachment ${name}`)
              ? c.message
              : undefined;
          },
          `pool ${pool} Degraded naming VolumeAttachment ${name} past the drain timeout`,
          LONG_MS,
        );
        assert.match(degraded, /still attached/);
        const annotations = (await nodesByName(stack)).get(n)?.metadata?.annotations ?? {};
        assert.equal(annotations["bootc.dev/drained-at"], undefined, "no finished drain");
        assert.equal((await bootcNode(stack, n)).spec.desiredImageState, "Staged", "no reboot");
        await attachments.delete(name);
        await waitConverged(stack, pool, v2.digest, 1, LONG_MS);
        await assertInvariants(stack, [n]);
        await retire(stack, pool, [n]);
      },
    );

    await step(
      t,
      "e: Force acts within seconds of the drain timeout, whatever the eviction back-off",
      async () => {
        const pool = "dtime";
        const timeoutSeconds = 20;
        const [n] = await setUp(stack, pool, 1, {
          drainTimeoutSeconds: timeoutSeconds,
          drain: { onTimeout: "Force" },
        });
        await makePod(stack, pool, `pinned-${n}`, n, { labels: { app: "pinned" } });
        await stack.cp.createPdb(pool, "pinned", { selector: { app: "pinned" }, minAvailable: 1 });
        await rollOut(stack, pool);
        const slotAt = await waitPool(
          stack,
          pool,
          async () => (await nodesByName(stack)).get(n)?.metadata?.annotations?.[SLOT],
          `${n} takes its slot`,
          LONG_MS,
        );
        // Refused evictions back off 5, 10, 20 s: the deadline must not wait for them.
        const removedAt = await waitPool(
          stack,
          pool,
          async () => {
            const p = await findPod(stack, pool, `pinned-${n}`);
            return !p || p.metadata.deletionTimestamp ? Date.now() : undefined;
          },
          `the pinned pod on ${n} is deleted past the drain timeout`,
          LONG_MS,
        );
        const late = (removedAt - Date.parse(slotAt)) / 1000 - timeoutSeconds;
        assert.ok(late <= 8, `deleted ${late.toFixed(1)} s after the drain timeout`);
        await waitConverged(stack, pool, v2.digest, 1, LONG_MS);
        await assertInvariants(stack, [n]);
        await retire(stack, pool, [n]);
      },
    );
  } finally {
    await stopStack(stack);
  }
});
