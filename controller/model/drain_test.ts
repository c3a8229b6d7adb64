import assert from "node:assert/strict";
import {
  CONTROLLER_POD_LABEL,
  deletePods,
  describeDrainBlockers,
  drainBlockedBy,
  evictPods,
  forcedDeletionMessage,
  forcedDeletions,
  pdbDemand,
  planDrainPass,
  summarizeAttachment,
  summarizePod,
} from "./drain.ts";
import { DEFAULT_DRAIN_POLICY, type DrainPolicy } from "./drain_policy.ts";
import { pdb, pod } from "../testing/fixtures.ts";

Deno.test("planDrainPass: skips mirror, DaemonSet and completed pods, waits for terminating ones", () => {
  const pods = [
    pod("web-1", "n1"),
    pod("static", "n1", { mirror: true }),
    pod("ds", "n1", { daemonSet: true }),
    pod("job", "n1", { completed: true }),
    pod("old", "n1", { terminating: true }),
  ];
  const pass = planDrainPass(pods);
  assert.deepEqual(pass.toEvict.map((p) => p.name), ["web-1"]);
  assert.deepEqual(pass.terminating.map((p) => p.name), ["old"]);
  assert.equal(pass.skipped, 3);
  assert.equal(pass.done, false);
  assert.equal(planDrainPass([pods[1], pods[2], pods[3]]).done, true);
  assert.equal(planDrainPass([pods[4]]).done, false);
});

Deno.test("describeDrainBlockers names pods and the PDBs covering them", () => {
  const pass = planDrainPass([pod("web-1", "n1"), pod("db-0", "n1", { labels: { app: "db" } })]);
  const text = describeDrainBlockers(pass, [pdb("web-pdb", "web", 0)]);
  assert.match(
    text,
    /pod default\/web-1 \(PodDisruptionBudget default\/web-pdb allows 0 disruption/,
  );
  assert.match(text, /pod default\/db-0/);
});

Deno.test("pdbDemand counts evictable pods per PDB in the pod's namespace only", () => {
  const pods = [
    pod("web-1", "n1"),
    pod("web-2", "n1"),
    pod("web-x", "n1", { namespace: "other" }),
    pod("web-gone", "n1", { terminating: true }),
  ];
  assert.deepEqual([...pdbDemand(pods, [pdb("web-pdb", "web", 1)])], [["default/web-pdb", 2]]);
});

Deno.test("summarizePod reads mirror, DaemonSet owner, deletion and phase", () => {
  const s = summarizePod({
    metadata: {
      name: "p",
      namespace: "ns",
      annotations: { "kubernetes.io/config.mirror": "x" },
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        name: "d",
        uid: "u",
        controller: true,
      }],
      deletionTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: { nodeName: "n1" },
    status: { phase: "Succeeded" },
  });
  assert.deepEqual(
    [s.mirror, s.daemonSet, s.terminating, s.completed, s.nodeName],
    [true, true, true, true, "n1"],
  );
});

Deno.test("evictPods: evicted, PDB-refused (429), gone (404) and failed outcomes", async () => {
  const calls: string[] = [];
  const outcomes = await evictPods(async (ns, name) => {
    calls.push(`${ns}/${name}`);
    await Promise.resolve();
    if (name === "blocked") {
      throw Object.assign(new Error("would violate the PDB"), { status: 429 });
    }
    if (name === "gone") throw Object.assign(new Error("not found"), { status: 404 });
    if (name === "bad") throw Object.assign(new Error("boom"), { status: 500 });
  }, [pod("ok", "n"), pod("blocked", "n"), pod("gone", "n"), pod("bad", "n")]);
  assert.deepEqual(calls, ["default/ok", "default/blocked", "default/gone", "default/bad"]);
  assert.deepEqual(outcomes.map((o) => o.result), ["evicted", "refused", "gone", "failed"]);
  assert.equal((outcomes[1] as { message: string }).message, "would violate the PDB");
});

const NOW = new Date("2026-01-01T01:00:00Z");

function policy(p: Partial<DrainPolicy>): DrainPolicy {
  return { ...DEFAULT_DRAIN_POLICY, ...p };
}

