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

/** Kind, plural, singular and short names of BootcDisruptionBudget (cluster scoped). */
export const BUDGET = {
  kind: "BootcDisruptionBudget",
  plural: "bootcdisruptionbudgets",
  singular: "bootcdisruptionbudget",
  shortNames: ["bdb"],
} as const;

/** Label on a Node managed by a pool; the daemon DaemonSet selects on it. */
export const LABEL_MANAGED = "bootc.dev/managed";
/** Label on a BootcNode naming its pool, for `kubectl get bootcnodes -l bootc.dev/pool=NAME`. */
export const LABEL_POOL = "bootc.dev/pool";
/**
 * Label (value "true") a Secret in the operator's namespace must carry before the controller
 * sends its credentials to a webhook (hooks, the approval webhook): whoever may write pools
 * can name any Secret there, so only Secrets opted in this way are ever sent.
 */
export const LABEL_WEBHOOK_CREDENTIALS = "bootc.dev/webhook-credentials";
/**
 * Annotation on a **Node** holding a reboot slot. Its value is the RFC 3339 time the
 * slot was taken; the drain timeout is measured from it. Together with
 * {@linkcode ANNOTATION_WAS_CORDONED} and {@linkcode ANNOTATION_DRAINED_AT} it forms the
 * Node's disruption record: the facts live on the Node, not the BootcNode, so deleting
 * a BootcNode mid-flight loses nothing.
 */
export const ANNOTATION_IN_REBOOT_SLOT = "bootc.dev/in-reboot-slot";
/** Annotation on a Node naming the pool that holds its reboot slot. */
export const ANNOTATION_SLOT_POOL = "bootc.dev/reboot-slot-pool";
/**
 * Annotation recording whether the Node was already unschedulable ("true") or not
 * ("false") before the operator cordoned it, so exactly that is restored. Written on the
 * Node in the same write that cordons it (never overwritten while it stands) and mirrored
 * on the BootcNode as a backup, so either copy survives the loss of the other.
 */
export const ANNOTATION_WAS_CORDONED = "bootc.dev/was-cordoned";
/**
 * Annotation on a Node recording the RFC 3339 time its drain finished and the reboot was
 * requested; the reboot deadline is measured from it.
 */
export const ANNOTATION_DRAINED_AT = "bootc.dev/drained-at";
/**
 * Annotation on a Node naming the digest-pinned image its finished drain was for. The
 * daemon applies a staged image only when this equals its BootcNode's desiredImage.
 */
export const ANNOTATION_DRAINED_FOR = "bootc.dev/drained-for";
/**
 * Annotation on a **Node** of a pool (MCO-style, for people): the image the host boots,
 * short form (`repository@sha256:` and 12 hex digits; the full reference is the
 * BootcNode's `status.booted`). Written by the controller from its BootcNode. A read-only
 * fact, never part of the disruption record: nothing decides on it.
 */
export const ANNOTATION_CURRENT_IMAGE = "bootc.dev/current-image";
/** Annotation on a Node of a pool: the booted image's version (bootc's `version`), when known. */
export const ANNOTATION_CURRENT_VERSION = "bootc.dev/current-version";
/**
 * Annotation on a Node of a pool: the image the operator wants it to run (short form; the
 * full reference is the BootcNode's `spec.desiredImage`). Read-only, like
 * {@linkcode ANNOTATION_CURRENT_IMAGE}.
 */
export const ANNOTATION_DESIRED_IMAGE = "bootc.dev/desired-image";
/**
 * Annotation on a Node of a pool: the operator's state for it, the `state` of the one node
 * classification (`node_state.ts`: Pending, Staging, Staged, Draining, Rebooting,
 * Verifying, Updated, Failed, …). Read-only, like {@linkcode ANNOTATION_CURRENT_IMAGE}.
 */
export const ANNOTATION_NODE_STATE = "bootc.dev/state";
/**
 * The Node annotations that tell people a node's update (never read back as a fact):
 * removed when the node leaves its pool.
 */
export const NODE_INFO_ANNOTATIONS = [
  ANNOTATION_CURRENT_IMAGE,
  ANNOTATION_CURRENT_VERSION,
  ANNOTATION_DESIRED_IMAGE,
  ANNOTATION_NODE_STATE,
] as const;

