import assert from "node:assert/strict";
import { UpToDateReason } from "../../lib/api/constants.ts";
import { gateInput } from "./_testing.ts";
import { composeGates } from "./gate.ts";
import { externalGate, externalWaitMessage } from "./external.ts";
import { GATES } from "./registry.ts";

const now = "2026-03-01T12:00:00Z";

function withStrategy(strategy: string | undefined, candidates = 2) {
  const base = gateInput({ now, candidates });
  return {
    ...base,
    pool: {
      ...base.pool,
      spec: { ...base.pool.spec, rollout: { ...base.pool.spec.rollout, strategy } },
    },
  } as typeof base;
}

Deno.test("external gate: RollingUpdate (or unset) admits everyone", () => {
  for (const s of [undefined, "RollingUpdate"]) {
    const d = externalGate.decide(withStrategy(s));
    assert.equal(d.admit.length, 2);
    assert.equal(d.wait, undefined);
  }
});

Deno.test("external gate: External admits nobody and names the wait, counting the staged", () => {
  const d = externalGate.decide(withStrategy("External", 2));
  assert.deepEqual(d.admit, []);
  assert.equal(d.wait?.reason, UpToDateReason.ExternalOrchestrator);
  assert.equal(d.wait?.message, "2 staged, waiting for the external orchestrator to reboot them");
  assert.equal(d.wait?.routine, undefined);
  assert.match(externalGate.decide(withStrategy("External", 1)).wait!.message, /1 staged.*it$/);
  assert.match(externalGate.decide(withStrategy("External", 0)).wait!.message, /External/);
});

Deno.test("external gate: blocks the pool, and wins the composition of every gate", () => {
  assert.deepEqual(externalGate.reasons, [
    { reason: UpToDateReason.ExternalOrchestrator, blocksPool: true },
  ]);
  const c = composeGates(GATES, withStrategy("External", 3));
  assert.deepEqual(c.admit, []);
  assert.equal(c.waits[0].reason, UpToDateReason.ExternalOrchestrator);
  assert.deepEqual([...new Set(c.heldBy.values())], [UpToDateReason.ExternalOrchestrator]);
  assert.equal(externalWaitMessage(0).includes("staged"), false);
});
