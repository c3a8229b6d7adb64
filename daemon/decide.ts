/**
 * The daemon's functional core: from the BootcNode spec, the status last
 * written, the host's bootc status and what the shell knows about its own
 * commands, compute the status to write and the one action to run next.
 *
 * Level-triggered: nothing here depends on remembering what happened before
 * the last restart beyond what is persisted in the BootcNode status (the Idle
 * reason) and what bootc reports, so a daemon killed in any phase resumes
 * correctly.
 *
 * State machine (Idle condition reasons; D = spec.desiredImage, P = the image booted before D):
 *
 * | host (booted / staged / rollback vs D)          | desiredImageState | Idle            | action           |
 * |-------------------------------------------------|-------------------|-----------------|------------------|
 * | booted D, nothing (or a copy of D) staged       | any               | True/Idle       | none             |
 * | booted D, other image B staged                  | any               | False/Staging   | stage D ¹ ¹¹     |
 * | booted ≠ D, D staged, locked                    | Staged            | False/Staged    | none             |
 * | booted ≠ D, D staged, unlocked                  | Staged            | False/Locking   | lock ²           |
 * | booted ≠ D, D staged, reboot authorized ⁶       | Booted            | False/Rebooting | apply ³          |
 * | booted ≠ D, D staged, reboot not authorized ⁶   | Booted            | False/Staged    | none (or lock ²) |
 * | booted ≠ D, nothing or other image staged       | any               | False/Staging   | stage D ⁴ ¹¹     |
 * | after Rebooting: booted ≠ D, rollback = D       | any               | unchanged       | none, Degraded ⁵ |
 * | booted ≠ D, rollback = D ⁷, B staged unlocked   | any ⁸             | False/Locking   | lock ²           |
 * | booted ≠ D, rollback = D ⁷, nothing/B locked    | Staged            | False/Staged    | none             |
 * | booted ≠ D, rollback = D ⁷, reboot authorized ⁶ | Booted            | False/Rebooting | rollback ⁹       |
 * | booted ≠ D, rollback = D ⁷, not authorized ⁶    | Booted            | False/Staged    | none             |
 * | booted ≠ D, rollback = D ⁷, rollback queued     | any               | unchanged       | unqueue ¹⁰       |
 * | any, BootcNode not controlled by a pool         | any               | True/NotOwned   | none             |
 * | Rebooting, own reboot running, spec moved ¹²    | any               | unchanged       | none             |
 *
 * 1. bootc has no "unstage": left alone, B would boot on the next reboot (if
 *    unlocked) or stay the host's spec. Switching to the booted image stages a
 *    locked copy of D, which replaces B; a staged copy of D is harmless.
 * 2. An unlocked staged D (a fall-back stage interrupted between its two
 *    commands, or staged by someone else) would boot without a drain on an
 *    unexpected reboot: `bootc upgrade --download-only` locks it.
 * 3. Only when the freshly read staged entry provides D (`--from-downloaded`
 *    applies whatever is staged). Rebooting is persisted before the command
 *    runs; while the detached command runs nothing more is done; if Rebooting
 *    is persisted but no command runs (the daemon restarted before the reboot)
 *    it is issued again.
 * 4. Also a locked stage discarded by an unexpected reboot, a stage interrupted
 *    by a crash, and a desiredImage changed while staging or staged.
 * 5. The node booted D and came back on the previous image (boot assessment
 *    rolled back; P booted, D the rollback, nothing staged): applying again
 *    would loop, so Degraded says "booted D but the host fell back to P",
 *    `Rebooted` is False/FellBack (which keeps this row until the spec
 *    changes) and nothing is done. Only after an apply of a staged D: after a
 *    rollback (⁹) `Rebooted` is False/RollingBack, which this row excludes.
 * 6. The spec alone never reboots a node: the shell reads its own Node and
 *    passes `rebootAuthorization`'s answer (lib/api/annotations.ts: reboot
 *    slot, cordon and a finished drain for D, from the controller's
 *    annotations). Until it has read the Node, decide asks for it
 *    (`readNode`); while the answer is no, the image stays staged (locked),
 *    `RebootAllowed` says why and the Node is read again after
 *    {@linkcode DEFAULT_REBOOT_RECHECK_MS}.
 * 7. The rollback route: the controller rolls a failed node back by setting D
 *    to the node's previous image, which is the host's rollback deployment
 *    (matched like any entry: pullspec digest or per-platform imageDigest).
 *    Nothing needs staging; `ImageStaged` is True/RollbackDeployment.
 *    `bootc rollback` is never queued without `--apply`: a queued rollback
 *    changes what an unexpected reboot boots.
 * 8. With Booted and an authorized reboot, the rollback itself discards B, but
 *    B is locked first all the same (the rollback may be refused or fail).
 * 9. `bootc rollback --apply [--soft-reboot=auto]`, exactly like an apply:
 *    authorized by the same rule on authoritative reads right before, Rebooting
 *    persisted first (with `Rebooted` False/RollingBack), run detached. After
 *    the reboot booted = D: True/Idle.
 * 10. A rollback already queued (an interrupted `rollback --apply`, or someone's
 *    `bootc rollback`) would boot D on an unexpected reboot: plain `bootc
 *    rollback` toggles the boot order back (it also discards a staged
 *    deployment); the next round proceeds as above. Not while this process's
 *    own rollback command runs.
 * 11. Another image B staged unlocked (a crash between the two commands of an
 *    older bootc's stage, someone else's switch) is locked first: the pull of D
 *    may take long or never succeed, and B should not boot on an unexpected
 *    reboot meanwhile (Idle is False/Locking meanwhile, as for every lock). The new
 *    spec is reported first, the lock (which asks B's
 *    registry) gets at most {@linkcode OTHER_LOCK_TIMEOUT_MS}, and while it fails
 *    and waits for its retry D is staged all the same (it replaces B).
 * 12. While the apply (or rollback) this process started still runs and the spec
 *    no longer asks for that reboot (desiredImage changed, even to the booted
 *    image, or Booted withdrawn), Idle stays Rebooting and nothing is done: the
 *    host is going down into what it applies, and the controller counts a
 *    Rebooting node as disrupted (lib/api/node_state.ts) until it is back. Once
 *    back, the next decision starts from what it booted (it may need redoing).
 * 13. `rollout.strategy: External`: another orchestrator applies and reboots. The
 *    spec then never says Booted, so this daemon only stages and reports; when
 *    the host comes back on D (staged, or the rollback deployment, at the last
 *    report) `Rebooted` is True/RebootedExternally, Idle True: no fallback (⁵
 *    needs this daemon's own Rebooting), nothing reset. Back on another image,
 *    D is staged again (⁴).
 *
 * A BootcNode no BootcNodePool controls (hand-made, or orphaned) is never acted
 * on: nothing is staged, locked or applied (the auto-update timer is still
 * masked: that only protects the host).
 *
 * `RebootAllowed` (written only when it says something: once Booted was
 * requested or the condition exists) is True/SlotAndDrain when the apply was
 * authorized, False with rebootAuthorization's reason when refused,
 * False/NotRequested once the spec is back to Staged and False/NotOwned for a
 * BootcNode no pool owns; otherwise it keeps its last value.
 *
 * Degraded (True/Error, message joined from every problem, else
 * False/Healthy): bootc status failing (a timeout is tolerated for a grace
 * period, since status blocks while a pull holds the sysroot lock), booted:
 * null (not a bootc host, or bootc detected a container), an incompatible or
 * non-container booted deployment, bootc too old, a missing pull Secret, and
 * the failure of the action that is due (retried with exponential backoff).
 *
 * Per-phase conditions (MachineConfigNode style), about the current D, set in
 * the writes the state machine makes anyway (for an owned BootcNode whose host
 * can be read):
 *
 * | type          | True                                               | False                                                |
 * |---------------|----------------------------------------------------|------------------------------------------------------|
 * | `ImageStaged` | Staged / Booted / RollbackDeployment: D is on disk  | Downloading                                          |
 * | `Cordoned`    | Cordoned: the Node holds a slot and is cordoned ¹¹  | Waiting; NotRequired (D booted without a reboot)     |
 * | `Drained`     | Drained: the Node's drain finished for D ¹¹         | Waiting; NotRequired                                 |
 * | `Rebooted`    | Rebooted (after a reboot); RebootedExternally ¹³; AlreadyBooted | Waiting, Rebooting, RollingBack, FellBack ⁵ |
 *
 * 11. From the Node as read before a reboot (only then: an idle daemon reads
 *    nothing); the slot time and the drain time are their lastTransitionTime.
 *    While the Node is not read they keep their value, whoever wrote it: the
 *    controller writes them while it drains the node (Cordoned True, Drained
 *    False/Draining or DrainBlocked naming the PodDisruptionBudget), see
 *    lib/api/drain_conditions.ts. Only NotRequired (D booted) replaces a False.
 *
 * `status.phaseImage` names the D they are about: that is how a later decision
 * tells that the spec moved to another image (a status without it, from an older
 * daemon, is taken to be about the current D). Then the phase
 * conditions start over (fresh transition times) and the controller's
 * `Verified` (if present) becomes Unknown and `Updated` (if present) False,
 * both with reason TargetChanged, in the write made for the new target anyway.
 * No other condition of the controller's (Stalled, Verified, Updated) is ever
 * touched.
 *
 * Host health (`status.hostHealth`, `HostHealthy`; see health.ts) is the
 * check the shell passes; it is written only when its state, reason, failed
 * units or the booted digest change, never because only `checkedAt` or the
 * message moved. `stopping` is ignored while this node's own reboot runs.
 *
 * @module
 */
