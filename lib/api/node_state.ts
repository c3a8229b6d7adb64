/**
 * One classification of a node, shared by the controller (planning), the daemon
 * (its own view of whom it waits for) and the plugin (`kubectl bootc why` /
 * `status`): from a node's BootcNode, its Node (the disruption record, cordon,
 * Ready) and the image it should run, one {@linkcode NodeState} with a reason, a
 * message and what (and whom) the node waits for.
 *
 * The rules, in order:
 * 1. No BootcNode, or one no pool controls: Released (or Pending while a member's
 *    BootcNode is being created, or the Node still carries a record).
 * 2. Disrupted: the Node carries (part of) the disruption record, the BootcNode
 *    mirrors a prior cordon state, or the daemon says Idle=False/Rebooting —
 *    *whatever the target says*: a retarget during a reboot never frees the slot
 *    while the machine is down. (A host that fell back reports a stale Rebooting;
 *    it is up and not counted.)
 * 3. Failed (Verified=False while disrupted, or the host fell back), then the
 *    daemon's error (Degraded), then the disrupted phases: InSlot (cordoning, or
 *    a record without a slot), Draining, Rebooting (reboot requested, or under
 *    way), Verifying (back on the target: Ready, checks, soak).
 * 4. Not disrupted: Updated, Staging, Staged (ready for a slot), else Pending
 *    (held back by a gate, spec not synced yet, daemon not reported).
 * 5. Overlays shown over the phase: RollingBack (rolled back from the pool's
 *    target by onFailure RollbackNode), Stalled (the controller's condition).
 *
 * **The rollback route** is first-class: a target that is the host's rollback
 * deployment needs no download. The daemon then reports Idle=False/Staged ("…
 * is the rollback deployment: nothing to stage") whatever `status.staged` holds
 * (another image locked, a re-staged copy of the booted image, or nothing), and
 * the node is Staged, ready for a slot (`route: "rollback"`). Once it holds a
 * slot and its drain finished, the daemon boots it with `bootc rollback --apply`
 * (daemon/decide.ts, footnotes 7–10): no pull, the deployment on disk is exactly
 * the target, and a queued rollback is never left to an unexpected reboot. A
 * re-stage (`bootc switch` to the image again) would pull it and stage a second
 * copy for nothing.
 *
 * Kept free of the TypeBox schema (type imports only) so the daemon can import it
 * cheaply.
 *
 * @module
 */
import { ownedByPool } from "./annotations.ts";
import { findCondition } from "./conditions.ts";
import { shortReference } from "./display.ts";
import { failedChecksOn, verifiedSince } from "./verified.ts";
import {
  ANNOTATION_FAILED_IMAGE,
  ANNOTATION_SPEC_GENERATION,
  IdleReason,
  NodeConditionType,
  VerifiedReason,
} from "./constants.ts";
import { type DesiredImage, referenceDigest } from "../bootc/image_ref.ts";
import {
  type BootcNodeFacts,
  entryMatches,
  fellBackFrom,
  type NodeFacts,
  type NodeRead,
  phaseTargetIs,
  readNodeFacts,
} from "./node_facts.ts";
export * from "./node_facts.ts";

/** The fine-grained states of a node, in the order an update reaches them. */
export const NodeState = {
  /** The BootcNode is not controlled by a pool, or the node was handed back: nothing to do. */
  Released: "Released",
  /** The node should run the target but has not started on it (held, or the daemon has not reacted). */
  Pending: "Pending",
  /** The daemon is downloading (or locking) the target. */
  Staging: "Staging",
  /** The target is on disk (staged, or the rollback deployment): ready for a reboot slot. */
  Staged: "Staged",
  /** Holds a reboot slot; the cordon is being put in place. */
  InSlot: "InSlot",
  /** Holds a reboot slot, cordoned; its pods are being evicted. */
  Draining: "Draining",
  /** Drained and asked to reboot, or the daemon says it is rebooting: disrupted. */
  Rebooting: "Rebooting",
  /** Back on the target, still in its slot: being verified (Ready, health checks, soak). */
  Verifying: "Verifying",
  /** Runs the target, released. */
  Updated: "Updated",
  /** Failed after its reboot (a health check, fell back, did not come back): names the check. */
  Failed: "Failed",
  /** The daemon reports an error (Degraded=True). */
  Degraded: "Degraded",
  /** Sent back to its previous image after failing the target (onFailure RollbackNode). */
  RollingBack: "RollingBack",
  /** The controller found the node not keeping up (Stalled=True): names what it waits for. */
  Stalled: "Stalled",
} as const;
/** One {@linkcode NodeState}. */
export type NodeState = typeof NodeState[keyof typeof NodeState];

