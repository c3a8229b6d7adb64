/**
 * Lightweight in-process stand-ins for the node daemon, for the scale harness
 * (`tools/scale_rollout.ts`): one process cannot hold 1,000 real daemons, so each
 * node's daemon side is played by a small loop that runs the REAL decision core
 * ({@linkcode decide}, daemon/decide.ts) against a simulated bootc host (the pure
 * host model of tests/bootc_sim/model.ts, rendered as `bootc status --json` by
 * tests/bootc_sim/status.ts and parsed by lib/bootc like the daemon does).
 *
 * The loop follows daemon/agent.ts: it writes the status decide computes only
 * when it changed (a JSON patch of `/status`, the daemon's field manager), runs
 * the action decide asks for (mask the auto-update timer, stage locked after a
 * simulated pull, lock, read the Node, apply) and decides again; an apply
 * re-reads the BootcNode and the Node from the API server right before, persists
 * Rebooting, and records the same Events (Rebooting, RebootRefused, …).
 * What it leaves out: the pull Secret, host health beyond "running", status
 * read failures and backoff timing of failing commands (nothing fails here).
 * One shared BootcNode watch feeds every stand-in (the real daemons have one
 * field-selected watch each).
 *
 * The harness side plays the machine, as tests/harness/fleet.ts does: every
 * apply is judged by the {@linkcode InvariantTracker} on fresh reads at
 * invocation, then the machine goes down (Node NotReady through kwok), the host
 * model reboots into the staged deployment, the machine comes back (Node Ready)
 * and the daemon starts afresh (nothing remembered but what the API holds).
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import type { IPod } from "kubernetes-models/v1/Pod";
import { type NodeForReboot, ownedByPool, rebootAuthorization } from "../lib/api/annotations.ts";
import { findCondition } from "../lib/api/conditions.ts";
import {
  DAEMON_FIELD_MANAGER,
  NodeConditionType,
  RebootAllowedReason,
} from "../lib/api/constants.ts";
import type { BootcNode, BootcNodeStatus } from "../lib/api/schema.ts";
import { parseHost } from "../lib/bootc/parse.ts";
import { type BootcCapabilities, capabilitiesFromVersion } from "../lib/bootc/version.ts";
import { STAGING_REPORT_RETRY_MS } from "../lib/api/constants.ts";
import { systemClock } from "../lib/clock.ts";
import { EventRecorder } from "../lib/kube/events.ts";
import { Informer } from "../lib/kube/informer.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { Resources } from "../lib/kube/resources.ts";
import type { KubeObject } from "../lib/kube/types.ts";
import {
  type Action,
  type ActionFailure,
  actionKey,
  decide,
  type Decision,
} from "../daemon/decide.ts";
import { assessSystem } from "../daemon/health.ts";
import { runReportingIfSlow } from "../daemon/report_if_slow.ts";
import {
  checksumFor,
  DEFAULT_SETTINGS,
  type HostState,
  initialState,
  lockStaged,
  newDeployment,
  type PulledImage,
  reboot,
  rollback,
  type SimSettings,
  stage,
  unlockStaged,
} from "../tests/bootc_sim/model.ts";
import { buildHost } from "../tests/bootc_sim/status.ts";
import type { InvariantTracker } from "../tests/harness/invariants.ts";

/** What a stand-in reads of its Node. */
type CoreNode = KubeObject & NodeForReboot;

/** Options of {@linkcode StandInFleet}. */
export interface StandInFleetOptions {
  /** Client for the daemons' reads and writes (and the harness's). */
  client: KubeClient;
  /** Resolves a pullspec to what bootc records for it (a registry pull, memoised). */
  pull: (pullspec: string) => Promise<PulledImage>;
  /** Simulated pull time of a stage (default 2 s, ±25 %). */
  pullMs?: number;
  /** How long a machine stays down for a reboot (default 2 s). */
  rebootMs?: number;
  /** Makes a Node NotReady/Ready through kwok and waits for it (the harness's writes). */
  setNodeReady: (node: string, ready: boolean) => Promise<void>;
  /** Judges every apply and is told of every reboot. */
  tracker?: InvariantTracker;
  /** Called for anything that went wrong (the run reports them). */
  onError?: (node: string, error: unknown) => void;
}