// Direct imports, not lib/api/mod.ts: the schema module builds TypeBox objects at load time,
// which the daemon does not need (resident memory matters on every node).
import { type NodeForReboot, type RebootAuthorization } from "../lib/api/annotations.ts";
import { cordonedMessage } from "../lib/api/drain_conditions.ts";
import { shortReference } from "../lib/api/display.ts";
import {
  type ConditionInput,
  conditionsEqual,
  findCondition,
  setCondition,
} from "../lib/api/conditions.ts";
import {
  IdleReason,
  NodeConditionType,
  NodeDegradedReason,
  RebootAllowedReason,
  STAGING_REPORT_DELAY_MS,
} from "../lib/api/constants.ts";
// Whether the phase conditions are about an image: the one test the controller and the
// plugin read too.
import { daemonSaysRebooting, daemonUnreported, phaseTargetIs } from "../lib/api/node_state.ts";
import { readNodeFacts } from "../lib/api/node_facts.ts";
import type {
  BootcNodeSpec,
  BootcNodeStatus,
  BootEntryStatus,
  Condition,
} from "../lib/api/schema.ts";
import { verifiedRelease, withVerifiedRelease } from "../lib/api/verified.ts";
import { entryProvides } from "../lib/bootc/image_ref.ts";
import { formatTime } from "../lib/clock.ts";
import type { BootEntry, Host } from "../lib/bootc/types.ts";
import type { ApplyMethod, BootcCapabilities, StageMethod } from "../lib/bootc/version.ts";
import type { HealthCheck } from "./health.ts";

/** What reading `bootc status` gave. */
export type HostObservation =
  | { ok: true; host: Host }
  | {
    ok: false;
    /** The bootc error (its `error:` line) or parse error. */
    message: string;
    /** True when status did not answer in time (the sysroot lock may be held by a pull). */
    timedOut: boolean;
    /** When the current streak of failures began. */
    since: Date;
  };

/** The next thing the shell should do. */
export type Action =
  | { type: "none" }
  /** `systemctl mask --runtime --now bootc-fetch-apply-updates.timer`. */
  | { type: "maskAutoUpdates" }
  /** Pull and stage `image` locked (the Decision says when its Staging is written). */
  | { type: "stage"; image: string; method: StageMethod }
  /** Lock the staged deployment (`bootc upgrade --download-only`). */
  /** `other`: an image the spec does not want (footnote 11): a short time limit, its own key. */
  | { type: "lockStaged"; other?: true }
  /**
   * An apply is due: GET this node's Node, then decide again with
   * {@linkcode DecideInput.reboot} set. Nothing is written before.
   */
  | { type: "readNode" }
  /** Persist Rebooting first, re-check the staged digest, then apply detached. */
  | { type: "apply"; image: string; soft: boolean; method: ApplyMethod }
  /**
   * Reboot into the rollback deployment (`bootc rollback --apply`), which provides
   * `image`. Persist Rebooting first, re-check, then run detached, like apply.
   */
  | { type: "rollback"; image: string; soft: boolean }
  /** Undo a queued rollback (`bootc rollback`, which toggles the boot order back). */
  | { type: "unqueueRollback" };

/** A failed action, remembered by the shell for backoff. */
export interface ActionFailure {
  /** The failed command's message (bootc's `error:` line). */
  message: string;
  /** Consecutive failures of this action. */
  attempts: number;
  /** When it last failed. */
  at: Date;
}

