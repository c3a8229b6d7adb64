/**
 * The pool's drain policy (`spec.rollout.drain`) through the whole planner:
 * podSelector, emptyDir refusals, the grace override on the evictions, and
 * what `onTimeout` does at the drain timeout.
 */
import assert from "node:assert/strict";
import { type BootcNodePool, type DrainPolicySpec, findCondition } from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, input, node, pdb, pod, pool } from "../testing/fixtures.ts";
import type { VolumeAttachmentSummary } from "../model/types.ts";

const EARLIER = "2026-01-01T00:59:00Z"; // a minute before the fixtures' now

function withDrain(drain: DrainPolicySpec, timeout = 600): BootcNodePool {
  const p = pool({ drainTimeoutSeconds: timeout });
  p.spec.rollout.drain = drain;
  return p;
}
function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}
function draining(p: BootcNodePool, pods: ReturnType<typeof pod>[], pdbs = [pdb("web", "web", 0)]) {
  return planPool(input(p, {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [bootcNode("n1", { phase: "staged", slotAt: EARLIER, wasCordoned: false })],
    pods,
    pdbs,
  }));
}
function recorded(plan: Plan): boolean {
  return ofKind(plan, "patchNode").some((a) => a.why === "record drain");
}

Deno.test("drain policy: podSelector pods are left alone and the drain completes around them", () => {
  const p = withDrain({ podSelector: { matchLabels: { app: "longhorn" } } });
  const pods = [pod("im", "n1", { labels: { app: "longhorn" } }), pod("api", "n1", { labels: {} })];
  const plan = draining(p, pods, []);
  assert.deepEqual(ofKind(plan, "evict")[0]?.pods.map((x) => x.name), ["api"]);
  // Once only the kept pod is left, the drain is recorded and the reboot asked for.
  assert.ok(recorded(draining(p, [pods[0]], [])));
  assert.ok(
    !recorded(draining(withDrain({}), [pods[0]], [])),
    "without the selector it is evicted",
  );
});

Deno.test("drain policy: the grace override rides on each eviction, capped by the pod's own", () => {
  const p = withDrain({ gracePeriodSeconds: 7 });
  const plan = draining(p, [
    pod("long", "n1", { labels: {}, terminationGracePeriodSeconds: 120 }),
    pod("short", "n1", { labels: {}, terminationGracePeriodSeconds: 3 }),
  ], []);
  assert.deepEqual(
    ofKind(plan, "evict")[0]?.pods.map((x) => [x.name, x.gracePeriodSeconds]),
    [["long", 7], ["short", 3]],
  );
  const none = draining(withDrain({}), [pod("long", "n1", { labels: {} })], []);
  assert.equal(ofKind(none, "evict")[0]?.pods[0].gracePeriodSeconds, undefined);
});

