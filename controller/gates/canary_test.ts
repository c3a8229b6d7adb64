import assert from "node:assert/strict";
import { gateInput } from "./_testing.ts";
import { CANARY_FAILED, CANARY_SOAK, CANARY_UPDATING, canaryGate } from "./canary.ts";
import type { CanaryPhase } from "./gate.ts";

const NOW = "2026-01-01T01:00:00Z";

Deno.test("canaryGate: admits what the canary phase allows", () => {
  const cases: {
    name: string;
    canary?: CanaryPhase;
    candidates: number;
    disrupted?: number;
    updated?: number;
    admitted: number;
    wait?: { reason: string; message: RegExp; until?: string };
  }[] = [
    { name: "no canary: everyone", candidates: 4, admitted: 4 },
    {
      name: "Passed: everyone (the budget gate paces them)",
      canary: { phase: "Passed", nodes: 1 },
      candidates: 4,
      admitted: 4,
    },
    {
      name: "Updating, nothing started: only the batch",
      canary: { phase: "Updating", nodes: 1 },
      candidates: 4,
      admitted: 1,
      wait: {
        reason: CANARY_UPDATING,
        message: /canary: 0 of 1 canary node\(s\) updated; the rest waits for the canary/,
      },
    },
    {
      name: "Updating, the batch node in its slot: nobody else",
      canary: { phase: "Updating", nodes: 1 },
      candidates: 3,
      disrupted: 1,
      admitted: 0,
      wait: { reason: CANARY_UPDATING, message: /0 of 1/ },
    },
    {
      name: "Updating, a batch of 3 with one updated and one in flight: one more",
      canary: { phase: "Updating", nodes: 3 },
      candidates: 4,
      disrupted: 1,
      updated: 1,
      admitted: 1,
      wait: { reason: CANARY_UPDATING, message: /1 of 3/ },
    },
    {
      name: "Updating, room for every candidate: no wait",
      canary: { phase: "Updating", nodes: 3 },
      candidates: 2,
      admitted: 2,
    },
    {
      name: "Soaking: nobody, until the soak ends",
      canary: { phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:05:00Z" },
      candidates: 4,
      updated: 1,
      admitted: 0,
      wait: {
        reason: CANARY_SOAK,
        message: /canary: 1 node\(s\) updated, soaking until 2026-01-01T01:05:00Z/,
        until: "2026-01-01T01:05:00Z",
      },
    },
    {
      name: "Failed: nobody",
      canary: { phase: "Failed", nodes: 1 },
      candidates: 4,
      admitted: 0,
      wait: { reason: CANARY_FAILED, message: /canary failed: the rest of the pool waits/ },
    },
  ];
  for (const c of cases) {
    const input = {
      ...gateInput({ now: NOW, candidates: c.candidates, disrupted: c.disrupted }),
      canary: c.canary,
      updated: c.updated,
    };
    const d = canaryGate.decide(input);
    assert.deepEqual(
      d.admit.map((x) => x.name),
      input.candidates.slice(0, c.admitted).map((x) => x.name),
      c.name,
    );
    if (!c.wait) {
      assert.equal(d.wait, undefined, c.name);
      continue;
    }
    assert.equal(d.wait?.reason, c.wait.reason, c.name);
    assert.match(d.wait?.message ?? "", c.wait.message, c.name);
    assert.equal(
      d.wait?.until?.toISOString(),
      c.wait.until && new Date(c.wait.until).toISOString(),
      c.name,
    );
    // A canary hold is news, not the routine pace of a rollout.
    assert.notEqual(d.wait?.routine, true, c.name);
  }
});