/** Backoff of retried actions. */
export interface RetryPolicy {
  /** Delay after the first failure (default 10 s). */
  initialMs: number;
  /** Upper bound (default 10 min). */
  maxMs: number;
}

/** Default {@linkcode RetryPolicy}. */
export const DEFAULT_RETRY: RetryPolicy = { initialMs: 10_000, maxMs: 10 * 60_000 };

/**
 * Backoff of the daemon's own status writes. Nothing else wakes the daemon once the API
 * server answers again, so a write that failed through an outage must not sleep for the
 * minutes a registry or a host command backs off: a reboot persisted as Rebooting would
 * wait that long to be issued, and every view would show it rebooting meanwhile.
 */
export const API_RETRY: RetryPolicy = { initialMs: 1_000, maxMs: 15_000 };

/** How long a status timeout is tolerated before it is reported (default 10 min). */
export const DEFAULT_STATUS_BUSY_GRACE_MS = 10 * 60_000;

/**
 * How soon the Node is read again while a requested reboot is not allowed
 * (default 30 s): the controller may finish the drain without changing the
 * BootcNode, which is all the daemon watches.
 */
export const DEFAULT_REBOOT_RECHECK_MS = 30_000;

/** Re-exported: the daemon's part of the report protocol (`lib/api/constants.ts`). */
export { STAGING_REPORT_DELAY_MS };

/** Message of Idle True/NotOwned. */
export const NOT_OWNED_MESSAGE = "This BootcNode is not controlled by a BootcNodePool (no " +
  "controller ownerReference): nothing is staged or applied until a pool adopts it";

/** Reasons of the daemon's per-phase conditions (ImageStaged, Cordoned, Drained, Rebooted). */
export const PhaseReason = {
  /** ImageStaged False: D is being pulled and staged. */
  Downloading: "Downloading",
  /** ImageStaged True: D is staged. */
  Staged: "Staged",
  /** ImageStaged True: D is booted. */
  Booted: "Booted",
  /** ImageStaged True: D is the rollback deployment (the rollback route needs no download). */
  RollbackDeployment: "RollbackDeployment",
  /** Cordoned, Drained, Rebooted False: not yet, for D. */
  Waiting: "Waiting",
  /** Cordoned, Drained False: D is booted without a reboot, none is needed. */
  NotRequired: "NotRequired",
  /** Cordoned True: the Node holds a reboot slot and is cordoned. */
  Cordoned: "Cordoned",
  /** Drained True: the Node's drain finished for D. */
  Drained: "Drained",
  /** Rebooted False: the apply of the staged D is under way. */
  Rebooting: "Rebooting",
  /** Rebooted False: `bootc rollback --apply` into D is under way. */
  RollingBack: "RollingBack",
  /** Rebooted True: D booted after the reboot the daemon started. */
  Rebooted: "Rebooted",
  /**
   * Rebooted True: D booted after a reboot this daemon did not start, D having been
   * staged (or the rollback deployment) before: an external orchestrator
   * (`rollout.strategy: External`) or someone by hand rebooted the host.
   */
  RebootedExternally: "RebootedExternally",
  /** Rebooted True: D was booted already; no reboot was needed. */
  AlreadyBooted: "AlreadyBooted",
  /** Rebooted False: the host booted D and fell back to the previous deployment. */
  FellBack: "FellBack",
  /** Verified (Unknown) and Updated (False), reset by the daemon: desiredImage changed. */
  TargetChanged: "TargetChanged",
} as const;

/** The daemon's per-phase condition types, in the order they are reached. */
export const PHASE_CONDITIONS: readonly string[] = [
  NodeConditionType.ImageStaged,
  NodeConditionType.Cordoned,
  NodeConditionType.Drained,
  NodeConditionType.Rebooted,
];

/** The controller's conditions reset when desiredImage changes, with their reset status. */
const RESET_ON_TARGET_CHANGE: readonly [string, "Unknown" | "False"][] = [
  [NodeConditionType.Verified, "Unknown"],
  [NodeConditionType.Updated, "False"],
];

/** The phase condition `type` in `status` if it is about `image` (else undefined). */
function phaseCondition(
  status: BootcNodeStatus | undefined,
  image: string,
  type: string,
): Condition | undefined {
  return phaseTargetIs(status, image) === false
    ? undefined
    : findCondition(status?.conditions, type);
}

/** Input of {@linkcode decide}. */
export interface DecideInput {
  /** The BootcNode spec; undefined when there is none (standalone `status` without a spec). */
  spec?: BootcNodeSpec;
  /**
   * True when a BootcNodePool controls the BootcNode (`ownedByPool`); a
   * BootcNode nobody owns is never acted on.
   */
  owned: boolean;
  /**
   * `rebootAuthorization` of this node's Node (read for this decision)
   * and the BootcNode; undefined when the Node has not been read, and then an
   * apply that is due becomes a `readNode` action.
   */
  reboot?: RebootAuthorization;
  /**
   * The Node as read for this decision (with `reboot`), for the Cordoned and
   * Drained conditions; undefined when it was not read (or the read failed).
   */
  node?: NodeForReboot;
  /** See {@linkcode DEFAULT_REBOOT_RECHECK_MS}. */
  rebootRecheckMs?: number;
  /** The host health check just made; undefined keeps the last reported one. */
  health?: HealthCheck;
  /** `metadata.generation` of the BootcNode, mirrored as `observedGeneration`. */
  generation?: number;
  /**
   * The BootcNode's annotations: the controller's verdict on a finished update rides in
   * its release (`lib/api/verified.ts`) and is recorded in this daemon's status write.
   */
  annotations?: Readonly<Record<string, string>>;
  /** The status as last persisted. */
  status?: BootcNodeStatus;
  /** The host's bootc status, freshly read. */
  host: HostObservation;
  /** What the host's bootc supports; undefined until detected. */
  capabilities?: BootcCapabilities;
  /** True once this daemon has masked `bootc-fetch-apply-updates.timer` (since the host booted). */
  autoUpdatesMasked: boolean;
  /** Set when the pull Secret cannot be installed (missing Secret or key). */
  pullSecretError?: string;
  /** Failures of actions by {@linkcode actionKey}. */
  failures?: Readonly<Record<string, ActionFailure>>;
  /** True while an apply command started by this process is still running. */
  applyInFlight?: boolean;
  /** Current time (for condition transition times and backoff). */
  now: Date;
  /** Backoff of failed actions. */
  retry?: RetryPolicy;
  /** How long a status timeout is tolerated (see {@linkcode DEFAULT_STATUS_BUSY_GRACE_MS}). */
  statusBusyGraceMs?: number;
}