Deno.test("drain policy: an emptyDir pod is refused and named at once until deleteEmptyDirData", () => {
  const cache = pod("cache", "n1", { labels: {}, emptyDir: true });
  const plan = draining(withDrain({}), [cache], []);
  assert.deepEqual(ofKind(plan, "evict"), []);
  assert.ok(!recorded(plan));
  const status = ofKind(plan, "patchBootcNodeStatus")[0];
  const conditions = (status?.patch.status as { conditions: [] } | undefined)?.conditions;
  const drained = findCondition(conditions, "Drained");
  assert.equal(`${drained?.status}/${drained?.reason}`, "False/DrainBlocked");
  assert.match(
    drained?.message ?? "",
    /pod default\/cache has emptyDir data \(set spec\.rollout\.drain\.deleteEmptyDirData: true/,
  );
  const upToDate = findCondition(plan.status?.conditions, "UpToDate");
  assert.match(upToDate?.message ?? "", /drain of n1 blocked by pod default\/cache has emptyDir/);
  const allowed = draining(withDrain({ deleteEmptyDirData: true }), [cache], []);
  assert.deepEqual(ofKind(allowed, "evict")[0]?.pods.map((x) => x.name), ["cache"]);
});

Deno.test("drain policy: Degrade (the default) at the timeout: degraded naming the PDB, no deletion", () => {
  const plan = draining(withDrain({}, 30), [pod("web-1", "n1")]);
  assert.deepEqual(ofKind(plan, "deletePods"), []);
  assert.equal(ofKind(plan, "evict").length, 1);
  assert.match(
    findCondition(plan.status?.conditions, "Degraded")?.message ?? "",
    /did not finish within 30s: pod default\/web-1 \(PodDisruptionBudget default\/web allows 0/,
  );
});

Deno.test("drain policy: Force at the timeout deletes what a PDB keeps from eviction, with a Warning per pod", () => {
  const p = withDrain({ onTimeout: "Force", gracePeriodSeconds: 5 }, 30);
  const blocked = pod("web-1", "n1", { uid: "u1", terminationGracePeriodSeconds: 60 });
  const before = planPool(input(withDrain({ onTimeout: "Force" }, 600), {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [bootcNode("n1", { phase: "staged", slotAt: EARLIER, wasCordoned: false })],
    pods: [blocked],
    pdbs: [pdb("web", "web", 0)],
  }));
  assert.deepEqual(ofKind(before, "deletePods"), [], "never before the timeout");
  const plan = draining(p, [blocked]);
  assert.deepEqual(ofKind(plan, "evict"), []);
  assert.deepEqual(ofKind(plan, "deletePods"), [{
    kind: "deletePods",
    node: "n1",
    pods: [{ namespace: "default", name: "web-1", uid: "u1", gracePeriodSeconds: 5 }],
  }]);
  const forced = plan.events.filter((e) => e.reason === "DrainForced");
  assert.equal(forced.length, 1);
  assert.equal(forced[0].type, "Warning");
  assert.match(
    forced[0].message,
    /pod default\/web-1 .*overriding PodDisruptionBudget default\/web, which allows no/,
  );
  assert.ok(forced[0].onceKey?.includes("u1"));
  assert.equal(findCondition(plan.status?.conditions, "Degraded")?.status ?? "False", "False");
  // Once the pod is gone the drain is recorded as any other.
  assert.ok(recorded(draining(p, [])));
});

Deno.test("drain policy: Force never deletes pods the policy refuses; they keep the node degraded", () => {
  const p = withDrain({ onTimeout: "Force", podSelector: { matchLabels: { app: "keep" } } }, 30);
  const plan = draining(p, [
    pod("web-1", "n1"),
    pod("cache", "n1", { labels: {}, emptyDir: true }),
    pod("kept", "n1", { labels: { app: "keep" } }),
  ]);
  assert.deepEqual(ofKind(plan, "deletePods")[0]?.pods.map((x) => x.name), ["web-1"]);
  assert.match(
    findCondition(plan.status?.conditions, "Degraded")?.message ?? "",
    /pod default\/cache has emptyDir data/,
  );
});

Deno.test("drain policy: skipWaitForDeleteTimeoutSeconds stops waiting on a NotReady node", () => {
  const stuck = pod("stuck", "n1", {
    terminating: true,
    deletionTimestamp: "2026-01-01T00:50:00Z",
  });
  const plan = (ready: boolean, drain: DrainPolicySpec) =>
    planPool(input(withDrain(drain), {
      nodes: [node("n1", { unschedulable: true, ready })],
      bootcNodes: [bootcNode("n1", { phase: "staged", slotAt: EARLIER, wasCordoned: false })],
      pods: [stuck],
    }));
  assert.ok(recorded(plan(false, { skipWaitForDeleteTimeoutSeconds: 60 })));
  assert.ok(!recorded(plan(true, { skipWaitForDeleteTimeoutSeconds: 60 })));
  assert.ok(!recorded(plan(false, {})));
});

Deno.test("drain policy: Force waits for deleted pods, and names one still there well past its grace", () => {
  const p = withDrain({ onTimeout: "Force" }, 30);
  const going = (at: string) => pod("web-1", "n1", { terminating: true, deletionTimestamp: at });
  const fresh = draining(p, [going("2026-01-01T00:59:50Z")]);
  assert.equal(findCondition(fresh.status?.conditions, "Degraded")?.status ?? "False", "False");
  assert.deepEqual(ofKind(fresh, "deletePods"), [], "a terminating pod is not deleted again");
  const stuck = draining(p, [going("2026-01-01T00:58:00Z")]);
  assert.match(
    findCondition(stuck.status?.conditions, "Degraded")?.message ?? "",
    /did not finish within 30s: .*still terminating \(default\/web-1\)/,
  );
});

Deno.test("drain policy: Force keeps evicting what eviction can remove; it deletes only PDB-blocked pods", () => {
  const p = withDrain({ onTimeout: "Force" }, 30);
  const plan = draining(p, [
    pod("web-1", "n1", { uid: "u1" }),
    pod("api-1", "n1", { labels: { app: "api" } }),
    pod("lone", "n1", { labels: { app: "lone" } }),
  ], [pdb("web", "web", 0), pdb("api", "api", 1)]);
  assert.deepEqual(
    ofKind(plan, "evict").flatMap((a) => a.pods.map((x) => x.name)),
    ["api-1", "lone"],
    "a pod whose PDB has room, or with no PDB, is evicted past the timeout too",
  );
  assert.deepEqual(ofKind(plan, "deletePods").flatMap((a) => a.pods.map((x) => x.name)), [
    "web-1",
  ]);
  const forced = plan.events.filter((e) => e.reason === "DrainForced").map((e) => e.message);
  assert.equal(forced.length, 1);
  assert.match(forced[0], /pod default\/web-1 .*overriding PodDisruptionBudget default\/web,/);
  // Nothing to force: the pass is an eviction, and DrainForced never says it overrides a budget.
  const roomy = draining(p, [pod("web-1", "n1")], [pdb("web", "web", 1)]);
  assert.deepEqual(ofKind(roomy, "deletePods"), []);
  assert.deepEqual(ofKind(roomy, "evict")[0]?.pods.map((x) => x.name), ["web-1"]);
  assert.deepEqual(roomy.events.filter((e) => e.reason === "DrainForced"), []);
});

Deno.test("drain policy: Force whose pods are not removed past the timeout's slack degrades, named", () => {
  const p = withDrain({ onTimeout: "Force" }, 30);
  const plan = (slotAt: string) =>
    planPool(input(p, {
      nodes: [node("n1", { unschedulable: true })],
      bootcNodes: [bootcNode("n1", { phase: "staged", slotAt, wasCordoned: false })],
      pods: [pod("web-1", "n1")],
      pdbs: [pdb("web", "web", 0)],
    }));
  // Just past the timeout: deleting, not degraded yet.
  const first = plan(EARLIER);
  assert.equal(ofKind(first, "deletePods").length, 1);
  assert.equal(findCondition(first.status?.conditions, "Degraded")?.status ?? "False", "False");
  // An hour later the pod is still there, not even terminating: its deletion keeps failing.
  const late = plan("2025-12-31T23:00:00Z");
  assert.equal(ofKind(late, "deletePods").length, 1, "still tried (the shell backs off)");
  const degraded = findCondition(late.status?.conditions, "Degraded");
  assert.equal(degraded?.status, "True");
  assert.match(
    degraded?.message ?? "",
    /did not finish within 30s: pod default\/web-1 .*onTimeout is Force but evicting or deleting/,
  );
  assert.ok(
    late.events.some((e) => e.reason === "DrainBlocked" && /onTimeout is Force/.test(e.message)),
  );
  // The same for a pod whose eviction keeps failing (no PDB refuses it).
  const evicting = planPool(input(p, {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [
      bootcNode("n1", { phase: "staged", slotAt: "2025-12-31T23:00:00Z", wasCordoned: false }),
    ],
    pods: [pod("lone", "n1", { labels: {} })],
  }));
  assert.equal(findCondition(evicting.status?.conditions, "Degraded")?.status, "True");
});

Deno.test("drain policy: a node whose emptyDir pod the policy refuses is not granted a slot, named", () => {
  const plan = (drain: DrainPolicySpec) =>
    planPool(input(withDrain(drain), {
      nodes: [node("n1"), node("n2")],
      bootcNodes: [bootcNode("n1", { phase: "staged" }), bootcNode("n2", { phase: "staged" })],
      pods: [pod("cache", "n1", { labels: {}, emptyDir: true })],
    }));
  const held = plan({});
  const granted = ofKind(held, "patchNode").filter((a) => a.intent === "grant").map((a) => a.node);
  assert.deepEqual(granted, ["n2"], "n1 is neither cordoned nor given the slot");
  assert.deepEqual(held.status?.queue?.find((q) => q.node === "n1")?.waitingFor, "DrainPolicy");
  assert.match(
    findCondition(held.status?.conditions, "UpToDate")?.message ?? "",
    /drain policy refuses: n1 \(pod default\/cache has emptyDir data \(set spec\.rollout\.drain\.deleteEmptyDirData/,
  );
  const allowed = plan({ deleteEmptyDirData: true });
  assert.ok(ofKind(allowed, "patchNode").some((a) => a.intent === "grant" && a.node === "n1"));
});

Deno.test("drain policy: waitForVolumeDetach holds the reboot until the node's attachments go", () => {
  const p = withDrain({ waitForVolumeDetach: true }, 60);
  const attached = {
    name: "csi-0a1b",
    attacher: "driver.longhorn.io",
    persistentVolume: "pvc-data",
    claim: { namespace: "default", name: "data" },
  };
  const kept = {
    name: "csi-kept",
    persistentVolume: "pvc-im",
    claim: { namespace: "default", name: "im" },
  };
  const plan = (attachments: VolumeAttachmentSummary[] | undefined, now?: string) =>
    planPool({
      ...input(p, {
        nodes: [node("n1", { unschedulable: true })],
        bootcNodes: [bootcNode("n1", { phase: "staged", slotAt: EARLIER, wasCordoned: false })],
        pods: [pod("im", "n1", { labels: { app: "longhorn" }, daemonSet: true, claims: ["im"] })],
        ...(now ? { now } : {}),
      }),
      ...(attachments ? { attachmentsByNode: new Map([["n1", attachments]]) } : {}),
    });
  // Pods gone but a volume still attached: no finished drain, no reboot request, and the
  // node's Drained condition says what it waits for.
  const waiting = plan([attached]);
  assert.ok(!recorded(waiting), "no drain recorded while a volume is attached");
  const report = ofKind(waiting, "patchBootcNodeStatus")[0]?.patch as
    | { status?: { conditions?: { type: string; message?: string }[] } }
    | undefined;
  assert.match(
    report?.status?.conditions?.find((c) => c.type === "Drained")?.message ?? "",
    /waiting for VolumeAttachment csi-0a1b .* to detach/,
  );
  // A volume of a pod the drain leaves alone (a DaemonSet's) does not hold it.
  assert.ok(recorded(plan([kept])), "the kept pod's volume does not block");
  assert.ok(recorded(plan([])), "detached: the drain finishes");
  // Attachments not read: the node waits as for unknown pods, asking for them.
  const unknown = plan(undefined);
  assert.ok(!recorded(unknown));
  assert.deepEqual(unknown.needPods, ["n1"]);
  // Past the drain timeout the stuck attachment is named and the node degraded.
  const late = plan([attached], "2026-01-01T01:00:30Z");
  assert.ok(!recorded(late));
  const degraded = findCondition(late.status?.conditions, "Degraded");
  assert.equal(degraded?.status, "True");
  assert.match(
    degraded?.message ?? "",
    /VolumeAttachment csi-0a1b \(PersistentVolume pvc-data, claim default\/data, driver\.longhorn\.io\) still attached/,
  );
  // Force cannot detach a volume: past the timeout's slack it degrades, nothing deleted for it.
  const forced = withDrain({ waitForVolumeDetach: true, onTimeout: "Force" }, 60);
  const forcedPlan = planPool({
    ...input(forced, {
      nodes: [node("n1", { unschedulable: true })],
      bootcNodes: [bootcNode("n1", { phase: "staged", slotAt: EARLIER, wasCordoned: false })],
      now: "2026-01-01T01:01:30Z",
    }),
    attachmentsByNode: new Map([["n1", [attached]]]),
  });
  assert.ok(!recorded(forcedPlan));
  assert.equal(findCondition(forcedPlan.status?.conditions, "Degraded")?.status, "True");
});

Deno.test("drain policy: with Force, volumes wait for the pods; a kept pod's ephemeral claim stays", () => {
  // Past the timeout, Force deletes the PDB-pinned pod; its attached volume is no failure yet.
  const p = withDrain({ onTimeout: "Force", waitForVolumeDetach: true }, 600);
  const SLOT = "2026-01-01T00:49:00Z"; // past the 600 s drain timeout
  const world = (pods: ReturnType<typeof pod>[], attachments: VolumeAttachmentSummary[]) =>
    planPool({
      ...input(p, {
        nodes: [node("n1", { unschedulable: true })],
        bootcNodes: [bootcNode("n1", { phase: "staged", slotAt: SLOT, wasCordoned: false })],
        pods,
        pdbs: [pdb("db", "db", 0)],
      }),
      attachmentsByNode: new Map([["n1", attachments]]),
    });
  const volume = {
    name: "csi-1",
    persistentVolume: "pv-1",
    claim: { namespace: "default", name: "data-db-0" },
  };
  const forcing = world([pod("db-0", "n1", { labels: { app: "db" }, claims: ["data-db-0"] })], [
    volume,
  ]);
  assert.equal(ofKind(forcing, "deletePods").length, 1, "Force deletes the pinned pod");
  assert.notEqual(findCondition(forcing.status?.conditions, "Degraded")?.status, "True");
  // A DaemonSet pod's generic ephemeral volume (claim <pod>-<volume>) stays with it.
  const ds = pod("agent-x", "n1", { daemonSet: true, claims: ["agent-x-cache"] });
  const ephemeral = { name: "csi-2", claim: { namespace: "default", name: "agent-x-cache" } };
  assert.ok(recorded(world([ds], [ephemeral])), "the kept pod's ephemeral volume does not hold");
});
