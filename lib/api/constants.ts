/**
 * Names shared by the controller, the daemon, the CRDs and the manifests.
 *
 * @module
 */

/** API group of the operator's resources. */
export const GROUP = "node.bootc.dev";
/** API version of the operator's resources. */
export const VERSION = "v1alpha1";
/** `apiVersion` of the operator's resources. */
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Kind, plural, singular and short names of BootcNodePool. */
export const POOL = {
  kind: "BootcNodePool",
  plural: "bootcnodepools",
  singular: "bootcnodepool",
  shortNames: ["bnp", "bootcpool"],
} as const;

/** Kind, plural, singular and short names of BootcNode. */
export const NODE = {
  kind: "BootcNode",
  plural: "bootcnodes",
  singular: "bootcnode",
  shortNames: ["bn"],
} as const;

/** Label on a Node managed by a pool; the daemon DaemonSet selects on it. */
export const LABEL_MANAGED = "bootc.dev/managed";
/** Label on a BootcNode naming its pool, for `kubectl get bootcnodes -l bootc.dev/pool=NAME`. */
export const LABEL_POOL = "bootc.dev/pool";
/**
 * Annotation on a BootcNode holding a reboot slot. Its value is the RFC 3339 time the
 * slot was taken; the drain timeout is measured from it. The annotation is the truth
 * about slot occupancy and survives controller restarts.
 */
export const ANNOTATION_IN_REBOOT_SLOT = "bootc.dev/in-reboot-slot";
/**
 * Annotation on a BootcNode recording whether its Node was already unschedulable
 * ("true") or not ("false") before the operator cordoned it, so exactly that is restored.
 */
export const ANNOTATION_WAS_CORDONED = "bootc.dev/was-cordoned";
/**
 * Annotation on a BootcNode recording the RFC 3339 time its drain finished and the
 * reboot was requested; the reboot deadline is measured from it.
 */
export const ANNOTATION_DRAINED_AT = "bootc.dev/drained-at";

/** Field manager the controller uses for its writes. */
export const CONTROLLER_FIELD_MANAGER = "bootc-operator-controller";
/** Field manager the daemon uses for its writes. */
export const DAEMON_FIELD_MANAGER = "bootc-operator-daemon";

/** Condition types of a BootcNode. */
export const NodeConditionType = {
  Idle: "Idle",
  Degraded: "Degraded",
} as const;

/** Reasons of the BootcNode Idle condition. */
export const IdleReason = {
  /** True: no active update cycle. */
  Idle: "Idle",
  /** False: pulling/staging the image. */
  Staging: "Staging",
  /** False: image staged, waiting for desiredImageState: Booted. */
  Staged: "Staged",
  /** False: reboot in progress. */
  Rebooting: "Rebooting",
} as const;
/** A reason of the BootcNode Idle condition. */
export type IdleReason = typeof IdleReason[keyof typeof IdleReason];

/** Reasons of the BootcNode Degraded condition. */
export const NodeDegradedReason = {
  /** True: the daemon hit an error (message has details). */
  Error: "Error",
  /** False: no errors. */
  Healthy: "Healthy",
} as const;

/** Condition types of a BootcNodePool. */
export const PoolConditionType = {
  UpToDate: "UpToDate",
  Degraded: "Degraded",
} as const;

/** Reasons of the BootcNodePool UpToDate condition. */
export const UpToDateReason = {
  AllUpdated: "AllUpdated",
  RolloutInProgress: "RolloutInProgress",
  Paused: "Paused",
} as const;

/** Reasons of the BootcNodePool Degraded condition. */
export const PoolDegradedReason = {
  /** Node selector overlaps with another pool. */
  NodeConflict: "NodeConflict",
  /** At least one node has errors or isn't converging. */
  NodeDegraded: "NodeDegraded",
  /** Pool spec contains invalid values the CRD schema cannot catch. */
  InvalidSpec: "InvalidSpec",
  /** The image reference could not be resolved (message has the registry's error). */
  ImageResolutionFailed: "ImageResolutionFailed",
  /** Two or more nodes in reboot slots are unhealthy: no new slots are handed out. */
  RolloutHalted: "RolloutHalted",
  /** No issues. */
  Healthy: "Healthy",
} as const;