/** Output of {@linkcode decide}. */
export interface Decision {
  /** The status to write (equal to the input status when nothing changed). */
  status: BootcNodeStatus;
  /** True when `status` differs from the persisted one: write it. */
  changed: boolean;
  /** The action to run. */
  action: Action;
  /**
   * True when `status` must be persisted before `action` runs (Rebooting
   * before the reboot, Staging before a pull the stored status claims to
   * describe); otherwise run the action first and write what the next
   * decision says.
   */
  persistFirst: boolean;
  /**
   * For a pull of a spec the stored status has not acknowledged: write
   * `status` (Staging) only once the pull has run this long
   * ({@linkcode STAGING_REPORT_DELAY_MS}), deciding again then.
   */
  reportAfterMs?: number;
  /** When a backed-off action may be retried: decide again then. */
  retryAt?: Date;
  /** The action keys this decision looked at (the shell forgets failures of others). */
  keys: string[];
}

/** Message of the Degraded condition for a host whose bootc reports no booted deployment. */
export const NOT_A_BOOTC_HOST_MESSAGE = "bootc reports no booted deployment (booted: null): " +
  "this is not a bootc host, or bootc believes it runs in a container (the `container` " +
  "environment variable, /run/.containerenv or /.dockerenv)";

/** Identifies an action for failure tracking: failures of one image do not delay another. */
export function actionKey(action: Action): string {
  switch (action.type) {
    case "stage":
      return `stage:${action.image}`;
    case "apply":
      return `apply:${action.image}`;
    case "rollback":
      return `rollback:${action.image}`;
    case "lockStaged":
      return action.other ? "lockStaged:other" : "lockStaged";
    default:
      return action.type;
  }
}

/** Delay before retry after `attempts` consecutive failures. */
export function retryDelay(attempts: number, policy: RetryPolicy = DEFAULT_RETRY): number {
  return Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, attempts - 1));
}

/** The BootcNode status form of a bootc boot entry (undefined for none). */
export function mirrorEntry(entry: BootEntry | null | undefined): BootEntryStatus | undefined {
  if (!entry) return undefined;
  const out: BootEntryStatus = {};
  const image = entry.image;
  if (image) {
    out.image = image.image.image;
    out.imageDigest = image.imageDigest;
    if (image.version !== undefined) out.version = image.version;
    if (image.timestamp !== undefined) out.timestamp = image.timestamp;
    if (image.architecture !== undefined) out.architecture = image.architecture;
  }
  out.softRebootCapable = entry.softRebootCapable;
  out.incompatible = entry.incompatible;
  if (entry.downloadOnly !== undefined) out.downloadOnly = entry.downloadOnly;
  return out;
}

interface IdleState {
  status: "True" | "False";
  reason: IdleReason;
  message: string;
}

interface Plan {
  /** Undefined leaves the Idle condition as it is. */
  idle?: IdleState;
  action: Action;
  problems: string[];
  /** Failures of other actions this plan still reads (kept, not forgotten). */
  keepFailures?: string[];
  /** When one of those is due to be tried again: the daemon wakes then. */
  retryAt?: Date;
  /** The RebootAllowed condition to set; undefined applies the default rule (see decide). */
  rebootAllowed?: ConditionInput;
  /** An apply is due but the Node has not been read: the shell must read it first. */
  needsNode?: boolean;
  /** A requested reboot was refused: read the Node again after the recheck delay. */
  refused?: boolean;
  /** With Idle Rebooting: whether the staged image is applied or the rollback booted. */
  route?: "apply" | "rollback";
  /** Set when the host fell back from D (footnote 5): the message of Rebooted False/FellBack. */
  fellBack?: string;
  /** The usable host the plan was made for (phase conditions are computed only then). */
  host?: Host;
  /** Leave the phase conditions as they are (footnote 12: they describe the reboot under way). */
  keepPhases?: boolean;
}

const NONE: Action = { type: "none" };

function idle(status: "True" | "False", reason: IdleReason, message: string): IdleState {
  return { status, reason, message };
}

function describeEntry(entry: BootEntry | null): string {
  const image = entry?.image?.image.image;
  return image ? shortReference(image) : "(no image)";
}

