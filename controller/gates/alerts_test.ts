import assert from "node:assert/strict";
import type { PrometheusAlertsPrecondition } from "../../lib/api/mod.ts";
import type { QueryVerdict } from "../model/health.ts";
import { gateInput, policyPool } from "./_testing.ts";
import { alertsGate, alertsQuery, AlertsReason } from "./alerts.ts";

const NOW = "2026-12-01T10:00:00Z";
const URL = "http://prometheus.monitoring:9090";

function decide(spec: PrometheusAlertsPrecondition | undefined, alerts?: QueryVerdict) {
  const input = gateInput({ now: NOW, candidates: 2 });
  input.pool.spec.rollout = {
    ...input.pool.spec.rollout,
    ...(spec ? { preconditions: { alerts: spec } } : {}),
  };
  return alertsGate.decide({ ...input, ...(alerts ? { alerts } : {}) });
}

Deno.test("alerts: the query selects firing alerts by name and labels", () => {
  assert.equal(alertsQuery({ url: URL }), 'ALERTS{alertstate="firing"}');
  assert.equal(
    alertsQuery({ url: URL, alertname: 'Ceph.*|"Disk"', matchLabels: { team: "b", sev: "x" } }),
    'ALERTS{alertstate="firing",alertname=~"Ceph.*|\\"Disk\\"",sev="x",team="b"}',
  );
});

Deno.test("alerts: no precondition, or no alert firing, admits every candidate", () => {
  for (const d of [decide(undefined), decide({ url: URL }, { last: "empty" })]) {
    assert.deepEqual(d.admit.map((c) => c.name), ["n-0", "n-1"]);
    assert.equal(d.wait, undefined);
  }
});

Deno.test("alerts: a firing alert holds every candidate and names it", () => {
  const d = decide({ url: URL }, {
    last: "nonEmpty",
    message: 'ALERTS{alertname="CephDegraded",alertstate="firing"}',
  });
  assert.deepEqual(d.admit, []);
  assert.equal(d.wait?.reason, AlertsReason.AlertsFiring);
  assert.match(d.wait?.message ?? "", /while alerts fire .*CephDegraded/);
});

Deno.test("alerts: no answer yet holds; an unreachable Prometheus holds or goes on, said", () => {
  const pending = decide({ url: URL, onUnreachable: "Proceed" });
  assert.deepEqual(pending.admit, []);
  assert.equal(pending.wait?.reason, AlertsReason.AlertsUnknown);
  const down: QueryVerdict = { last: "error", message: "connection refused" };
  const closed = decide({ url: URL }, down);
  assert.deepEqual(closed.admit, []);
  assert.equal(closed.wait?.reason, AlertsReason.AlertsUnknown);
  assert.match(closed.wait?.message ?? "", /connection refused.*onUnreachable: Hold/);
  const open = decide({ url: URL, onUnreachable: "Proceed" }, down);
  assert.deepEqual(open.admit.map((c) => c.name), ["n-0", "n-1"]);
  assert.equal(open.wait?.reason, AlertsReason.AlertsUnchecked);
  assert.match(open.wait?.message ?? "", /go on unchecked \(onUnreachable: Proceed\)/);
  assert.equal(
    alertsGate.reasons.find((r) => r.reason === AlertsReason.AlertsUnchecked)?.blocksPool,
    false,
  );
});

Deno.test("alerts: an alertname that is no regular expression names the field", () => {
  const pool = policyPool();
  pool.spec.rollout.preconditions = { alerts: { url: URL, alertname: "Ceph(" } };
  assert.deepEqual(alertsGate.validate!({ pool, pools: [pool] }), [
    'spec.rollout.preconditions.alerts.alertname: "Ceph(" is not a regular expression',
  ]);
  pool.spec.rollout.preconditions = { alerts: { url: URL, alertname: "Ceph.*" } };
  assert.deepEqual(alertsGate.validate!({ pool, pools: [pool] }), []);
});