/**
 * The six coarse effective states (a bounded set: metric labels, pool counts),
 * Degraded taking priority.
 */
export const EffectiveState = {
  Degraded: "Degraded",
  UpToDate: "UpToDate",
  Pending: "Pending",
  Staging: "Staging",
  Staged: "Staged",
  Rebooting: "Rebooting",
} as const;
/** One of the six effective states. */
export type EffectiveState = typeof EffectiveState[keyof typeof EffectiveState];

/**
 * Whom a node waits for:
 * - `daemon`: the node's daemon (downloading, applying, reporting after a reboot);
 * - `controller`: the controller's next write (cordon, drain, reboot request, release, sync);
 * - `gate`: a rollout policy (budget, window, pause, staging limit, a PodDisruptionBudget);
 * - `node`: the Node itself (not Ready);
 * - `user`: a person (a failure under onFailure Halt, a daemon error);
 * - `nobody`: nothing to wait for.
 */
export type WaitsOn = "daemon" | "controller" | "gate" | "node" | "user" | "nobody";

/** The image a node should run (defined beside the matching rule in lib/bootc). */
export type { DesiredImage };

/**
 * True when a pool's `spec.rollout.strategy` is External: another orchestrator
 * (such as OpenShift's MCO) cordons, drains and reboots its nodes (the
 * `external` input of {@linkcode classifyNode}; the controller's `external` gate).
 */
export function externallyOrchestrated(
  pool: { spec?: { rollout?: { strategy?: string } } } | undefined,
): boolean {
  return pool?.spec?.rollout?.strategy === "External";
}

/** Input of {@linkcode classifyNode}. */
export interface ClassifyInput {
  /** The node's BootcNode; undefined when it has none (yet, or it was deleted). */
  bootcNode?: BootcNodeFacts;
  /** The node's Node; undefined when unknown (then nothing is known of its record, cordon, Ready). */
  node?: NodeRead;
  /**
   * The image the node should run: the pool's target, or, for a node rolled back
   * (onFailure RollbackNode), its own rollback image. Undefined: `poolTarget`,
   * unless the node was rolled back from it; else its `spec.desiredImage`.
   */
  target?: DesiredImage;
  /**
   * The pool's target. A node whose BootcNode's failed-image annotation names it
   * and whose spec names another image was rolled back from it: it is
   * {@linkcode NodeState.RollingBack} (counted as Degraded), judged against
   * `target` (or its own spec).
   */
  poolTarget?: DesiredImage;
  /**
   * Why the controller holds the node back from `target` (its spec still names an
   * older image): a gate's reason and message, e.g. the staging limit
   * (`maxStaging`) or `stageOutsideWindows: false`. The node is Pending, waiting on
   * that gate.
   */
  heldBy?: { reason: string; message: string };
  /**
   * The pool's `rollout.strategy` is External: another orchestrator reboots its
   * nodes, so a staged node (Ready or not: the orchestrator may be rebooting it)
   * waits on that orchestrator, a wait like a gate's, never a stall.
   */
  external?: boolean;
  /**
   * What blocks this node's drain (a PodDisruptionBudget named in a sentence), when
   * the controller knows it: a Draining node then waits on that gate.
   */
  drainBlockedBy?: string;
  /**
   * Whether the node belongs to the pool, as the caller (the controller) decided;
   * false: it is being handed back (Released once no longer disrupted). Undefined:
   * judged by the BootcNode's controller ownerReference (a BootcNode no pool owns
   * is Released).
   */
  member?: boolean;
  /**
   * The node's facts, when the caller read them already ({@linkcode readNodeFacts}, for
   * the target {@linkcode classifiedTarget} names).
   */
  facts?: NodeFacts;
}

