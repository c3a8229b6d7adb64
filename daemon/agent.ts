/**
 * The daemon's imperative shell: it watches its own BootcNode (one object,
 * field-selected by name), reads bootc status, calls {@linkcode decide}, writes
 * the status only when it changed, and runs the action decide asked for. It
 * wakes on a spec change, a host change signal, the poll interval and backoff
 * deadlines, and after every command it runs it reads bootc status again.
 *
 * The spec alone never reboots the node. When an apply is due the shell GETs
 * its own Node (no watch: an idle daemon reads nothing) for the reboot slot and
 * finished drain the controller records there, and immediately before invoking
 * bootc it reads the Node and the BootcNode once more from the API server
 * (authoritative GETs, not the watch cache) and checks `rebootAuthorization`
 * again. A failed read refuses. Its transitions and errors are also recorded
 * as Events on the BootcNode ({@linkcode DaemonEventReason}), each bounded:
 * once per transition, or once per distinct message while a failure lasts.
 *
 * The host's health (health.ts) is checked after every bootc status read and
 * on a timer ({@linkcode DEFAULT_HEALTH_CHECK}); a timed check runs local
 * commands only and leads to a reconcile (and a write) only when the report
 * would change, so an idle daemon makes no API requests.
 *
 * @module
 */
import type { ISecret } from "kubernetes-models/v1/Secret";
// Direct imports, not lib/api/mod.ts (see decide.ts).
import {
  type NodeForReboot,
  ownedByPool,
  type RebootAuthorization,
  rebootAuthorization,
} from "../lib/api/annotations.ts";
import { findCondition } from "../lib/api/conditions.ts";
import { shortDigest, shortReference } from "../lib/api/display.ts";
import {
  DAEMON_FIELD_MANAGER,
  IdleReason,
  NodeConditionType,
  RebootAllowedReason,
  STAGING_REPORT_RETRY_MS,
} from "../lib/api/constants.ts";
import type { BootcNode, BootcNodeStatus } from "../lib/api/schema.ts";
import { BootcCommandStopped, type BootcExecutor } from "../lib/bootc/executor.ts";
import { type BootcCapabilities, capabilitiesFromVersion } from "../lib/bootc/version.ts";
import { type Clock, systemClock } from "../lib/clock.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { Informer } from "../lib/kube/informer.ts";
import type { KubeObject, ResourceClient } from "../lib/kube/types.ts";
import { type Logger, silentLogger } from "../lib/log.ts";
import {
  type Action,
  type ActionFailure,
  actionKey,
  API_RETRY,
  decide,
  type Decision,
  DEFAULT_REBOOT_RECHECK_MS,
  DEFAULT_RETRY,
  DEFAULT_STATUS_BUSY_GRACE_MS,
  type HostObservation,
  nextHostHealth,
  OTHER_LOCK_TIMEOUT_MS,
  pullSuperseded,
  retryDelay,
  type RetryPolicy,
  statusEqual,
} from "./decide.ts";
import { checkHostHealth, type HealthCheck, healthScope } from "./health.ts";
import { AUTH_FILE, PullSecretInstaller } from "./pull_secret.ts";
import { HostPolicyInstaller, POLICY_FILE, wantedPolicy } from "./host_policy.ts";
import { runReportingIfSlow } from "./report_if_slow.ts";

/** What the daemon reads of its own core/v1 Node. */
export type CoreNode = KubeObject & NodeForReboot;

/** Where the agent records Events ({@linkcode EventRecorder} fits). */
export interface EventSink {
  /** Records an event about `involved`; never rejects. */
  record(
    involved: KubeObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): Promise<void>;
}

/**
 * Reasons of the Events the daemon records: on its BootcNode, except the reboot itself
 * (Rebooting, RollingBack), recorded on the Node.
 */
export const DaemonEventReason = {
  /** Warning: Booted was requested but the Node does not authorize a reboot. */
  RebootRefused: "RebootRefused",
  /** Normal: the staged image is being applied and the node reboots. */
  Rebooting: "Rebooting",
  /** Normal: the node reboots into its rollback deployment (`bootc rollback --apply`). */
  RollingBack: "RollingBack",
  /** Warning: the host turned Unhealthy (or other units failed); names the failed units. */
  HostUnhealthy: "HostUnhealthy",
  /** Normal: the host is Healthy again after it was reported Unhealthy. */
  HostRecovered: "HostRecovered",
  /** Warning: the apply (or rollback) command failed. */
  ApplyFailed: "ApplyFailed",
  /** Warning: pulling/staging the desired image failed. */
  StagingFailed: "StagingFailed",
  /** Normal: the pull Secret's credentials were written to the host's /run/ostree/auth.json. */
  AuthFileWritten: "AuthFileWritten",
  /** Normal: the auth file the daemon wrote was removed (no pull Secret referenced any more). */
  AuthFileRemoved: "AuthFileRemoved",
  /** Warning: the pull Secret could not be installed (once per distinct error). */
  PullSecretFailed: "PullSecretFailed",
  /** Normal: the host's policy now requires the pool's signature keys for its repository. */
  HostPolicyWritten: "HostPolicyWritten",
  /** Normal: the host's policy scope the daemon held was put back (no pool enforces). */
  HostPolicyRemoved: "HostPolicyRemoved",
  /** Warning: the host's signature policy could not be written (once per distinct error). */
  HostPolicyFailed: "HostPolicyFailed",
  /**
   * Warning: `bootc status` failed (a timeout only once it outlasts the busy grace): once per
   * distinct message, at most {@linkcode MAX_STATUS_EVENTS} per failure streak.
   */
  StatusFailed: "StatusFailed",
} as const;

