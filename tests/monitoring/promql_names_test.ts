import assert from "node:assert/strict";
import { metricNames } from "./promql_names.ts";

Deno.test("metricNames: selectors, functions, aggregations and label lists", () => {
  const cases: [string, string[]][] = [
    ["up", ["up"]],
    ['absent(up{job="x"} == 1)', ["up"]],
    ['max by (pool) (bootc_pool_degraded{reason="RolloutHalted"}) == 1', ["bootc_pool_degraded"]],
    ["sum(rate(a_total[5m])) by (pool, le)", ["a_total"]],
    ["sum without (instance) (a)", ["a"]],
    [
      'histogram_quantile(0.9, sum by (le, pool) (increase(h_seconds_bucket{pool=~"$pool"}[1h])))',
      ["h_seconds_bucket"],
    ],
    ["a / on (pool) group_left (state, reason) b", ["a", "b"]],
    ["a * ignoring(x) group_right b", ["a", "b"]],
    ["time() - min by (pool) (since_timestamp_seconds) > 900", ["since_timestamp_seconds"]],
    ['{__name__="via_matcher", pool="w"}', ["via_matcher"]],
    ['label_replace(a, "dst", "$1", "src", "(b|c)")', ["a"]],
    ['a{x="{not_a_metric}", y=~"[b]"} offset 5m', ["a"]],
    ["rate(a[$__rate_interval]) > bool 1e3", ["a"]],
    ['count_values("v", a) or vector(0) unless b and c', ["a", "b", "c"]],
    ["topk(5, a) + Inf - NaN + 0x1f + 1.5e+3", ["a"]],
    ["a @ start()", ["a"]],
    ["max_over_time(deriv(a[10m:1m])[1h:])", ["a"]],
    ["# a comment\nb", ["b"]],
    ['sum by (pool) (max by (pool, state) (x{pool=~"${pool}"}))', ["x"]],
  ];
  for (const [expr, want] of cases) assert.deepEqual(metricNames(expr), want, expr);
});

Deno.test("metricNames: unbalanced input is an error, not a silent miss", () => {
  assert.throws(() => metricNames('a{x="y"'), /unbalanced/);
  assert.throws(() => metricNames('a{x="y}'), /unterminated|unbalanced/);
});
