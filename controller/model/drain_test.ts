import assert from "node:assert/strict";
import {
  describeDrainBlockers,
  evictPods,
  pdbDemand,
  planDrainPass,
  summarizePod,
} from "./drain.ts";
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
