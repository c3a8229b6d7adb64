import assert from "node:assert/strict";
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  PoolConditionType,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { MAX_TRUST_CANDIDATES, type SignatureMemo, trustCandidates } from "./trust.ts";
import { bootcNode, image, input, node, pool } from "../testing/fixtures.ts";
import type { NodeSummary } from "../model/types.ts";

const EARLIER = "2026-01-01T00:59:00Z";
const AT = new Date(EARLIER);
const KEY = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEfIbSmxnNNiu4OeJmnUL/FS5cLH5x
O+9IXQ2Tl3ioBTYWr7uevhDH/ijuUU53x8ykMs+Kb6Bt/GrECzGDsNvr7w==
-----END PUBLIC KEY-----
`;

/** The fixture pool (pinned to image("b"), its target b) under Enforce. */
function enforcing(status: BootcNodePool["status"] = {}): BootcNodePool {
  const p = pool({
    status: {
      targetDigest: image("b").split("@")[1],
      targetImage: image("b"),
      observedGeneration: 1,
      ...status,
    },
  });
  p.spec.image.verification = { mode: "Enforce", keys: [{ pem: KEY }] };
  return p;
}

const verified = (): SignatureMemo => ({
  at: AT,
  result: { ok: true, verdict: { verified: true, by: "keys[0]" } },
});
const unsigned = (): SignatureMemo => ({
  at: AT,
  result: { ok: true, verdict: { verified: false, message: "no signature" } },
});

function ofKind<K extends Action["kind"]>(plan: Plan, kind: K): Extract<Action, { kind: K }>[] {
  return plan.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
}
const rebootRequested = (plan: Plan) =>
  ofKind(plan, "patchBootcNode").some((a) =>
    (a.patch.spec as { desiredImageState?: string } | undefined)?.desiredImageState === "Booted"
  );

function planWith(
  p: BootcNodePool,
  fleet: { nodes: NodeSummary[]; bootcNodes: BootcNode[] },
  signatures: Map<string, SignatureMemo>,
): Plan {
  return planPool({ ...input(p, fleet), signatures });
}

/** n1 holds a slot, cordoned and drained for b, its image staged: next is its reboot request. */
function drainedFleet(
  state: "Staged" | "Booted" = "Staged",
  phase: "staged" | "rebooting" = "staged",
) {
  return {
    nodes: [node("n1", { unschedulable: true })],
    bootcNodes: [
      bootcNode("n1", { phase, state, slotAt: EARLIER, drainedAt: EARLIER, wasCordoned: false }),
    ],
  };
}

Deno.test("trust gate: a reboot is asked for only into an image that verified", () => {
  const p = enforcing();
  assert.ok(rebootRequested(planWith(p, drainedFleet(), new Map([[image("b"), verified()]]))));

  // No verdict yet (a restart, a new key): the target is still shown, the node keeps its
  // slot and waits; no reboot is asked for.
  const waiting = planWith(p, drainedFleet(), new Map());
  assert.equal(waiting.status?.targetImage, image("b"));
  assert.ok(!rebootRequested(waiting));
  assert.equal(waiting.status?.slotsInUse, 1);
  assert.ok(!waiting.events.some((e) => e.reason === "UpdateUndone"));
  assert.match(
    JSON.stringify(waiting.status?.notes ?? []),
    /verifying the signature of .*bbbbbbbbbbbb/,
  );
});

Deno.test("trust gate: a node bound for a refused image is undone unless it is rebooting", () => {
  const p = enforcing();
  const refused = new Map([[image("b"), unsigned()]]);
  // Its reboot was asked for, but its daemon has not started it: revoked, slot handed back.
  const asked = planWith(p, drainedFleet("Booted"), refused);
  assert.ok(asked.events.some((e) => e.reason === "UpdateUndone"));
  const revoke = ofKind(asked, "patchBootcNode").find((a) => a.why === "release slot");
  assert.deepEqual(revoke?.patch.spec, { desiredImageState: "Staged" });
  const uncordon = ofKind(asked, "patchNode").find((a) => a.why === "release slot");
  assert.deepEqual(uncordon?.patch.spec, { unschedulable: null });
  assert.ok(!rebootRequested(asked));
  const degraded = findCondition(asked.status?.conditions, PoolConditionType.Degraded);
  assert.equal(degraded?.reason, "SignatureInvalid");
  assert.equal(asked.status?.targetImage, undefined);

  // Its daemon already reboots it: nothing can stop that; it keeps its slot until back.
  const rebooting = planWith(p, drainedFleet("Booted", "rebooting"), refused);
  assert.ok(!rebooting.events.some((e) => e.reason === "UpdateUndone"));
  assert.equal(rebooting.status?.slotsInUse, 1);
});

Deno.test("trust gate: no node is given an image without a verdict, and no slot", () => {
  const p = enforcing();
  const fleet = {
    nodes: [node("n1"), node("n2")],
    bootcNodes: [bootcNode("n1", { phase: "staged" })],
  };
  const waiting = planWith(p, fleet, new Map());
  assert.equal(ofKind(waiting, "createBootcNode").length, 0);
  assert.equal(ofKind(waiting, "patchNode").filter((a) => a.why === "assign slot").length, 0);
  const going = planWith(p, fleet, new Map([[image("b"), verified()]]));
  assert.equal(ofKind(going, "createBootcNode").length, 1);
  assert.equal(ofKind(going, "patchNode").filter((a) => a.why === "assign slot").length, 1);
});

Deno.test("trust gate: a pool rollback goes only to an image that verifies", () => {
  // The spec still means c, which failed; the hold keeps the pool on b, which is refused.
  const p = enforcing({
    targetDigest: image("c").split("@")[1],
    targetImage: image("c"),
    rollbackHold: { ref: image("c"), failedImage: image("c"), image: image("b"), at: EARLIER },
  });
  p.spec.image.ref = image("c");
  const fleet = {
    nodes: [node("n1")],
    bootcNodes: [bootcNode("n1", { desired: image("c"), booted: image("c") })],
  };
  const plan = planWith(p, fleet, new Map([[image("c"), verified()], [image("b"), unsigned()]]));
  assert.ok(!JSON.stringify(plan.actions).includes(image("b")), "no node is sent to b");
  const degraded = findCondition(plan.status?.conditions, PoolConditionType.Degraded);
  assert.equal(degraded?.reason, "SignatureInvalid");
  assert.match(degraded?.message ?? "", /bbbbbbbbbbbb.*no signature; no node is updated to it/);
  const ok = planWith(p, fleet, new Map([[image("c"), verified()], [image("b"), verified()]]));
  const synced = ofKind(ok, "patchBootcNode").find((a) => a.why === "sync spec");
  assert.equal((synced?.patch.spec as { desiredImage?: string }).desiredImage, image("b"));
});

Deno.test("trustCandidates: every image a node may be given, bounded", () => {
  const p = enforcing({
    history: [
      { revision: 1, image: image("d"), digest: "", startedAt: EARLIER, outcome: "Succeeded" },
      { revision: 2, image: image("e"), digest: "", startedAt: EARLIER, outcome: "Failed" },
    ],
  });
  const bns = [
    bootcNode("n1", { desired: image("f") }),
    bootcNode("x", { pool: "other", desired: image("g") }),
  ];
  const images = trustCandidates(p, { target: { image: image("c"), digest: "" } }, bns);
  assert.deepEqual(images, [image("c"), image("b"), image("d"), image("f")]);
  const many = Array.from(
    { length: 40 },
    (_, i) => bootcNode(`n${i}`, { desired: `${image("h")}${i}` }),
  );
  // All are named; the shell checks the first MAX_TRUST_CANDIDATES and says the rest cannot be.
  assert.ok(trustCandidates(p, {}, many).length > MAX_TRUST_CANDIDATES);
  // Audit gates nothing: only the candidate is checked, to be reported.
  p.spec.image.verification!.mode = "Audit";
  assert.deepEqual(trustCandidates(p, { target: { image: image("c"), digest: "" } }, bns), [
    image("c"),
  ]);
});

Deno.test("trust gate: a key that cannot be used is InvalidSpec naming it; nothing moves", () => {
  const p = enforcing();
  const plan = planPool({
    ...input(p, drainedFleet()),
    // The shell asks for no verdict while a key cannot be used.
    signatures: new Map(),
    keyErrors: ["spec.image.verification.keys[0].secretRef: Secret bootc-operator/k not found"],
  });
  const degraded = findCondition(plan.status?.conditions, PoolConditionType.Degraded);
  assert.equal(degraded?.reason, "InvalidSpec");
  assert.match(degraded?.message ?? "", /keys\[0\]\.secretRef: Secret bootc-operator\/k not found/);
  assert.ok(!rebootRequested(plan));
  assert.ok(plan.events.some((e) => e.reason === "UpdateUndone"));
});

Deno.test("trust gate: a node held for its first verdict is never judged late for a reboot", () => {
  const p = enforcing();
  // Hours after its drain, still no verdict: no reboot was asked for, so none is overdue.
  const plan = planPool({
    ...input(p, { ...drainedFleet(), now: "2026-01-01T05:00:00Z" }),
    signatures: new Map(),
  });
  assert.ok(!plan.events.some((e) => e.reason === "RebootTimedOut"), JSON.stringify(plan.events));
  assert.ok(!rebootRequested(plan));
});

Deno.test("trust gate: a target that cannot be checked stays shown; nothing waits cordoned on it", () => {
  const p = enforcing();
  const down: SignatureMemo = { at: AT, result: { ok: false, message: "registry did not answer" } };
  const plan = planWith(p, drainedFleet("Booted"), new Map([[image("b"), down]]));
  assert.equal(plan.status?.targetImage, image("b"), "the target is still the target");
  const degraded = findCondition(plan.status?.conditions, PoolConditionType.Degraded);
  assert.equal(degraded?.reason, "SignatureInvalid");
  assert.match(degraded?.message ?? "", /cannot be checked: registry did not answer/);
  // The node in its slot is handed back, its reboot request revoked.
  assert.ok(plan.events.some((e) => e.reason === "UpdateUndone"));
  assert.ok(!rebootRequested(plan));
});

Deno.test("trust gate: a node rolled back to an image without a verdict yet stays where it is", () => {
  // RollbackNode: n1 failed on b (the target) and goes back to a, whose verdict is not in.
  const p = enforcing({
    history: [
      { revision: 1, image: image("a"), digest: "", startedAt: EARLIER, outcome: "Succeeded" },
      { revision: 2, image: image("b"), digest: "", startedAt: EARLIER, outcome: "Progressing" },
    ],
  });
  p.spec.rollout!.onFailure = "RollbackNode";
  const n1 = bootcNode("n1", { desired: image("a"), booted: image("b") });
  n1.metadata.annotations = { ...n1.metadata.annotations, "bootc.dev/failed-image": image("b") };
  const plan = planWith(
    p,
    { nodes: [node("n1")], bootcNodes: [n1] },
    new Map([[image("b"), verified()]]),
  );
  const synced = ofKind(plan, "patchBootcNode").filter((a) => a.node === "n1" && a.patch.spec);
  assert.deepEqual(synced, [], "not sent back to the image it failed on");
});

Deno.test("trust gate: each node of an enforcing pool carries the keys its host requires", () => {
  const p = enforcing();
  const fleet = {
    nodes: [node("n1"), node("n2")],
    bootcNodes: [bootcNode("n1", { phase: "staged" })],
  };
  const keyed = (plan: Plan) => ({
    created: ofKind(plan, "createBootcNode").map((a) => a.object.spec.signatureKeys),
    patched: ofKind(plan, "patchBootcNode").map((a) =>
      (a.patch.spec as { signatureKeys?: unknown } | undefined)?.signatureKeys
    ).filter((k) => k !== undefined),
  });
  const signatures = new Map([[image("b"), verified()]]);
  const known = planPool({ ...input(p, fleet), signatures, hostKeys: [KEY] });
  assert.deepEqual(keyed(known), { created: [[KEY]], patched: [[KEY]] });
  // Keys not known this moment (a key Secret unreadable): what a node has stays.
  const withKeys = { ...fleet, bootcNodes: [bootcNode("n1", { phase: "staged" })] };
  withKeys.bootcNodes[0].spec.signatureKeys = [KEY];
  assert.deepEqual(keyed(planPool({ ...input(p, withKeys), signatures })).patched, []);
  // Audit, or no policy: the host's policy is its own (the field is removed).
  p.spec.image.verification!.mode = "Audit";
  assert.deepEqual(
    keyed(planPool({ ...input(p, withKeys), signatures, hostKeys: [KEY] })).patched,
    [
      null,
    ],
  );
});