/** The answer of {@linkcode classifyNode}. */
export interface NodeClassification {
  /** The one state shown. */
  state: NodeState;
  /**
   * The state before the overlays (Stalled, RollingBack; equal to `state`
   * otherwise): what the node is actually doing. Decisions use this, so a Stalled
   * condition the controller wrote never feeds back into what it decides.
   */
  phase: NodeState;
  /**
   * How far the daemon's own report got towards the target
   * ({@linkcode daemonProgress}): what the controller's decisions read.
   */
  effective: EffectiveState;
  /** The coarse state the node is counted as (pool counts, metrics): {@linkcode countedState}. */
  counted: EffectiveState;
  /** A CamelCase reason (see {@linkcode NodeStateReason}). */
  reason: string;
  /** A sentence for people. */
  message: string;
  /** Whom the node waits for. */
  waitsOn: WaitsOn;
  /** What it waits for, in words ("" for nothing). */
  waitsFor: string;
  /**
   * True while the node is disrupted: its Node carries (part of) the disruption
   * record, the BootcNode mirrors a prior cordon state, or the daemon says it is
   * rebooting. It counts against every budget until released.
   */
  disrupted: boolean;
  /** True when the node may be given a reboot slot now as far as its own state goes. */
  readyForSlot: boolean;
  /** How the target gets booted: a staged deployment, or the host's rollback deployment. */
  route?: "staged" | "rollback";
  /** For Failed: the check that failed (`NodeReady`, `HostHealthy`, `FellBack`, …). */
  failedCheck?: string;
}

/** Reasons {@linkcode classifyNode} gives. */
export const NodeStateReason = {
  NotOwned: "NotOwned",
  LeftPool: "LeftPool",
  NoBootcNode: "NoBootcNode",
  HeldBack: "HeldBack",
  AwaitingSpecSync: "AwaitingSpecSync",
  AwaitingReport: "AwaitingReport",
  AwaitingDaemon: "AwaitingDaemon",
  Downloading: "Downloading",
  Locking: "Locking",
  ReadyForSlot: "ReadyForSlot",
  RollbackRoute: "RollbackRoute",
  NotReady: "NotReady",
  Cordoning: "Cordoning",
  Draining: "Draining",
  DrainBlocked: "DrainBlocked",
  RebootRequested: "RebootRequested",
  Rebooting: "Rebooting",
  RollingBack: "RollingBack",
  WaitingForReady: "WaitingForReady",
  Checking: "Checking",
  Soaking: "Soaking",
  Releasing: "Releasing",
  UpToDate: "UpToDate",
  CheckFailed: "CheckFailed",
  FellBack: "FellBack",
  DaemonError: "DaemonError",
  RolledBack: "RolledBack",
  /** Staged under `rollout.strategy: External`: the external orchestrator reboots it. */
  ExternalOrchestrator: "ExternalOrchestrator",
} as const;

/** True when two references name the same image (the same digest, else the same string). */
export function sameImage(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  const da = referenceDigest(a);
  return da !== undefined ? da === referenceDigest(b) : a === b;
}

/**
 * How far the daemon's own report has come towards `target` (one of the six
 * effective states): Degraded (it reports an error), Rebooting (it says so,
 * whatever the target: a node whose daemon reboots is down), UpToDate (booted),
 * Staging, Staged (the target staged, or the host's rollback deployment, per a
 * report about this target), else Pending. A report about another image than
 * `target` (the spec names another image) is Pending.
 */
