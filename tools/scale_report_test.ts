import assert from "node:assert/strict";
import {
  eventsByReason,
  formatBreakdown,
  histogramBuckets,
  histogramQuantile,
  parseProcessUsage,
  percentile,
  requestsByVerb,
  summarizeAudit,
  writeBreakdown,
} from "./scale_report.ts";

Deno.test("writeBreakdown: the interval's writes by resource, events apart, harness node writes out", () => {
  const before = { total: 10, byResource: { nodes: 6, events: 4 } };
  const after = {
    total: 0,
    byResource: {
      nodes: 30,
      events: 54,
      bootcnodes: 24,
      "bootcnodes/status": 30,
      "pods/eviction": 6,
      "bootcnodepools/status": 0,
    },
  };
  const b = writeBreakdown(before, after, 12);
  assert.deepEqual(b, {
    writes: 12 + 24 + 30 + 6,
    events: 50,
    byResource: [["bootcnodes/status", 30], ["bootcnodes", 24], ["nodes", 12], [
      "pods/eviction",
      6,
    ]],
  });
  assert.equal(
    formatBreakdown(b, 6),
    "72 writes, 12.0 per node excluding events (bootcnodes/status 30 (5.0), bootcnodes 24 (4.0), " +
      "nodes 12 (2.0), pods/eviction 6 (1.0)); events 50, 8.3 per node",
  );
});

Deno.test("percentile is nearest-rank", () => {
  assert.equal(percentile([], 50), undefined);
  assert.equal(percentile([5], 99), 5);
  const values = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted
  assert.equal(percentile(values, 50), 50);
  assert.equal(percentile(values, 99), 99);
  assert.equal(percentile(values, 100), 100);
  assert.equal(percentile([1, 2, 3, 4], 50), 2);
});

const METRICS = (counts: number[]) =>
  [
    "# HELP bootc_reconcile_duration_seconds Time taken by one pool reconcile.",
    ...["0.01", "0.1", "1", "+Inf"].flatMap((le, i) => [
      `bootc_reconcile_duration_seconds_bucket{pool="a",le="${le}"} ${counts[i]}`,
      `bootc_reconcile_duration_seconds_bucket{pool="b",le="${le}"} 1`,
    ]),
    `bootc_reconcile_duration_seconds_count{pool="a"} ${counts[3]}`,
  ].join("\n");

Deno.test("histogramQuantile: the bucket of the quantile of the interval's observations", () => {
  const before = histogramBuckets(METRICS([0, 0, 0, 0]), "bootc_reconcile_duration_seconds");
  // Pool b's one observation in every bucket is summed in.
  assert.equal(before.get(Infinity), 1);
  const after = histogramBuckets(METRICS([90, 98, 100, 100]), "bootc_reconcile_duration_seconds");
  assert.deepEqual(histogramQuantile(before, after, 0.5), { bound: 0.01, count: 100 });
  assert.deepEqual(histogramQuantile(before, after, 0.99), { bound: 1, count: 100 });
  assert.equal(histogramQuantile(after, after, 0.99), undefined);
});

Deno.test("parseProcessUsage reads VmRSS, VmHWM and utime+stime", () => {
  const status = "Name:\tdeno\nVmHWM:\t  102400 kB\nVmRSS:\t   81920 kB\n";
  // A command name with spaces and parentheses must not shift the fields.
  const stat = "4242 (deno (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 8 0";
  assert.deepEqual(parseProcessUsage(status, stat), {
    rssMiB: 80,
    peakRssMiB: 100,
    cpuSeconds: 4,
  });
});

Deno.test("requestsByVerb sums apiserver_request_total", () => {
  const text = [
    'apiserver_request_total{code="200",resource="nodes",verb="GET"} 5',
    'apiserver_request_total{code="201",resource="events",verb="POST"} 2',
    'apiserver_request_total{code="200",resource="pods",verb="GET"} 1',
    "other_metric 9",
  ].join("\n");
  assert.deepEqual(requestsByVerb(text), { GET: 6, POST: 2 });
});

Deno.test("summarizeAudit counts completed requests in the window by user and verb", () => {
  const line = (stage: string, at: string, user: string, verb: string) =>
    JSON.stringify({ stage, stageTimestamp: at, user: { username: user }, verb });
  const sa = "system:serviceaccount:bootc-operator:bootc-operator-controller";
  const text = [
    line("ResponseComplete", "2026-11-23T10:00:01.000000Z", sa, "patch"),
    line("ResponseComplete", "2026-11-23T10:00:02.000000Z", sa, "get"),
    line("ResponseStarted", "2026-11-23T10:00:02.000000Z", sa, "watch"),
    line("ResponseComplete", "2026-11-23T10:00:03.000000Z", "kwok-admin", "update"),
    line("ResponseComplete", "2026-11-23T10:00:09.000000Z", sa, "get"), // after the window
    "not json",
  ].join("\n");
  const from = Date.parse("2026-11-23T10:00:00Z");
  const to = Date.parse("2026-11-23T10:00:05Z");
  assert.deepEqual(summarizeAudit(text, from, to), {
    total: 3,
    byUser: {
      "bootc-operator-controller": { total: 2, byVerb: { patch: 1, get: 1 } },
      "kwok-admin": { total: 1, byVerb: { update: 1 } },
    },
  });
});

Deno.test("eventsByReason: the operator's events since the tag moved, by kind and reason", () => {
  const ev = (
    kind: string,
    reason: string,
    at: string,
    count = 1,
    component = "bootc-operator-controller",
  ) => ({
    reason,
    count,
    lastTimestamp: at,
    involvedObject: { kind },
    source: { component },
  });
  const since = Date.parse("2026-01-01T00:00:10.700Z");
  const line = eventsByReason(
    [
      ev("Node", "SlotAssigned", "2026-01-01T00:00:10Z"), // same second as the tag move: counted
      ev("Node", "SlotAssigned", "2026-01-01T00:00:20Z"),
      ev("Node", "DrainBlocked", "2026-01-01T00:00:30Z", 3), // aggregated: 3 occurrences
      ev("BootcNodePool", "RolloutComplete", "2026-01-01T00:01:00Z"),
      ev("BootcNodePool", "RolloutComplete", "2026-01-01T00:00:05Z"), // before: not counted
      ev("Pod", "Created", "2026-01-01T00:00:30Z", 1, "kwok_controller"), // not ours
    ],
    since,
    2,
  );
  assert.equal(
    line,
    "Node DrainBlocked 3, Node SlotAssigned 2, BootcNodePool RolloutComplete 1; " +
      "2.5 per node about nodes, 1 about pools",
  );
});
