/**
 * Whether a node that was asked to reboot into its target came back healthy:
 * a pure verdict from what the caches show (the Node, the BootcNode the daemon
 * reports on, the node's pods) and, when the pool asks for one, the latest
 * Prometheus answer. The planner's in-flight step acts on the verdict; the
 * failure policy (`failure_policy.ts`) decides what a failure does.
 *
 * A node is verified when, after the reboot: bootc reports the target booted;
 * the Node is Ready; the daemon's host check (for this boot) is healthy; the
 * pods the pool selects on the node are Ready; and the Prometheus query has
 * been empty long enough. A host that booted the target and fell back to its
 * previous deployment by itself fails at once, as does a failed unit; checks
 * still pending when the health timeout runs out fail with their names.
 *
 * @module
 */
import {
  type BootcNode,
  findCondition,
  type HealthSpec,
  HostCheckName,
  HostHealthyReason,
  NodeConditionType,
} from "../../lib/api/mod.ts";
import { type DesiredImage, entryMatches } from "./effective_state.ts";
import { matchesSelector } from "./selector.ts";
import { shortReference } from "../../lib/api/display.ts";
import { parseTime } from "./slots.ts";
import type { NodeSummary, PodSummary } from "./types.ts";

/** Default `spec.rollout.health.timeoutSeconds`. */
export const DEFAULT_HEALTH_TIMEOUT_S = 600;
/** Default `spec.rollout.health.prometheus.forSeconds`. */
export const DEFAULT_QUERY_FOR_S = 60;

/** The latest answer of a node's Prometheus check (kept by the shell). */
export interface QueryVerdict {
  /** When the result was last seen non-empty, or the query first ran (the empty streak starts after). */
  emptySince?: Date;
  /** The last answer: empty, non-empty (with a sample) or an error. */
  last: "empty" | "nonEmpty" | "error";
  message?: string;
}

/** Everything the verdict looks at. */
export interface HealthInput {
  node: NodeSummary;
  bn: BootcNode;
  /** The image the node was asked to boot. */
  desired: DesiredImage;
  health?: HealthSpec;
  /** When the reboot was requested (the Node's drained-at), if known. */
  rebootRequestedAt?: Date;
  /** The node's pods; undefined when not listed (the pod check then asks for them). */
  pods?: readonly PodSummary[];
  /**
   * Why the node's pods could not be listed (lost permission, a server error): the
   * pod check is unknown, not failed, however long it lasts (the shell says the
   * failure); judging it would set off the pool's onFailure policy on a guess.
   */
  podsUnreadable?: string;
  query?: QueryVerdict;
  now: Date;
}

/** One health check's state. */
export interface CheckResult {
  name: string;
  state: "passed" | "pending" | "failed";
  message: string;
}

/** The verdict on a node after its reboot request. */
export type HealthVerdict =
  /** Not running the target yet (still rebooting, or never came back). */
  | { state: "NotBooted" }
  /** The host booted the target and went back to its previous deployment by itself. */
  | { state: "FellBack"; message: string }
  /** Running the target; some checks still pending until `deadline`. */
  | { state: "Checking"; checks: CheckResult[]; deadline: Date; needPods: boolean }
  | { state: "Passed"; checks: CheckResult[] }
  /** `failed`: the names of the checks that failed (or did not pass in time). */
  | { state: "Failed"; checks: CheckResult[]; failed: string[]; message: string };

/** The health timeout of a pool in milliseconds. */
export function healthTimeoutMs(health: HealthSpec | undefined): number {
  return (health?.timeoutSeconds ?? DEFAULT_HEALTH_TIMEOUT_S) * 1000;
}

/**
 * True when the host fell back: a reboot into `desired` was requested, and bootc
 * now reports another deployment booted with `desired` as the rollback and
 * nothing of it staged (boot counting went back to the previous deployment).
 */
export function fellBack(bn: BootcNode, desired: DesiredImage): boolean {
  const s = bn.status;
  const shape = !entryMatches(s?.booted, desired) && entryMatches(s?.rollback, desired) &&
    !entryMatches(s?.staged, desired);
  if (!shape) return false;
  // The same shape is a node about to roll back to `desired` (its rollback deployment):
  // the daemon's Rebooted condition tells them apart; without one (an older daemon) the
  // shape decides.
  const rebooted = findCondition(s?.conditions, NodeConditionType.Rebooted);
  return rebooted === undefined || rebooted.reason === "FellBack";
}

