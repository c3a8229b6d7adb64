import assert from "node:assert/strict";
import {
  ANNOTATION_CURRENT_IMAGE,
  ANNOTATION_CURRENT_VERSION,
  ANNOTATION_DESIRED_IMAGE,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_NODE_STATE,
  NODE_INFO_ANNOTATIONS,
} from "../../lib/api/mod.ts";
import {
  applyMergePatch,
  foldNodeAnnotations,
  infoChanges,
  NODE_ANNOTATIONS_WHY,
  nodeInfo,
  projectNode,
  shortImage,
  withoutNodeInfo,
} from "./node_annotations.ts";
import { type Action, type Plan, planPool } from "./planner.ts";
import { bootcNode, digest, image, input, node, pool, REPO } from "../testing/fixtures.ts";

const NOW = "2026-01-01T01:00:00Z";
const EARLIER = "2026-01-01T00:59:00Z";
const SHORT_A = `${REPO}@sha256:${"a".repeat(12)}`;
const SHORT_B = `${REPO}@sha256:${"b".repeat(12)}`;

/** The four annotations of a node that runs `a` and should run `b`, in `state`. */
function info(state: string, current = SHORT_A, desired = SHORT_B): Record<string, string> {
  return {
    [ANNOTATION_CURRENT_IMAGE]: current,
    [ANNOTATION_DESIRED_IMAGE]: desired,
    [ANNOTATION_NODE_STATE]: state,
  };
}

/** The plan's writes as the shell applies them (annotations folded in). */
function applied(plan: Plan): Action[] {
  return foldNodeAnnotations(plan.actions, plan.nodeAnnotations);
}

function nodePatches(actions: readonly Action[], name: string) {
  return actions.filter((a): a is Extract<Action, { kind: "patchNode" }> =>
    a.kind === "patchNode" && a.node === name
  );
}

Deno.test("shortImage: repository and 12 hex digits; a tag ref gets its digest", () => {
  assert.equal(shortImage(image("b")), SHORT_B);
  assert.equal(shortImage(`${REPO}:v2`, digest("c")), `${REPO}:v2@sha256:${"c".repeat(12)}`);
  assert.equal(shortImage(`${REPO}:v2`), `${REPO}:v2`);
  assert.equal(shortImage(undefined, digest("c")), `sha256:${"c".repeat(12)}`);
  assert.equal(shortImage(undefined), undefined);
});

Deno.test("nodeInfo: booted image and version, desired image, state", () => {
  const bn = bootcNode("n1", { booted: image("a"), desired: image("b") });
  bn.status!.booted!.version = "2.0";
  assert.deepEqual(nodeInfo(bn, "Staging"), {
    ...info("Staging"),
    [ANNOTATION_CURRENT_VERSION]: "2.0",
  });
  // Nothing reported yet: only what the controller knows.
  assert.deepEqual(nodeInfo(bootcNode("n1", { phase: "pending" }), "Pending"), {
    [ANNOTATION_CURRENT_IMAGE]: undefined,
    [ANNOTATION_CURRENT_VERSION]: undefined,
    [ANNOTATION_DESIRED_IMAGE]: SHORT_B,
    [ANNOTATION_NODE_STATE]: "Pending",
  });
});

Deno.test("infoChanges: only what differs; absent values are removed, others untouched", () => {
  const current = { ...info("Staged"), [ANNOTATION_CURRENT_VERSION]: "1.0", other: "x" };
  assert.equal(
    infoChanges(current, { ...info("Staged"), [ANNOTATION_CURRENT_VERSION]: "1.0" }),
    undefined,
  );
  assert.deepEqual(infoChanges(current, info("Draining")), {
    [ANNOTATION_NODE_STATE]: "Draining",
    [ANNOTATION_CURRENT_VERSION]: null,
  });
  assert.deepEqual(
    infoChanges(current, undefined),
    Object.fromEntries(NODE_INFO_ANNOTATIONS.map((k) => [k, null])),
  );
  assert.equal(infoChanges({ other: "x" }, undefined), undefined);
});

