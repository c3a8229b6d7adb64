import assert from "node:assert/strict";
import { ANNOTATION_IN_REBOOT_SLOT } from "../../lib/api/mod.ts";
import type { ClusterBudget, ClusterView } from "../gates/gate.ts";
import type { NodeSummary } from "../model/types.ts";
import { GrantAdmission } from "./grant_admission.ts";

const SLOT = { [ANNOTATION_IN_REBOOT_SLOT]: "2026-12-01T10:00:00Z" };

/** A world the test edits as the caches would show it. */
function world(budgets: ClusterBudget[] = []) {
  const nodes = new Map<string, NodeSummary>();
  for (const name of ["a", "b", "c"]) {
    nodes.set(name, { name, labels: { fleet: "x" }, unschedulable: false, ready: true });
  }
  let now = 0;
  const state = { nodes, budgets, tick: (ms: number) => now += ms };
  const admission = new GrantAdmission({
    budgetsExist: () => state.budgets.length > 0,
    view: (): ClusterView => ({ pools: [], nodes: state.nodes, budgets: state.budgets }),
    node: (name) => state.nodes.get(name),
    now: () => now,
  });
  return { state, admission };
}

const ONE: ClusterBudget = {
  name: "one",
  spec: { nodeSelector: { matchLabels: { fleet: "x" } }, maxUnavailable: 1 },
};

function disrupt(state: ReturnType<typeof world>["state"], name: string, on = true) {
  const n = state.nodes.get(name)!;
  state.nodes.set(name, { ...n, annotations: on ? SLOT : {} });
}

Deno.test("GrantAdmission: without budgets every grant goes", () => {
  const { admission } = world();
  assert.equal(admission.admit("a"), undefined);
  assert.equal(admission.admit("b"), undefined);
});

Deno.test("GrantAdmission: a budget that appeared after the plan refuses its grant", () => {
  const { state, admission } = world();
  disrupt(state, "a");
  // Planned with no budget; the budget lands before the grant is written.
  state.budgets = [ONE];
  assert.match(admission.admit("b") ?? "", /BootcDisruptionBudget one: 1 of 1 allowed/);
});

Deno.test("GrantAdmission: a grant admitted counts before the caches show it", () => {
  const { state, admission } = world([ONE]);
  assert.equal(admission.admit("a"), undefined);
  assert.match(admission.admit("b") ?? "", /1 of 1 allowed/, "a's grant is counted");
  // Its write refused outright: it never landed, so it counts no longer.
  admission.unwritten("a");
  assert.equal(admission.admit("b"), undefined);
  // The caches show b's grant: counted by the view itself from now on.
  disrupt(state, "b");
  assert.match(admission.admit("c") ?? "", /1 of 1 allowed/);
});

Deno.test("GrantAdmission: a written release frees its place before the caches show it", () => {
  const { state, admission } = world([ONE]);
  disrupt(state, "a");
  assert.notEqual(admission.admit("b"), undefined);
  admission.released("a");
  assert.equal(admission.admit("b"), undefined);
});

Deno.test("GrantAdmission: a grant under way counts however long its write takes", () => {
  const { state, admission } = world([ONE]);
  assert.equal(admission.admit("a"), undefined);
  // A slow write: minutes pass, the caches show nothing; it may still land.
  state.tick(10 * 60_000);
  assert.match(admission.admit("b") ?? "", /1 of 1 allowed/);
  assert.deepEqual([...admission.unseen().granted], ["a"], "the planner counts it too");
});

Deno.test("GrantAdmission: a landed grant the caches never show counts for a minute", () => {
  const { state, admission } = world([ONE]);
  assert.equal(admission.admit("a"), undefined);
  admission.landed("a");
  state.tick(30_000);
  assert.notEqual(admission.admit("b"), undefined);
  state.tick(31_000);
  assert.equal(admission.admit("b"), undefined);
});
