/**
 * Property: a node the daemon may reboot is one the planner, the classification and
 * the plugin all count as disrupted. Random worlds of one node (its host, its
 * BootcNode's spec and report, its Node's record and cordon, the record perhaps
 * damaged or forged) go through the daemon's `decide`. Whenever the daemon applies or
 * rolls back (it persists its Rebooting report first), that report and the Node go
 * through the real `planPool` beside a second staged node that wants the pool's one
 * slot, and through the plugin's view. The machine may be down, so:
 * - `classifyNode` says disrupted;
 * - the plan counts it (`slotsInUse`), grants the other node nothing, and neither
 *   removes its slot record nor uncordons it;
 * - the plugin shows it as rebooting (or failed), never as waiting or done.
 *
 * Some worlds then lose the Node's record altogether once the reboot began (deleted by
 * hand, or by another tool): the daemon's report alone must keep the node counted.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  classifyNode,
} from "../../lib/api/mod.ts";
import { type Action, type Plan, planPool } from "../../controller/planner/planner.ts";
import { isSlotGrant } from "../../controller/planner/plan.ts";
import { bootcNode, input, node, pool } from "../../controller/testing/fixtures.ts";
import type { NodeSummary } from "../../controller/model/types.ts";
import type { NodeLike } from "../../plugin/model.ts";
import { poolProgress } from "../../plugin/progress.ts";
import { RECORD_ANNOTATIONS } from "../../controller/model/disruption.ts";
import { randomWorld, rng, runDaemon, T, type World as DrawnWorld } from "./node_world.ts";

/** A drawn world, perhaps with its Node's record deleted after the reboot began. */
type World = DrawnWorld & { recordLost?: boolean };

const WORLDS = 60_000;

/** The world's node as the planner sees it (w0), beside w1, staged and waiting. */
function planWorld(w: World, status: BootcNode["status"], mirror: boolean) {
  const annotations = { ...(w.node.metadata?.annotations ?? {}) };
  if (w.recordLost) {
    for (const key of RECORD_ANNOTATIONS) delete annotations[key];
  }
  const nodes: NodeSummary[] = [
    node("w0", {
      annotations,
      unschedulable: w.node.spec?.unschedulable ?? false,
      ready: w.node.ready,
      readySince: T,
    }),
    node("w1"),
  ];
  const bn0 = bootcNode("w0", { desired: w.spec.desiredImage });
  bn0.spec = { ...bn0.spec, ...w.spec };
  bn0.status = status;
  const prior = w.node.metadata?.annotations?.[ANNOTATION_WAS_CORDONED];
  bn0.metadata.annotations = mirror && prior !== undefined
    ? { [ANNOTATION_WAS_CORDONED]: prior }
    : {};
  const bn1 = bootcNode("w1", { desired: w.spec.desiredImage, phase: "staged" });
  const p = pool({ ref: w.spec.desiredImage, maxUnavailable: 1 });
  return { p, nodes, bns: [bn0, bn1], plan: input(p, { nodes, bootcNodes: [bn0, bn1], now: T }) };
}

function nodeWrites(plan: Plan, name: string) {
  return plan.actions.filter((a): a is Extract<Action, { kind: "patchNode" }> =>
    a.kind === "patchNode" && a.node === name
  );
}

function asNodeLike(x: NodeSummary): NodeLike {
  return {
    metadata: { name: x.name, labels: x.labels, annotations: x.annotations },
    spec: { unschedulable: x.unschedulable },
    status: { conditions: [{ type: "Ready", status: x.ready ? "True" : "False" }] },
  };
}

function check(w: World, status: BootcNode["status"], mirror: boolean): string {
  const world = planWorld(w, status, mirror);
  const why = (what: string) => `${what}: ${JSON.stringify({ world: w, status, mirror }, null, 1)}`;
  const [bn0] = world.bns;
  const cls = classifyNode({
    bootcNode: bn0,
    node: { annotations: world.nodes[0].annotations, unschedulable: world.nodes[0].unschedulable },
    member: true,
  });
  assert.ok(cls.disrupted, why(`classified ${cls.state}/${cls.reason}, not disrupted`));

  const plan = planPool({ ...world.plan, now: new Date(T) });
  assert.ok((plan.status?.slotsInUse ?? 0) >= 1, why("the plan counts no slot in use"));
  const granted = plan.actions.filter(isSlotGrant).map((a) => (a as { node: string }).node);
  assert.ok(!granted.includes("w1"), why("the other node got a slot"));
  for (const a of nodeWrites(plan, "w0")) {
    const annotations = (a.patch.metadata as { annotations?: Record<string, unknown> })
      ?.annotations;
    const slot = annotations?.[ANNOTATION_IN_REBOOT_SLOT];
    assert.ok(slot !== null, why(`the plan removes its slot record (${a.why})`));
    const spec = a.patch.spec as { unschedulable?: boolean } | undefined;
    assert.ok(spec?.unschedulable !== false, why(`the plan uncordons it (${a.why})`));
  }

  const nodes = new Map(world.nodes.map((x) => [x.name, asNodeLike(x)]));
  const progress = poolProgress({ ...world.p, status: plan.status }, world.bns, nodes);
  const bucket = progress.buckets.get("w0");
  assert.ok(bucket === "rebooting" || bucket === "failed", why(`the plugin shows it ${bucket}`));
  return `${cls.state}/${cls.reason}`;
}

Deno.test("property: a node its daemon may reboot counts as disrupted everywhere", () => {
  const r = rng(47);
  let reboots = 0;
  const seen = new Set<string>();
  for (let i = 0; i < WORLDS; i++) {
    const w = randomWorld(r, { damage: true });
    const decision = runDaemon(w);
    if (decision.action.type !== "apply" && decision.action.type !== "rollback") continue;
    // The daemon persists Rebooting before it runs bootc: that is what the controller reads.
    assert.ok(decision.persistFirst, "a reboot is reported before it starts");
    reboots++;
    const lost = r() < 0.2;
    seen.add(check({ ...w, recordLost: lost }, decision.status, r() < 0.7) + (lost ? "/lost" : ""));
  }
  // The generator reaches reboots, the rollback route and forged records among them.
  assert.ok(reboots > 500, `only ${reboots} reboots`);
  for (const want of ["Rebooting/Rebooting", "Rebooting/RollingBack", "Rebooting/Rebooting/lost"]) {
    assert.ok(seen.has(want), `never reached ${want}: ${[...seen]}`);
  }
});