/** The state machine proper, for a readable host with a usable booted entry and a spec. */
function planUpdate(input: DecideInput, host: Host, spec: BootcNodeSpec): Plan {
  const want = spec.desiredImage;
  const { booted, staged, rollback } = host.status;
  const previous = findCondition(input.status?.conditions, NodeConditionType.Idle)?.reason;
  const caps = input.capabilities;
  const stage = (): Action =>
    caps?.stage ? { type: "stage", image: want, method: caps.stage } : NONE;

  // Footnote 12: a reboot this process started is under way, no longer for what the
  // spec asks (retargeted, or Booted withdrawn): the host goes down all the same.
  const sameRoute = spec.desiredImageState === "Booted" &&
    (entryProvides(staged, want) || entryProvides(rollback, want));
  if (input.applyInFlight && previous === IdleReason.Rebooting && !sameRoute) {
    return { action: NONE, problems: [], keepPhases: true };
  }

  if (entryProvides(booted, want)) {
    if (!staged || entryProvides(staged, want)) {
      return {
        idle: idle("True", IdleReason.Idle, "Booted image matches desiredImage"),
        action: NONE,
        problems: [],
      };
    }
    return lockOtherFirst(input, staged, want, {
      idle: idle(
        "False",
        IdleReason.Staging,
        `Booted image matches desiredImage but ${describeEntry(staged)} is staged; ` +
          "staging a copy of the booted image to replace it",
      ),
      action: stage(),
      problems: [],
    });
  }

  // Footnote 5: after an apply of a staged D (not after a rollback, whose Rebooted reason is
  // RollingBack), or once reported (Rebooted False/FellBack, until the spec moves).
  const rebooted = phaseCondition(input.status, want, NodeConditionType.Rebooted);
  // Only a reboot that was applying D itself can have fallen back from D: the spec may have
  // moved on while the node rebooted into another image (or rolled back to one).
  const about = input.status?.phaseImage;
  const rebootingForOther = about !== undefined && about !== want;
  const afterApply = previous === IdleReason.Rebooting &&
    rebooted?.reason !== PhaseReason.RollingBack && !rebootingForOther;
  if (
    (afterApply || rebooted?.reason === PhaseReason.FellBack) && !staged &&
    entryProvides(rollback, want)
  ) {
    const fellBack = `booted ${shortReference(want)} but the host fell back to ${
      describeEntry(booted)
    }`;
    return {
      action: NONE,
      problems: [
        `node fell back: it ${fellBack} (boot assessment rolled back; the desired image is ` +
        "now the rollback deployment); not applying it again",
      ],
      fellBack,
    };
  }

  if (entryProvides(staged, want)) {
    let refusal: RebootAuthorization | undefined;
    if (spec.desiredImageState === "Booted") {
      const soft = spec.rebootPolicy === "AllowSoftReboot";
      if (previous === IdleReason.Rebooting && input.applyInFlight) {
        return {
          idle: idle("False", IdleReason.Rebooting, rebootingMessage(want, soft)),
          action: NONE,
          problems: [],
          route: "apply",
        };
      }
      const apply: Action = caps?.apply
        ? { type: "apply", image: want, soft, method: caps.apply }
        : NONE;
      const reboot = input.reboot;
      if (!reboot) return { action: apply, problems: [], needsNode: apply.type === "apply" };
      if (reboot.allowed) {
        return {
          idle: idle("False", IdleReason.Rebooting, rebootingMessage(want, soft)),
          action: apply,
          problems: [],
          rebootAllowed: rebootAllowedCondition(reboot),
          route: "apply",
        };
      }
      refusal = reboot;
    }
    const refused = refusal
      ? { rebootAllowed: rebootAllowedCondition(refusal), refused: true }
      : {};
    if (staged?.downloadOnly === false) {
      return {
        idle: idle(
          "False",
          IdleReason.Locking,
          "desiredImage is staged unlocked (an unexpected reboot would apply it); locking it",
        ),
        action: caps?.apply ? { type: "lockStaged" } : NONE,
        problems: [],
        ...refused,
      };
    }
    return {
      idle: idle(
        "False",
        IdleReason.Staged,
        refusal
          ? `Image staged, not rebooting: ${refusal.message}`
          : "Image staged, awaiting desiredImageState: Booted",
      ),
      action: NONE,
      problems: [],
      ...refused,
    };
  }

  if (entryProvides(rollback, want)) return planRollback(input, host, spec);

  const why = !staged
    ? `Staging ${shortReference(want)}`
    : `Staging ${shortReference(want)} (replacing staged ${describeEntry(staged)})`;
  return lockOtherFirst(input, staged, want, {
    idle: idle("False", IdleReason.Staging, why),
    action: stage(),
    problems: [],
  });
}

/**
 * Footnote 11: an unlocked staged image the spec does not want is locked before D is
 * pulled (`then`). While locking it failed and waits for its retry (its registry may be
 * gone), `then` goes on, as staging D replaces it, with the failure named and kept.
 */
function lockOtherFirst(
  input: DecideInput,
  staged: BootEntry | null,
  want: string,
  then: Plan,
): Plan {
  if (!staged || staged.downloadOnly !== false) return then;
  const key = actionKey({ type: "lockStaged", other: true });
  const failed = input.failures?.[key];
  const retryAt = failed &&
    failed.at.getTime() + retryDelay(failed.attempts, input.retry ?? DEFAULT_RETRY);
  if (failed && retryAt! > input.now.getTime()) {
    return {
      ...then,
      problems: [
        ...then.problems,
        `${describeEntry(staged)} is staged unlocked and locking it failed: ${failed.message}`,
      ],
      keepFailures: [key],
      retryAt: new Date(retryAt!),
    };
  }
  return {
    idle: idle(
      "False",
      IdleReason.Locking,
      `${describeEntry(staged)} is staged unlocked (an unexpected reboot would apply it); ` +
        `locking it before staging ${shortReference(want)}`,
    ),
    action: input.capabilities?.apply ? { type: "lockStaged", other: true } : NONE,
    problems: [],
  };
}

/** How long the lock of an image the spec does not want may take (footnote 11). */
export const OTHER_LOCK_TIMEOUT_MS = 120_000;

/**
 * The rollback route (footnotes 7–10): D is the host's rollback deployment and
 * is not booted. Nothing is staged; with Booted and an authorized reboot the
 * host boots the rollback with `bootc rollback --apply`.
 */
function planRollback(input: DecideInput, host: Host, spec: BootcNodeSpec): Plan {
  const want = spec.desiredImage;
  const { staged } = host.status;
  const previous = findCondition(input.status?.conditions, NodeConditionType.Idle)?.reason;
  const caps = input.capabilities;
  const soft = spec.rebootPolicy === "AllowSoftReboot";
  const booted = spec.desiredImageState === "Booted";
  if (booted && previous === IdleReason.Rebooting && input.applyInFlight) {
    return {
      idle: idle("False", IdleReason.Rebooting, rollingBackMessage(shortReference(want), soft)),
      action: NONE,
      problems: [],
      route: "rollback",
    };
  }
  if (host.status.rollbackQueued) {
    return { action: caps?.apply ? { type: "unqueueRollback" } : NONE, problems: [] };
  }
  if (staged?.downloadOnly === false) {
    return {
      idle: idle(
        "False",
        IdleReason.Locking,
        `${describeEntry(staged)} is staged unlocked (an unexpected reboot would apply it); ` +
          `locking it (${shortReference(want)} is the rollback deployment)`,
      ),
      action: caps?.apply ? { type: "lockStaged" } : NONE,
      problems: [],
    };
  }
  const ready = `${shortReference(want)} is the rollback deployment: nothing to stage`;
  if (!booted) {
    return {
      idle: idle("False", IdleReason.Staged, `${ready}; awaiting desiredImageState: Booted`),
      action: NONE,
      problems: [],
    };
  }
  if (!caps?.apply) {
    // bootc too old (Degraded says so): the daemon runs nothing on such a host.
    return {
      idle: idle("False", IdleReason.Staged, `${ready}; this bootc cannot be driven`),
      action: NONE,
      problems: [],
    };
  }
  const action: Action = { type: "rollback", image: want, soft };
  const reboot = input.reboot;
  if (!reboot) return { action, problems: [], needsNode: true };
  if (reboot.allowed) {
    return {
      idle: idle("False", IdleReason.Rebooting, rollingBackMessage(shortReference(want), soft)),
      action,
      problems: [],
      rebootAllowed: rebootAllowedCondition(reboot),
      route: "rollback",
    };
  }
  return {
    idle: idle("False", IdleReason.Staged, `${ready}; not rebooting: ${reboot.message}`),
    action: NONE,
    problems: [],
    rebootAllowed: rebootAllowedCondition(reboot),
    refused: true,
  };
}

