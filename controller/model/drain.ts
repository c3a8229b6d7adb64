/**
 * Draining a node through the Eviction API, as level-triggered passes: each
 * reconcile plans one pass from the current pod list (pure), and the shell
 * evicts what the pass says. Nothing lives in memory between passes, so a
 * drain resumes after a controller restart from the slot annotation alone.
 *
 * @module
 */
import type { KubeObject } from "../../lib/kube/types.ts";
import { matchesSelector } from "./selector.ts";
import type { PdbSummary, PodSummary } from "./types.ts";

/** One pass of a drain. */
export interface DrainPass {
  /** Pods to evict now. */
  toEvict: PodSummary[];
  /** Pods already terminating: waited for, not evicted again. */
  terminating: PodSummary[];
  /** Pods the drain leaves alone (mirror, DaemonSet-owned, completed). */
  skipped: number;
  /** True when no pod needs to go any more. */
  done: boolean;
}

/** True when a drain must remove the pod (not mirror, DaemonSet-owned or completed). */
export function mustLeave(pod: PodSummary): boolean {
  return !pod.mirror && !pod.daemonSet && !pod.completed;
}

/** Plans one drain pass over the pods currently bound to the node. */
export function planDrainPass(pods: readonly PodSummary[]): DrainPass {
  const toEvict: PodSummary[] = [];
  const terminating: PodSummary[] = [];
  let skipped = 0;
  for (const pod of pods) {
    if (!mustLeave(pod)) skipped++;
    else if (pod.terminating) terminating.push(pod);
    else toEvict.push(pod);
  }
  return { toEvict, terminating, skipped, done: toEvict.length === 0 && terminating.length === 0 };
}

/** The PDBs whose selector covers `pod` (same namespace; an empty selector covers nothing, as in policy/v1 for nil). */
export function pdbsCovering(pod: PodSummary, pdbs: readonly PdbSummary[]): PdbSummary[] {
  return pdbs.filter((pdb) =>
    pdb.namespace === pod.namespace && pdb.selector !== undefined &&
    matchesSelector(pdb.selector, pod.labels)
  );
}

/** `namespace/name`. */
export function podKey(pod: { namespace: string; name: string }): string {
  return `${pod.namespace}/${pod.name}`;
}

/**
 * Describes what keeps a drain from finishing: every pod still to evict,
 * with the PDBs covering it and how many disruptions they allow, and the
 * pods still terminating.
 */
export function describeDrainBlockers(pass: DrainPass, pdbs: readonly PdbSummary[]): string {
  const parts = pass.toEvict.slice(0, 10).map((pod) => {
    const covering = pdbsCovering(pod, pdbs);
    if (covering.length === 0) return `pod ${podKey(pod)}`;
    const names = covering.map((p) =>
      `PodDisruptionBudget ${podKey(p)} allows ${p.disruptionsAllowed} disruption(s)`
    );
    return `pod ${podKey(pod)} (${names.join(", ")})`;
  });
  if (pass.toEvict.length > 10) parts.push(`${pass.toEvict.length - 10} more pod(s)`);
  if (pass.terminating.length > 0) {
    parts.push(
      `${pass.terminating.length} pod(s) still terminating (${
        pass.terminating.slice(0, 5).map(podKey).join(", ")
      })`,
    );
  }
  return parts.join("; ");
}

/**
 * The PodDisruptionBudgets that refuse an eviction this drain needs now (they
 * cover a pod still to evict and allow no disruption), as a phrase naming them,
 * e.g. "PodDisruptionBudget ns/web allows no disruption now"; undefined when none
 * does. Only names (no pod counts), so the phrase stays put while the block lasts.
 */
export function drainBlockedBy(
  pass: DrainPass,
  pdbs: readonly PdbSummary[],
): string | undefined {
  const blocking = new Set<string>();
  for (const pod of pass.toEvict) {
    for (const pdb of pdbsCovering(pod, pdbs)) {
      if (pdb.disruptionsAllowed <= 0) blocking.add(podKey(pdb));
    }
  }
  if (blocking.size === 0) return undefined;
  const names = [...blocking].sort();
  return `PodDisruptionBudget ${names.join(", ")} ${
    names.length === 1 ? "allows" : "allow"
  } no disruption now`;
}

/**
 * How many disruptions each PDB would need for the given pods to be evicted,
 * keyed by `namespace/name`.
 */
export function pdbDemand(
  pods: readonly PodSummary[],
  pdbs: readonly PdbSummary[],
): Map<string, number> {
  const demand = new Map<string, number>();
  for (const pod of pods) {
    if (!mustLeave(pod) || pod.terminating) continue;
    for (const pdb of pdbsCovering(pod, pdbs)) {
      const key = podKey(pdb);
      demand.set(key, (demand.get(key) ?? 0) + 1);
    }
  }
  return demand;
}

/** Minimal pod shape read when summarising (wire fields of core/v1 Pod). */
export interface PodLike extends KubeObject {
  metadata?: KubeObject["metadata"] & { deletionTimestamp?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type?: string; status?: string }[] };
}

/** Builds the planner's {@linkcode PodSummary} from a Pod object. */
export function summarizePod(pod: PodLike): PodSummary {
  const meta = pod.metadata ?? {};
  return {
    namespace: meta.namespace ?? "",
    name: meta.name ?? "",
    uid: meta.uid,
    nodeName: pod.spec?.nodeName ?? "",
    labels: meta.labels ?? {},
    mirror: Object.hasOwn(meta.annotations ?? {}, "kubernetes.io/config.mirror"),
    daemonSet: (meta.ownerReferences ?? []).some((o) => o.kind === "DaemonSet" && o.controller),
    terminating: typeof meta.deletionTimestamp === "string" && meta.deletionTimestamp !== "",
    completed: pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed",
    ready: (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
  };
}

/** How one pod's eviction went. */
export type EvictionOutcome =
  | { pod: string; result: "evicted" | "gone" }
  | { pod: string; result: "refused"; message: string }
  | { pod: string; result: "failed"; error: unknown };

/** The eviction call, e.g. `(ns, name) => client.evict(ns, name)`. */
export type EvictFunc = (namespace: string, name: string) => Promise<void>;

/** Classifies an eviction error: 429 is a PDB refusal (retried by the next pass), 404 means gone. */
export function classifyEvictionError(pod: string, error: unknown): EvictionOutcome {
  const status = (error as { status?: number })?.status;
  if (status === 404) return { pod, result: "gone" };
  if (status === 429) {
    return { pod, result: "refused", message: (error as Error).message ?? "eviction refused" };
  }
  return { pod, result: "failed", error };
}

/**
 * Runs one pass of evictions, one pod after the other (the shell half of the
 * drain). Never throws: every pod gets an outcome.
 */
export async function evictPods(
  evict: EvictFunc,
  pods: readonly { namespace: string; name: string }[],
): Promise<EvictionOutcome[]> {
  const out: EvictionOutcome[] = [];
  for (const pod of pods) {
    const key = podKey(pod);
    try {
      await evict(pod.namespace, pod.name);
      out.push({ pod: key, result: "evicted" });
    } catch (e) {
      out.push(classifyEvictionError(key, e));
    }
  }
  return out;
}
