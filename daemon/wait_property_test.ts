/**
 * Property: the daemon and the controller never both wait on each other. Random
 * host states, specs, previous reports and Node records go through the daemon's
 * `decide`; the status it writes is then classified the way the controller and
 * the plugin read it (`lib/api/node_state.ts`). Whenever the daemon waits for the
 * controller (Idle=False/Staged, nothing to do: "awaiting desiredImageState:
 * Booted", or a refused reboot), the classification must not say the node waits
 * on its daemon: an undisrupted node is ready for a slot, a disrupted one waits on
 * the controller, a gate or the Node.
 */
import assert from "node:assert/strict";
import { classifyNode, findCondition } from "../lib/api/mod.ts";
import type { Decision } from "./decide.ts";
import { OWNER, randomWorld, rng, runDaemon } from "../tests/differential/node_world.ts";

/** The daemon waits for the controller: Staged, nothing to do. */
function daemonWaits(decision: Decision): boolean {
  const idle = findCondition(decision.status.conditions, "Idle");
  return decision.action.type === "none" && idle?.status === "False" &&
    idle.reason === "Staged";
}

Deno.test("property: the daemon and the controller never both wait on each other", () => {
  const r = rng(22);
  let waits = 0;
  const seen = new Set<string>();
  for (let i = 0; i < 20_000; i++) {
    const w = randomWorld(r);
    const decision = runDaemon(w);
    const cls = classifyNode({
      bootcNode: {
        metadata: { ownerReferences: OWNER },
        spec: w.spec,
        status: decision.status,
      },
      node: {
        annotations: w.node.metadata?.annotations,
        unschedulable: w.node.spec?.unschedulable,
        ready: w.node.ready,
      },
      member: true,
    });
    if (!daemonWaits(decision)) continue;
    waits++;
    seen.add(`${cls.state}/${cls.reason}`);
    const why = () => JSON.stringify({ world: w, status: decision.status, cls }, null, 1);
    assert.notEqual(cls.waitsOn, "daemon", why());
    const degraded = findCondition(decision.status.conditions, "Degraded")?.status === "True";
    if (degraded) continue; // an error the daemon reports: someone must act (shown as Degraded)
    if (!cls.disrupted) assert.ok(cls.readyForSlot, `not ready for a slot: ${why()}`);
    else assert.ok(["controller", "gate", "node"].includes(cls.waitsOn), why());
  }
  // The generator reaches the daemon's waiting states, rollback route included.
  assert.ok(waits > 1000, `only ${waits} waiting states`);
  for (const want of ["Staged/ReadyForSlot", "Staged/RollbackRoute", "Draining/Drained"]) {
    assert.ok([...seen].includes(want), `never reached ${want}: ${[...seen]}`);
  }
});