Deno.test("planDrainPass under a policy: kept pods stay, refused pods block, abandoned ones do not", () => {
  const pods = [
    pod("web", "n1"),
    pod("im", "n1", { labels: { app: "longhorn" } }),
    pod("cache", "n1", { emptyDir: true }),
    pod("stuck", "n1", { terminating: true, deletionTimestamp: "2026-01-01T00:50:00Z" }),
  ];
  const p = policy({
    keep: { matchLabels: { app: "longhorn" } },
    skipWaitForDeleteTimeoutSeconds: 60,
  });
  const ready = planDrainPass(pods, { policy: p, now: NOW, nodeReady: true });
  assert.deepEqual(ready.toEvict.map((x) => x.name), ["web"]);
  assert.deepEqual(ready.kept.map((x) => x.name), ["im"]);
  assert.deepEqual(ready.refused.map((x) => x.name), ["cache"]);
  assert.deepEqual(ready.terminating.map((x) => x.name), ["stuck"]);
  const notReady = planDrainPass(pods, { policy: p, now: NOW, nodeReady: false });
  assert.deepEqual(notReady.abandoned.map((x) => x.name), ["stuck"]);
  assert.deepEqual(notReady.terminating, []);
  // Only kept and abandoned pods left: done. A refused pod keeps the drain from finishing.
  const rest = [pods[1], pods[3]];
  assert.equal(planDrainPass(rest, { policy: p, now: NOW, nodeReady: false }).done, true);
  assert.equal(planDrainPass([pods[2]], { policy: p, now: NOW, nodeReady: true }).done, false);
  const allowed = policy({ deleteEmptyDirData: true });
  assert.deepEqual(
    planDrainPass([pods[2]], { policy: allowed, now: NOW, nodeReady: true }).toEvict.map((x) =>
      x.name
    ),
    ["cache"],
  );
});