Deno.test("applyMergePatch and projectNode follow RFC 7386", () => {
  assert.deepEqual(
    applyMergePatch({ a: 1, b: { c: 2, d: 3 } }, { a: null, b: { c: 4 }, e: [1] }),
    { b: { c: 4, d: 3 }, e: [1] },
  );
  const n = node("n1", { annotations: { x: "1", y: "2" } });
  const after = projectNode(n, [
    { metadata: { annotations: { x: null, z: "3" } }, spec: { unschedulable: true } },
    { metadata: { labels: { extra: "" } } },
  ]);
  assert.deepEqual(after.annotations, { y: "2", z: "3" });
  assert.equal(after.unschedulable, true);
  assert.equal(after.labels.extra, "");
  assert.deepEqual(n.annotations, { x: "1", y: "2" }, "the input is not changed");
  assert.equal(projectNode(after, [{ spec: { unschedulable: null } }]).unschedulable, false);
});

Deno.test("fold: into the plan's last write of that Node, else a write of its own, intent annotate", () => {
  const actions: Action[] = [
    { kind: "patchNode", node: "a", patch: { metadata: { labels: { x: "" } } }, why: "one" },
    {
      kind: "patchNode",
      node: "a",
      patch: { metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: NOW } } },
      why: "assign slot",
      intent: "grant",
    },
    { kind: "patchBootcNode", node: "b", patch: {}, why: "sync spec" },
  ];
  const out = foldNodeAnnotations(
    actions,
    new Map([["a", { [ANNOTATION_NODE_STATE]: "Draining" }], ["b", {
      [ANNOTATION_NODE_STATE]: "Staging",
    }]]),
  );
  assert.deepEqual(out.slice(0, 1), actions.slice(0, 1));
  assert.deepEqual(out[1], {
    ...actions[1],
    patch: {
      metadata: {
        annotations: { [ANNOTATION_IN_REBOOT_SLOT]: NOW, [ANNOTATION_NODE_STATE]: "Draining" },
      },
    },
  });
  assert.deepEqual(out[3], {
    kind: "patchNode",
    node: "b",
    patch: { metadata: { annotations: { [ANNOTATION_NODE_STATE]: "Staging" } } },
    why: NODE_ANNOTATIONS_WHY,
    intent: "annotate",
  });
  assert.equal(out.length, 4);
  assert.deepEqual(foldNodeAnnotations(actions, undefined), actions);
});

Deno.test("annotations: a new member says Pending for the target, in the label write", () => {
  const plan = planPool(input(pool(), { nodes: [node("a", { labels: { role: "worker" } })] }));
  assert.deepEqual(plan.nodeAnnotations?.get("a"), {
    [ANNOTATION_DESIRED_IMAGE]: SHORT_B,
    [ANNOTATION_NODE_STATE]: "Pending",
  });
  const writes = nodePatches(applied(plan), "a");
  assert.equal(writes.length, 1, "no write of their own");
  assert.equal(writes[0].why, "label managed");
});

/** `a` staged (its Node showing `shown`) while `x` holds the pool's one slot, rebooting. */
function stagedBehind(shown: string, o: { paused?: boolean } = {}) {
  return planPool(input(pool({ maxUnavailable: 1, paused: o.paused ?? false }), {
    nodes: [
      node("x", { unschedulable: true, annotations: info("Rebooting") }),
      node("a", { annotations: info(shown) }),
    ],
    bootcNodes: [
      bootcNode("x", { phase: "rebooting", slotAt: EARLIER, drainedAt: EARLIER }),
      bootcNode("a", { phase: "staged" }),
    ],
  }));
}

Deno.test("annotations: the daemon's Staged after Pending, slots handed out: no write of its own", () => {
  const plan = stagedBehind("Pending");
  assert.equal(plan.nodeAnnotations?.get("a"), undefined);
  assert.deepEqual(nodePatches(applied(plan), "a"), []);
});