/**
 * Annotations on a **BootcNode** for people, written by the controller (read-only facts,
 * never read back by any decision), shown by `kubectl get bootcnodes`: the node's state
 * ({@linkcode ANNOTATION_NODE_STATE}, the same value the Node carries), since when it has
 * been in it, and the short form of `spec.desiredImage` (tag and 12 hex digits; the full
 * reference is the spec's).
 */
export const ANNOTATION_STATE_SINCE = "bootc.dev/state-since";
/** See {@linkcode ANNOTATION_STATE_SINCE}: the desired image in short form. */
export const ANNOTATION_TARGET_SHORT = "bootc.dev/target";
/**
 * See {@linkcode ANNOTATION_STATE_SINCE}: what the state is about, where the state alone
 * does not say it: the check a Failed node failed, what a Stalled one is stalled on.
 */
export const ANNOTATION_STATE_DETAIL = "bootc.dev/state-detail";
/** The BootcNode annotations for people, in the order the printer columns show them. */
export const BOOTC_NODE_INFO_ANNOTATIONS = [
  ANNOTATION_NODE_STATE,
  ANNOTATION_STATE_DETAIL,
  ANNOTATION_STATE_SINCE,
  ANNOTATION_TARGET_SHORT,
] as const;

/**
 * Annotation on a BootcNode: RFC 3339 time the controller last changed its desiredImage;
 * the staging and daemon-report deadlines are measured from it.
 */
export const ANNOTATION_DESIRED_SINCE = "bootc.dev/desired-since";
/**
 * Annotation on a BootcNode: RFC 3339 time of the controller's first change to its spec
 * (any field: a new image, the reboot request and its revoke, a synced pull Secret)
 * that the daemon has not reported on, set in the same write; the daemon-report
 * deadline is measured from it, so the controller's own change never reads as a daemon
 * that has not reported for long, and a daemon already behind keeps its clock.
 */
export const ANNOTATION_SPEC_SINCE = "bootc.dev/spec-since";
/**
 * Annotation on a BootcNode: the `metadata.generation` the controller's last spec change
 * produced, set in the same write. A later generation means someone else changed the
 * spec since (a hand edit the controller reverts): the daemon is judged on the
 * controller's spec, not on that edit.
 */
export const ANNOTATION_SPEC_GENERATION = "bootc.dev/spec-generation";
/**
 * Annotation on a BootcNode, written by the controller in the write that releases a
 * node's reboot slot after its update: the digest-pinned image it verified the node on.
 * With {@linkcode ANNOTATION_VERIFIED_AT}, the daemon turns it into the `Verified` and
 * `Updated` conditions when it acknowledges the release (`lib/api/verified.ts`), so the
 * release costs no status write of the controller's own.
 */
export const ANNOTATION_VERIFIED_FOR = "bootc.dev/verified-for";
/** Annotation on a BootcNode: RFC 3339 time of the release {@linkcode ANNOTATION_VERIFIED_FOR} tells of. */
export const ANNOTATION_VERIFIED_AT = "bootc.dev/verified-at";
/**
 * Annotation on a BootcNode: the generation the release {@linkcode ANNOTATION_VERIFIED_FOR}
 * tells of produced (stamped in the same write). The verdict holds only while it is the
 * BootcNode's generation, so no later spec change (by any writer, an older controller
 * included) can bring it back.
 */
export const ANNOTATION_VERIFIED_GENERATION = "bootc.dev/verified-generation";

/**
 * Annotation on a BootcNode (written by the controller under `onFailure: RollbackNode`):
 * the digest-pinned image this node failed its health checks on. While the pool's
 * target is that image the node runs its previous image instead and is not retried.
 */
export const ANNOTATION_FAILED_IMAGE = "bootc.dev/failed-image";
/**
 * Annotation on a BootcNodePool a user sets (any new value) to close the circuit
 * breaker: the controller then resets the count of consecutive failed rollouts.
 */
export const ANNOTATION_RESET_CIRCUIT = "bootc.dev/reset-circuit-breaker";
/**
 * Annotation on a BootcNodePool a user sets to a revision number of `status.history`
 * (`kubectl bootc retry`) to roll a failed image out again: while that revision failed
 * (Failed or RolledBack), the pool moved on to a later one and no later one rolled its
 * digest out again, the controller forgets the failure (the digest in
 * `status.failedDigests`, an automatic rollback's hold on it). The new revision that
 * rolls the digest out again records the retry and ends the request.
 */
