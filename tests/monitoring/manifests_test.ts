/**
 * The monitoring component: the PrometheusRule is exactly rules.yaml wrapped,
 * the PodMonitor scrapes the controller Deployment's pods on their metrics port,
 * and `kubectl kustomize` of an overlay with the component yields the rule, the
 * PodMonitor and the dashboard ConfigMap next to the operator.
 */
import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import { resolveBinDir } from "../harness/control_plane.ts";
import {
  MONITORING_DIR,
  PROMETHEUS_RULE_FILE,
  prometheusRuleText,
  RULES_FILE,
} from "./sync_rules.ts";

const REPO = new URL("../../", import.meta.url);

// deno-lint-ignore no-explicit-any
type Obj = any;

async function yamlFile(url: URL): Promise<Obj> {
  return parse(await Deno.readTextFile(url));
}

Deno.test("prometheus-rule.yaml is rules.yaml wrapped in a PrometheusRule", async () => {
  const rules = await Deno.readTextFile(RULES_FILE);
  assert.equal(
    await Deno.readTextFile(PROMETHEUS_RULE_FILE),
    prometheusRuleText(rules),
    "prometheus-rule.yaml is stale: run deno run --allow-read --allow-write tests/monitoring/sync_rules.ts",
  );
  const rule = await yamlFile(PROMETHEUS_RULE_FILE);
  assert.equal(rule.apiVersion, "monitoring.coreos.com/v1");
  assert.equal(rule.kind, "PrometheusRule");
  assert.equal(rule.metadata.namespace, "bootc-operator");
  assert.deepEqual(rule.spec, parse(rules));
  assert.throws(() => prometheusRuleText("# nothing\nrules: []\n"), /groups:/);
});

Deno.test("the PodMonitor selects the controller pods, on the port serving /metrics, as its job", async () => {
  const monitor = await yamlFile(new URL("pod-monitor.yaml", MONITORING_DIR));
  const deployment = await yamlFile(new URL("manifests/controller.yaml", REPO));
  const podLabels = deployment.spec.template.metadata.labels;
  for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) {
    assert.equal(podLabels[k], v, `controller pods carry ${k}=${v}`);
  }
  assert.equal(monitor.metadata.namespace, deployment.metadata.namespace);
  const container = deployment.spec.template.spec.containers[0];
  const endpoint = monitor.spec.podMetricsEndpoints[0];
  const port = container.ports.find((p: Obj) => p.name === endpoint.port);
  assert.ok(port, `the controller container has a port named ${endpoint.port}`);
  assert.ok(container.args.includes(`--metrics-addr=:${port.containerPort}`));
  assert.equal(endpoint.path, "/metrics");
  // The job label the rules and the dashboard select on.
  assert.equal(podLabels[monitor.spec.jobLabel], "bootc-operator-controller");
  const rules = await Deno.readTextFile(RULES_FILE);
  assert.match(rules, /up\{job="bootc-operator-controller"\}/);
});

Deno.test("kubectl kustomize: an overlay with the component adds the rule, the PodMonitor and the dashboard", async () => {
  const kustomization = await yamlFile(new URL("kustomization.yaml", MONITORING_DIR));
  assert.equal(kustomization.kind, "Component");
  const kubectl = `${await resolveBinDir()}/kubectl`;
  const dir = await Deno.makeTempDir({ prefix: "bootc-overlay-" });
  try {
    // kustomize wants relative paths to other kustomizations.
    const up = dir.split("/").filter(Boolean).map(() => "..").join("/");
    const root = `${up}${REPO.pathname.replace(/\/$/, "")}`;
    await Deno.writeTextFile(
      `${dir}/kustomization.yaml`,
      [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        `  - ${root}/manifests`,
        "components:",
        `  - ${root}/manifests/monitoring`,
        "",
      ].join("\n"),
    );
    const out = await new Deno.Command(kubectl, {
      args: ["kustomize", dir],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(out.success, stderr);
    const objects: Obj[] = parseAllDocuments(new TextDecoder().decode(out.stdout)).map((d) =>
      d.toJS()
    );
    const find = (kind: string) => objects.filter((o) => o.kind === kind);
    assert.equal(find("Deployment").length, 1, "the operator itself is there");
    const [rule] = find("PrometheusRule");
    assert.deepEqual(rule.spec, await yamlFile(RULES_FILE));
    assert.equal(find("PodMonitor").length, 1);
    const [cm] = find("ConfigMap");
    assert.equal(cm.metadata.name, "bootc-operator-dashboard");
    assert.equal(cm.metadata.namespace, "bootc-operator");
    assert.equal(cm.metadata.labels.grafana_dashboard, "1");
    assert.deepEqual(
      JSON.parse(cm.data["bootc-operator.json"]),
      JSON.parse(await Deno.readTextFile(new URL("dashboard.json", MONITORING_DIR))),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
