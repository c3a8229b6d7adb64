/**
 * Plain data the planner works on: summaries the shell builds from its caches,
 * so the pure core never sees a client and tests build inputs as literals.
 *
 * @module
 */
import type { PlatformDigest } from "../../lib/api/mod.ts";
import type { LabelSelector } from "./selector.ts";

/** The image a pool rolls out, pinned by digest. */
export interface Target {
  /** The digest the pool's ref resolved to (an index digest for a multi-arch image). */
  digest: string;
  /** `repository@digest`: what every BootcNode's `spec.desiredImage` is set to. */
  image: string;
  /** Per-platform manifest digests when `digest` is an image index. */
  platforms?: PlatformDigest[];
}

/** What the planner needs of a Kubernetes Node. */
export interface NodeSummary {
  name: string;
  uid?: string;
  /** `metadata.resourceVersion` as cached (a write planned on this view can be conditional on it). */
  resourceVersion?: string;
  labels: Record<string, string>;
  /** The Node's annotations (the operator's disruption record lives here). */
  annotations?: Record<string, string>;
  /** `spec.unschedulable`. */
  unschedulable: boolean;
  /** The Ready condition is True. */
  ready: boolean;
  /** `lastTransitionTime` of the Ready condition (RFC 3339), when known. */
  readySince?: string;
  /** `metadata.creationTimestamp` (RFC 3339), when known. */
  created?: string;
}

/** A VolumeAttachment of a node, as the drain reads it (`waitForVolumeDetach`). */
export interface VolumeAttachmentSummary {
  name: string;
  /** `spec.attacher`: the CSI driver. */
  attacher?: string;
  /** `spec.source.persistentVolumeName`, when the source is a PersistentVolume. */
  persistentVolume?: string;
  /** The claim bound to that PersistentVolume (`claimRef`), when known. */
  claim?: { namespace: string; name: string };
}

/** What the drain needs of a Pod bound to a node. */
export interface PodSummary {
  namespace: string;
  name: string;
  uid?: string;
  nodeName: string;
  labels: Record<string, string>;
  /** Has the `kubernetes.io/config.mirror` annotation (static pod; cannot be evicted). */
  mirror: boolean;
  /** Controlled by a DaemonSet (it would come straight back). */
  daemonSet: boolean;
  /** Has a deletionTimestamp: already going away. */
  terminating: boolean;
  /** Phase Succeeded or Failed. */
  completed: boolean;
  /** The Ready condition is True (health checks on pods after a reboot). */
  ready?: boolean;
  /** Has an emptyDir volume (its data is lost with the pod: `deleteEmptyDirData`). */
  emptyDir?: boolean;
  /** The PersistentVolumeClaims it mounts (names in its namespace). */
  claims?: string[];
  /** `spec.terminationGracePeriodSeconds` (caps the drain's grace override). */
  terminationGracePeriodSeconds?: number;
  /** `metadata.deletionTimestamp`, when terminating (`skipWaitForDeleteTimeoutSeconds`). */
  deletionTimestamp?: string;
  /**
   * A pod of the operator's controller: "own" for the pod the acting controller
   * itself runs in (drains leave it alone, `drain_policy.ts`), "replica" for another
   * replica (evicted like any pod, its emptyDir being only the controller's scratch
   * /tmp).
   */
  operator?: "own" | "replica";
}

/** What the drain needs of a PodDisruptionBudget. */
export interface PdbSummary {
  namespace: string;
  name: string;
  selector?: LabelSelector;
  /** `status.disruptionsAllowed`. */
  disruptionsAllowed: number;
}

/** Another pool, as far as conflict detection needs it. */
export interface PoolSummary {
  name: string;
  uid?: string;
  selector?: LabelSelector;
}

/** Result of one registry resolution of a tag. */
export type ResolveResult =
  | { ok: true; digest: string; platforms?: PlatformDigest[] }
  | { ok: false; message: string };

/** The latest resolution attempt the shell remembers for a pool (lost on restart, on purpose). */
export interface ResolutionMemo {
  /** The pool generation the attempt was made for. */
  generation: number | undefined;
  at: Date;
  result: ResolveResult;
}
