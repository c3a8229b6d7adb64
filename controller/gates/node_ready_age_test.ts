import assert from "node:assert/strict";
import type { NodeSummary } from "../model/types.ts";
import { gateInput } from "./_testing.ts";
import { NODE_NOT_READY_LONG_ENOUGH, nodeReadyAgeGate } from "./node_ready_age.ts";

const NOW = "2026-12-01T10:00:00Z";

function node(name: string, ready: boolean, readySince?: string): NodeSummary {
  return { name, labels: {}, unschedulable: false, ready, readySince };
}

function decide(min: number | undefined, nodes: NodeSummary[]) {
  const input = gateInput({ now: NOW, candidates: nodes.length });
  input.pool.spec.rollout = { ...input.pool.spec.rollout, minNodeReadySeconds: min } as never;
  input.cluster = { pools: [], nodes: new Map(nodes.map((n, i) => [`n-${i}`, n])) };
  return nodeReadyAgeGate.decide(input);
}

Deno.test("nodeReadyAge: unset or 0 admits every candidate, Ready or not", () => {
  for (const min of [undefined, 0]) {
    const d = decide(min, [node("n-0", false), node("n-1", true, NOW)]);
    assert.deepEqual(d.admit.map((c) => c.name), ["n-0", "n-1"]);
    assert.equal(d.wait, undefined);
  }
});

Deno.test("nodeReadyAge: only nodes Ready long enough go; the rest wait, named, till when", () => {
  const d = decide(60, [
    node("n-0", true, "2026-12-01T09:58:00Z"), // Ready 120 s
    node("n-1", true, "2026-12-01T09:59:30Z"), // Ready 30 s: may go at 10:00:30
    node("n-2", false, "2026-12-01T09:00:00Z"), // not Ready
    node("n-3", true, "2026-12-01T09:59:00Z"), // exactly 60 s
    node("n-4", true), // Ready, no transition time known
  ]);
  assert.deepEqual(d.admit.map((c) => c.name), ["n-0", "n-3"]);
  assert.equal(d.wait?.reason, NODE_NOT_READY_LONG_ENOUGH);
  assert.equal(d.wait?.until?.toISOString(), "2026-12-01T10:00:30.000Z");
  assert.match(d.wait?.message ?? "", /n-1 Ready for less than 60s/);
  assert.match(d.wait?.message ?? "", /n-2, n-4 not Ready/);
});

Deno.test("nodeReadyAge: a Ready time in the future holds the node until it has passed", () => {
  const d = decide(10, [node("n-0", true, "2026-12-01T10:05:00Z")]);
  assert.deepEqual(d.admit, []);
  assert.equal(d.wait?.until?.toISOString(), "2026-12-01T10:05:10.000Z");
});