Deno.test("drainBlockedBy and describeDrainBlockers name refused emptyDir pods and the field", () => {
  const pass = planDrainPass([pod("web", "n1"), pod("cache", "n1", { emptyDir: true })]);
  assert.equal(
    drainBlockedBy(pass, [pdb("web-pdb", "web", 0)]),
    "PodDisruptionBudget default/web-pdb allows no disruption now; pod default/cache has " +
      "emptyDir data (set spec.rollout.drain.deleteEmptyDirData: true to evict it)",
  );
  assert.match(
    drainBlockedBy(pass, []) ?? "",
    /^pod default\/cache has emptyDir data \(set spec\.rollout\.drain\.deleteEmptyDirData/,
  );
  assert.match(
    describeDrainBlockers(pass, []),
    /pod default\/web; pod default\/cache has emptyDir/,
  );
});

Deno.test("pdbDemand counts only the pods the policy evicts", () => {
  const pods = [pod("web-1", "n1"), pod("web-2", "n1", { emptyDir: true }), pod("web-3", "n1")];
  const pdbs = [pdb("web-pdb", "web", 1)];
  const keep3 = policy({ keep: { matchExpressions: [{ key: "x", operator: "DoesNotExist" }] } });
  assert.deepEqual([...pdbDemand(pods, pdbs)], [["default/web-pdb", 2]], "emptyDir refused");
  assert.deepEqual(
    [...pdbDemand(pods, pdbs, {
      policy: policy({ deleteEmptyDirData: true }),
      now: NOW,
      nodeReady: true,
    })],
    [["default/web-pdb", 3]],
  );
  assert.deepEqual([...pdbDemand(pods, pdbs, { policy: keep3, now: NOW, nodeReady: true })], []);
});

Deno.test("forcedDeletions: only pods a PDB allowing no disruption keeps, naming that PDB", () => {
  const pass = planDrainPass([
    pod("web", "n1", { uid: "u1", terminationGracePeriodSeconds: 60 }),
    pod("api", "n1", { labels: { app: "api" } }),
    pod("lone", "n1", { labels: { app: "lone" } }),
    pod("cache", "n1", { emptyDir: true }),
  ]);
  const pdbs = [pdb("web-pdb", "web", 0), pdb("api-pdb", "api", 1), pdb("web-wide", "web", 2)];
  const out = forcedDeletions(pass, pdbs, policy({ gracePeriodSeconds: 10 }));
  assert.deepEqual(
    out.map((d) => [d.pod.name, d.gracePeriodSeconds, d.overrides]),
    [["web", 10, ["default/web-pdb"]]],
    "evictable pods (PDB with room, no PDB) and the refused emptyDir pod are never force-deleted",
  );
  assert.equal(
    forcedDeletionMessage("n1", out[0], 30),
    "deleting pod default/web on node n1: the drain did not finish within 30s and onTimeout " +
      "is Force; overriding PodDisruptionBudget default/web-pdb, which allows no disruption",
  );
});

Deno.test("deletePods: deleted, gone (404, or 409 when the uid no longer matches), failed", async () => {
  const calls: unknown[] = [];
  const outcomes = await deletePods(async (p) => {
    calls.push(p);
    await Promise.resolve();
    if (p.name === "gone") throw Object.assign(new Error("not found"), { status: 404 });
    if (p.name === "new") throw Object.assign(new Error("uid"), { status: 409 });
    if (p.name === "bad") throw Object.assign(new Error("forbidden"), { status: 403 });
  }, [
    { namespace: "a", name: "ok", uid: "u", gracePeriodSeconds: 3 },
    { namespace: "a", name: "gone" },
    { namespace: "a", name: "new" },
    { namespace: "a", name: "bad" },
  ]);
  assert.deepEqual(outcomes.map((o) => o.result), ["deleted", "gone", "gone", "failed"]);
  assert.deepEqual(calls[0], { namespace: "a", name: "ok", uid: "u", gracePeriodSeconds: 3 });
});

Deno.test("evictPods sends each pod's grace period", async () => {
  const sent: (number | undefined)[] = [];
  await evictPods(async (_ns, _name, grace) => {
    sent.push(grace);
    await Promise.resolve();
  }, [{ namespace: "a", name: "x", gracePeriodSeconds: 4 }, { namespace: "a", name: "y" }]);
  assert.deepEqual(sent, [4, undefined]);
});

Deno.test("summarizePod reads emptyDir volumes, the grace period and the deletion time", () => {
  const s = summarizePod({
    metadata: { name: "p", namespace: "ns", deletionTimestamp: "2026-01-01T00:00:00Z" },
    spec: {
      nodeName: "n1",
      terminationGracePeriodSeconds: 45,
      volumes: [{}, { emptyDir: {} }],
    },
  });
  assert.deepEqual(
    [s.emptyDir, s.terminationGracePeriodSeconds, s.deletionTimestamp],
    [true, 45, "2026-01-01T00:00:00Z"],
  );
  const plain = summarizePod({ metadata: { name: "q" }, spec: { volumes: [{}] } });
  assert.deepEqual([plain.emptyDir, plain.deletionTimestamp], [false, undefined]);
});

Deno.test("summarizePod marks the acting controller's own pod and its other replicas", () => {
  const controllerPod = (namespace: string, name: string) => ({
    metadata: {
      namespace,
      name,
      labels: { "app.kubernetes.io/name": "bootc-operator-controller" },
    },
    spec: { nodeName: "n1" },
  });
  const own = { ownPod: { namespace: "bootc-operator", name: "ctl-a" } };
  assert.equal(summarizePod(controllerPod("bootc-operator", "ctl-a"), own).operator, "own");
  assert.equal(summarizePod(controllerPod("bootc-operator", "ctl-b"), own).operator, "replica");
  const other = {
    metadata: { namespace: "bootc-operator", name: "web", labels: { app: "web" } },
    spec: { nodeName: "n1" },
  };
  assert.equal(summarizePod(other, own).operator, undefined, "another pod of the namespace");
  assert.equal(
    summarizePod(controllerPod("default", "ctl-a"), own).operator,
    undefined,
    "other namespace",
  );
  assert.equal(
    summarizePod(controllerPod("bootc-operator", "ctl-a")).operator,
    undefined,
    "not in a pod",
  );
  // The controller's pods carry an emptyDir (/tmp): the standby is evicted all the same.
  const withTmp = (p: ReturnType<typeof controllerPod>) => ({
    ...p,
    spec: { ...p.spec, volumes: [{ emptyDir: {} }] },
  });
  const pass = planDrainPass([
    summarizePod(withTmp(controllerPod("bootc-operator", "ctl-a")), own),
    summarizePod(withTmp(controllerPod("bootc-operator", "ctl-b")), own),
  ]);
  assert.deepEqual(pass.refused, []);
  assert.deepEqual(pass.own.map((p) => p.name), ["ctl-a"]);
  assert.deepEqual(pass.toEvict.map((p) => p.name), ["ctl-b"], "the standby is evicted");
  const ownOnly = planDrainPass([summarizePod(controllerPod("bootc-operator", "ctl-a"), own)]);
  assert.equal(ownOnly.done, true, "the own pod does not hold the drain");
});

Deno.test("CONTROLLER_POD_LABEL is on the controller's pod template as installed", async () => {
  const { parseAllDocuments } = await import("yaml");
  const text = await Deno.readTextFile(new URL("../../manifests/controller.yaml", import.meta.url));
  const deployment = parseAllDocuments(text).map((d) => d.toJS()).find((o) =>
    o?.kind === "Deployment"
  );
  const labels = deployment?.spec?.template?.metadata?.labels ?? {};
  assert.equal(labels[CONTROLLER_POD_LABEL.key], CONTROLLER_POD_LABEL.value);
});

Deno.test("summarizePod reads the claims a pod mounts; summarizeAttachment its volume's claim", () => {
  const p = summarizePod({
    metadata: { namespace: "db", name: "pg-0" },
    spec: { volumes: [{ persistentVolumeClaim: { claimName: "data-pg-0" } }, { emptyDir: {} }] },
  });
  assert.deepEqual(p.claims, ["data-pg-0"]);
  assert.equal(summarizePod({ metadata: { name: "x" }, spec: {} }).claims, undefined);
  const va = {
    metadata: { name: "csi-1" },
    spec: {
      attacher: "rbd.csi.ceph.com",
      nodeName: "n1",
      source: { persistentVolumeName: "pv-1" },
    },
  };
  assert.deepEqual(
    summarizeAttachment(va, { spec: { claimRef: { namespace: "db", name: "data-pg-0" } } }),
    {
      name: "csi-1",
      attacher: "rbd.csi.ceph.com",
      persistentVolume: "pv-1",
      claim: { namespace: "db", name: "data-pg-0" },
    },
  );
  // An inline (non-PV) attachment, or a PV already gone: no claim, so it always waits.
  assert.deepEqual(summarizeAttachment({ metadata: { name: "csi-2" }, spec: {} }, undefined), {
    name: "csi-2",
  });
  const pass = planDrainPass([], {
    policy: { ...DEFAULT_DRAIN_POLICY, waitForVolumeDetach: true },
    now: new Date(0),
    nodeReady: true,
    attachments: [summarizeAttachment(va, undefined)],
  });
  assert.equal(pass.done, false);
  assert.match(
    describeDrainBlockers(pass, []),
    /^VolumeAttachment csi-1 \(PersistentVolume pv-1, rbd\.csi\.ceph\.com\) still attached$/,
  );
});

Deno.test("summarizePod names a generic ephemeral volume's claim <pod>-<volume>", () => {
  const p = summarizePod({
    metadata: { namespace: "ops", name: "agent-x" },
    spec: { volumes: [{ name: "cache", ephemeral: { volumeClaimTemplate: {} } }] },
  });
  assert.deepEqual(p.claims, ["agent-x-cache"]);
  // Unread attachments are never a finished drain.
  const pass = planDrainPass([], {
    policy: { ...DEFAULT_DRAIN_POLICY, waitForVolumeDetach: true },
    now: new Date(0),
    nodeReady: true,
  });
  assert.equal(pass.done, false);
  assert.equal(pass.volumesUnknown, true);
});
