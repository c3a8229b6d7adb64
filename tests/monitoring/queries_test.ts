/**
 * Every query in the alerting rules and the Grafana dashboard reads only metrics
 * the controller exports (taken from the registry ControllerMetrics builds, not
 * from a list kept by hand) or standard ones allowed here; every dashboard query
 * parses (promtool); every exported metric is documented in controller/README.md.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { ControllerMetrics } from "../../controller/shell/metrics.ts";
import { metricNames } from "./promql_names.ts";
import { promtool } from "./promtool.ts";
import { MONITORING_DIR, RULES_FILE } from "./sync_rules.ts";

/** Metrics Prometheus itself produces that the queries may use. */
const STANDARD = new Set(["up"]);

const DASHBOARD_FILE = new URL("dashboard.json", MONITORING_DIR);
const README_FILE = new URL("../../controller/README.md", import.meta.url);

/** name → type of every metric the controller registers. */
function exported(): Map<string, string> {
  const text = new ControllerMetrics().registry.render();
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
}

/** Whether `name` is a series the controller exposes (histograms as _bucket, _sum, _count). */
function isExported(metrics: Map<string, string>, name: string): boolean {
  if (metrics.has(name) && metrics.get(name) !== "histogram") return true;
  const m = name.match(/^(.*)_(bucket|sum|count)$/);
  return m !== null && metrics.get(m[1]) === "histogram";
}

interface Panel {
  title?: string;
  type?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

interface Annotation {
  name: string;
  expr?: string;
  useValueForTime?: boolean;
  titleFormat?: string;
  tagKeys?: string;
}

interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query: string } }[] };
  annotations: { list: Annotation[] };
}

async function dashboard(): Promise<Dashboard> {
  return JSON.parse(await Deno.readTextFile(DASHBOARD_FILE));
}

function allPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

/** Every PromQL query of the dashboard (panels and annotations), with where it is. */
async function dashboardQueries(): Promise<{ where: string; expr: string }[]> {
  const d = await dashboard();
  return [
    ...allPanels(d.panels).flatMap((p) =>
      (p.targets ?? []).map((t, i) => ({
        where: `panel "${p.title}" target ${i}`,
        expr: t.expr ?? "",
      }))
    ),
    ...d.annotations.list.map((a) => ({ where: `annotation "${a.name}"`, expr: a.expr ?? "" })),
  ];
}

/** Metrics named by the dashboard's template variables (`label_values(metric, label)`). */
async function variableMetrics(): Promise<{ where: string; name: string }[]> {
  const d = await dashboard();
  return d.templating.list.filter((v) => v.type === "query").map((v) => {
    const q = typeof v.query === "string" ? v.query : v.query?.query ?? "";
    const m = q.match(/^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_]+\s*\)$/);
    assert.ok(m, `variable ${v.name}: unsupported query ${q}`);
    return { where: `variable ${v.name}`, name: m[1] };
  });
}

async function ruleQueries(): Promise<{ where: string; expr: string }[]> {
  const doc = parse(await Deno.readTextFile(RULES_FILE)) as {
    groups: { rules: { alert?: string; record?: string; expr: string }[] }[];
  };
  return doc.groups.flatMap((g) => g.rules).map((r) => ({
    where: `rule ${r.alert ?? r.record}`,
    expr: r.expr,
  }));
}

/** Grafana's variables replaced by values PromQL accepts. */
function withoutVariables(expr: string): string {
  return expr.replace(
    /\$\{?(\w+)(?::\w+)?\}?/g,
    (_, name: string) => name.startsWith("__") ? "5m" : ".*",
  );
}

Deno.test("the registry lists the controller's metrics (the source of truth for this test)", () => {
  const metrics = exported();
  assert.ok(metrics.size >= 17);
  assert.equal(metrics.get("bootc_pool_degraded"), "gauge");
  assert.equal(metrics.get("bootc_slot_handoff_duration_seconds"), "histogram");
  assert.ok(isExported(metrics, "bootc_slot_handoff_duration_seconds_bucket"));
  assert.ok(!isExported(metrics, "bootc_slot_handoff_duration_seconds"));
  assert.ok(!isExported(metrics, "bootc_pool_degraded_bucket"));
  assert.ok(!isExported(metrics, "bootc_no_such_metric"));
});

