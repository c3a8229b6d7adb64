import assert from "node:assert/strict";
import { candidates, gateInput } from "./_testing.ts";
import type { GateInput } from "./gate.ts";
import { GATES } from "./registry.ts";
import { node } from "../testing/fixtures.ts";

Deno.test("GATES: unique names, every gate declares its reasons, no reason in two gates", () => {
  const names = GATES.map((g) => g.name);
  assert.equal(new Set(names).size, names.length);
  const reasons = GATES.flatMap((g) => g.reasons.map((r) => r.reason));
  assert.equal(new Set(reasons).size, reasons.length, reasons.join(", "));
  for (const g of GATES) assert.ok(g.reasons.length > 0, g.name);
});

/** Inputs under which some gate holds candidates back. */
function holdingInputs(): GateInput[] {
  const now = "2026-03-01T12:00:00Z";
  const base = gateInput({ now, candidates: 3 });
  const pool = (spec: Record<string, unknown>) => ({
    ...base.pool,
    spec: { ...base.pool.spec, ...spec },
  });
  const rollout = (r: Record<string, unknown>) =>
    pool({ rollout: { ...base.pool.spec.rollout, ...r } });
  return [
    base,
    gateInput({ now, candidates: 3, disrupted: 1 }),
    gateInput({
      now,
      policy: { rollout: { maxUnavailable: 1, budgets: [{ maxUnavailable: 0 }] } },
    }),
    gateInput({
      now,
      policy: { maintenance: { windows: [{ schedule: "0 2 * * *", duration: "1h" }] } },
    }),
    gateInput({
      now,
      policy: {
        maintenance: {
          blackouts: [{ start: "2026-03-01T00:00:00Z", end: "2026-03-02T00:00:00Z" }],
        },
      },
    }),
    // Unreadable specs: gates fail closed, still with their own reasons.
    gateInput({ now, policy: { maintenance: { windows: [{ schedule: "x", duration: "1h" }] } } }),
    gateInput({ now, policy: { maintenance: { blackouts: [{ start: "x", end: "y" }] } } }),
    gateInput({ now, policy: { rollout: { budgets: [{ maxUnavailable: "lots" }] } } }),
    { ...base, pool: rollout({ paused: true }) },
    { ...base, pool: rollout({ strategy: "External" }) },
    { ...base, pool: rollout({ after: ["ghost"] }) },
    { ...base, pool: rollout({ minNodeReadySeconds: 60 }) },
    ...([undefined, { state: "failed", message: "false" }] as const).map((v) => ({
      ...base,
      pool: rollout({
        preconditions: { objects: [{ apiVersion: "v1", kind: "Node", expression: "true" }] },
      }),
      objects: [v],
    })),
    ...([undefined, { last: "nonEmpty" }, { last: "error" }] as const).map((alerts) => ({
      ...base,
      pool: rollout({ preconditions: { alerts: { url: "http://p:9090" } } }),
      ...(alerts ? { alerts } : {}),
    })),
    {
      ...base,
      pool: rollout({
        preconditions: { alerts: { url: "http://p:9090", onUnreachable: "Proceed" } },
      }),
      alerts: { last: "error" as const },
    },
    {
      ...base,
      pool: rollout({ approval: { mode: "Annotation" } }),
      approval: { revision: 1, record: { revision: 1, image: "img" } },
    },
    {
      ...base,
      pool: rollout({ approval: { mode: "Webhook", webhook: { url: "https://a.example" } } }),
      approval: { revision: 1, record: { revision: 1, image: "img", verdict: "Refused" } },
    },
    ...(["Updating", "Soaking", "Failed"] as const).map((phase) => ({
      ...base,
      canary: { phase, nodes: 1, soakUntil: "2026-03-01T13:00:00Z" },
    })),
    {
      ...base,
      cluster: {
        ...base.cluster,
        nodes: new Map(candidates(3).map((c) => [c.name, node(c.name, { labels: c.labels })])),
        budgets: [{ name: "none", spec: { maxUnavailable: 0 } }],
      },
    },
    {
      ...base,
      cluster: {
        ...base.cluster,
        budgets: [{
          name: "bad",
          spec: { maxUnavailable: 1, nodeSelector: { matchLabels: { "!": "" } } },
        }],
      },
    },
  ];
}

Deno.test("GATES: every wait a gate reports carries a reason it declares", () => {
  const seen = new Set<string>();
  for (const input of holdingInputs()) {
    for (const g of GATES) {
      const d = g.decide(input);
      if (!d.wait) continue;
      seen.add(d.wait.reason);
      assert.ok(
        g.reasons.some((r) => r.reason === d.wait!.reason),
        `${g.name} reported undeclared reason ${d.wait.reason}`,
      );
    }
  }
  // The inputs reach every declared reason, so the check above covers them all.
  assert.deepEqual([...seen].sort(), GATES.flatMap((g) => g.reasons.map((r) => r.reason)).sort());
});