interface Member {
  name: string;
  state: HostState;
  settings: SimSettings;
  current?: BootcNode;
  /** The status this daemon last wrote (the agent's echo filter). */
  written?: BootcNodeStatus;
  masked: boolean;
  failures: Record<string, ActionFailure>;
  nodeRead?: { node?: CoreNode; error?: string };
  applyInFlight: boolean;
  /** The machine is down for a reboot: no daemon runs. */
  down: boolean;
  kicked: boolean;
  running: boolean;
  timer?: ReturnType<typeof setTimeout>;
  events: EventRecorder;
  invocations: number;
}

const BOOTC_VERSION = "1.16.10";
/** The real daemon's fallback poll (default 5 min). */
const POLL_MS = 5 * 60_000;
const MAX_ROUNDS = 8;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function numericVersion(rv: string | undefined): number {
  const n = Number(rv);
  return Number.isFinite(n) ? n : -1;
}

/** Stand-in daemons for many nodes; see the module doc. */
export class StandInFleet {
  /** Reboots performed. */
  reboots = 0;
  /** Node writes the harness made (machines going down and up), not the operator's. */
  harnessNodeWrites = 0;
  /** Status writes the stand-ins made. */
  statusWrites = 0;
  readonly #o: StandInFleetOptions;
  readonly #members = new Map<string, Member>();
  readonly #caps: BootcCapabilities = capabilitiesFromVersion(`bootc ${BOOTC_VERSION}`);
  #abort = new AbortController();
  #informer?: Informer<BootcNode>;
  #running?: Promise<void>;
  /** Work in flight, by kind (for a bounded stop that says what did not finish). */
  #busy = new Map<Promise<unknown>, "loop" | "reboot" | "event">();

  constructor(options: StandInFleetOptions) {
    this.#o = options;
  }