Deno.test("every metric the rules and the dashboard query is exported by the controller", async () => {
  const metrics = exported();
  const uses = [
    ...[...await ruleQueries(), ...await dashboardQueries()].flatMap(({ where, expr }) => {
      const names = metricNames(expr);
      assert.ok(names.length > 0, `${where} reads no metric: ${expr}`);
      return names.map((name) => ({ where, name }));
    }),
    ...await variableMetrics(),
  ];
  const unknown = uses.filter((u) => !STANDARD.has(u.name) && !isExported(metrics, u.name));
  assert.deepEqual(unknown, [], "queries read metrics the controller does not export");
  // The dashboard shows what the brief asks for, from the metrics meant for it.
  const used = new Set(uses.map((u) => u.name));
  for (
    const name of [
      "bootc_pool_nodes",
      "bootc_slot_handoff_duration_seconds_bucket",
      "bootc_drain_duration_seconds_bucket",
      "bootc_image_resolution_errors_total",
      "bootc_pool_stalled_nodes",
      "bootc_pool_degraded",
      "bootc_pool_drain_blocked_since_timestamp_seconds",
      "bootc_pool_target_info",
      "bootc_pool_booted_nodes",
      "bootc_pool_rollout_start_timestamp_seconds",
      "bootc_pool_rollout_end_timestamp_seconds",
      "bootc_pool_rollout_expected_duration_seconds",
      "bootc_pool_circuit_open",
      "up",
    ]
  ) assert.ok(used.has(name), `${name} is queried somewhere`);
});

Deno.test("a query naming a metric the controller does not export is caught", () => {
  const metrics = exported();
  const names = metricNames('sum by (pool) (bootc_pool_nodez{pool=~"$pool"})');
  assert.deepEqual(names.filter((n) => !isExported(metrics, n)), ["bootc_pool_nodez"]);
});

Deno.test("every dashboard query parses (promtool check rules on them as recording rules)", async () => {
  const queries = await dashboardQueries();
  assert.ok(queries.length >= 15, `only ${queries.length} queries`);
  const dir = await Deno.makeTempDir({ prefix: "bootc-dashboard-" });
  try {
    const rules = queries.map((q, i) =>
      `      - record: dashboard:query_${i}\n        expr: ${
        JSON.stringify(withoutVariables(q.expr))
      }\n`
    ).join("");
    await Deno.writeTextFile(
      `${dir}/dashboard.rules.yaml`,
      `groups:\n  - name: dashboard\n    rules:\n${rules}`,
    );
    const r = await promtool(["check", "rules", `${dir}/dashboard.rules.yaml`]);
    assert.ok(r.success, r.output);
    assert.match(r.output, new RegExp(`SUCCESS: ${queries.length} rules found`));
    // And a broken query is reported.
    await Deno.writeTextFile(
      `${dir}/broken.rules.yaml`,
      'groups:\n  - name: x\n    rules:\n      - record: x:y\n        expr: "sum by (pool (a)"\n',
    );
    assert.ok(!(await promtool(["check", "rules", `${dir}/broken.rules.yaml`])).success);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the dashboard has the panels operators look for", async () => {
  const titles = allPanels((await dashboard()).panels).map((p) => p.title);
  for (
    const t of [
      "Rollout progress per pool",
      "Nodes by phase",
      "Slot hand-off latency",
      "Drain duration",
      "Image resolution errors",
      "Stalled nodes",
      "Drains blocked by disruption budgets",
      "Pool versions",
      "Nodes per booted image",
    ]
  ) assert.ok(titles.includes(t), `panel ${t}`);
});

Deno.test("rollout starts and ends are annotations at the times the controller exports", async () => {
  const list = (await dashboard()).annotations.list;
  const byMetric = (name: string) => list.find((a) => metricNames(a.expr ?? "").includes(name));
  for (
    const name of [
      "bootc_pool_rollout_start_timestamp_seconds",
      "bootc_pool_rollout_end_timestamp_seconds",
    ]
  ) {
    const a = byMetric(name);
    assert.ok(a, `an annotation reads ${name}`);
    // The series' value is the time (Grafana wants milliseconds), not the sample's time: one
    // mark per rollout, however long the series lasts.
    assert.equal(a.useValueForTime, true, `${a.name} uses the value as its time`);
    assert.match(a.expr!, /\* 1000$/, `${a.name} converts seconds to milliseconds`);
    assert.match(a.expr!, /pool=~"\$pool"/, `${a.name} follows the pool variable`);
    assert.match(a.titleFormat ?? "", /\{\{pool\}\}/, `${a.name} names the pool`);
  }
  assert.match(byMetric("bootc_pool_rollout_end_timestamp_seconds")!.titleFormat!, /outcome/);
});

Deno.test("controller/README.md documents every exported metric with its type and labels", async () => {
  const rows = (await Deno.readTextFile(README_FILE)).split("\n");
  const labels = labelNames(new ControllerMetrics());
  for (const [name, type] of exported()) {
    const row = rows.find((l) => l.startsWith(`| \`${name}\``));
    assert.ok(row, `controller/README.md has a row for ${name}`);
    const cells = row.split("|").map((c) => c.trim());
    assert.equal(cells[2], type, `${name}'s row says it is a ${type}`);
    const documented = [...cells[3].matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
    assert.deepEqual(documented, [...labels.get(name) ?? []], `${name}'s row names its labels`);
  }
});

/** The label names of every metric (from the registered metrics' fields). */
function labelNames(m: ControllerMetrics): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const v of Object.values(m)) {
    if (v && typeof v === "object" && "labelNames" in v && "name" in v) {
      out.set(v.name as string, v.labelNames as readonly string[]);
    }
  }
  return out;
}
