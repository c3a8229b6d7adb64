/**
 * The alerting rules: valid for promtool, and every alert fires exactly as its
 * unit tests in alerts.test.yaml say (series in, alerts with labels and
 * rendered annotations out). A promtool that is missing fails these tests.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { promtool } from "./promtool.ts";
import { MONITORING_DIR, RULES_FILE } from "./sync_rules.ts";

const HERE = new URL(".", import.meta.url).pathname;
const TESTS_FILE = new URL("alerts.test.yaml", import.meta.url);

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

async function alertRules(): Promise<Rule[]> {
  const doc = parse(await Deno.readTextFile(RULES_FILE)) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules).filter((r) => r.alert);
}

Deno.test("promtool check rules accepts the rule file", async () => {
  const r = await promtool(["check", "rules", RULES_FILE.pathname]);
  assert.ok(r.success, r.output);
  const alerts = await alertRules();
  assert.match(r.output, new RegExp(`SUCCESS: ${alerts.length} rules found`));
});

Deno.test("the alerts the operator needs exist, each with severity, summary, description and runbook", async () => {
  const alerts = await alertRules();
  const names = alerts.map((a) => a.alert);
  for (
    const required of [
      "BootcRolloutHalted",
      "BootcPoolDegraded",
      "BootcNodeStalled",
      "BootcDrainBlocked",
      "BootcControllerDown",
      "BootcImageResolutionFailing",
    ]
  ) assert.ok(names.includes(required), `missing alert ${required}`);
  assert.equal(new Set(names).size, names.length, "alert names are unique");
  for (const a of alerts) {
    assert.match(a.labels?.severity ?? "", /^(critical|warning|info)$/, `${a.alert} severity`);
    for (const key of ["summary", "description", "runbook"]) {
      assert.ok((a.annotations?.[key] ?? "").trim().length > 20, `${a.alert} has a ${key}`);
    }
    // The runbook says what to do: it names a command to run.
    assert.match(a.annotations!.runbook, /`kubectl /, `${a.alert}'s runbook names a command`);
  }
});

Deno.test("promtool test rules: every alert fires in the unit tests, with labels and annotations", async () => {
  const r = await promtool(["test", "rules", TESTS_FILE.pathname], HERE);
  assert.ok(r.success, r.output);
  assert.match(r.output, /SUCCESS/);
  // Every alert has a case where it fires and one where it does not (yet).
  const doc = parse(await Deno.readTextFile(TESTS_FILE)) as {
    tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
  };
  const checks = doc.tests.flatMap((t) => t.alert_rule_test ?? []);
  for (const a of await alertRules()) {
    const mine = checks.filter((c) => c.alertname === a.alert);
    assert.ok(mine.some((c) => (c.exp_alerts ?? []).length > 0), `${a.alert} fires in a test`);
    assert.ok(
      mine.some((c) => (c.exp_alerts ?? []).length === 0),
      `${a.alert} stays quiet in a test`,
    );
  }
});

Deno.test("promtool test rules fails when a rule changes (the unit tests can fail)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bootc-rules-" });
  try {
    const rules = await Deno.readTextFile(RULES_FILE);
    const tests = (await Deno.readTextFile(TESTS_FILE)).replace(
      "../../manifests/monitoring/rules.yaml",
      "rules.yaml",
    );
    await Deno.writeTextFile(`${dir}/alerts.test.yaml`, tests);
    // Each mutation breaks one alert's timing or threshold; the tests must notice every one.
    const mutations: [string, string][] = [
      [
        'reason="RolloutHalted"}) == 1\n        for: 5m',
        'reason="RolloutHalted"}) == 1\n        for: 1m',
      ],
      [
        "(bootc_pool_drain_blocked_since_timestamp_seconds) > 900",
        "(bootc_pool_drain_blocked_since_timestamp_seconds) > 1800",
      ],
      [
        "max by (pool, reason) (bootc_pool_stalled_nodes) > 0",
        "max by (pool) (bootc_pool_stalled_nodes) > 0",
      ],
      [
        'absent(up{job="bootc-operator-controller"} == 1)',
        'absent(up{job="bootc-operator-controller"})',
      ],
    ];
    for (const [from, to] of mutations) {
      assert.ok(rules.includes(from), `mutation source not found: ${from}`);
      await Deno.writeTextFile(`${dir}/rules.yaml`, rules.replace(from, to));
      const r = await promtool(["test", "rules", "alerts.test.yaml"], dir);
      assert.ok(!r.success, `tests still pass after ${from} → ${to}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the monitoring folder holds what the README says", async () => {
  const files = [];
  for await (const e of Deno.readDir(MONITORING_DIR)) files.push(e.name);
  assert.deepEqual(files.sort(), [
    "dashboard.json",
    "kustomization.yaml",
    "pod-monitor.yaml",
    "prometheus-rule.yaml",
    "rules.yaml",
  ]);
});