/** Judges a node whose reboot into `input.desired` was requested. */
export function evaluateHealth(input: HealthInput): HealthVerdict {
  const { bn, node, desired, health, now } = input;
  if (input.rebootRequestedAt && fellBack(bn, desired)) {
    return {
      state: "FellBack",
      message: `node ${node.name} booted ${shortReference(desired.image)} and fell back to ${
        bn.status?.booted?.image
          ? shortReference(bn.status.booted.image)
          : "its previous deployment"
      } by itself`,
    };
  }
  if (!entryMatches(bn.status?.booted, desired)) return { state: "NotBooted" };

  const checks: CheckResult[] = [];
  checks.push(
    node.ready
      ? { name: "NodeReady", state: "passed", message: "Node is Ready" }
      : { name: "NodeReady", state: "pending", message: "Node is not Ready" },
  );
  checks.push(hostCheck(bn, health));
  let needPods = false;
  if (health?.podSelector) {
    if (input.pods === undefined) {
      needPods = true;
      checks.push({
        name: "Pods",
        state: "pending",
        message: input.podsUnreadable ?? "pods not listed yet",
      });
    } else {
      checks.push(podCheck(input.pods, health));
    }
  }
  // The node is back from its reboot: checks count from then, not from before it.
  const readySince = node.ready ? parseTime(node.readySince) : undefined;
  const start = latest(readySince, input.rebootRequestedAt) ?? now;
  if (health?.prometheus) checks.push(queryCheck(input.query, health, now, start));

  const failed = checks.filter((c) => c.state === "failed");
  if (failed.length > 0) {
    return {
      state: "Failed",
      checks,
      failed: failed.map((c) => c.name),
      message: describe(node.name, failed),
    };
  }
  const pending = checks.filter((c) => c.state === "pending");
  if (pending.length === 0) return { state: "Passed", checks };
  // The clock starts when the node is back: Ready after the reboot request, else the
  // request (a node that never gets Ready is caught by the reboot timeout first).
  const deadline = new Date(start.getTime() + healthTimeoutMs(health));
  // A check that could not be made is not one that failed to pass: it waits.
  const judged = pending.filter((c) => !(c.name === "Pods" && input.podsUnreadable));
  if (node.ready && now.getTime() >= deadline.getTime() && judged.length > 0) {
    return {
      state: "Failed",
      checks,
      failed: judged.map((c) => c.name),
      message: `${describe(node.name, judged)} within ${healthTimeoutMs(health) / 1000}s`,
    };
  }
  return { state: "Checking", checks, deadline, needPods };
}

/** How a released node stands while its pool's canary still watches it (the soak). */
export type SoakVerdict =
  | { state: "Healthy" }
  /** NotReady within its grace: the soak cannot pass now; the node fails at `failsAt`. */
  | { state: "NotReady"; failsAt: Date; message: string }
  | { state: "Failed"; message: string };

/** What a soak verdict looks at. */
export interface SoakInput {
  node: NodeSummary;
  bn: BootcNode;
  /** The image being soaked. */
  desired: DesiredImage;
  /** How long the node may be NotReady before it fails (the pool's grace, at most the soak). */
  graceMs: number;
  /**
   * When the soak began, if it has: with no grace, a Node Ready again since then was
   * NotReady during the soak (between two reconciles) and fails.
   */
  soakStart?: Date;
  now: Date;
}

/**
 * Health of a node that already finished its update (released) while its pool
 * still watches it (the canary's soak): a fallback or a failed host check
 * fails it; so does NotReady for `graceMs` or longer (at once without a grace,
 * also when its NotReady time is unknown). NotReady within the grace holds the
 * soak until `failsAt`. The pod and Prometheus checks are not repeated.
 */