  /** Adds a host booted into `pullspec` (what `pulled` describes). */
  async add(name: string, pullspec: string, pulled: PulledImage): Promise<void> {
    const booted = newDeployment({
      state: initialState(null, crypto.randomUUID()),
      pullspec,
      image: pulled,
      checksum: await checksumFor(pulled.imageDigest),
      softRebootCapable: false,
      downloadOnly: false,
    });
    this.#members.set(name, {
      name,
      state: initialState(booted, crypto.randomUUID()),
      settings: { ...DEFAULT_SETTINGS, bootcVersion: BOOTC_VERSION },
      masked: false,
      failures: {},
      applyInFlight: false,
      down: false,
      kicked: false,
      running: false,
      events: new EventRecorder({
        client: this.#o.client,
        component: "bootc-operator-daemon",
        host: name,
      }),
      invocations: 0,
    });
  }

  /** Starts the shared BootcNode watch and the daemons' loops. */
  async start(): Promise<void> {
    const informer = new Informer<BootcNode>({
      resource: this.#o.client.resource<BootcNode>(Resources.bootcNodes),
    });
    informer.onAdd((bn) => this.#observe(bn, true));
    informer.onUpdate((old, bn) => {
      const m = this.#members.get(bn.metadata.name ?? "");
      if (!m) return;
      const specChanged = old.metadata?.generation !== bn.metadata?.generation ||
        JSON.stringify(old.spec) !== JSON.stringify(bn.spec);
      const ownerChanged = ownedByPool(old) !== ownedByPool(bn);
      const foreign = JSON.stringify(bn.status) !== JSON.stringify(m.written);
      this.#observe(bn, specChanged || ownerChanged || foreign);
    });
    informer.onDelete((bn) => {
      const m = this.#members.get(bn.metadata.name ?? "");
      if (m) m.current = undefined;
    });
    this.#informer = informer;
    this.#running = informer.start(this.#abort.signal);
    await informer.waitForSync(this.#abort.signal);
  }

  /**
   * Stops every loop and waits (at most `timeoutMs`) for what is in flight;
   * resolves with a description of what did not finish, if anything.
   */
  async stop(timeoutMs = 30_000): Promise<string | undefined> {
    this.#abort.abort();
    for (const m of this.#members.values()) clearTimeout(m.timer);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timeout">((r) =>
      timer = setTimeout(() => r("timeout"), timeoutMs)
    );
    const done = (async () => {
      await this.#running?.catch(() => {});
      await Promise.allSettled([...this.#busy.keys()]);
      await Promise.allSettled([...this.#members.values()].map((m) => m.events.flush()));
    })();
    const outcome = await Promise.race([done, timedOut]);
    clearTimeout(timer);
    if (outcome !== "timeout") return undefined;
    const counts: Record<string, number> = {};
    for (const kind of this.#busy.values()) counts[kind] = (counts[kind] ?? 0) + 1;
    const running = [...this.#members.values()].filter((m) => m.running).map((m) => m.name);
    return `still in flight after ${timeoutMs} ms: ${JSON.stringify(counts)}` +
      (running.length ? `; loops of ${running.slice(0, 5).join(", ")}` : "");
  }

  #observe(bn: BootcNode, kick: boolean): void {
    const m = this.#members.get(bn.metadata.name ?? "");
    if (!m) return;
    if (
      m.current &&
      numericVersion(bn.metadata?.resourceVersion) <
        numericVersion(m.current.metadata?.resourceVersion)
    ) return;
    m.current = bn;
    if (kick) this.#kick(m);
  }

  #track(work: Promise<unknown>, kind: "loop" | "reboot" | "event"): void {
    const tracked = work.finally(() => this.#busy.delete(tracked));
    this.#busy.set(tracked, kind);
  }

  #kick(m: Member): void {
    m.kicked = true;
    if (m.running || m.down || this.#abort.signal.aborted) return;
    m.running = true;
    this.#track(this.#loop(m), "loop");
  }

  async #loop(m: Member): Promise<void> {
    try {
      while (m.kicked && !m.down && !this.#abort.signal.aborted) {
        m.kicked = false;
        let next: number | undefined;
        try {
          next = await this.#reconcile(m);
        } catch (e) {
          if (this.#abort.signal.aborted) return;
          this.#o.onError?.(m.name, e);
          next = Date.now() + 1_000;
        }
        clearTimeout(m.timer);
        if (this.#abort.signal.aborted) return;
        const at = Math.min(next ?? Infinity, Date.now() + POLL_MS);
        m.timer = setTimeout(() => this.#kick(m), Math.max(0, at - Date.now()));
      }
    } finally {
      m.running = false;
    }
  }

  /** What `bootc status --json` prints for the model, parsed as the daemon parses it. */
  #readHost(m: Member) {
    const json = buildHost({ state: m.state, settings: m.settings });
    return { ok: true as const, host: parseHost(JSON.stringify(json)) };
  }

  #decide(m: Member): Decision {
    const bn = m.current!;
    const read = m.nodeRead;
    return decide({
      spec: bn.spec,
      owned: ownedByPool(bn),
      reboot: read ? rebootAuthorization(read.node, bn) : undefined,
      node: read?.node,
      health: assessSystem("running", undefined, new Date()),
      generation: bn.metadata?.generation,
      annotations: bn.metadata?.annotations,
      status: bn.status,
      host: this.#readHost(m),
      capabilities: this.#caps,
      autoUpdatesMasked: m.masked,
      failures: m.failures,
      applyInFlight: m.applyInFlight,
      now: new Date(),
    });
  }

  async #write(m: Member, status: BootcNodeStatus): Promise<boolean> {
    try {
      const updated = await this.#o.client.resource<BootcNode>(Resources.bootcNodes).patch(
        m.name,
        [{ op: "add", path: "/status", value: status }],
        { type: "json", subresource: "status", fieldManager: DAEMON_FIELD_MANAGER },
      );
      this.statusWrites++;
      m.written = updated.status ?? status;
      this.#observe(updated, false);
      return true;
    } catch (e) {
      this.#o.onError?.(m.name, e);
      return false;
    }
  }

  #record(m: Member, type: "Normal" | "Warning", reason: string, text: string): void {
    if (!m.current) return;
    this.#track(m.events.record(m.current, type, reason, text), "event");
  }

  /** The agent's transition events: a newly refused reboot. */
  #logTransition(m: Member, before: BootcNodeStatus | undefined, after: BootcNodeStatus): void {
    const allowed = findCondition(after.conditions, NodeConditionType.RebootAllowed);
    const was = findCondition(before?.conditions, NodeConditionType.RebootAllowed);
    const refused = allowed?.status === "False" &&
      allowed.reason !== RebootAllowedReason.NotRequested;
    const changed = allowed?.status !== was?.status || allowed?.reason !== was?.reason ||
      allowed?.message !== was?.message;
    if (refused && changed) {
      this.#record(m, "Warning", "RebootRefused", `${allowed.reason}: ${allowed.message}`);
    }
    // As the daemon: a staged image is no Event (the conditions carry it).
  }

  async #readNode(m: Member): Promise<CoreNode | undefined> {
    try {
      const node = await this.#o.client.resource<CoreNode>(Resources.nodes).get(m.name);
      m.nodeRead = { node };
      return node;
    } catch (e) {
      m.nodeRead = { error: message(e) };
      return undefined;
    }
  }

  /** One reconcile, as Agent.#reconcile; returns when to run again at the latest. */
  async #reconcile(m: Member): Promise<number | undefined> {
    if (!m.current) return undefined;
    m.nodeRead = undefined;
    let next: number | undefined;
    for (let round = 0; round < MAX_ROUNDS && m.current && !m.down; round++) {
      const decision = this.#decide(m);
      const action = decision.action;
      const reboot = action.type === "apply" || action.type === "rollback";
      if ((decision.persistFirst && !reboot) || action.type === "none") {
        if (decision.changed) {
          const before = m.current.status;
          if (!(await this.#write(m, decision.status))) return Date.now() + 1_000;
          this.#logTransition(m, before, decision.status);
        }
      }
      if (action.type === "none") {
        next = decision.retryAt?.getTime();
        break;
      }
      if (action.type === "readNode") {
        await this.#readNode(m);
        continue;
      }
      if (action.type === "apply" || action.type === "rollback") {
        return await this.#apply(m, action);
      }
      if (action.type === "stage" && decision.changed && decision.reportAfterMs !== undefined) {
        await runReportingIfSlow({
          work: () => this.#run(m, action),
          afterMs: decision.reportAfterMs,
          retryMs: STAGING_REPORT_RETRY_MS,
          report: () => this.#reportStaging(m, action.image),
          clock: systemClock,
        });
      } else {
        await this.#run(m, action);
      }
      if (round === MAX_ROUNDS - 1) m.kicked = true;
    }
    return next;
  }

  /** Agent.#reportStaging: a pull still running says Staging. */
  async #reportStaging(m: Member, image: string): Promise<boolean> {
    if (!m.current) return true;
    const decision = this.#decide(m);
    const still = decision.action.type === "stage" && decision.action.image === image;
    if (!still || !decision.changed) return true;
    const before = m.current.status;
    if (!(await this.#write(m, decision.status))) return false;
    this.#logTransition(m, before, decision.status);
    return true;
  }

  async #run(
    m: Member,
    action: Exclude<Action, { type: "none" | "apply" | "rollback" | "readNode" }>,
  ) {
    switch (action.type) {
      case "maskAutoUpdates":
        m.masked = true;
        break;
      case "stage": {
        const pulled = await this.#o.pull(action.image);
        const pullMs = this.#o.pullMs ?? 2_000;
        await new Promise((r) => setTimeout(r, pullMs * (0.75 + Math.random() / 2)));
        const deployment = newDeployment({
          state: m.state,
          pullspec: action.image,
          image: pulled,
          checksum: await checksumFor(pulled.imageDigest),
          softRebootCapable: false,
          downloadOnly: true,
        });
        m.state = stage(m.state, deployment);
        break;
      }
      case "lockStaged":
        m.state = lockStaged(m.state).state;
        break;
      case "unqueueRollback": {
        const r = rollback(m.state);
        if (r.ok) m.state = r.state;
        break;
      }
    }
    delete m.failures[actionKey(action)];
  }

  /** Agent.#apply: the last-moment checks, Rebooting persisted, then the machine reboots. */
  async #apply(
    m: Member,
    action: Extract<Action, { type: "apply" | "rollback" }>,
  ): Promise<number | undefined> {
    const recheck = Date.now() + 30_000;
    let bn: BootcNode;
    try {
      bn = await this.#o.client.resource<BootcNode>(Resources.bootcNodes).get(m.name);
    } catch {
      return recheck;
    }
    this.#observe(bn, false);
    const node = await this.#readNode(m);
    const auth = rebootAuthorization(node, bn);
    const decision = this.#decide(m);
    const again = decision.action;
    if (
      again.type === action.type &&
      (again.image !== action.image || bn.spec.desiredImage !== action.image)
    ) {
      m.kicked = true;
      return undefined;
    }
    if (again.type !== action.type) {
      if (decision.changed && (decision.persistFirst || again.type === "none")) {
        const before = m.current?.status;
        if (await this.#write(m, decision.status)) this.#logTransition(m, before, decision.status);
      }
      if (again.type !== "none") m.kicked = true;
      return decision.retryAt?.getTime();
    }
    if (!auth.allowed) {
      this.#record(m, "Warning", "RebootRefused", `${auth.reason}: ${auth.message}`);
      return recheck;
    }
    if (decision.changed) {
      const before = m.current?.status;
      if (!(await this.#write(m, decision.status))) {
        m.kicked = true;
        return undefined;
      }
      this.#logTransition(m, before, decision.status);
    }
    const written = m.current;
    if (!written || !rebootAuthorization(node, written).allowed) {
      m.kicked = true;
      return undefined;
    }
    const soft = again.soft ? " (soft reboot when possible)" : "";
    if (again.type === "rollback") {
      this.#record(
        m,
        "Normal",
        "RollingBack",
        `Rolling back to ${again.image} (the rollback deployment) and rebooting${soft}: ` +
          auth.message,
      );
    } else {
      this.#record(
        m,
        "Normal",
        "Rebooting",
        `Applying ${again.image} and rebooting${soft}: ${auth.message}`,
      );
    }
    m.applyInFlight = true;
    m.down = true;
    this.#track(this.#machineReboot(m, again), "reboot");
    return undefined;
  }

  /** The harness's half of an apply: the verdict at invocation, then the reboot. */
  async #machineReboot(
    m: Member,
    action: Extract<Action, { type: "apply" | "rollback" }>,
  ): Promise<void> {
    const id = `${m.name}-${++m.invocations}`;
    const command = action.type === "rollback"
      ? ["rollback", "--apply"]
      : ["switch", "--from-downloaded", "--apply", action.image];
    const invokedAt = Date.now();
    let refusal: string | undefined;
    try {
      const client = this.#o.client;
      const [node, bootcNode, pods] = await Promise.all([
        client.resource<CoreNode>(Resources.nodes).get(m.name),
        client.resource<BootcNode>(Resources.bootcNodes).get(m.name),
        client.resource<IPod & KubeObject>(Resources.pods).list({
          fieldSelector: `spec.nodeName=${m.name}`,
        }),
      ]);
      const evictablePods = pods.items.filter((p) =>
        !p.metadata?.annotations?.["kubernetes.io/config.mirror"] &&
        !p.metadata?.ownerReferences?.some((o) => o.kind === "DaemonSet") &&
        p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed"
      ).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
      const tracker = this.#o.tracker;
      if (tracker) {
        const observation = {
          node: m.name,
          id,
          command,
          invokedAt,
          read: { node: node as INode, bootcNode },
          evictablePods,
        } as Parameters<InvariantTracker["observeApply"]>[0];
        const deadline = Date.now() + 60_000;
        while (!tracker.caughtUp(observation) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
        }
        const verdict = tracker.observeApply(observation);
        if (!verdict.allowed) {
          refusal = verdict.message;
          return;
        }
        tracker.observeReboot(m.name, { invocation: id, command });
        tracker.setMachineDown(m.name, true);
      }
      // The machine goes down: the daemon is gone with it.
      await this.#o.setNodeReady(m.name, false);
      this.harnessNodeWrites++;
      await new Promise((r) => setTimeout(r, this.#o.rebootMs ?? 2_000));
      let state = m.state;
      if (action.type === "rollback") {
        const r = rollback(state);
        if (r.ok) state = r.state;
      } else {
        const u = unlockStaged(state);
        if (u.ok) state = u.state;
      }
      m.state = reboot(state, { soft: false, newBootId: crypto.randomUUID() });
      await this.#o.setNodeReady(m.name, true);
      this.harnessNodeWrites++;
      tracker?.setMachineDown(m.name, false);
      this.reboots++;
    } catch (e) {
      if (!this.#abort.signal.aborted) this.#o.onError?.(m.name, e);
    } finally {
      if (refusal !== undefined) {
        // The harness refused the apply (a violation is recorded): it fails, nothing reboots.
        m.failures[actionKey(action)] = { message: refusal, attempts: 1, at: new Date() };
      } else {
        // A fresh daemon: nothing remembered but what the API holds.
        m.written = undefined;
        m.masked = false;
        m.failures = {};
        m.nodeRead = undefined;
      }
      m.applyInFlight = false;
      m.down = false;
      this.#kick(m);
    }
  }
}