Deno.test("annotations: Staged is written at once when no grant is coming, after Staging, or from worse", () => {
  for (
    const [shown, paused] of [["Pending", true], ["Staging", false], ["Failed", false]] as const
  ) {
    const plan = stagedBehind(shown, { paused });
    assert.deepEqual(
      plan.nodeAnnotations?.get("a"),
      { [ANNOTATION_NODE_STATE]: "Staged" },
      `${shown}, paused ${paused}`,
    );
    const writes = nodePatches(applied(plan), "a");
    assert.deepEqual(writes.map((w) => [w.why, w.intent]), [[NODE_ANNOTATIONS_WHY, "annotate"]]);
  }
  // Once the Node says so, nothing more is written.
  const again = stagedBehind("Staged", { paused: true });
  assert.equal(again.nodeAnnotations?.get("a"), undefined);
  assert.deepEqual(nodePatches(applied(again), "a"), []);
});

Deno.test("annotations: the daemon's Staging costs no write of its own", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("a", { annotations: info("Pending") })],
    bootcNodes: [bootcNode("a", { phase: "staging" })],
  }));
  assert.equal(plan.nodeAnnotations, undefined);
  assert.deepEqual(nodePatches(applied(plan), "a"), []);
  // A write made anyway carries it (here: the managed label, restored).
  const carried = planPool(input(pool(), {
    nodes: [node("a", { annotations: info("Pending"), labels: { role: "worker" } })],
    bootcNodes: [bootcNode("a", { phase: "staging" })],
  }));
  const writes = nodePatches(applied(carried), "a");
  assert.equal(writes.length, 1);
  const annotations = (writes[0].patch.metadata as { annotations: Record<string, string> })
    .annotations;
  assert.equal(annotations[ANNOTATION_NODE_STATE], "Staging");
  // From a worse state than Pending it is written at once: no stale Degraded.
  const recovered = planPool(input(pool(), {
    nodes: [node("a", { annotations: info("Degraded") })],
    bootcNodes: [bootcNode("a", { phase: "staging" })],
  }));
  assert.deepEqual(recovered.nodeAnnotations?.get("a"), { [ANNOTATION_NODE_STATE]: "Staging" });
  assert.equal(nodePatches(applied(recovered), "a").length, 1);
});

Deno.test("annotations: a grant says Draining in the grant's own write", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("a", { annotations: info("Staged") })],
    bootcNodes: [bootcNode("a", { phase: "staged" })],
  }));
  assert.deepEqual(plan.nodeAnnotations?.get("a"), { [ANNOTATION_NODE_STATE]: "Draining" });
  const writes = nodePatches(applied(plan), "a");
  assert.equal(writes.length, 1);
  assert.equal(writes[0].intent, "grant");
  const annotations = (writes[0].patch.metadata as { annotations: Record<string, string> })
    .annotations;
  assert.equal(annotations[ANNOTATION_IN_REBOOT_SLOT], NOW);
  assert.equal(annotations[ANNOTATION_NODE_STATE], "Draining");
});

Deno.test("annotations: a finished drain says Rebooting in the drain's own write", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("a", { unschedulable: true, annotations: info("Draining") })],
    bootcNodes: [bootcNode("a", { phase: "staged", slotAt: EARLIER })],
  }));
  assert.deepEqual(plan.nodeAnnotations?.get("a"), { [ANNOTATION_NODE_STATE]: "Rebooting" });
  const writes = nodePatches(applied(plan), "a");
  assert.deepEqual(writes.map((w) => w.why), ["record drain"]);
});

Deno.test("annotations: a release says Updated on the new image in the release's own write", () => {
  const plan = planPool(input(pool(), {
    nodes: [node("n1", {
      unschedulable: true,
      readySince: "2026-01-01T00:00:00Z",
      annotations: info("Verifying", SHORT_B),
    })],
    bootcNodes: [bootcNode("n1", {
      booted: image("b"),
      slotAt: "2026-01-01T00:50:00Z",
      drainedAt: EARLIER,
      state: "Booted",
    })],
  }));
  assert.deepEqual(plan.nodeAnnotations?.get("n1"), { [ANNOTATION_NODE_STATE]: "Updated" });
  const writes = nodePatches(applied(plan), "n1");
  assert.deepEqual(writes.map((w) => w.why), ["release slot"]);
});

