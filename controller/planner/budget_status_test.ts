import assert from "node:assert/strict";
import {
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_WAS_CORDONED,
  type BootcDisruptionBudget,
  findCondition,
} from "../../lib/api/mod.ts";
import { budgetStatus, budgetStatusChanged, MAX_LISTED_DISRUPTED } from "./budget_status.ts";
import { node } from "../testing/fixtures.ts";
import type { NodeSummary } from "../model/types.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const LATER = new Date("2026-01-01T02:00:00Z");

function budget(spec: Record<string, unknown>, generation = 3): BootcDisruptionBudget {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcDisruptionBudget",
    metadata: { name: "zone-a", generation },
    spec: spec as BootcDisruptionBudget["spec"],
  };
}

function nodes(list: NodeSummary[]): Map<string, NodeSummary> {
  return new Map(list.map((n) => [n.name, n]));
}

/** A node of zone `zone`, disrupted (carrying the record) or not. */
function zoned(name: string, zone: string, disrupted = false): NodeSummary {
  return node(name, {
    labels: { zone },
    annotations: disrupted ? { [ANNOTATION_IN_REBOOT_SLOT]: "2026-01-01T00:59:00Z" } : undefined,
  });
}

Deno.test("budgetStatus: selected, allowed (percent of the selected, rounded up), disrupted", () => {
  const b = budget({ nodeSelector: { matchLabels: { zone: "a" } }, maxUnavailable: "50%" });
  const status = budgetStatus({
    budget: b,
    nodes: nodes([
      zoned("a1", "a", true),
      zoned("a2", "a"),
      zoned("a3", "a"),
      // Disrupted, but not selected: another zone.
      zoned("b1", "b", true),
    ]),
    now: NOW,
  });
  assert.equal(status.observedGeneration, 3);
  assert.equal(status.selectedNodes, 3);
  assert.equal(status.allowed, 2, "50% of 3 rounded up");
  assert.equal(status.disruptedNodes, 1);
  assert.deepEqual(status.disrupted, ["a1"]);
  const degraded = findCondition(status.conditions, "Degraded");
  assert.equal(`${degraded?.status}/${degraded?.reason}`, "False/Healthy");
});

Deno.test("budgetStatus: any part of the record counts (a node being handed back too)", () => {
  const handingBack = node("a1", {
    labels: { zone: "a" },
    annotations: { [ANNOTATION_WAS_CORDONED]: "false" },
  });
  const status = budgetStatus({
    budget: budget({ maxUnavailable: 1 }),
    nodes: nodes([handingBack, zoned("a2", "a")]),
    now: NOW,
  });
  assert.equal(status.selectedNodes, 2, "no selector: every node");
  assert.deepEqual([status.disruptedNodes, status.disrupted], [1, ["a1"]]);
});

Deno.test("budgetStatus: an invalid budget allows nothing and says why, naming the field", () => {
  const status = budgetStatus({
    budget: budget({ maxUnavailable: "150%" }),
    nodes: nodes([zoned("a1", "a")]),
    now: NOW,
  });
  assert.equal(status.allowed, 0);
  const degraded = findCondition(status.conditions, "Degraded");
  assert.equal(`${degraded?.status}/${degraded?.reason}`, "True/InvalidSpec");
  assert.match(degraded?.message ?? "", /maxUnavailable: "150%".*no node it selects gets a reboot/);
});

Deno.test("budgetStatus: the list of disrupted nodes is bounded, the count is not", () => {
  const many = Array.from(
    { length: 30 },
    (_, i) => zoned(`n${String(i).padStart(2, "0")}`, "a", true),
  );
  const status = budgetStatus({
    budget: budget({ maxUnavailable: 1 }),
    nodes: nodes(many),
    now: NOW,
  });
  assert.equal(status.disruptedNodes, 30);
  assert.equal(status.disrupted?.length, MAX_LISTED_DISRUPTED);
  assert.equal(status.disrupted?.[0], "n00");
});

Deno.test("budgetStatusChanged: written only when something changed, not for the clock", () => {
  const b = budget({ maxUnavailable: 1 });
  const first = budgetStatus({ budget: b, nodes: nodes([zoned("a1", "a")]), now: NOW });
  assert.ok(budgetStatusChanged(undefined, first));
  const stored = { ...b, status: first };
  const same = budgetStatus({ budget: stored, nodes: nodes([zoned("a1", "a")]), now: LATER });
  assert.equal(budgetStatusChanged(first, same), false, "the transition time is kept");
  const busy = budgetStatus({ budget: stored, nodes: nodes([zoned("a1", "a", true)]), now: LATER });
  assert.ok(budgetStatusChanged(first, busy));
  const newSpec = budgetStatus({
    budget: { ...stored, metadata: { ...stored.metadata, generation: 4 } },
    nodes: nodes([zoned("a1", "a")]),
    now: LATER,
  });
  assert.ok(budgetStatusChanged(first, newSpec), "a new generation is observed");
});

Deno.test("budgetStatus: a node disrupted with no record on its Node counts as the gate counts it", () => {
  const b = budget({ nodeSelector: { matchLabels: { zone: "a" } }, maxUnavailable: 2 });
  const status = budgetStatus({
    budget: b,
    nodes: nodes([zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b")]),
    unrecorded: [
      { node: "a1", labels: { zone: "a" } }, // back without its record
      { node: "gone", poolSelector: { matchLabels: { role: "worker" } } }, // Node deleted
      { node: "gone-b", poolSelector: { matchLabels: { zone: "b" } } }, // never selected here
      { node: "b1", labels: { zone: "b" } },
    ],
    now: NOW,
  });
  assert.equal(status.disruptedNodes, 2);
  assert.deepEqual(status.disrupted, ["a1", "gone"]);
});