/** At most this many StatusFailed events per streak of failing status reads. */
export const MAX_STATUS_EVENTS = 3;

/** Options of {@linkcode Agent}. */
export interface AgentOptions {
  /** This node's name (= the BootcNode's name = the Node's name). */
  nodeName: string;
  /** BootcNode access (cluster scoped). */
  nodes: ResourceClient<BootcNode>;
  /** core/v1 Node access: only `get` of this node, when an apply is due. */
  coreNodes: ResourceClient<CoreNode>;
  /** Events about the BootcNode (default: none recorded). */
  events?: EventSink;
  /** Secret access in a namespace (for the one-shot pull Secret GET). */
  secrets: (namespace: string) => ResourceClient<ISecret>;
  /** The host seam. */
  executor: BootcExecutor;
  /** The host's root as seen by the daemon (for the auth file). */
  hostRoot: string;
  /** Fallback poll of bootc status (default 5 min). */
  pollIntervalMs?: number;
  /** Backoff of failed commands and status reads. */
  retry?: RetryPolicy;
  /** See {@linkcode DecideInput.statusBusyGraceMs}. */
  statusBusyGraceMs?: number;
  /** How soon the Node is read again while a requested reboot is refused (default 30 s). */
  rebootRecheckMs?: number;
  /** How often the host's health is checked (default {@linkcode DEFAULT_HEALTH_CHECK}). */
  healthCheck?: Partial<HealthCheckIntervals>;
  clock?: Clock;
  logger?: Logger;
}

/** Default fallback poll interval. */
export const DEFAULT_POLL_INTERVAL_MS = 5 * 60_000;

/** How often the host's health is checked besides after every bootc status read. */
export interface HealthCheckIntervals {
  /** Interval during the first {@linkcode HealthCheckIntervals.settleMs} after start-up. */
  startingMs: number;
  /** How long after start-up (≈ the boot, for a daemon started with it) checks are frequent. */
  settleMs: number;
  /** Interval afterwards. */
  settledMs: number;
}

/** Default {@linkcode HealthCheckIntervals}: every 15 s for 15 minutes, then every minute. */
export const DEFAULT_HEALTH_CHECK: HealthCheckIntervals = {
  startingMs: 15_000,
  settleMs: 15 * 60_000,
  settledMs: 60_000,
};