export function daemonProgress(bn: BootcNodeFacts, target: DesiredImage): EffectiveState {
  const status = bn.status;
  const conditions = status?.conditions;
  if (findCondition(conditions, NodeConditionType.Degraded)?.status === "True") {
    return EffectiveState.Degraded;
  }
  const idle = findCondition(conditions, NodeConditionType.Idle);
  const busy = idle?.status === "False" ? idle.reason : undefined;
  if (busy === IdleReason.Rebooting && !fellBackFrom(bn, target)) return EffectiveState.Rebooting;
  if (entryMatches(status?.booted, target)) return EffectiveState.UpToDate;
  if (!sameImage(bn.spec.desiredImage, target.image)) return EffectiveState.Pending;
  if (busy === IdleReason.Staging || busy === IdleReason.Locking) return EffectiveState.Staging;
  if (busy !== IdleReason.Staged) return EffectiveState.Pending;
  if (entryMatches(status?.staged, target)) return EffectiveState.Staged;
  // The rollback route: nothing to stage, whatever is staged (another image locked,
  // a copy of the booted image, nothing), as long as the report is about this target.
  if (
    entryMatches(status?.rollback, target) &&
    phaseTargetIs(status, bn.spec.desiredImage) !== false
  ) return EffectiveState.Staged;
  return EffectiveState.Pending;
}

/**
 * The image a node is judged against ({@linkcode ClassifyInput.target}), and whether it was
 * rolled back from the pool's target: what its facts must be read for.
 */
export function classifiedTarget(
  bn: BootcNodeFacts,
  input: Pick<ClassifyInput, "target" | "poolTarget">,
): { target: DesiredImage; rolledBack: boolean } {
  const poolTarget = input.poolTarget;
  const failedOn = bn.metadata?.annotations?.[ANNOTATION_FAILED_IMAGE];
  const rolledBack = poolTarget !== undefined && sameImage(failedOn, poolTarget.image) &&
    !sameImage(bn.spec.desiredImage, poolTarget.image);
  const target = input.target ?? (rolledBack ? undefined : poolTarget) ??
    { image: bn.spec.desiredImage };
  return { target, rolledBack };
}

/** Classifies one node (see the module doc). Pure. */
export function classifyNode(input: ClassifyInput): NodeClassification {
  const bn = input.bootcNode;
  const node = input.node;
  if (!bn) {
    const recorded = readNodeFacts({ node }).recorded;
    return finish(
      recorded || input.member === true
        ? step(NodeState.Pending, NodeStateReason.NoBootcNode, "controller", "its BootcNode")
        : step(NodeState.Released, NodeStateReason.NoBootcNode, "nobody", ""),
      { recorded, progress: EffectiveState.Pending },
    );
  }
  if (input.member === undefined && !ownedByPool(bn)) {
    return finish(step(NodeState.Released, NodeStateReason.NotOwned, "nobody", ""), {
      recorded: readNodeFacts({ node, bootcNode: bn }).recorded,
      progress: EffectiveState.Pending,
    });
  }
  const { target, rolledBack } = classifiedTarget(bn, input);
  const facts = input.facts ?? readNodeFacts({ node, bootcNode: bn, target });
  const progress = daemonProgress(bn, target);
  const disrupted = facts.recorded || facts.rebooting;
  const f: Facts = { bn, node, facts, target, progress, disrupted, input };
  let s = failedStep(f) ?? (disrupted ? disruptedStep(f) : waitingStep(f));
  const leaving = input.member === false || bn.metadata?.deletionTimestamp !== undefined;
  if (leaving && !disrupted) s = step(NodeState.Released, NodeStateReason.LeftPool, "nobody", "");
  const shown = overlay(s, f, rolledBack);
  return finish(shown, { recorded: disrupted, progress, phase: s });
}

/** The coarse state a node is counted as (pool counts, metrics): overlays included. */
export function countedState(state: NodeState, progress: EffectiveState): EffectiveState {
  switch (state) {
    case NodeState.Failed:
    case NodeState.Degraded:
    case NodeState.RollingBack:
    case NodeState.Stalled:
      return EffectiveState.Degraded;
    case NodeState.Verifying:
    case NodeState.Rebooting:
      return EffectiveState.Rebooting;
    case NodeState.Updated:
      return EffectiveState.UpToDate;
    case NodeState.Pending:
    case NodeState.Released:
      return EffectiveState.Pending;
    case NodeState.Staging:
      return EffectiveState.Staging;
    case NodeState.Staged:
      return EffectiveState.Staged;
    default:
      // In a slot, cordoning or draining: disrupted, so counted with the nodes being
      // rebooted (the pool's "N rebooting" is the nodes that hold a slot). The plugin
      // buckets by this too.
      void progress;
      return EffectiveState.Rebooting;
  }
}

