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
/** The unit test files: minutes and hours, and the alerts that span days (evaluated every 5m). */
const TEST_FILES = ["alerts.test.yaml", "alerts_daily.test.yaml"];

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
      "BootcPoolRolledBack",
      "BootcCircuitOpen",
      "BootcRolloutTooSlow",
      "BootcPoolPausedTooLong",
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
  const r = await promtool(["test", "rules", ...TEST_FILES], HERE);
  assert.ok(r.success, r.output);
  assert.equal(r.output.match(/SUCCESS/g)?.length, TEST_FILES.length, r.output);
  // Every alert has a case where it fires and one where it does not (yet).
  const checks = [];
  for (const file of TEST_FILES) {
    const doc = parse(await Deno.readTextFile(new URL(file, import.meta.url))) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
    };
    checks.push(...doc.tests.flatMap((t) => t.alert_rule_test ?? []));
  }
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
    for (const file of TEST_FILES) {
      const tests = (await Deno.readTextFile(new URL(file, import.meta.url))).replace(
        "../../manifests/monitoring/rules.yaml",
        "rules.yaml",
      );
      await Deno.writeTextFile(`${dir}/${file}`, tests);
    }
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
      // A rollback alerts for a day, not two.
      [
        "(bootc_pool_last_rollback_timestamp_seconds) < 86400",
        "(bootc_pool_last_rollback_timestamp_seconds) < 172800",
      ],
      // Rolled back is its own alert, not a generic Degraded one as well.
      ["RolloutHalted|RolledBack|NodeStalled", "RolloutHalted|NodeStalled"],
      // "Too slow" is 3× the usual duration, and never under 30 minutes.
      [
        "> 3 * max by (pool) (bootc_pool_rollout_expected_duration_seconds)",
        "> 2 * max by (pool) (bootc_pool_rollout_expected_duration_seconds)",
      ],
      [
        "(bootc_pool_rollout_start_timestamp_seconds) > 1800)",
        "(bootc_pool_rollout_start_timestamp_seconds) > 600)",
      ],
      // A paused pool is not "too slow"; a pause alerts after a day, across a leader change,
      // and only while it holds an update back.
      [
        "unless on (pool) (max by (pool) (bootc_pool_paused) == 1)",
        "unless on (pool) (max by (pool) (bootc_pool_paused) == 2)",
      ],
      ["last_over_time(bootc_pool_paused[10m])", "bootc_pool_paused"],
      ["        for: 1d", "        for: 1h"],
      ['bootc_pool_nodes{state!="UpToDate"}[10m]', "bootc_pool_nodes[10m]"],
    ];
    // Each mutant in a folder of its own, a few at a time (promtool is single-threaded).
    const check = async ([from, to]: [string, string], i: number) => {
      assert.ok(rules.includes(from), `mutation source not found: ${from}`);
      const sub = `${dir}/${i}`;
      await Deno.mkdir(sub);
      await Deno.writeTextFile(`${sub}/rules.yaml`, rules.replace(from, to));
      for (const file of TEST_FILES) await Deno.copyFile(`${dir}/${file}`, `${sub}/${file}`);
      const r = await promtool(["test", "rules", ...TEST_FILES], sub);
      assert.ok(!r.success, `tests still pass after ${from} → ${to}`);
    };
    for (let i = 0; i < mutations.length; i += 3) {
      await Promise.all(mutations.slice(i, i + 3).map((m, j) => check(m, i + j)));
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
