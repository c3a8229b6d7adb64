/**
 * Draining a node through the Eviction API, as level-triggered passes: each
 * reconcile plans one pass from the current pod list (pure), and the shell
 * evicts what the pass says. Nothing lives in memory between passes, so a
 * drain resumes after a controller restart from the slot annotation alone.
 *
 * @module
 */
import type { KubeObject } from "../../lib/kube/types.ts";
import {
  DEFAULT_DRAIN_POLICY,
  describeRefused,
  type DrainContext,
  type DrainPolicy,
  evictionGrace,
  podDisposition,
} from "./drain_policy.ts";
import { matchesSelector } from "./selector.ts";
import type { PdbSummary, PodSummary, VolumeAttachmentSummary } from "./types.ts";

/** One pass of a drain. */
export interface DrainPass {
  /** Pods to evict now. */
  toEvict: PodSummary[];
  /** Pods already terminating: waited for, not evicted again. */
  terminating: PodSummary[];
  /** Pods the drain leaves alone (mirror, DaemonSet-owned, completed). */
  skipped: number;
  /** Pods the policy's podSelector leaves alone (they stay Running). */
  kept: PodSummary[];
  /** The pod the acting controller runs in: left alone, it goes down with the reboot. */
  own: PodSummary[];
  /** Pods refused by the policy (emptyDir without deleteEmptyDirData): the drain waits, naming them. */
  refused: PodSummary[];
  /** Terminating pods no longer waited for (skipWaitForDeleteTimeoutSeconds, NotReady node). */
  abandoned: PodSummary[];
  /**
   * VolumeAttachments still there that no pod left alone holds (`waitForVolumeDetach`): the
   * drain's last stage, so only once no pod must go any more.
   */
  attached: VolumeAttachmentSummary[];
  /** The policy waits for volumes to detach, and the node's attachments were not read. */
  volumesUnknown: boolean;
  /** True when no pod needs to go any more (and, when waited for, every volume detached). */
  done: boolean;
}

/** The context of a pass without a policy: kubectl drain's defaults, node Ready. */
function defaultContext(): DrainContext {
  return { policy: DEFAULT_DRAIN_POLICY, now: new Date(0), nodeReady: true };
}

/**
 * Plans one drain pass over the pods currently bound to the node, under the
 * pool's drain policy (default: kubectl drain's defaults).
 */
export function planDrainPass(
  pods: readonly PodSummary[],
  ctx: DrainContext = defaultContext(),
): DrainPass {
  const pass: DrainPass = {
    toEvict: [],
    terminating: [],
    skipped: 0,
    kept: [],
    own: [],
    refused: [],
    abandoned: [],
    attached: [],
    volumesUnknown: false,
    done: false,
  };
  const staying = new Set<string>();
  for (const pod of pods) {
    const verdict = podDisposition(pod, ctx);
    if (verdict === "skip") pass.skipped++;
    else if (verdict === "keep") pass.kept.push(pod);
    else if (verdict === "own") pass.own.push(pod);
    else if (verdict === "refuse") pass.refused.push(pod);
    else if (verdict === "abandon") pass.abandoned.push(pod);
    else if (verdict === "wait") pass.terminating.push(pod);
    else pass.toEvict.push(pod);
    // Pods that stay (or are no longer waited for) keep their volumes attached.
    const stays = verdict === "keep" || verdict === "own" || verdict === "abandon" ||
      (verdict === "skip" && !pod.completed);
    if (stays) { for (const claim of pod.claims ?? []) staying.add(`${pod.namespace}/${claim}`); }
  }
  const podsGone = pass.toEvict.length === 0 && pass.terminating.length === 0 &&
    pass.refused.length === 0;
  if (ctx.policy.waitForVolumeDetach && podsGone) {
    pass.volumesUnknown = ctx.attachments === undefined;
    pass.attached = (ctx.attachments ?? []).filter((a) =>
      !(a.claim && staying.has(podKey(a.claim)))
    );
  }
  pass.done = podsGone && !pass.volumesUnknown && pass.attached.length === 0;
  return pass;
}

/**
 * What a drain whose pods are gone still waits for: its volumes to detach, named
 * (undefined while pods remain, or nothing is attached).
 */
export function drainWaitingFor(pass: DrainPass): string | undefined {
  if (pass.volumesUnknown) return "its VolumeAttachments to be read";
  if (pass.attached.length === 0) return undefined;
  const named = pass.attached.slice(0, 5).map(describeAttachment).join(", ");
  const more = pass.attached.length > 5 ? ` and ${pass.attached.length - 5} more` : "";
  return `${named}${more} to detach`;
}

