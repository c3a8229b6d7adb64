/**
 * A pool's drain policy (`spec.rollout.drain`) as pure decisions on one pod:
 * left alone (podSelector), refused (emptyDir without deleteEmptyDirData), no
 * longer waited for (terminating long enough on a NotReady node), evicted, and
 * with which grace period. `drain.ts` plans a pass from these verdicts.
 *
 * @module
 */
import type { DrainPolicySpec } from "../../lib/api/mod.ts";
import { matchesSelector } from "./selector.ts";
import type { LabelSelector } from "./selector.ts";
import type { PodSummary, VolumeAttachmentSummary } from "./types.ts";

/** The drain policy with its defaults filled in. */
export interface DrainPolicy {
  /** Pods to leave alone (`podSelector`: the opposite of kubectl drain's --pod-selector). */
  keep?: LabelSelector;
  /** The grace override sent with each eviction (capped by the pod's own). */
  gracePeriodSeconds?: number;
  /** Evict pods with emptyDir volumes (else they are refused and named). */
  deleteEmptyDirData: boolean;
  /** On a NotReady node, stop waiting for pods deleted more than this long ago. */
  skipWaitForDeleteTimeoutSeconds?: number;
  /** At the drain timeout: degrade (default) or force-delete what evictions could not remove. */
  onTimeout: "Degrade" | "Force";
  /** The drain finishes only once the node's VolumeAttachments are gone (pods left alone aside). */
  waitForVolumeDetach?: boolean;
}

/** The policy of a pool that sets none (kubectl drain's defaults; Degrade at the timeout). */
export const DEFAULT_DRAIN_POLICY: DrainPolicy = Object.freeze({
  deleteEmptyDirData: false,
  onTimeout: "Degrade",
});

/** The field people set to let the drain evict pods with emptyDir volumes. */
export const EMPTY_DIR_FIELD = "spec.rollout.drain.deleteEmptyDirData";

/** The policy `spec` asks for, defaults filled in. */
export function drainPolicyOf(spec: DrainPolicySpec | undefined): DrainPolicy {
  if (!spec) return DEFAULT_DRAIN_POLICY;
  return {
    keep: spec.podSelector as LabelSelector | undefined,
    gracePeriodSeconds: spec.gracePeriodSeconds,
    deleteEmptyDirData: spec.deleteEmptyDirData ?? false,
    skipWaitForDeleteTimeoutSeconds: spec.skipWaitForDeleteTimeoutSeconds,
    onTimeout: spec.onTimeout ?? "Degrade",
    ...(spec.waitForVolumeDetach ? { waitForVolumeDetach: true } : {}),
  };
}

/** What one drain pass does with a pod. */
export type PodDisposition =
  /** Mirror, DaemonSet-owned or completed: never part of a drain. */
  | "skip"
  /** Matches the policy's podSelector: left alone, stays Running. */
  | "keep"
  /**
   * The pod the acting controller runs in: left alone. Evicting itself would stop the
   * only process that finishes the drain and uncordons, and on a cordoned single node no
   * replacement could start; left running, it finishes the drain, goes down with the reboot
   * and resumes from the API when the kubelet restarts it (elsewhere a standby replica takes
   * the Lease meanwhile). Its standby replicas are evicted like any pod.
   */
  | "own"
  /** Has emptyDir volumes and the policy does not allow deleting their data. */
  | "refuse"
  /** Terminating past skipWaitForDeleteTimeoutSeconds on a NotReady node: not waited for. */
  | "abandon"
  /** Terminating: waited for. */
  | "wait"
  /** To evict now. */
  | "evict";

/** What a verdict needs beside the pod: the policy, the time and the node's readiness. */
export interface DrainContext {
  policy: DrainPolicy;
  now: Date;
  /** The node's Ready condition (skipWaitForDeleteTimeoutSeconds applies to NotReady nodes). */
  nodeReady: boolean;
  /** The node's VolumeAttachments, read when the policy waits for them to go. */
  attachments?: readonly VolumeAttachmentSummary[];
}

/** The verdict on one pod bound to the node being drained. */
export function podDisposition(pod: PodSummary, ctx: DrainContext): PodDisposition {
  if (pod.mirror || pod.daemonSet || pod.completed) return "skip";
  if (pod.operator === "own") return "own";
  const { policy } = ctx;
  if (policy.keep && matchesSelector(policy.keep, pod.labels)) return "keep";
  if (pod.terminating) return abandoned(pod, ctx) ? "abandon" : "wait";
  // A controller replica's emptyDir is its scratch /tmp: nothing to keep.
  if (pod.emptyDir && !policy.deleteEmptyDirData && pod.operator !== "replica") return "refuse";
  return "evict";
}

/** kubectl's rule: deleted (deletionTimestamp) more than N seconds ago, here on a NotReady node. */
function abandoned(pod: PodSummary, ctx: DrainContext): boolean {
  const limit = ctx.policy.skipWaitForDeleteTimeoutSeconds;
  if (limit === undefined || ctx.nodeReady || !pod.deletionTimestamp) return false;
  const at = Date.parse(pod.deletionTimestamp);
  return Number.isFinite(at) && ctx.now.getTime() - at > limit * 1000;
}

/** The API server's default terminationGracePeriodSeconds. */
const DEFAULT_POD_GRACE_SECONDS = 30;

/**
 * The grace period to send when evicting or deleting `pod`: the policy's
 * override, never above the pod's own; undefined (the pod's own) without one.
 */
export function evictionGrace(pod: PodSummary, policy: DrainPolicy): number | undefined {
  if (policy.gracePeriodSeconds === undefined) return undefined;
  return Math.min(
    policy.gracePeriodSeconds,
    pod.terminationGracePeriodSeconds ?? DEFAULT_POD_GRACE_SECONDS,
  );
}

/**
 * The phrase naming pods refused for their emptyDir data and the field that
 * allows evicting them, e.g. "pod ns/a has emptyDir data (set
 * spec.rollout.drain.deleteEmptyDirData: true to evict it)"; undefined when none.
 * Names only, so it stays put while the refusal lasts.
 */
export function describeRefused(refused: readonly PodSummary[]): string | undefined {
  if (refused.length === 0) return undefined;
  const names = refused.map((p) => `${p.namespace}/${p.name}`).sort();
  const shown = names.length > 10
    ? `${names.slice(0, 10).join(", ")} and ${names.length - 10} more`
    : names.join(", ");
  const one = names.length === 1;
  return `pod${one ? "" : "s"} ${shown} ${one ? "has" : "have"} emptyDir data (set ` +
    `${EMPTY_DIR_FIELD}: true to evict ${one ? "it" : "them"})`;
}