/** The RebootAllowed condition for an answer of rebootAuthorization. */
function rebootAllowedCondition(reboot: RebootAuthorization): ConditionInput {
  return {
    type: NodeConditionType.RebootAllowed,
    status: reboot.allowed ? "True" : "False",
    reason: reboot.reason,
    message: reboot.message,
  };
}

function rebootingMessage(image: string, soft: boolean): string {
  return `Applying ${image} and rebooting` + (soft ? " (soft reboot when possible)" : "");
}

function rollingBackMessage(image: string, soft: boolean): string {
  return `Rolling back to ${image} (the rollback deployment) and rebooting` +
    (soft ? " (soft reboot when possible)" : "");
}

/** Problems of the host itself (none when it can be planned for), and its usable state. */
function hostProblems(input: DecideInput): { problems: string[]; host?: Host } {
  const { host } = input;
  if (!host.ok) {
    const grace = input.statusBusyGraceMs ?? DEFAULT_STATUS_BUSY_GRACE_MS;
    const busy = host.timedOut && input.now.getTime() - host.since.getTime() < grace;
    return { problems: busy ? [] : [`bootc status failed: ${host.message}`] };
  }
  const booted = host.host.status.booted;
  if (!booted) return { problems: [NOT_A_BOOTC_HOST_MESSAGE] };
  if (booted.incompatible) {
    return {
      problems: [
        "the booted deployment is incompatible: it has local modifications (e.g. package " +
        "layering) that bootc cannot manage",
      ],
    };
  }
  if (!booted.image) {
    return { problems: ["the booted deployment is not container based; bootc cannot switch it"] };
  }
  return { problems: [], host: host.host };
}

/** Problems that stop any planning, plus the plan otherwise. */
function plan(input: DecideInput): Plan {
  const { problems, host } = hostProblems(input);
  if (input.spec && !input.owned) {
    const asked = input.spec.desiredImageState === "Booted" ||
      findCondition(input.status?.conditions, NodeConditionType.RebootAllowed) !== undefined;
    return {
      idle: idle("True", IdleReason.NotOwned, NOT_OWNED_MESSAGE),
      action: NONE,
      problems,
      rebootAllowed: asked
        ? {
          type: NodeConditionType.RebootAllowed,
          status: "False",
          reason: RebootAllowedReason.NotOwned,
          message: "not controlled by a BootcNodePool: no reboot is allowed",
        }
        : undefined,
    };
  }
  if (!host) return { action: NONE, problems };
  if (!input.spec) {
    return {
      idle: idle("True", IdleReason.Idle, "No BootcNode spec: nothing to do"),
      action: NONE,
      problems: [],
    };
  }
  return { ...planUpdate(input, host, input.spec), host };
}

/**
 * The RebootAllowed condition when the plan did not evaluate the reboot gate:
 * False/NotRequested once the spec no longer asks for Booted (only if the
 * condition exists: a node that was never asked to reboot does not carry it),
 * otherwise unchanged.
 */
function defaultRebootAllowed(input: DecideInput): ConditionInput | undefined {
  if (!input.spec || input.spec.desiredImageState === "Booted") return undefined;
  if (!findCondition(input.status?.conditions, NodeConditionType.RebootAllowed)) return undefined;
  return {
    type: NodeConditionType.RebootAllowed,
    status: "False",
    reason: RebootAllowedReason.NotRequested,
    message: "desiredImageState is Staged: no reboot requested",
  };
}

/** An annotation's RFC 3339 time, or `fallback` when it does not parse. */
function annotationTime(value: string | undefined, fallback: Date): Date {
  const t = value === undefined ? NaN : Date.parse(value);
  return Number.isFinite(t) ? new Date(t) : fallback;
}

/**
 * The per-phase conditions for D (see the module comment): ImageStaged, Cordoned,
 * Drained and Rebooted, and the reset of the controller's Verified and Updated
 * when D is new.
 */