/** `VolumeAttachment name (PersistentVolume pv, attacher)` for people. */
export function describeAttachment(a: VolumeAttachmentSummary): string {
  const details = [
    a.persistentVolume ? `PersistentVolume ${a.persistentVolume}` : undefined,
    a.claim ? `claim ${podKey(a.claim)}` : undefined,
    a.attacher,
  ].filter((d) => d !== undefined);
  return `VolumeAttachment ${a.name}${details.length > 0 ? ` (${details.join(", ")})` : ""}`;
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
  const refused = describeRefused(pass.refused);
  if (refused) parts.push(refused);
  if (pass.terminating.length > 0) {
    parts.push(
      `${pass.terminating.length} pod(s) still terminating (${
        pass.terminating.slice(0, 5).map(podKey).join(", ")
      })`,
    );
  }
  if (pass.attached.length > 0) {
    parts.push(
      `${pass.attached.slice(0, 5).map(describeAttachment).join(", ")} still attached` +
        (pass.attached.length > 5 ? ` and ${pass.attached.length - 5} more` : ""),
    );
  }
  return parts.join("; ");
}

/**
 * What blocks this drain now, as a phrase naming it: the PodDisruptionBudgets
 * that refuse an eviction it needs (they cover a pod still to evict and allow no
 * disruption), e.g. "PodDisruptionBudget ns/web allows no disruption now", and
 * the pods the policy refuses (emptyDir data), naming the field that allows
 * them; undefined when nothing does. Only names (no pod counts), so the phrase
 * stays put while the block lasts.
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
  const names = [...blocking].sort();
  const phrases = [
    names.length > 0
      ? `PodDisruptionBudget ${names.join(", ")} ${
        names.length === 1 ? "allows" : "allow"
      } no disruption now`
      : undefined,
    describeRefused(pass.refused),
  ].filter((p) => p !== undefined);
  return phrases.length > 0 ? phrases.join("; ") : undefined;
}

/**
 * How many disruptions each PDB would need for the given pods to be evicted
 * (those the policy evicts), keyed by `namespace/name`.
 */
export function pdbDemand(
  pods: readonly PodSummary[],
  pdbs: readonly PdbSummary[],
  ctx: DrainContext = defaultContext(),
): Map<string, number> {
  const demand = new Map<string, number>();
  for (const pod of pods) {
    if (podDisposition(pod, ctx) !== "evict") continue;
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
  spec?: {
    nodeName?: string;
    terminationGracePeriodSeconds?: number;
    volumes?: {
      name?: string;
      emptyDir?: unknown;
      ephemeral?: unknown;
      persistentVolumeClaim?: { claimName?: string };
    }[];
  };
  status?: { phase?: string; conditions?: { type?: string; status?: string }[] };
}

/** Builds the planner's {@linkcode PodSummary} from a Pod object. */
export function summarizePod(
  pod: PodLike,
  options: { ownPod?: { namespace: string; name: string } } = {},
): PodSummary {
  const meta = pod.metadata ?? {};
  const own = options.ownPod;
  const operator = own === undefined || meta.namespace !== own.namespace
    ? undefined
    : meta.name === own.name
    ? "own" as const
    : meta.labels?.[CONTROLLER_POD_LABEL.key] === CONTROLLER_POD_LABEL.value
    ? "replica" as const
    : undefined;
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
    emptyDir: (pod.spec?.volumes ?? []).some((v) =>
      v.emptyDir !== undefined && v.emptyDir !== null
    ),
    ...claimsOf(pod),
    terminationGracePeriodSeconds: pod.spec?.terminationGracePeriodSeconds,
    deletionTimestamp: meta.deletionTimestamp || undefined,
    ...(operator ? { operator } : {}),
  };
}

/** The claims a pod mounts: its own, and those of its generic ephemeral volumes (`<pod>-<volume>`). */
function claimsOf(pod: PodLike): { claims?: string[] } {
  const claims = (pod.spec?.volumes ?? []).flatMap((v) => {
    if (v.ephemeral && v.name) return [`${pod.metadata?.name ?? ""}-${v.name}`];
    const name = v.persistentVolumeClaim?.claimName;
    return name ? [name] : [];
  });
  return claims.length > 0 ? { claims } : {};
}

/** Minimal VolumeAttachment shape read when summarising (storage.k8s.io/v1). */
export interface VolumeAttachmentLike extends KubeObject {
  spec?: { attacher?: string; nodeName?: string; source?: { persistentVolumeName?: string } };
}

/** Minimal PersistentVolume shape read for its claim. */
export interface PersistentVolumeLike extends KubeObject {
  spec?: { claimRef?: { namespace?: string; name?: string } };
}