Deno.test("annotations: a node that leaves the pool loses them with its release", () => {
  const plan = planPool(input(pool(), {
    nodes: [
      node("a", {
        labels: { role: "infra", "bootc.dev/managed": "" },
        annotations: info("Updated"),
      }),
    ],
    bootcNodes: [bootcNode("a", { booted: image("b") })],
  }));
  const writes = nodePatches(applied(plan), "a");
  assert.equal(writes.length, 1);
  const annotations = (writes[0].patch.metadata as { annotations: Record<string, unknown> })
    .annotations;
  for (const k of [ANNOTATION_CURRENT_IMAGE, ANNOTATION_DESIRED_IMAGE, ANNOTATION_NODE_STATE]) {
    assert.equal(annotations[k], null, k);
  }
  const p = pool();
  p.metadata.deletionTimestamp = NOW;
  const deleted = planPool(input(p, {
    nodes: [node("a", { annotations: info("Updated") })],
    bootcNodes: [bootcNode("a", { booted: image("b") })],
  }));
  assert.equal(deleted.nodeAnnotations?.get("a")?.[ANNOTATION_NODE_STATE], null);
  // A gone pool's restores take them away too.
  const restores = withoutNodeInfo(
    [{ kind: "patchNode", node: "a", patch: { spec: { unschedulable: null } }, why: "restore" }],
    new Map([["a", node("a", { annotations: info("Draining") })]]),
  );
  const restored = nodePatches(restores, "a")[0].patch.metadata as {
    annotations: Record<string, unknown>;
  };
  assert.equal(restored.annotations[ANNOTATION_NODE_STATE], null);
});

Deno.test("annotations are never read back: the plan's writes and status ignore them", () => {
  const base = {
    bootcNodes: [bootcNode("a", { phase: "staged" }), bootcNode("b", { phase: "staging" })],
  };
  const plain = planPool(input(pool(), { ...base, nodes: [node("a"), node("b")] }));
  // Lies on the Nodes: a staged node that says it is Updated on another image, and so on.
  const lying = planPool(input(pool(), {
    ...base,
    nodes: [
      node("a", { annotations: info("Updated", SHORT_B, SHORT_A) }),
      node("b", { annotations: { [ANNOTATION_NODE_STATE]: "Rebooting" } }),
    ],
  }));
  assert.deepEqual(lying.actions, plain.actions);
  assert.deepEqual(lying.status, plain.status);
  assert.deepEqual(lying.events, plain.events);
});

Deno.test("annotations: under an external orchestrator Staged is written at once", () => {
  const p = pool();
  (p.spec.rollout as Record<string, unknown>).strategy = "External";
  const plan = planPool(input(p, {
    nodes: [node("a", { annotations: info("Pending") })],
    bootcNodes: [bootcNode("a", { phase: "staged" })],
  }));
  assert.deepEqual(plan.nodeAnnotations?.get("a"), { [ANNOTATION_NODE_STATE]: "Staged" });
});

Deno.test("annotations: a halted rollout (two unhealthy slots) shows Staged at once", () => {
  const plan = planPool(input(pool({ maxUnavailable: 3 }), {
    nodes: [
      node("x", { unschedulable: true }),
      node("y", { unschedulable: true }),
      node("a", { annotations: info("Pending") }),
    ],
    bootcNodes: [
      bootcNode("x", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("y", { phase: "degraded", slotAt: EARLIER, drainedAt: EARLIER, state: "Booted" }),
      bootcNode("a", { phase: "staged" }),
    ],
  }));
  assert.equal(
    plan.status?.conditions?.find((c) => c.type === "Degraded")?.reason,
    "RolloutHalted",
  );
  assert.deepEqual(plan.nodeAnnotations?.get("a"), { [ANNOTATION_NODE_STATE]: "Staged" });
  assert.equal(plan.bootcNodeDisplay?.get("a")?.[ANNOTATION_NODE_STATE], "Staged");
});