function phaseConditions(
  conditions: Condition[] | undefined,
  input: DecideInput,
  host: Host,
  p: Plan,
): Condition[] | undefined {
  const { now } = input;
  const want = input.spec!.desiredImage;
  const { booted, staged, rollback } = host.status;
  const newTarget = phaseTargetIs(input.status, want) === false;
  let out = conditions;
  if (newTarget) {
    // Start over: fresh transition times for the new target.
    out = out?.filter((c) => !PHASE_CONDITIONS.includes(c.type));
    for (const [type, status] of RESET_ON_TARGET_CHANGE) {
      if (!findCondition(out, type)) continue;
      out = setCondition(out, {
        type,
        status,
        reason: PhaseReason.TargetChanged,
        message: `desiredImage changed to ${shortReference(want)}: not verified yet`,
      }, now);
    }
  }
  const previous = (type: string) => findCondition(out, type);
  // `at` is the transition time used when the status changes (the Node's record times).
  const set = (condition: ConditionInput, at = now) => {
    out = setCondition(out, condition, at);
  };
  const bootedD = entryProvides(booted, want);
  // Before this report: D was on disk, not booted (a reboot by someone else boots it).
  const stagedBefore = !newTarget && [PhaseReason.Staged, PhaseReason.RollbackDeployment]
    .includes(previous(NodeConditionType.ImageStaged)?.reason as typeof PhaseReason.Staged);

  set(
    bootedD
      ? {
        type: NodeConditionType.ImageStaged,
        status: "True",
        reason: PhaseReason.Booted,
        message: `${shortReference(want)} is booted`,
      }
      : entryProvides(staged, want)
      ? {
        type: NodeConditionType.ImageStaged,
        status: "True",
        reason: PhaseReason.Staged,
        message: `${shortReference(want)} is staged`,
      }
      : entryProvides(rollback, want)
      ? {
        type: NodeConditionType.ImageStaged,
        status: "True",
        reason: PhaseReason.RollbackDeployment,
        message: `${shortReference(want)} is the rollback deployment: nothing to download`,
      }
      : {
        type: NodeConditionType.ImageStaged,
        status: "False",
        reason: PhaseReason.Downloading,
        message: `Downloading ${shortReference(want)}`,
      },
  );

  // Cordoned and Drained: from the Node when it was read for this decision.
  const node = input.node;
  const facts = node
    ? readNodeFacts({
      node: { annotations: node.metadata?.annotations, unschedulable: node.spec?.unschedulable },
      bootcNode: { spec: input.spec! },
    })
    : undefined;
  const record = facts?.record;
  const fromNode = (
    type: string,
    done: boolean | undefined,
    at: string | undefined,
    yes: ConditionInput,
    waiting: string,
  ) => {
    if (done) return set(yes, annotationTime(at, now));
    const last = previous(type);
    // Not read: the last answer stands, whoever wrote it (after the reboot the controller
    // releases the Node; while it drains, it writes these from the Node itself, e.g. a
    // drain blocked by a PodDisruptionBudget). Only "booted, none needed" replaces a False.
    if (done === undefined && last && (last.status === "True" || !bootedD)) return;
    set(
      bootedD
        ? {
          type,
          status: "False",
          reason: PhaseReason.NotRequired,
          message: `${shortReference(want)} is booted: no reboot needed`,
        }
        : { type, status: "False", reason: PhaseReason.Waiting, message: waiting },
    );
  };
  fromNode(
    NodeConditionType.Cordoned,
    record && (record.slotAt !== undefined && node?.spec?.unschedulable === true),
    record?.slotAt,
    {
      type: NodeConditionType.Cordoned,
      status: "True",
      reason: PhaseReason.Cordoned,
      message: cordonedMessage(want, record?.slotAt),
    },
    `Waiting for a reboot slot and cordon for ${shortReference(want)}`,
  );
  fromNode(
    NodeConditionType.Drained,
    facts?.drained,
    record?.drainedAt,
    {
      type: NodeConditionType.Drained,
      status: "True",
      reason: PhaseReason.Drained,
      message: `Drained for ${shortReference(want)} (finished at ${record?.drainedAt})`,
    },
    `Waiting for the drain for ${shortReference(want)}`,
  );

  // Rebooted.
  const lastRebooted = previous(NodeConditionType.Rebooted);
  const idleNow = p.idle?.reason ??
    findCondition(input.status?.conditions, NodeConditionType.Idle)?.reason;
  if (p.fellBack) {
    set({
      type: NodeConditionType.Rebooted,
      status: "False",
      reason: PhaseReason.FellBack,
      message: p.fellBack,
    });
  } else if (bootedD) {
    if (lastRebooted?.status !== "True") {
      const rebootedNow = lastRebooted?.reason === PhaseReason.Rebooting ||
        lastRebooted?.reason === PhaseReason.RollingBack ||
        (!newTarget && daemonSaysRebooting({ status: input.status }));
      set(
        rebootedNow
          ? {
            type: NodeConditionType.Rebooted,
            status: "True",
            reason: PhaseReason.Rebooted,
            message: `Booted ${shortReference(want)} after the reboot`,
          }
          : stagedBefore
          ? {
            type: NodeConditionType.Rebooted,
            status: "True",
            reason: PhaseReason.RebootedExternally,
            message: `Booted ${shortReference(want)} after a reboot this daemon did not start ` +
              "(an external orchestrator, or by hand)",
          }
          : {
            type: NodeConditionType.Rebooted,
            status: "True",
            reason: PhaseReason.AlreadyBooted,
            message: `${shortReference(want)} was already booted: no reboot needed`,
          },
      );
    }
  } else if (idleNow === IdleReason.Rebooting) {
    const rollingBack = p.route === "rollback" ||
      (p.route === undefined && lastRebooted?.reason === PhaseReason.RollingBack);
    set(
      rollingBack
        ? {
          type: NodeConditionType.Rebooted,
          status: "False",
          reason: PhaseReason.RollingBack,
          message: `Rolling back to ${shortReference(want)} (the rollback deployment)`,
        }
        : {
          type: NodeConditionType.Rebooted,
          status: "False",
          reason: PhaseReason.Rebooting,
          message: `Rebooting into ${shortReference(want)}`,
        },
    );
  } else {
    set({
      type: NodeConditionType.Rebooted,
      status: "False",
      reason: PhaseReason.Waiting,
      message: `Waiting to reboot into ${shortReference(want)}`,
    });
  }
  return out;
}

/** `status.hostHealth`. */
export type HostHealth = NonNullable<BootcNodeStatus["hostHealth"]>;

/** What {@linkcode nextHostHealth} decided. */
export interface HostHealthUpdate {
  /** The hostHealth to report (the previous one when nothing that matters changed). */
  hostHealth?: HostHealth;
  /** The HostHealthy condition to set; undefined leaves it as it is. */
  condition?: ConditionInput;
  /** True when the report changed (a write is due). */
  changed: boolean;
}

/**
 * The host health to report after `check` on the boot of `bootedDigest`: the
 * previous report stands unless the state, the reason, the failed units or the
 * booted digest changed (so `checkedAt` is when this result was first seen).
 * Undefined `check`, or `stopping` during this node's own reboot, keeps it too.
 */
export function nextHostHealth(
  previous: BootcNodeStatus | undefined,
  check: HealthCheck | undefined,
  bootedDigest: string | undefined,
  rebooting: boolean,
): HostHealthUpdate {
  const last = previous?.hostHealth;
  if (!check || (check.stopping && rebooting)) return { hostHealth: last, changed: false };
  const condition: ConditionInput = {
    type: NodeConditionType.HostHealthy,
    status: check.state === "Healthy" ? "True" : check.state === "Unhealthy" ? "False" : "Unknown",
    reason: check.reason,
    message: check.message,
  };
  const lastCondition = findCondition(previous?.conditions, NodeConditionType.HostHealthy);
  const same = last !== undefined && last.state === check.state &&
    last.bootedDigest === bootedDigest &&
    (last.failedUnits ?? []).join("\n") === check.failedUnits.join("\n") &&
    lastCondition?.status === condition.status && lastCondition.reason === condition.reason;
  if (same) return { hostHealth: last, changed: false };
  const hostHealth: HostHealth = {
    ...(bootedDigest !== undefined ? { bootedDigest } : {}),
    checkedAt: formatTime(check.at),
    state: check.state,
    ...(check.failedUnits.length > 0 ? { failedUnits: [...check.failedUnits] } : {}),
    message: check.message,
  };
  return { hostHealth, condition, changed: true };
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort((
          [a],
          [b],
        ) => a < b ? -1 : a > b ? 1 : 0),
      );
    }
    return v;
  });
}

/** True when two statuses are equal (conditions compared as a map by type). */
export function statusEqual(
  a: BootcNodeStatus | undefined,
  b: BootcNodeStatus | undefined,
): boolean {
  const { conditions: ca, ...ra } = a ?? {};
  const { conditions: cb, ...rb } = b ?? {};
  return canonical(ra) === canonical(rb) && conditionsEqual(ca, cb);
}