export function soakVerdict(input: SoakInput): SoakVerdict {
  const { node, bn, desired, graceMs, now } = input;
  if (fellBack(bn, desired)) {
    return {
      state: "Failed",
      message: `node ${node.name} fell back from ${
        shortReference(desired.image)
      } to its previous deployment`,
    };
  }
  if (!entryMatches(bn.status?.booted, desired)) return { state: "Healthy" };
  const host = hostCheck(bn, undefined);
  if (host.state === "failed") return { state: "Failed", message: describe(node.name, [host]) };
  const since = parseTime(node.readySince);
  if (!node.ready) {
    const failsAt = since && new Date(since.getTime() + graceMs);
    const message = `node ${node.name} is not Ready since ${node.readySince ?? "an unknown time"}`;
    if (failsAt && now.getTime() < failsAt.getTime()) {
      return { state: "NotReady", failsAt, message: `${message} (grace ${graceMs / 1000}s)` };
    }
    return {
      state: "Failed",
      message: graceMs > 0 ? `${message}, longer than its grace of ${graceMs / 1000}s` : message,
    };
  }
  // Without a grace, a flap the reconciles did not see still counts: the Ready condition
  // changed during the soak, so it was NotReady in between.
  if (graceMs === 0 && since && input.soakStart && since.getTime() > input.soakStart.getTime()) {
    return {
      state: "Failed",
      message: `node ${node.name} was not Ready during the canary soak (Ready again since ` +
        `${node.readySince})`,
    };
  }
  return { state: "Healthy" };
}

function describe(node: string, checks: readonly CheckResult[]): string {
  return `node ${node} failed health checks: ${
    checks.map((c) => `${c.name} (${c.message})`).join(", ")
  }`;
}

function latest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a) return b;
  if (!b) return a;
  return a.getTime() >= b.getTime() ? a : b;
}

/** HostHealthy reasons that are the boot assessment's: the failed check is named for it. */
const BOOT_ASSESSMENT_REASONS: ReadonlySet<string> = new Set([
  HostHealthyReason.BootIncomplete,
  HostHealthyReason.BootMarkedBad,
]);

/** The daemon's report for the boot it runs now (a report from before the reboot does not count). */
function hostCheck(bn: BootcNode, _health: HealthSpec | undefined): CheckResult {
  const report = bn.status?.hostHealth;
  const cond = findCondition(bn.status?.conditions, NodeConditionType.HostHealthy);
  const booted = bn.status?.booted?.imageDigest;
  if (!report || (report.bootedDigest && booted && report.bootedDigest !== booted)) {
    return {
      name: HostCheckName.HostHealthy,
      state: "pending",
      message: "no host check for this boot yet",
    };
  }
  const detail = report.message || cond?.message || report.state;
  switch (report.state) {
    case "Healthy":
      return { name: HostCheckName.HostHealthy, state: "passed", message: detail };
    case "Unhealthy":
      return {
        name: BOOT_ASSESSMENT_REASONS.has(cond?.reason ?? "")
          ? HostCheckName.BootAssessment
          : HostCheckName.HostHealthy,
        state: "failed",
        message: report.failedUnits?.length
          ? `failed units: ${report.failedUnits.join(", ")}`
          : detail,
      };
    default:
      return { name: HostCheckName.HostHealthy, state: "pending", message: detail };
  }
}

function podCheck(pods: readonly PodSummary[], health: HealthSpec): CheckResult {
  const selected = pods.filter((p) =>
    !p.terminating && !p.completed && matchesSelector(health.podSelector, p.labels)
  );
  const notReady = selected.filter((p) => !p.ready);
  if (notReady.length === 0) {
    return { name: "Pods", state: "passed", message: `${selected.length} selected pod(s) Ready` };
  }
  const names = notReady.slice(0, 3).map((p) => `${p.namespace}/${p.name}`).join(", ");
  return {
    name: "Pods",
    state: "pending",
    message: `${notReady.length} selected pod(s) not Ready: ${names}${
      notReady.length > 3 ? ", …" : ""
    }`,
  };
}

function queryCheck(
  verdict: QueryVerdict | undefined,
  health: HealthSpec,
  now: Date,
  back: Date,
): CheckResult {
  const forMs = (health.prometheus?.forSeconds ?? DEFAULT_QUERY_FOR_S) * 1000;
  if (!verdict) return { name: "Prometheus", state: "pending", message: "query not run yet" };
  if (verdict.last !== "empty" || !verdict.emptySince) {
    return {
      name: "Prometheus",
      state: "pending",
      message: verdict.message ?? (verdict.last === "error" ? "query failed" : "query not empty"),
    };
  }
  // An empty streak that began before the node came back counts from its return.
  const since = latest(verdict.emptySince, back) ?? verdict.emptySince;
  const emptyMs = now.getTime() - since.getTime();
  if (emptyMs >= forMs) {
    return {
      name: "Prometheus",
      state: "passed",
      message: `empty for ${Math.round(emptyMs / 1000)}s`,
    };
  }
  return {
    name: "Prometheus",
    state: "pending",
    message: `empty for ${Math.round(emptyMs / 1000)}s of ${forMs / 1000}s`,
  };
}