/** At most this many command/decide rounds per wake-up (a guard against loops). */
const MAX_ROUNDS = 8;

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function numericVersion(rv: string | undefined): number {
  const n = Number(rv);
  return Number.isFinite(n) ? n : -1;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The Node an event is about (core v1, by name and uid, as kubelet refers to it). */
function nodeObject(node: CoreNode | undefined, name: string): KubeObject {
  return { apiVersion: "v1", kind: "Node", metadata: { name, uid: node?.metadata?.uid } };
}

/** What a decision depends on in a BootcNode besides its status: its spec and whether a pool owns it. */
function decidedKey(bn: BootcNode | undefined): string | undefined {
  return bn && JSON.stringify([bn.spec, ownedByPool(bn)]);
}

/** The daemon loop for one node. */
export class Agent {
  readonly #o: AgentOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #retry: RetryPolicy;
  readonly #pullSecrets: PullSecretInstaller;
  readonly #hostPolicy: HostPolicyInstaller;
  /** The last host policy error recorded as an event. */
  #policyErrorRecorded?: string;
  #current?: BootcNode;
  /** {@linkcode decidedKey} of the BootcNode the last decision was made on. */
  #decidedOn?: string;
  #written?: BootcNodeStatus;
  #caps?: BootcCapabilities;
  #capsFailed = false;
  #masked = false;
  #failures: Record<string, ActionFailure> = {};
  #hostFailSince?: Date;
  #hostFailures = 0;
  #applyInFlight = false;
  /** The pull under way and how to stop it once the spec wants another image. */
  #pull?: { image: string; stop: AbortController };
  #writeFailures = 0;
  #kicked = false;
  #wake?: () => void;
  /** The Node as read in this reconcile (undefined: not read; `error`: the read failed). */
  #nodeRead?: { node?: CoreNode; error?: string };
  /** Event writes in flight (awaited before run returns). */
  #pending = new Set<Promise<void>>();
  /** The last pull Secret error recorded as an event (repeats are not recorded). */
  #secretErrorRecorded?: string;
  /** StatusFailed messages recorded in the current streak of failing status reads. */
  #statusEvents: string[] = [];
  /** The last host health check. */
  #health?: HealthCheck;
  /** When the next timed health check is due (ms since the epoch). */
  #healthAt = 0;
  /** When this agent started (health checks are frequent at first). */
  #startedAt = 0;
  /** The host was reported Unhealthy and not yet Healthy again (for HostRecovered). */
  #wasUnhealthy = false;

  /** Creates the agent; call {@linkcode Agent.run}. */
  constructor(options: AgentOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#hostPolicy = new HostPolicyInstaller(options.hostRoot);
    this.#pullSecrets = new PullSecretInstaller({
      hostRoot: options.hostRoot,
      retry: this.#retry,
      getSecret: async (namespace, name) => {
        try {
          return await options.secrets(namespace).get(name);
        } catch (e) {
          if (isNotFound(e)) return undefined;
          throw e;
        }
      },
    });
  }

  /** When the next timed host health check is due (undefined before the first; for tests). */
  get nextHealthCheck(): Date | undefined {
    return this.#healthAt > 0 ? new Date(this.#healthAt) : undefined;
  }

  /** Asks for a reconcile soon (a host change, a finished command, a test). */
  kick(): void {
    this.#kicked = true;
    this.#wake?.();
  }

  /** Runs until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const informer = new Informer<BootcNode>({
      resource: this.#o.nodes,
      fieldSelector: `metadata.name=${this.#o.nodeName}`,
      clock: this.#clock,
      logger: this.#log.with({ component: "informer" }),
    });
    informer.onAdd((node) => this.#observe(node, true));
    informer.onUpdate((_old, node) => {
      // A status someone else changed (not our own echo) is rewritten, level-triggered.
      this.#observe(node, !statusEqual(node.status, this.#written));
    });
    informer.onDelete(() => {
      this.#current = undefined;
      this.#log.info("BootcNode deleted; waiting for it to come back");
    });
    const informerDone = informer.start(signal);
    try {
      await informer.waitForSync(signal);
      this.#log.info("watching BootcNode", { name: this.#o.nodeName });
      this.#startedAt = this.#clock.now().getTime();
      this.#kicked = true;
      const poll = this.#o.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
      // The next reconcile at the latest: the poll after the last one, or a backoff deadline.
      let reconcileAt = Infinity;
      while (!signal.aborted) {
        if (this.#kicked) {
          this.#kicked = false;
          const next = await this.#reconcile(signal);
          reconcileAt = Math.min(
            this.#clock.now().getTime() + poll,
            next?.getTime() ?? Infinity,
          );
        } else if (this.#clock.now().getTime() >= this.#healthAt) {
          await this.#healthTick(signal);
        }
        await this.#sleepUntil(Math.min(reconcileAt, this.#healthAt), signal);
        if (this.#clock.now().getTime() >= reconcileAt) this.#kicked = true;
      }
    } catch (e) {
      if (!signal.aborted) throw e;
    } finally {
      await informerDone.catch(() => {});
      await Promise.all(this.#pending);
    }
  }

  /**
   * Records an Event in the background (awaited when run ends): on the BootcNode, or
   * on `on` (the Node, for its reboot: `kubectl describe node` shows it beside kubelet's).
   */
  #record(
    type: "Normal" | "Warning",
    reason: string,
    text: string,
    on?: KubeObject,
  ): void {
    const involved = on ?? this.#current;
    const sink = this.#o.events;
    if (!involved || !sink) return;
    const pending = sink.record(involved, type, reason, text).catch(() => {});
    this.#pending.add(pending);
    pending.finally(() => this.#pending.delete(pending));
  }

  /** GETs this node's Node for the reboot gate; a failure is remembered (and refuses). */
  async #readNode(signal: AbortSignal): Promise<CoreNode | undefined> {
    try {
      const node = await this.#o.coreNodes.get(this.#o.nodeName, { signal });
      this.#nodeRead = { node };
      return node;
    } catch (e) {
      if (signal.aborted) throw e;
      this.#nodeRead = { error: message(e) };
      this.#log.warn("reading the Node failed; not rebooting", { error: e });
      return undefined;
    }
  }

  /** rebootAuthorization of the Node read in this reconcile; undefined when it was not read. */
  #authorization(bn: BootcNode): RebootAuthorization | undefined {
    const read = this.#nodeRead;
    if (!read) return undefined;
    const answer = rebootAuthorization(read.node, bn);
    if (read.error !== undefined && answer.reason === RebootAllowedReason.NoRebootSlot) {
      return {
        ...answer,
        message: `Booted was requested but the Node could not be read (${read.error}); ` +
          "keeping the image staged",
      };
    }
    return answer;
  }

  /**
   * Takes `node` as the current BootcNode unless it is older than what our own write
   * returned. Whatever delivered it (a watch event, a relist, our write's answer), a
   * spec or owner no decision has seen yet is acted on: comparing watch events with
   * each other misses a spec change our own write's answer showed first.
   */
  #observe(node: BootcNode, kick: boolean): void {
    const older = this.#current !== undefined &&
      numericVersion(node.metadata?.resourceVersion) <
        numericVersion(this.#current.metadata?.resourceVersion);
    if (!older) {
      this.#current = node;
      this.#stopSupersededPull();
    }
    if (kick || decidedKey(this.#current) !== this.#decidedOn) this.kick();
  }

  /** Stops the pull under way if the BootcNode now asks for another image. */
  #stopSupersededPull(): void {
    const pull = this.#pull;
    if (!pull || pull.stop.signal.aborted || !pullSuperseded(pull.image, this.#current?.spec)) {
      return;
    }
    this.#log.info("stopping a pull the spec no longer wants", {
      image: pull.image,
      desiredImage: this.#current?.spec.desiredImage,
    });
    pull.stop.abort();
  }

  /** Sleeps until `until` (ms since the epoch), a kick or the abort. */
  async #sleepUntil(until: number, signal: AbortSignal): Promise<void> {
    if (this.#kicked || signal.aborted) return;
    const now = this.#clock.now().getTime();
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        this.#clock.sleep(Math.max(0, until - now), stop.signal).then(
          () => resolve(),
          () => resolve(),
        );
      });
    } finally {
      this.#wake = undefined;
      stop.abort();
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Reads bootc status into a {@linkcode HostObservation}, then checks the host's health. */
  async #readHost(signal: AbortSignal): Promise<HostObservation> {
    let observed: HostObservation;
    try {
      const host = await raceAbort(this.#o.executor.status(), signal);
      this.#hostFailSince = undefined;
      this.#hostFailures = 0;
      this.#statusEvents = [];
      observed = { ok: true, host };
    } catch (e) {
      if (signal.aborted) throw e;
      this.#hostFailSince ??= this.#clock.now();
      this.#hostFailures++;
      const timedOut = (e as { timedOut?: boolean }).timedOut === true;
      this.#log.warn("bootc status failed", { error: e, timedOut });
      this.#recordStatusFailure(message(e), timedOut, this.#hostFailSince);
      observed = { ok: false, message: message(e), timedOut, since: this.#hostFailSince };
    }
    await this.#checkHealth(signal);
    return observed;
  }

  /** Runs the host health check (local commands only) and schedules the next one. */
  async #checkHealth(signal: AbortSignal): Promise<HealthCheck> {
    const check = await raceAbort(
      checkHostHealth(this.#o.executor, healthScope(this.#current?.spec), () => this.#clock.now()),
      signal,
    );
    if (check.state !== this.#health?.state || check.message !== this.#health?.message) {
      this.#log.info("host health", {
        state: check.state,
        reason: check.reason,
        failedUnits: check.failedUnits,
        message: check.message,
      });
    }
    this.#health = check;
    const now = this.#clock.now().getTime();
    const intervals = { ...DEFAULT_HEALTH_CHECK, ...this.#o.healthCheck };
    this.#healthAt = now +
      (now - this.#startedAt < intervals.settleMs ? intervals.startingMs : intervals.settledMs);
    return check;
  }

  /**
   * A timed health check: local commands only. A reconcile (which reads bootc status,
   * checks again and writes) follows only when the report would change.
   */
  async #healthTick(signal: AbortSignal): Promise<void> {
    const check = await this.#checkHealth(signal);
    const status = this.#current?.status;
    const idle = findCondition(status?.conditions, NodeConditionType.Idle)?.reason;
    const update = nextHostHealth(
      status,
      check,
      status?.booted?.imageDigest,
      this.#applyInFlight || idle === IdleReason.Rebooting,
    );
    if (update.changed) this.kick();
  }

  /**
   * A StatusFailed event, bounded: a timeout counts only once it outlasts the busy grace
   * (status blocks while a pull holds the sysroot lock); then once per distinct message, at
   * most {@linkcode MAX_STATUS_EVENTS} per streak.
   */
  #recordStatusFailure(text: string, timedOut: boolean, since: Date): void {
    const grace = this.#o.statusBusyGraceMs ?? DEFAULT_STATUS_BUSY_GRACE_MS;
    if (timedOut && this.#clock.now().getTime() - since.getTime() < grace) return;
    if (this.#statusEvents.includes(text) || this.#statusEvents.length >= MAX_STATUS_EVENTS) {
      return;
    }
    this.#statusEvents.push(text);
    this.#record("Warning", DaemonEventReason.StatusFailed, text);
  }

  async #detectCapabilities(signal: AbortSignal): Promise<void> {
    if (this.#caps && !this.#capsFailed) return;
    try {
      const text = await raceAbort(this.#o.executor.version(), signal);
      this.#caps = capabilitiesFromVersion(text);
      this.#capsFailed = false;
      this.#log.info("bootc detected", { ...this.#caps });
    } catch (e) {
      if (signal.aborted) throw e;
      this.#caps = { problem: `cannot run bootc --version: ${message(e)}` };
      this.#capsFailed = true;
    }
  }

  #decide(host: HostObservation, pullSecretError: string | undefined): Decision {
    const node = this.#current!;
    this.#decidedOn = decidedKey(node);
    return decide({
      spec: node.spec,
      owned: ownedByPool(node),
      reboot: this.#authorization(node),
      node: this.#nodeRead?.node,
      rebootRecheckMs: this.#o.rebootRecheckMs,
      health: this.#health,
      generation: node.metadata?.generation,
      annotations: node.metadata?.annotations,
      status: node.status,
      host,
      capabilities: this.#caps,
      autoUpdatesMasked: this.#masked,
      pullSecretError,
      failures: this.#failures,
      applyInFlight: this.#applyInFlight,
      now: this.#clock.now(),
      retry: this.#retry,
      statusBusyGraceMs: this.#o.statusBusyGraceMs,
    });
  }

  /** Writes the status; false when it failed (then nothing that needs it may run). */
  async #write(status: BootcNodeStatus): Promise<boolean> {
    const name = this.#o.nodeName;
    try {
      const updated = await this.#o.nodes.patch(
        name,
        [{ op: "add", path: "/status", value: status }],
        { type: "json", subresource: "status", fieldManager: DAEMON_FIELD_MANAGER },
      );
      this.#written = updated.status ?? status;
      this.#writeFailures = 0;
      this.#observe(updated, false);
      return true;
    } catch (e) {
      this.#writeFailures++;
      this.#log.error("writing BootcNode status failed", { error: e });
      return false;
    }
  }

  /** When a failed status write is tried again: soon, whatever the count (see API_RETRY). */
  #writeRetryAt(): Date {
    return new Date(this.#clock.now().getTime() + retryDelay(this.#writeFailures, API_RETRY));
  }

  #recordFailure(action: Action, e: unknown): void {
    const key = actionKey(action);
    const attempts = (this.#failures[key]?.attempts ?? 0) + 1;
    this.#failures[key] = { message: message(e), attempts, at: this.#clock.now() };
    this.#log.error("command failed", { action: action.type, error: e, attempts });
  }

  #forgetStaleFailures(decision: Decision): void {
    for (const key of Object.keys(this.#failures)) {
      if (!decision.keys.includes(key)) delete this.#failures[key];
    }
  }

  /** Logs a written transition; a reboot newly refused is also an Event (once per transition). */
  #logTransition(before: BootcNodeStatus | undefined, after: BootcNodeStatus): void {
    const idle = findCondition(after.conditions, NodeConditionType.Idle);
    const degraded = findCondition(after.conditions, NodeConditionType.Degraded);
    const old = findCondition(before?.conditions, NodeConditionType.Idle);
    const allowed = findCondition(after.conditions, NodeConditionType.RebootAllowed);
    const wasAllowed = findCondition(before?.conditions, NodeConditionType.RebootAllowed);
    this.#log.info("status changed", {
      idle: idle ? `${idle.status}/${idle.reason}` : undefined,
      hostHealth: after.hostHealth?.state,
      previousIdle: old ? `${old.status}/${old.reason}` : undefined,
      rebootAllowed: allowed ? `${allowed.status}/${allowed.reason}` : undefined,
      degraded: degraded ? `${degraded.status}/${degraded.reason}` : undefined,
      degradedMessage: degraded?.status === "True" ? degraded.message : undefined,
    });
    const refusedNow = allowed?.status === "False" &&
      allowed.reason !== RebootAllowedReason.NotRequested;
    const changed = allowed?.status !== wasAllowed?.status ||
      allowed?.reason !== wasAllowed?.reason || allowed?.message !== wasAllowed?.message;
    if (refusedNow && changed) {
      this.#log.warn("reboot refused", { reason: allowed.reason, message: allowed.message });
      this.#record(
        "Warning",
        DaemonEventReason.RebootRefused,
        `${allowed.reason}: ${allowed.message}`,
      );
    }
    // A staged image is no Event: the Idle and ImageStaged conditions carry the phase (events
    // mark what people act on: the reboot below, failures).
    this.#reportHealth(before, after);
  }

  /**
   * HostUnhealthy when the written report turns Unhealthy (or names other failed units),
   * HostRecovered when it is Healthy again after being Unhealthy (even with Starting between,
   * or across a restart: the persisted report counts).
   */
  #reportHealth(before: BootcNodeStatus | undefined, after: BootcNodeStatus): void {
    const was = before?.hostHealth;
    const now = after.hostHealth;
    if (was?.state === "Unhealthy") this.#wasUnhealthy = true;
    if (!now) return;
    const units = (h: typeof now | undefined) => (h?.failedUnits ?? []).join(", ");
    if (now.state === "Unhealthy") {
      if (was?.state !== "Unhealthy" || units(was) !== units(now)) {
        this.#log.warn("host unhealthy", { failedUnits: now.failedUnits, message: now.message });
        this.#record(
          "Warning",
          DaemonEventReason.HostUnhealthy,
          `Host unhealthy` +
            (now.bootedDigest ? ` (booted ${shortDigest(now.bootedDigest)})` : "") +
            `: ${now.message}`,
        );
      }
      this.#wasUnhealthy = true;
    } else if (now.state === "Healthy" && this.#wasUnhealthy) {
      this.#wasUnhealthy = false;
      this.#log.info("host recovered", { message: now.message });
      this.#record(
        "Normal",
        DaemonEventReason.HostRecovered,
        `Host healthy again` +
          (now.bootedDigest ? ` (booted ${shortDigest(now.bootedDigest)})` : "") +
          `: ${now.message}`,
      );
    }
  }

  /** Logs the pull Secret outcome and records it as an event (errors once per distinct one). */
  #reportPullSecret(outcome: string, error: string | undefined): void {
    const ref = this.#current?.spec.pullSecretRef;
    if (outcome === "written") {
      this.#log.info("pull secret written", { path: this.#pullSecrets.authFile });
      this.#record(
        "Normal",
        DaemonEventReason.AuthFileWritten,
        `Wrote the credentials of pull Secret ${ref?.namespace}/${ref?.name} to the host's ` +
          `/${AUTH_FILE}`,
      );
    } else if (outcome === "removed") {
      this.#log.info("pull secret removed", { path: this.#pullSecrets.authFile });
      this.#record(
        "Normal",
        DaemonEventReason.AuthFileRemoved,
        `Removed /${AUTH_FILE} from the host: no pull Secret is referenced any more`,
      );
    } else if (outcome === "failed") {
      this.#log.warn("pull secret not installed", { error });
      if (error !== undefined && error !== this.#secretErrorRecorded) {
        this.#record("Warning", DaemonEventReason.PullSecretFailed, error);
      }
      this.#secretErrorRecorded = error;
      return;
    }
    this.#secretErrorRecorded = undefined;
  }

  /** Logs the host policy outcome and records it as an event (errors once per distinct one). */
  #reportHostPolicy(outcome: string, error: string | undefined): void {
    if (outcome === "written") {
      this.#log.info("host signature policy written", { path: POLICY_FILE });
      this.#record(
        "Normal",
        DaemonEventReason.HostPolicyWritten,
        `The host's /${POLICY_FILE} requires a signature by the pool's key(s) for ` +
          `${wantedPolicy(this.#current?.spec)?.scope}`,
      );
    } else if (outcome === "removed") {
      this.#log.info("host signature policy removed", { path: POLICY_FILE });
      this.#record(
        "Normal",
        DaemonEventReason.HostPolicyRemoved,
        `Put the host's /${POLICY_FILE} back as it was: the pool no longer enforces signatures`,
      );
    } else if (outcome === "failed") {
      this.#log.warn("host signature policy not written", { error });
      if (error !== undefined && error !== this.#policyErrorRecorded) {
        this.#record("Warning", DaemonEventReason.HostPolicyFailed, error);
      }
      this.#policyErrorRecorded = error;
      return;
    }
    this.#policyErrorRecorded = undefined;
  }

  /** One reconcile; returns when to run again at the latest (backoff deadlines). */
  async #reconcile(signal: AbortSignal): Promise<Date | undefined> {
    if (!this.#current) return undefined;
    // Each reconcile reads the Node afresh (only if an apply is due): no stale authorization.
    this.#nodeRead = undefined;
    // A BootcNode no pool owns is not acted on: not even its pull Secret is fetched.
    const secret = ownedByPool(this.#current)
      ? await this.#pullSecrets.sync(this.#current.spec, this.#clock.now())
      : { outcome: "unchanged" as const, error: undefined };
    this.#reportPullSecret(secret.outcome, secret.error);
    // The host's own policy check is in place before anything is pulled under it.
    const policy = ownedByPool(this.#current)
      ? await this.#hostPolicy.sync(this.#current.spec)
      : { outcome: "unchanged" as const, error: undefined };
    this.#reportHostPolicy(policy.outcome, policy.error);
    const hostFileError = [secret.error, policy.error].filter(Boolean).join("; ") || undefined;
    await this.#detectCapabilities(signal);
    let host = await this.#readHost(signal);
    const deadlines: (Date | undefined)[] = [this.#pullSecrets.retryAt];
    if (!host.ok) {
      deadlines.push(
        new Date(this.#clock.now().getTime() + retryDelay(this.#hostFailures, this.#retry)),
      );
    }
    for (let round = 0; round < MAX_ROUNDS && !signal.aborted && this.#current; round++) {
      const decision = this.#decide(host, hostFileError);
      this.#forgetStaleFailures(decision);
      const action = decision.action;
      // An apply (or rollback) persists Rebooting itself, after its last-moment checks.
      const rebootAction = action.type === "apply" || action.type === "rollback";
      if ((decision.persistFirst && !rebootAction) || action.type === "none") {
        if (decision.changed) {
          const before = this.#current.status;
          if (!(await this.#write(decision.status))) {
            deadlines.push(this.#writeRetryAt());
            break;
          }
          this.#logTransition(before, decision.status);
        }
      }
      if (action.type === "none") {
        deadlines.push(decision.retryAt);
        break;
      }
      if (action.type === "readNode") {
        await this.#readNode(signal);
        continue;
      }
      if (action.type === "apply" || action.type === "rollback") {
        deadlines.push(await this.#apply(action, hostFileError, signal));
        break;
      }
      if (action.type === "stage" && decision.changed && decision.reportAfterMs !== undefined) {
        await runReportingIfSlow({
          work: () => this.#runAction(action, signal),
          afterMs: decision.reportAfterMs,
          retryMs: STAGING_REPORT_RETRY_MS,
          report: () => this.#reportStaging(action.image, host, hostFileError),
          clock: this.#clock,
        });
      } else {
        await this.#runAction(action, signal);
      }
      host = await this.#readHost(signal);
      if (round === MAX_ROUNDS - 1) this.kick();
    }
    const due = deadlines.filter((d): d is Date => d !== undefined);
    return due.length ? new Date(Math.min(...due.map((d) => d.getTime()))) : undefined;
  }

  /**
   * A pull still running: writes what deciding again now says (Staging, with
   * the BootcNode as it is now), if that is still this pull. False when the
   * write failed (tried again while the pull runs).
   */
  async #reportStaging(
    image: string,
    host: HostObservation,
    pullSecretError: string | undefined,
  ): Promise<boolean> {
    if (!this.#current) return true;
    const decision = this.#decide(host, pullSecretError);
    const still = decision.action.type === "stage" && decision.action.image === image;
    if (!still || !decision.changed) return true;
    const before = this.#current?.status;
    if (!(await this.#write(decision.status))) return false;
    this.#logTransition(before, decision.status);
    return true;
  }

  async #runAction(
    action: Exclude<Action, { type: "none" | "apply" | "rollback" | "readNode" }>,
    signal: AbortSignal,
  ) {
    const ex = this.#o.executor;
    this.#log.info("running", { ...action });
    try {
      switch (action.type) {
        case "maskAutoUpdates":
          await raceAbort(ex.maskAutoUpdates(), signal);
          this.#masked = true;
          break;
        case "stage":
          if (!(await this.#stage(action, signal))) return;
          break;
        case "lockStaged":
          await raceAbort(
            ex.lockStaged(action.other ? { timeoutMs: OTHER_LOCK_TIMEOUT_MS } : {}),
            signal,
          );
          break;
        case "unqueueRollback":
          await raceAbort(ex.unqueueRollback(), signal);
          break;
      }
      delete this.#failures[actionKey(action)];
    } catch (e) {
      if (signal.aborted) throw e;
      this.#recordFailure(action, e);
      if (action.type === "stage") {
        this.#record(
          "Warning",
          DaemonEventReason.StagingFailed,
          `Staging ${shortReference(action.image)} failed: ${message(e)}`,
        );
      }
    }
  }

  /**
   * Runs a pull, stoppable while it runs (see {@linkcode pullSuperseded}; on bootc
   * 1.16.10+ only). False when it was stopped: not a failure (no backoff, no event); the
   * next round stages what the spec wants now, with the sysroot lock free again.
   */
  async #stage(action: Extract<Action, { type: "stage" }>, signal: AbortSignal): Promise<boolean> {
    const stop = new AbortController();
    // Only a stage that is locked or not there at all is stopped (see StageOptions).
    if (action.method === "switch-download-only") this.#pull = { image: action.image, stop };
    // The spec may have moved on while this round decided.
    this.#stopSupersededPull();
    try {
      const pulling = this.#o.executor.stage(action.image, action.method, { signal: stop.signal });
      await raceAbort(pulling, signal);
      return true;
    } catch (e) {
      if (signal.aborted || !(e instanceof BootcCommandStopped) || !stop.signal.aborted) throw e;
      this.#log.info("pull stopped", { image: action.image });
      return false;
    } finally {
      this.#pull = undefined;
    }
  }

  /**
   * Applies the staged image (or boots the rollback deployment), after checking
   * everything once more right before: bootc status (the staged digest must
   * still be the desired one: `--from-downloaded` applies whatever is staged;
   * for a rollback, the rollback entry must still provide it) and authoritative
   * GETs of the BootcNode and the Node (the reboot must still be authorized:
   * slot, cordon and a finished drain for this image). Persists Rebooting, then
   * starts the command detached. Returns when to reconcile again if it did not
   * apply.
   */
  async #apply(
    action: Extract<Action, { type: "apply" | "rollback" }>,
    pullSecretError: string | undefined,
    signal: AbortSignal,
  ): Promise<Date | undefined> {
    const fresh = await this.#readHost(signal);
    const recheck = () =>
      new Date(
        this.#clock.now().getTime() + (this.#o.rebootRecheckMs ?? DEFAULT_REBOOT_RECHECK_MS),
      );
    let bn: BootcNode;
    try {
      bn = await this.#o.nodes.get(this.#o.nodeName, { signal });
    } catch (e) {
      if (signal.aborted) throw e;
      this.#log.warn("reading the BootcNode right before apply failed; not applying", {
        error: e,
      });
      return recheck();
    }
    this.#observe(bn, false);
    let node = await this.#readNode(signal);
    const auth = rebootAuthorization(node, bn);
    const decision = this.#decide(fresh, pullSecretError);
    const again = decision.action;
    if (
      again.type === action.type &&
      (again.image !== action.image || bn.spec.desiredImage !== action.image)
    ) {
      this.#log.warn("staged image changed right before apply; not applying", {
        wanted: action.image,
      });
      this.kick();
      return undefined;
    }
    if (again.type !== action.type) {
      // Refused (the decision says why, in RebootAllowed) or no longer due.
      this.#log.warn("not applying: checked right before invoking bootc", {
        reason: auth.reason,
        message: auth.message,
        next: again.type,
      });
      if (decision.changed && (decision.persistFirst || again.type === "none")) {
        const before = this.#current?.status;
        if (await this.#write(decision.status)) this.#logTransition(before, decision.status);
      }
      if (again.type !== "none") this.kick();
      return decision.retryAt;
    }
    if (!auth.allowed) {
      // decide saw another BootcNode than the one just read: trust the rule on the fresh reads.
      this.#log.warn("reboot not authorized right before apply; not applying", { ...auth });
      this.#record("Warning", DaemonEventReason.RebootRefused, `${auth.reason}: ${auth.message}`);
      return recheck();
    }
    if (decision.changed) {
      const before = this.#current?.status;
      if (!(await this.#write(decision.status))) return this.#writeRetryAt();
      this.#logTransition(before, decision.status);
      // The write took time (or this process was frozen meanwhile): the Node is read again, so
      // the last check before bootc is against what the API holds now, not before the write.
      node = await this.#readNode(signal);
    }
    // The write's answer is the API server's BootcNode too: the spec must not have moved.
    const written = this.#current;
    const last = written ? this.#authorization(written) : undefined;
    if (!written || !last?.allowed) {
      this.#log.warn("BootcNode or Node changed while persisting Rebooting; not applying", {
        ...last,
      });
      if (last) {
        this.#record("Warning", DaemonEventReason.RebootRefused, `${last.reason}: ${last.message}`);
      }
      this.kick();
      return undefined;
    }
    const soft = again.soft ? " (soft reboot when possible)" : "";
    let handle;
    if (again.type === "rollback") {
      this.#log.info("rolling back and rebooting", { ...again });
      this.#record(
        "Normal",
        DaemonEventReason.RollingBack,
        `Rolling back to ${
          shortReference(again.image)
        } (the rollback deployment) and rebooting${soft}: ` +
          auth.message,
        nodeObject(node, this.#o.nodeName),
      );
      this.#applyInFlight = true;
      handle = this.#o.executor.applyRollback({ soft: again.soft });
    } else {
      this.#log.info("applying staged image and rebooting", { ...again });
      this.#record(
        "Normal",
        DaemonEventReason.Rebooting,
        `Applying ${shortReference(again.image)} and rebooting${soft}: ${auth.message}`,
        nodeObject(node, this.#o.nodeName),
      );
      this.#applyInFlight = true;
      handle = this.#o.executor.apply({ soft: again.soft, method: again.method });
    }
    const verb = again.type === "rollback" ? "Rolling back to" : "Applying";
    handle.exited.then((error) => {
      if (error) {
        this.#applyInFlight = false;
        this.#recordFailure(again, error);
        this.#record(
          "Warning",
          DaemonEventReason.ApplyFailed,
          `${verb} ${shortReference(again.image)} failed: ${message(error)}`,
        );
      } else {
        // bootc asked systemd to reboot; stay in flight until the reboot ends us.
        this.#log.info("apply command returned; waiting for the reboot");
        delete this.#failures[actionKey(again)];
      }
      this.kick();
    });
    return undefined;
  }
}