/**
 * The failed check a Verified=False names: FellBack by its reason, else the checks
 * its `status.verification` lists for the BootcNode's image, else the reason itself
 * (a verdict written without the list).
 */
export function failedCheckOf(bn: Pick<BootcNodeFacts, "spec" | "status">, reason: string): string {
  if (reason === VerifiedReason.FellBack) return "FellBack";
  return failedChecksOn(bn.status, bn.spec.desiredImage)?.join(", ") ?? reason;
}

// ---------------------------------------------------------------------------------------

interface Facts {
  bn: BootcNodeFacts;
  node?: NodeRead;
  facts: NodeFacts;
  target: DesiredImage;
  progress: EffectiveState;
  disrupted: boolean;
  input: ClassifyInput;
}

/** A classification step: the state with its reason, message and wait. */
interface Step {
  state: NodeState;
  reason: string;
  waitsOn: WaitsOn;
  waitsFor: string;
  message?: string;
  route?: "staged" | "rollback";
  failedCheck?: string;
}

function step(
  state: NodeState,
  reason: string,
  waitsOn: WaitsOn,
  waitsFor: string,
  extra: Partial<Step> = {},
): Step {
  return { state, reason, waitsOn, waitsFor, ...extra };
}

/** Failed after its reboot (the controller's Verified=False, or the daemon saw it fall back). */
function failedStep(f: Facts): Step | undefined {
  const conditions = f.bn.status?.conditions;
  const rebooted = findCondition(conditions, NodeConditionType.Rebooted);
  const fellBack = fellBackFrom(f.bn, f.target);
  const verified = findCondition(conditions, NodeConditionType.Verified);
  const failed = verified?.status === "False" && verified.reason !== VerifiedReason.RolledBack &&
    verified.reason !== "TargetChanged";
  if (!fellBack && !(failed && f.disrupted)) return undefined;
  const check = fellBack && !failed ? "FellBack" : failedCheckOf(f.bn, verified!.reason);
  const detail = failed
    ? verified!.message
    : rebooted?.message || "the host booted the target and fell back to its previous deployment";
  return step(
    NodeState.Failed,
    fellBack && !failed ? "FellBack" : "CheckFailed",
    "user",
    "the pool's onFailure policy or someone to act on the failure",
    {
      failedCheck: check,
      message: `failed verification (${check}): ${detail}`,
    },
  );
}

/** A node the operator is disrupting (record on its Node, or its daemon rebooting). */
function disruptedStep(f: Facts): Step {
  const { bn, node, progress } = f;
  const record = f.facts.record;
  if (progress === EffectiveState.Degraded) return degradedStep(f);
  if (progress === EffectiveState.Rebooting) {
    const rollingBack = findCondition(bn.status?.conditions, NodeConditionType.Rebooted)?.reason ===
      "RollingBack";
    return step(
      NodeState.Rebooting,
      rollingBack ? NodeStateReason.RollingBack : "Rebooting",
      "daemon",
      "the host to come back from its reboot and its daemon to report",
    );
  }
  if (record.slotAt === undefined) {
    return step(
      NodeState.InSlot,
      NodeStateReason.Releasing,
      "controller",
      "the controller to finish or undo its work (a disruption record without a reboot slot)",
    );
  }
  if (progress === EffectiveState.UpToDate) return verifyingStep(f);
  const drained = f.facts.drained;
  if (node && node.unschedulable !== true) {
    return step(
      NodeState.InSlot,
      NodeStateReason.Cordoning,
      "controller",
      "the controller to cordon the Node" + (drained ? " (and drain it again)" : ""),
    );
  }
  if (drained) {
    return bn.spec.desiredImageState === "Booted"
      ? step(
        NodeState.Rebooting,
        NodeStateReason.RebootRequested,
        "daemon",
        "the daemon to apply the target and reboot",
      )
      : step(
        NodeState.Draining,
        "Drained",
        "controller",
        "the controller to request the reboot (desiredImageState: Booted)",
      );
  }
  if (f.input.drainBlockedBy) {
    return step(NodeState.Draining, NodeStateReason.DrainBlocked, "gate", f.input.drainBlockedBy);
  }
  if (progress !== EffectiveState.Staged) {
    return step(
      NodeState.Draining,
      NodeStateReason.Draining,
      "daemon",
      `the target to be staged (${progress.toLowerCase()}) before the reboot is requested`,
    );
  }
  return step(NodeState.Draining, NodeStateReason.Draining, "controller", "its pods to be evicted");
}

