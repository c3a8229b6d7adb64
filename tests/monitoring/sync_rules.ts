/**
 * Writes manifests/monitoring/prometheus-rule.yaml from rules.yaml: the same rule
 * groups, wrapped in a PrometheusRule (its `spec` is the rule file, indented).
 * rules.yaml is the source; `rules_sync_test.ts` fails when the two differ.
 *
 *   deno run --allow-read --allow-write tests/monitoring/sync_rules.ts
 *
 * @module
 */

/** The monitoring manifests folder. */
export const MONITORING_DIR = new URL("../../manifests/monitoring/", import.meta.url);
/** The plain Prometheus rule file (the source). */
export const RULES_FILE = new URL("rules.yaml", MONITORING_DIR);
/** The PrometheusRule generated from it. */
export const PROMETHEUS_RULE_FILE = new URL("prometheus-rule.yaml", MONITORING_DIR);

const HEADER =
  `# Generated from rules.yaml by tests/monitoring/sync_rules.ts; edit rules.yaml, then run
#   deno run --allow-read --allow-write tests/monitoring/sync_rules.ts
# The bootc operator's alerts for the Prometheus Operator. If your Prometheus selects rules by
# label (kube-prometheus-stack: release=<name>), add that label in your overlay.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: bootc-operator
  namespace: bootc-operator
  labels:
    app.kubernetes.io/name: bootc-operator
    app.kubernetes.io/part-of: bootc-operator
    app.kubernetes.io/component: monitoring
spec:
`;

/** The PrometheusRule text for the rule file `rules` (its leading comment stays behind). */
export function prometheusRuleText(rules: string): string {
  const lines = rules.split("\n");
  const start = lines.findIndex((l) => l.trim() !== "" && !l.startsWith("#"));
  if (start < 0 || !lines[start].startsWith("groups:")) {
    throw new Error("rules.yaml must start (after its comments) with `groups:`");
  }
  const body = lines.slice(start).map((l) => (l === "" ? l : `  ${l}`)).join("\n");
  return HEADER + body;
}

if (import.meta.main) {
  const text = prometheusRuleText(await Deno.readTextFile(RULES_FILE));
  await Deno.writeTextFile(PROMETHEUS_RULE_FILE, text);
  console.log(`wrote ${PROMETHEUS_RULE_FILE.pathname}`);
}
