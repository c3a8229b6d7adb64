import assert from "node:assert/strict";
import { ControllerMetrics, Registry } from "./metrics.ts";

Deno.test("registry renders counters, gauges and histograms in the text format", () => {
  const r = new Registry();
  const c = r.counter("x_total", "Things.", ["pool"]);
  const g = r.gauge("y", "Level.", ["pool", "state"]);
  const h = r.histogram("z_seconds", "Time.", ["pool"], [1, 5]);
  c.inc({ pool: "a" });
  c.inc({ pool: "a" }, 2);
  g.set({ pool: "a", state: 'we"ird' }, 4);
  h.observe({ pool: "a" }, 0.5);
  h.observe({ pool: "a" }, 3);
  h.observe({ pool: "a" }, 10);
  const text = r.render();
  assert.match(text, /# TYPE x_total counter\nx_total\{pool="a"\} 3\n/);
  assert.match(text, /y\{pool="a",state="we\\"ird"\} 4\n/);
  assert.match(text, /z_seconds_bucket\{pool="a",le="1"\} 1\n/);
  assert.match(text, /z_seconds_bucket\{pool="a",le="5"\} 2\n/);
  assert.match(text, /z_seconds_bucket\{pool="a",le="\+Inf"\} 3\n/);
  assert.match(text, /z_seconds_sum\{pool="a"\} 13.5\n/);
  assert.match(text, /z_seconds_count\{pool="a"\} 3\n/);
  g.deleteMatching({ pool: "a" });
  assert.equal(g.get({ pool: "a", state: 'we"ird' }), undefined);
  assert.throws(() => r.counter("x_total", "again"), /registered twice/);
  assert.throws(() => c.inc({}, -1), /only go up/);
});

Deno.test("controller metrics carry the documented names", () => {
  const m = new ControllerMetrics();
  m.poolNodes.set({ pool: "w", state: "Staged" }, 2);
  m.slotsInUse.set({ pool: "w" }, 1);
  const text = m.registry.render();
  for (
    const name of [
      "bootc_pool_nodes",
      "bootc_pool_slots_in_use",
      "bootc_drain_duration_seconds",
      "bootc_node_update_duration_seconds",
      "bootc_reconcile_errors_total",
      "bootc_reconcile_duration_seconds",
    ]
  ) {
    assert.match(text, new RegExp(`# TYPE ${name} `));
  }
  assert.match(text, /bootc_pool_nodes\{pool="w",state="Staged"\} 2/);
});