export const ANNOTATION_RETRY_REVISION = "bootc.dev/retry-revision";

/**
 * Pool annotation approving one rollout revision under `spec.rollout.approval.mode:
 * Annotation`: its value is the revision number (`status.history`) that may take
 * reboot slots (`kubectl bootc approve POOL` sets it). Any other value approves
 * nothing and is named in the pool's wait message.
 */
export const ANNOTATION_APPROVE_REVISION = "bootc.dev/approve-revision";

/** `spec.rollout.approval.mode`: who approves a revision's reboots. */
export const ApprovalModeValues = ["Annotation", "Webhook"] as const;
/** One `spec.rollout.approval.mode`. */
export type ApprovalMode = typeof ApprovalModeValues[number];
/** `spec.rollout.approval.scope`: one approval per revision (Pool) or per node and revision. */
export const ApprovalScopeValues = ["Pool", "Node"] as const;
/** One `spec.rollout.approval.scope`. */
export type ApprovalScope = typeof ApprovalScopeValues[number];
/** The verdicts `status.approval` records. */
export const ApprovalVerdictValues = ["Approved", "Refused", "NotRequired"] as const;
/** One recorded approval verdict. */
export type ApprovalVerdict = typeof ApprovalVerdictValues[number];

/** Field manager the controller uses for its writes. */
export const CONTROLLER_FIELD_MANAGER = "bootc-operator-controller";
/** Field manager the daemon uses for its writes. */
export const DAEMON_FIELD_MANAGER = "bootc-operator-daemon";

/** Condition types of a BootcNode. */
export const NodeConditionType = {
  Idle: "Idle",
  Degraded: "Degraded",
  /**
   * Written by the daemon: whether it may apply the staged image now (True only with a
   * reboot slot and a finished drain for this target, checked on the Node).
   */
  RebootAllowed: "RebootAllowed",
  /**
   * Written by the controller: True when the node's status has not caught up with its
   * spec within a deadline (reasons in {@linkcode StalledReason}).
   */
  Stalled: "Stalled",
  /**
   * Written by the daemon: the host's own health (`systemctl is-system-running`, or the
   * units the pool lists must be active), reasons in {@linkcode HostHealthyReason}.
   */
  HostHealthy: "HostHealthy",
  /**
   * Written by the controller after the node rebooted into its target: True once every
   * health check passed, False naming the check that failed (reasons in
   * {@linkcode VerifiedReason}).
   */
  Verified: "Verified",
  /**
   * Written by the controller, or by the daemon on its word (`lib/api/verified.ts`): True
   * once the node runs its target, verified, and its reboot slot was released; reset to
   * False when the target changes.
   */
  Updated: "Updated",
  /** Written by the daemon: True once the desired image is staged (or booted, or the rollback). */
  ImageStaged: "ImageStaged",
  /**
   * True once cordoned in a reboot slot for this target: written by the daemon from the
   * Node it reads before a reboot, and by the controller while it drains the node
   * (`drain_conditions.ts` has the rule).
   */
  Cordoned: "Cordoned",
  /**
   * True once drained for this target (the daemon, from the Node before a reboot); False
   * while the controller drains it, naming a PodDisruptionBudget that blocks the drain.
   */
  Drained: "Drained",
  /** Written by the daemon: True once the host booted the desired image (after its reboot). */
  Rebooted: "Rebooted",
} as const;

/** Reasons of the BootcNode HostHealthy condition (written by the daemon). */
export const HostHealthyReason = {
  /** True: `systemctl is-system-running` says running. */
  SystemRunning: "SystemRunning",
  /** True: every unit the pool lists is active. */
  UnitsActive: "UnitsActive",
  /** Unknown: the system is still starting (or a listed unit is activating). */
  Starting: "Starting",
  /** False: the system is degraded or a listed unit failed (the message names them). */
  UnitFailed: "UnitFailed",
  /** Unknown: the check itself could not run (the message says why). */
  CheckError: "CheckError",
  /** False: the boot finished without reaching boot-complete.target (boot assessment). */
  BootIncomplete: "BootIncomplete",
  /** False: systemd-bless-boot says the boot loader entry was marked bad. */
  BootMarkedBad: "BootMarkedBad",
} as const;