/**
 * True when a pull of `pulling` under way is no longer wanted: the BootcNode now asks for
 * another image (a retarget, or a revert to what is booted or staged). The pull is stopped
 * rather than finished: a pull hung on a registry would otherwise hold the sysroot lock and
 * the node for up to the stage timeout (60 min) after the pool moved on. A deleted BootcNode
 * (`spec` undefined) stops nothing: it comes back with the same image.
 */
export function pullSuperseded(pulling: string, spec: BootcNodeSpec | undefined): boolean {
  return spec !== undefined && spec.desiredImage !== pulling;
}

/** Computes the next status and action; pure. */
export function decide(input: DecideInput): Decision {
  const { now } = input;
  const previous = input.status ?? {};
  const caps = input.capabilities;
  const failures = input.failures ?? {};
  const policy = input.retry ?? DEFAULT_RETRY;
  const p = plan(input);
  const problems: string[] = [];
  const keys: string[] = [];
  let retryAt: Date | undefined = p.retryAt;

  if (input.pullSecretError) problems.push(input.pullSecretError);
  if (caps?.problem) problems.push(caps.problem);
  problems.push(...p.problems);
  keys.push(...(p.keepFailures ?? []));

  /** Reports a failed action; true when its backoff has not elapsed yet. */
  const backedOff = (action: Action): boolean => {
    const key = actionKey(action);
    keys.push(key);
    const failure = failures[key];
    if (!failure) return false;
    problems.push(failure.message);
    const at = new Date(failure.at.getTime() + retryDelay(failure.attempts, policy));
    if (at.getTime() <= now.getTime()) return false;
    if (!retryAt || at < retryAt) retryAt = at;
    return true;
  };

  let action: Action = p.action;
  // A stage pulls with the pull Secret: without it, wait for it (reported above).
  if (input.pullSecretError && (action.type === "stage" || action.type === "lockStaged")) {
    action = NONE;
  }
  if (action.type !== "none" && backedOff(action)) action = NONE;
  // Only an apply that is really due (not backing off) is worth reading the Node for.
  if (p.needsNode && (action.type === "apply" || action.type === "rollback")) {
    action = { type: "readNode" };
  }
  if (p.refused) {
    const at = new Date(now.getTime() + (input.rebootRecheckMs ?? DEFAULT_REBOOT_RECHECK_MS));
    if (!retryAt || at < retryAt) retryAt = at;
  }
  // The auto-update timer would unlock a locked stage and reboot without a
  // drain: neutralise it first (a quick command), unless it is backing off.
  if (!input.autoUpdatesMasked) {
    const mask: Action = { type: "maskAutoUpdates" };
    if (!backedOff(mask)) action = mask;
  }

  let conditions: Condition[] | undefined = previous.conditions;
  if (p.idle) {
    conditions = setCondition(conditions, { type: NodeConditionType.Idle, ...p.idle }, now);
  }
  const rebootAllowed = p.rebootAllowed ?? defaultRebootAllowed(input);
  if (rebootAllowed) conditions = setCondition(conditions, rebootAllowed, now);
  const busyWithoutProblems = !input.host.ok && problems.length === 0;
  if (!busyWithoutProblems) {
    conditions = setCondition(
      conditions,
      problems.length > 0
        ? {
          type: NodeConditionType.Degraded,
          status: "True",
          reason: NodeDegradedReason.Error,
          message: problems.join("; ").slice(0, 32768),
        }
        : {
          type: NodeConditionType.Degraded,
          status: "False",
          reason: NodeDegradedReason.Healthy,
          message: "No errors",
        },
      now,
    );
  }

  const status: BootcNodeStatus = {};
  if (input.generation !== undefined) status.observedGeneration = input.generation;
  else if (previous.observedGeneration !== undefined) {
    status.observedGeneration = previous.observedGeneration;
  }
  if (input.host.ok) {
    const s = input.host.host.status;
    const booted = mirrorEntry(s.booted);
    const staged = mirrorEntry(s.staged);
    const rollback = mirrorEntry(s.rollback);
    if (booted) status.booted = booted;
    if (staged) status.staged = staged;
    if (rollback) status.rollback = rollback;
  } else {
    // Keep the last known deployments while bootc cannot be read.
    if (previous.booted) status.booted = previous.booted;
    if (previous.staged) status.staged = previous.staged;
    if (previous.rollback) status.rollback = previous.rollback;
  }
  const version = caps?.version ?? previous.bootcVersion;
  if (version !== undefined) status.bootcVersion = version;
  status.autoUpdatesDisabled = input.autoUpdatesMasked;
  if (previous.phaseImage !== undefined) status.phaseImage = previous.phaseImage;
  let verification = previous.verification;
  if (p.host && input.spec && input.owned && !p.keepPhases) {
    conditions = phaseConditions(conditions, input, p.host, p);
    status.phaseImage = input.spec.desiredImage;
    // The controller's verdict on the update rides in the release; recorded once, never
    // over a verdict the controller revised since (lib/api/verified.ts).
    const verdict = withVerifiedRelease(
      { conditions, verification },
      verifiedRelease({
        metadata: { generation: input.generation, annotations: input.annotations },
        spec: input.spec,
      }, now),
      entryProvides(p.host.status.booted, input.spec.desiredImage),
    );
    conditions = verdict.conditions;
    verification = verdict.verification;
  }
  if (verification) status.verification = verification;
  const idleNow = findCondition(conditions, NodeConditionType.Idle)?.reason;
  const health = nextHostHealth(
    previous,
    input.health,
    status.booted?.imageDigest,
    input.applyInFlight === true || idleNow === IdleReason.Rebooting,
  );
  if (health.hostHealth) status.hostHealth = health.hostHealth;
  if (health.condition) conditions = setCondition(conditions, health.condition, now);
  if (conditions) status.conditions = conditions;

  const changed = !statusEqual(previous, status);
  // A pull of a spec the stored status has not acknowledged is reported only once it is slow:
  // until then every reader sees that status is about an older spec. One the status claims to
  // describe (a re-stage after a lost stage, a retry) is said at once: it is wrong now.
  const deferReport = input.generation !== undefined &&
    daemonUnreported({ metadata: { generation: input.generation }, status: input.status });
  return {
    status: changed ? status : previous,
    changed,
    action,
    // The lock of an unwanted image asks its registry: the new spec is acknowledged first.
    persistFirst: action.type === "apply" || action.type === "rollback" ||
      (action.type === "stage" && !deferReport) ||
      (action.type === "lockStaged" && action.other === true),
    ...(action.type === "stage" && deferReport ? { reportAfterMs: STAGING_REPORT_DELAY_MS } : {}),
    retryAt,
    keys,
  };
}
