/**
 * `spec.rollout.preconditions.alerts`: no new reboot slot while an alert in Prometheus fires
 * that the pool names (its name matching `alertname`, its labels `matchLabels`), as kured
 * holds reboots on alerts. Nodes in flight finish; the check runs again before every grant.
 *
 * The shell polls `ALERTS{alertstate="firing",…}` ({@linkcode alertsQuery}) off the
 * reconcile path and hands the latest answer in as `GateInput.alerts`. An answer with series
 * holds the pool (`AlertsFiring`, naming the alerts). No answer yet holds it too
 * (`AlertsUnknown`), as does an unreachable Prometheus under `onUnreachable: Hold`; under
 * `Proceed` slots go on and the pool says the check is off (`AlertsUnchecked`).
 *
 * @module
 */
import type { PrometheusAlertsPrecondition } from "../../lib/api/mod.ts";
import type { Gate, GateDecision, GateInput, SpecCheckInput } from "./gate.ts";

/** The gate's wait reasons. */
export const AlertsReason = {
  /** A matching alert fires: no new slot. */
  AlertsFiring: "AlertsFiring",
  /** Not known yet, or Prometheus cannot be asked under `onUnreachable: Hold`: no new slot. */
  AlertsUnknown: "AlertsUnknown",
  /** Prometheus cannot be asked under `onUnreachable: Proceed`: slots go on, unchecked. */
  AlertsUnchecked: "AlertsUnchecked",
} as const;

const FIELD = "spec.rollout.preconditions.alerts";

/** The PromQL selector of the firing alerts `spec` names. */
export function alertsQuery(spec: PrometheusAlertsPrecondition): string {
  const matchers = [`alertstate="firing"`];
  if (spec.alertname !== undefined) matchers.push(`alertname=~${JSON.stringify(spec.alertname)}`);
  for (const [k, v] of Object.entries(spec.matchLabels ?? {}).sort(([a], [b]) => a < b ? -1 : 1)) {
    matchers.push(`${k}=${JSON.stringify(v)}`);
  }
  return `ALERTS{${matchers.join(",")}}`;
}

/** Holds every candidate back while a matching alert fires or, failing closed, is unknown. */
export const alertsGate: Gate = {
  name: "alerts",
  reasons: [
    { reason: AlertsReason.AlertsFiring, blocksPool: true },
    { reason: AlertsReason.AlertsUnknown, blocksPool: true },
    { reason: AlertsReason.AlertsUnchecked, blocksPool: false },
  ],
  validate({ pool }: SpecCheckInput): string[] {
    const re = pool.spec.rollout?.preconditions?.alerts?.alertname;
    if (re === undefined) return [];
    try {
      new RegExp(`^(?:${re})$`);
      return [];
    } catch {
      return [`${FIELD}.alertname: ${JSON.stringify(re)} is not a regular expression`];
    }
  },
  decide(input: GateInput): GateDecision {
    const spec = input.pool.spec.rollout?.preconditions?.alerts;
    if (!spec || input.candidates.length === 0) return { admit: input.candidates };
    const verdict = input.alerts;
    const where = `Prometheus at ${spec.url}`;
    if (verdict?.last === "empty") return { admit: input.candidates };
    if (verdict?.last === "nonEmpty") {
      return {
        admit: [],
        wait: {
          reason: AlertsReason.AlertsFiring,
          message: `no new reboot slot while alerts fire (${where}): ${verdict.message ?? ""}`,
        },
      };
    }
    if (!verdict) {
      return {
        admit: [],
        wait: {
          reason: AlertsReason.AlertsUnknown,
          message: `asking ${where} for firing alerts before the next reboot slot`,
        },
      };
    }
    const cause = `${where} cannot be asked for alerts (${verdict.message ?? "error"})`;
    if ((spec.onUnreachable ?? "Hold") === "Proceed") {
      return {
        admit: input.candidates,
        wait: {
          reason: AlertsReason.AlertsUnchecked,
          message: `${cause}: reboot slots go on unchecked (onUnreachable: Proceed)`,
        },
      };
    }
    return {
      admit: [],
      wait: {
        reason: AlertsReason.AlertsUnknown,
        message: `${cause}: no new reboot slot (onUnreachable: Hold)`,
      },
    };
  },
};