/** The drain's {@linkcode VolumeAttachmentSummary}, its claim from its PersistentVolume. */
export function summarizeAttachment(
  va: VolumeAttachmentLike,
  pv: PersistentVolumeLike | undefined,
): VolumeAttachmentSummary {
  const ref = pv?.spec?.claimRef;
  const persistentVolume = va.spec?.source?.persistentVolumeName;
  return {
    name: va.metadata?.name ?? "",
    ...(va.spec?.attacher ? { attacher: va.spec.attacher } : {}),
    ...(persistentVolume ? { persistentVolume } : {}),
    ...(ref?.namespace && ref.name ? { claim: { namespace: ref.namespace, name: ref.name } } : {}),
  };
}

/** The label of the controller's pods (manifests/controller.yaml, the chart's template). */
export const CONTROLLER_POD_LABEL = {
  key: "app.kubernetes.io/name",
  value: "bootc-operator-controller",
} as const;

/** A pod the drain force-deletes at its timeout (`onTimeout: Force`), and what that overrides. */
export interface ForcedDeletion {
  pod: PodSummary;
  /** The grace period to send (the policy's override, capped by the pod's own). */
  gracePeriodSeconds?: number;
  /** The PodDisruptionBudgets (`namespace/name`) that refuse its eviction now, which the deletion overrides. */
  overrides: string[];
}

/**
 * What `onTimeout: Force` deletes: the pods evictions cannot remove now, those
 * still to evict whose covering PodDisruptionBudgets include one that allows no
 * disruption. The others (no PDB, or a PDB with room) are evicted as before;
 * pods the policy refuses or leaves alone are not in `toEvict`, so never here.
 */
export function forcedDeletions(
  pass: DrainPass,
  pdbs: readonly PdbSummary[],
  policy: DrainPolicy,
): ForcedDeletion[] {
  return pass.toEvict.flatMap((pod) => {
    const overrides = pdbsCovering(pod, pdbs).filter((p) => p.disruptionsAllowed <= 0)
      .map(podKey).sort();
    return overrides.length > 0
      ? [{ pod, gracePeriodSeconds: evictionGrace(pod, policy), overrides }]
      : [];
  });
}

/** The Warning event's message for one forced deletion on `node` after `timeoutSeconds`. */
export function forcedDeletionMessage(
  node: string,
  d: ForcedDeletion,
  timeoutSeconds: number,
): string {
  const one = d.overrides.length === 1;
  return `deleting pod ${podKey(d.pod)} on node ${node}: the drain did not finish within ` +
    `${timeoutSeconds}s and onTimeout is Force; overriding PodDisruptionBudget ` +
    `${d.overrides.join(", ")}, which ${one ? "allows" : "allow"} no disruption`;
}

/** How one pod's eviction went. */
export type EvictionOutcome =
  | { pod: string; result: "evicted" | "gone" }
  | { pod: string; result: "refused"; message: string }
  | { pod: string; result: "failed"; error: unknown };

/** The eviction call, e.g. `(ns, name, grace) => client.evict(ns, name, { gracePeriodSeconds: grace })`. */
export type EvictFunc = (
  namespace: string,
  name: string,
  gracePeriodSeconds?: number,
) => Promise<void>;

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
  pods: readonly { namespace: string; name: string; gracePeriodSeconds?: number }[],
): Promise<EvictionOutcome[]> {
  const out: EvictionOutcome[] = [];
  for (const pod of pods) {
    const key = podKey(pod);
    try {
      await evict(pod.namespace, pod.name, pod.gracePeriodSeconds);
      out.push({ pod: key, result: "evicted" });
    } catch (e) {
      out.push(classifyEvictionError(key, e));
    }
  }
  return out;
}

/** How one forced deletion went. */
export type DeletionOutcome =
  | { pod: string; result: "deleted" | "gone" }
  | { pod: string; result: "failed"; error: unknown };

/** The delete call: the pod (its uid as a precondition, so a new pod of that name is spared). */
export type DeleteFunc = (
  pod: { namespace: string; name: string; uid?: string; gracePeriodSeconds?: number },
) => Promise<void>;

/**
 * Deletes the pods `onTimeout: Force` names, one after the other (the shell
 * half). Never throws: every pod gets an outcome; 404 and a uid precondition
 * conflict (409: a new pod took the name) mean the pod we meant is gone.
 */
export async function deletePods(
  del: DeleteFunc,
  pods: readonly { namespace: string; name: string; uid?: string; gracePeriodSeconds?: number }[],
): Promise<DeletionOutcome[]> {
  const out: DeletionOutcome[] = [];
  for (const pod of pods) {
    const key = podKey(pod);
    try {
      await del(pod);
      out.push({ pod: key, result: "deleted" });
    } catch (e) {
      const status = (e as { status?: number })?.status;
      out.push(
        status === 404 || status === 409
          ? { pod: key, result: "gone" }
          : { pod: key, result: "failed", error: e },
      );
    }
  }
  return out;
}