/** Reasons of the BootcNode Verified condition (written by the controller). */
export const VerifiedReason = {
  /** True: every health check passed after the reboot. */
  ChecksPassed: "ChecksPassed",
  /**
   * False: a check failed or did not pass within the health timeout (named in
   * `status.verification.failedChecks`).
   */
  CheckFailed: "CheckFailed",
  /** False: the host booted the target and fell back to its previous deployment by itself. */
  FellBack: "FellBack",
  /** False: the node was rolled back to its previous image after failing. */
  RolledBack: "RolledBack",
} as const;

/** Reasons of the BootcNode RebootAllowed condition. */
export const RebootAllowedReason = {
  /** True: the Node holds a reboot slot and its drain finished for the desired image. */
  SlotAndDrain: "SlotAndDrain",
  /** False: no reboot was requested. */
  NotRequested: "NotRequested",
  /** False: Booted was requested but the Node holds no reboot slot. */
  NoRebootSlot: "NoRebootSlot",
  /** False: the Node holds a slot but no finished drain for the desired image. */
  AwaitingDrain: "AwaitingDrain",
  /** False: the BootcNode is not owned by a BootcNodePool; the daemon does nothing. */
  NotOwned: "NotOwned",
} as const;

/** Reasons of the BootcNode Stalled condition. */
export const StalledReason = {
  /** False: the node is keeping up. */
  Progressing: "Progressing",
  /** No daemon has reported for this BootcNode's spec within the deadline. */
  DaemonNotReporting: "DaemonNotReporting",
  /** The desired image was not staged within the deadline. */
  StagingTimeout: "StagingTimeout",
  /** The node did not come back running the target and Ready within the deadline. */
  RebootTimeout: "RebootTimeout",
  /**
   * The node waited on unchanged facts for its daemon, the controller or its Node longer
   * than `rollout.progressTimeoutSeconds` (the message names what it waits for).
   */
  NoProgress: "NoProgress",
} as const;

/** Reasons of the BootcNode Idle condition. */
export const IdleReason = {
  /** True: no active update cycle. */
  Idle: "Idle",
  /** False: pulling/staging the image. */
  Staging: "Staging",
  /** False: locking a staged deployment (an unexpected reboot would apply it unlocked). */
  Locking: "Locking",
  /** False: image staged, waiting for desiredImageState: Booted. */
  Staged: "Staged",
  /** False: reboot in progress. */
  Rebooting: "Rebooting",
  /** True: the BootcNode has no owning pool; the daemon does nothing until one adopts it. */
  NotOwned: "NotOwned",
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
  /**
   * True after `maxRollbacks` consecutive failed rollouts: the controller makes no
   * automatic change (no new target, no automatic rollback) until a user resets it.
   */
  CircuitOpen: "CircuitOpen",
} as const;

/** Values of `spec.rollout.onFailure`. */
export const OnFailureValues = ["Halt", "RollbackNode", "RollbackPool"] as const;
/** What a pool does when a node fails its health checks after rebooting. */
export type OnFailure = typeof OnFailureValues[number];

/**
 * `spec.rollout.strategy`: RollingUpdate (default, the operator cordons, drains and
 * reboots through its slots) or External (another orchestrator does; the operator
 * resolves, stages and reports only).
 */
export const RolloutStrategyValues = ["RollingUpdate", "External"] as const;

/** `spec.rollout.order`: the order reboot slots go to a pool's nodes (node_order.ts). */
export const RolloutOrderValues = ["Default", "ZoneByZone", "OldestFirst", "NewestFirst"] as const;

/** How a pool orders its nodes for reboot slots. */
export type RolloutOrder = typeof RolloutOrderValues[number];

/**
 * Annotation on a Node: its update priority, an integer 0–1000 (higher first; unset 1).
 * 0 skips the node: it gets no reboot slot until the annotation changes.
 */
export const ANNOTATION_UPDATE_PRIORITY = "bootc.dev/update-priority";
/** One `spec.rollout.strategy`. */
export type RolloutStrategy = typeof RolloutStrategyValues[number];

/** Outcomes of a revision in `status.history`. */
export const RevisionOutcome = {
  Progressing: "Progressing",
  Succeeded: "Succeeded",
  RolledBack: "RolledBack",
  Failed: "Failed",
  Superseded: "Superseded",
} as const;
/** One outcome of a revision. */
export type RevisionOutcome = typeof RevisionOutcome[keyof typeof RevisionOutcome];