/** Back on the target, still in its slot. */
function verifyingStep(f: Facts): Step {
  if (f.node && f.node.ready !== true) {
    return step(
      NodeState.Verifying,
      NodeStateReason.WaitingForReady,
      "node",
      "the Node to become Ready",
    );
  }
  // Verified in this slot (the planner's soak reads the same).
  const from = f.facts.slotAt;
  if (verifiedSince(f.bn.status, f.bn.spec.desiredImage, { from })) {
    return step(
      NodeState.Verifying,
      NodeStateReason.Soaking,
      "controller",
      "minReadySeconds to pass, then the controller to release its slot",
    );
  }
  return step(
    NodeState.Verifying,
    NodeStateReason.Checking,
    "controller",
    "its health checks after the reboot (Ready, host health, pods, Prometheus)",
  );
}

function degradedStep(f: Facts): Step {
  const c = findCondition(f.bn.status?.conditions, NodeConditionType.Degraded);
  return step(
    NodeState.Degraded,
    NodeStateReason.DaemonError,
    "user",
    "the daemon's error to be resolved",
    { message: `the daemon reports an error: ${c?.message || c?.reason || "Degraded"}` },
  );
}

/** A node not disrupted: where it is on the way to (or at) its target. */
function waitingStep(f: Facts): Step {
  const { bn, node, progress, target } = f;
  switch (progress) {
    case EffectiveState.Degraded:
      return degradedStep(f);
    case EffectiveState.UpToDate:
      return step(NodeState.Updated, NodeStateReason.UpToDate, "nobody", "");
    case EffectiveState.Staging: {
      const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
      const locking = idle?.reason === IdleReason.Locking;
      return step(
        NodeState.Staging,
        locking ? NodeStateReason.Locking : NodeStateReason.Downloading,
        "daemon",
        locking ? "the daemon to lock the staged deployment" : "the download to finish",
      );
    }
    case EffectiveState.Staged: {
      const rollback = !entryMatches(bn.status?.staged, target);
      const extra = { route: rollback ? "rollback" as const : "staged" as const };
      const reason = rollback ? NodeStateReason.RollbackRoute : NodeStateReason.ReadyForSlot;
      if (f.input.external) {
        return step(
          NodeState.Staged,
          NodeStateReason.ExternalOrchestrator,
          "gate",
          "the external orchestrator to reboot it (rollout.strategy: External)",
          {
            ...extra,
            message: "staged; waiting for the external orchestrator to reboot it " +
              "(rollout.strategy: External)",
          },
        );
      }
      if (node && node.ready !== true) {
        return step(
          NodeState.Staged,
          NodeStateReason.NotReady,
          "node",
          "the Node to become Ready before it can take a reboot slot",
          extra,
        );
      }
      return step(NodeState.Staged, reason, "gate", "a reboot slot", extra);
    }
  }
  if (!sameImage(bn.spec.desiredImage, target.image)) {
    const held = f.input.heldBy;
    return held
      ? step(NodeState.Pending, NodeStateReason.HeldBack, "gate", held.message, {
        message: `held back (${held.reason}): ${held.message}`,
      })
      : step(
        NodeState.Pending,
        NodeStateReason.AwaitingSpecSync,
        "controller",
        `the controller to set desiredImage to ${shortReference(target.image)}`,
      );
  }
  return daemonUnreported(bn)
    ? step(
      NodeState.Pending,
      NodeStateReason.AwaitingReport,
      "daemon",
      "the daemon to report on its current spec",
    )
    : step(
      NodeState.Pending,
      NodeStateReason.AwaitingDaemon,
      "daemon",
      "the daemon to start staging",
    );
}

/**
 * True while the daemon has not reported on the BootcNode's current spec (no
 * status, or an `observedGeneration` behind its `generation`): the one rule the
 * classification, the stall deadline, the spec-change clock and the daemon's own
 * report timing read.
 */
export function daemonUnreported(bn: Pick<BootcNodeFacts, "metadata" | "status">): boolean {
  const generation = bn.metadata?.generation;
  const observed = bn.status?.observedGeneration;
  return !bn.status || (generation !== undefined && (observed ?? -1) < generation);
}

/**
 * True while the daemon has not reported on the spec the controller last wrote
 * (`bootc.dev/spec-generation`): {@linkcode daemonUnreported}, except that a spec
 * someone else wrote since (a hand edit, reverted by the next plan) is not held
 * against a daemon that had reported on the controller's. Without the annotation (or
 * with one ahead of the object), the same as {@linkcode daemonUnreported}.
 */
export function daemonBehindController(
  bn: Pick<BootcNodeFacts, "metadata" | "status">,
): boolean {
  if (!daemonUnreported(bn)) return false;
  const text = bn.metadata?.annotations?.[ANNOTATION_SPEC_GENERATION];
  const written = text !== undefined && /^[0-9]{1,15}$/.test(text) ? Number(text) : undefined;
  const generation = bn.metadata?.generation;
  if (written === undefined || generation === undefined || written >= generation) return true;
  return (bn.status?.observedGeneration ?? -1) < written;
}

/** What is shown over the phase: the node rolled back, or found stalled. */
function overlay(s: Step, f: Facts, rolledBack: boolean): Step {
  if (rolledBack && s.state !== NodeState.Released) {
    const doing = s.state === NodeState.Updated ? "rolled back to" : "rolling back to";
    return {
      ...s,
      state: NodeState.RollingBack,
      reason: s.state === NodeState.Updated ? NodeStateReason.RolledBack : s.reason,
      message:
        `failed ${shortReference(f.input.poolTarget?.image)}; ${doing} ${
          shortReference(f.bn.spec.desiredImage)
        }` +
        (s.state === NodeState.Updated ? "" : ` (${describe(s)})`),
    };
  }
  const stalled = findCondition(f.bn.status?.conditions, NodeConditionType.Stalled);
  const quiet: NodeState[] = [
    NodeState.Updated,
    NodeState.Released,
    NodeState.Failed,
    NodeState.Degraded,
  ];
  if (stalled?.status === "True" && !quiet.includes(s.state)) {
    return {
      ...s,
      state: NodeState.Stalled,
      reason: stalled.reason,
      message: `stalled (${stalled.reason}): ${stalled.message}; waiting for ${s.waitsFor}`,
    };
  }
  return s;
}

function describe(s: Step): string {
  if (s.message) return s.message;
  const what = STATE_TEXT[s.state];
  return s.waitsFor ? `${what}; waiting for ${s.waitsFor}` : what;
}

/** A few words per state, for messages. */
export const STATE_TEXT: Readonly<Record<NodeState, string>> = {
  Released: "not managed by a pool",
  Pending: "pending",
  Staging: "staging the target",
  Staged: "staged, ready for a reboot slot",
  InSlot: "in a reboot slot",
  Draining: "in a reboot slot, draining",
  Rebooting: "rebooting",
  Verifying: "back on the target, being verified",
  Updated: "up to date",
  Failed: "failed",
  Degraded: "degraded",
  RollingBack: "rolling back",
  Stalled: "stalled",
};

function finish(
  s: Step,
  o: { recorded: boolean; progress: EffectiveState; phase?: Step },
): NodeClassification {
  const phase = o.phase ?? s;
  const readyForSlot = !o.recorded && phase.state === NodeState.Staged;
  const out: NodeClassification = {
    state: s.state,
    phase: phase.state,
    effective: o.progress,
    counted: countedState(s.state, o.progress),
    reason: s.reason,
    message: describe(s),
    waitsOn: s.waitsOn,
    waitsFor: s.waitsFor,
    disrupted: o.recorded,
    readyForSlot,
  };
  if (s.route) out.route = s.route;
  if (s.failedCheck) out.failedCheck = s.failedCheck;
  return out;
}