/** Reasons of the BootcNodePool UpToDate condition. */
export const UpToDateReason = {
  AllUpdated: "AllUpdated",
  RolloutInProgress: "RolloutInProgress",
  Paused: "Paused",
  /** `rollout.strategy: External`: staged nodes wait for another orchestrator to reboot them. */
  ExternalOrchestrator: "ExternalOrchestrator",
} as const;

/** Reasons of the BootcNodePool Degraded condition. */
export const PoolDegradedReason = {
  /** Node selector overlaps with another pool. */
  NodeConflict: "NodeConflict",
  /** At least one node has errors or isn't converging. */
  NodeDegraded: "NodeDegraded",
  /** Pool spec contains invalid values the CRD schema cannot catch. */
  InvalidSpec: "InvalidSpec",
  /**
   * The pool's pull Secret has the supported type but malformed content (message names the
   * Secret and the problem); hosts keep the credentials they had.
   */
  PullSecretInvalid: "PullSecretInvalid",
  /** The image reference could not be resolved (message has the registry's error). */
  ImageResolutionFailed: "ImageResolutionFailed",
  /**
   * Under `spec.image.verification.mode: Enforce`, the candidate image's signature did not
   * verify (message names the image and why); the pool stays on its current image.
   */
  SignatureInvalid: "SignatureInvalid",
  /** A node's status has not caught up with its spec within a deadline (see Stalled). */
  NodeStalled: "NodeStalled",
  /** Two or more nodes in reboot slots are unhealthy: no new slots are handed out. */
  RolloutHalted: "RolloutHalted",
  /**
   * A node failed its health checks after rebooting into the target; the message names
   * the node, the check and what `onFailure` did.
   */
  HealthCheckFailed: "HealthCheckFailed",
  /** The pool rolled back to its last good image automatically (`onFailure: RollbackPool`). */
  RolledBack: "RolledBack",
  /**
   * The approval webhook has failed every attempt for longer than the pool's
   * `progressTimeoutSeconds` (message names the endpoint and the last error).
   */
  ApprovalWebhookFailing: "ApprovalWebhookFailing",
  /**
   * A check of `spec.rollout.preconditions.objects` cannot be evaluated (its expression
   * errs on the object, its kind is unknown, or the controller may not read it): the
   * message names the check and the cause; no new reboot slot meanwhile.
   */
  PreconditionFailing: "PreconditionFailing",
  /**
   * The writes of this pool's plans (Node, BootcNode, eviction) have failed for longer than
   * its `progressTimeoutSeconds` (an admission policy or webhook refusing them, lost
   * permissions): the message names the last error and the nodes left as they were.
   */
  WritesFailing: "WritesFailing",
  /** No issues. */
  Healthy: "Healthy",
} as const;

/**
 * The phases a pool's hooks (`spec.hooks`) are called on: three per node (its slot
 * granted before the drain; its reboot requested; verified and released) and four per
 * rollout (a revision started, completed, halted, rolled back).
 */
export const HookPhaseValues = [
  "NodePreDrain",
  "NodePreReboot",
  "NodePostVerification",
  "RolloutStarted",
  "RolloutCompleted",
  "RolloutHalted",
  "RolloutRolledBack",
] as const;
/** One hook phase. */
export type HookPhase = typeof HookPhaseValues[number];

/** How a hook delivery ended (`status.hooks[].result`). */
export const HookResultValues = ["Delivered", "Failed"] as const;
/** One hook delivery result. */
export type HookResult = typeof HookResultValues[number];

/**
 * How long a daemon's pull of a new spec runs before it reports it (Staging):
 * a quick pull is reported once, staged or failed, with the spec's
 * `observedGeneration`. Until then the BootcNode's status visibly describes an
 * older spec. The controller waits at least {@linkcode MIN_DAEMON_REPORT_MS}
 * for a report.
 */
export const STAGING_REPORT_DELAY_MS = 5_000;
/** How soon a daemon tries a failed report of a running pull again. */
export const STAGING_REPORT_RETRY_MS = 2_000;
/**
 * The least time the controller waits for a daemon to report on a new spec
 * (a shorter `daemonReportTimeoutSeconds` counts as this): room for the report
 * delay, a few failed tries, and the end of a short pull the new spec made
 * obsolete (a daemon reports on a new spec only once the pull it is in ends).
 */
export const MIN_DAEMON_REPORT_MS = 30_000;
