/**
 * A fleet of simulated bootc hosts, each a kwok Node plus a {@linkcode SimulatedHost}
 * and, while the Node carries `bootc.dev/managed`, the REAL daemon executable as a
 * child process (what the DaemonSet does in a cluster).
 *
 * The supervisor also plays the machine: when a host's bootc asked systemd for a
 * reboot, the "machine goes down" (daemon and bootc killed, Node NotReady), the
 * simulator reboots the deployments, and the machine comes back (Node Ready,
 * daemon restarted).
 *
 * It also judges every `bootc … --apply` at the moment it is invoked: hosts run
 * with the simulator's apply gate on, so an apply records its invocation and
 * waits; the supervisor notices it within 25 ms, reads the Node, the BootcNode
 * and the node's pods from the API (GET/LIST, not a cache), hands them to the
 * invariant tracker ({@linkcode InvariantTracker.observeApply}) and only then
 * releases the apply. The reboot it asks for therefore always comes after its
 * verdict, and the verdict is on the facts of the invocation, not on whatever
 * the controller changed by the time the machine goes down. See "Judging an
 * apply" in invariants.ts.
 *
 * Bad images (`tests/bootc_sim/bad_boot.ts`, the `dev.bootc.sim.bad-boot`
 * label) play out here as a machine would: after `unit-fails` the host is up
 * and Ready with a failed unit; after `never-ready` the daemon runs but the
 * Node stays NotReady until a good deployment boots; after `falls-back` the
 * host is back, Ready, on its previous deployment (event `fell-back`);
 * `reboot-loop:N` crashes before Ready N times (event `boot-crashed` for each:
 * the Node stays NotReady and no daemon runs while it loops), then falls back.
 * These boots are the machine's own, not daemon applies: the tracker is not
 * told of them as reboots (the planned reboot that led there was judged).
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import type { IPod } from "kubernetes-models/v1/Pod";
import {
  type BootcNode,
  type BootcNodePool,
  LABEL_MANAGED,
  LABEL_POOL,
} from "../../lib/api/mod.ts";
import { abortableSleep } from "../../lib/clock.ts";
import { isNotFound, Resources } from "../../lib/kube/mod.ts";
import type { ApplyRecord } from "../bootc_sim/apply_gate.ts";
import { type BootRecord, formatBadBoot } from "../bootc_sim/bad_boot.ts";
import { SimulatedHost } from "../bootc_sim/host.ts";
import type { ControlPlane } from "./control_plane.ts";
import { type ApplyVerdict, InvariantTracker } from "./invariants.ts";
import { type ManagedProcess, startProcess } from "./process.ts";

/** Options of {@linkcode Fleet}. */
export interface FleetOptions {
  controlPlane: ControlPlane;
  /** argv prefix that runs the daemon executable (from `ensureBuild()`). */
  daemonCommand: string[];
  /** Folder for daemon logs. */
  logDir: string;
  /** How long a (hard) reboot keeps the node down (default 300 ms). */
  rebootDelayMs?: number;
  /** Judges every apply at invocation and is told of every reboot. */
  tracker?: InvariantTracker;
  /** Kubeconfig the daemon of `node` runs with (default: the admin kubeconfig). */
  kubeconfigFor?: (node: string) => Promise<string>;
  /** Extra daemon flags. */
  daemonArgs?: string[];
  /** Called on supervisor events (for the demo's log). */
  onEvent?: (event: FleetEvent) => void;
}

/** Something the fleet supervisor did. */
export interface FleetEvent {
  type:
    | "daemon-started"
    | "daemon-stopped"
    | "apply-judged"
    | "reboot-started"
    | "reboot-finished"
    /** A boot of a `reboot-loop` image crashed before Ready; the machine reboots by itself. */
    | "boot-crashed"
    /** A bad image's boot failed and the host came back on its previous deployment. */
    | "fell-back"
    /** The machine is up (the daemon runs) but its kubelet does not become Ready. */
    | "boot-not-ready";
  node: string;
  soft?: boolean;
  /** For `apply-judged`: the verdict. */
  verdict?: ApplyVerdict;
  /** For `boot-crashed`: consecutive crashes of the image so far; for `fell-back`: in all. */
  crashes?: number;
  /** For the boot events: imageDigest of the deployment the machine tried to boot. */
  image?: string;
  /** For `fell-back`: imageDigest of the deployment that runs now. */
  booted?: string;
  /** For the boot events: the bad-boot mode of the image tried (`falls-back`, …). */
  badBoot?: string;
}

/** Options of {@linkcode Fleet.addNode}. */
export interface FleetNodeOptions {
  /** The image the host is booted into (pulled from the registry). */
  image: string;
  labels?: Record<string, string>;
  unschedulable?: boolean;
  architecture?: string;
  softRebootCapable?: boolean;
  bootcVersion?: string;
  /** Registries the host reaches over plain HTTP (default: the boot image's, on loopback). */
  insecureRegistries?: string[];
  /** Number of ordinary workload pods to place on the node (default 1). */
  pods?: number;
  /** Namespace of those pods (default "default"). */
  podNamespace?: string;
  /**
   * This host's bad-boot overrides: image digest or pullspec → a `dev.bootc.sim.bad-boot`
   * value; they win over the images' labels (see `SimulatedHost.setBadBoot`).
   */
  badBoot?: Record<string, string>;
}

/** One member of the fleet. */
export interface FleetNode {
  readonly name: string;
  readonly host: SimulatedHost;
  daemon?: ManagedProcess;
  /** True while the machine is down for a reboot. */
  rebooting: boolean;
  /** When false, the supervisor does not restart the daemon (fault scenarios). */
  daemonAllowed: boolean;
  /** While true, a rebooting machine stays down (NotReady, no daemon): it "never comes back". */
  holdDown: boolean;
  daemonStarts: number;
  /** Reboot cycles performed (a crash loop and its fall-back are part of one cycle). */
  reboots: number;
  /** Boots that crashed before Ready (`reboot-loop` images), in all. */
  bootLoops: number;
  /** Times the host fell back to its previous deployment by itself. */
  fallBacks: number;
  /**
   * Whether the machine's kubelet is Ready: false while it is down, crash-looping, or up on a
   * `never-ready` image (the Node is kept NotReady meanwhile).
   */
  kubeletReady: boolean;
  /** What the host's latest boot came to (its creation until it reboots). */
  lastBoot?: BootRecord;
}

/** The fleet supervisor; see the module doc. */
export class Fleet {
  readonly nodes = new Map<string, FleetNode>();
  #options: FleetOptions;
  #abort = new AbortController();
  #loop?: Promise<void>;
  #busy = new Set<Promise<unknown>>();
  #gateLoop?: Promise<void>;
  /** Invocation ids being judged or judged (so each is judged once). */
  #judging = new Set<string>();
  /** Set when a daemon should start without waiting for the next Node list (after a reboot). */
  #listNow = false;
  /** Reboots performed so far. */
  rebootCount = 0;
  /** Node writes the supervisor itself made (readiness flips), to tell them from the operator's. */
  nodeWrites = 0;
  /** Errors from the supervisor loop (reported by scenarios). */
  readonly errors: string[] = [];
  /**
   * Runs after an apply invocation is noticed and before its facts are read: lets a test
   * land a controller change exactly between a daemon's apply and the harness's read (the
   * race the judgement must survive). The apply stays held meanwhile.
   */
  beforeJudge?: (node: string, invocation: ApplyRecord) => Promise<void>;

  constructor(options: FleetOptions) {
    this.#options = options;
  }

  /** Creates the host and its kwok Node (Ready), with `pods` workload pods on it. */
  async addNode(name: string, options: FleetNodeOptions): Promise<FleetNode> {
    const cp = this.#options.controlPlane;
    const host = await SimulatedHost.create({
      image: options.image,
      architecture: options.architecture,
      softRebootCapable: options.softRebootCapable,
      bootcVersion: options.bootcVersion,
      insecureRegistries: options.insecureRegistries,
      applyGate: true,
      badBoot: options.badBoot,
    });
    const lastBoot = (await host.lastBoot()) ?? undefined;
    const kubeletReady = lastBoot?.ready ?? true;
    await cp.createNode(name, {
      labels: options.labels,
      unschedulable: options.unschedulable,
      ...(kubeletReady ? {} : { ready: false }),
    });
    if (options.unschedulable) this.#options.tracker?.markPreCordoned(name);
    const member: FleetNode = {
      name,
      host,
      rebooting: false,
      daemonAllowed: true,
      holdDown: false,
      daemonStarts: 0,
      reboots: 0,
      bootLoops: 0,
      fallBacks: 0,
      kubeletReady,
      lastBoot,
    };
    this.nodes.set(name, member);
    for (let i = 0; i < (options.pods ?? 1); i++) {
      await cp.createPod(options.podNamespace ?? "default", `app-${name}-${i}`, {
        nodeName: name,
        labels: { app: "demo", node: name },
        waitRunning: false,
      });
    }
    return member;
  }

  /** Stops the daemon, deletes the Node and destroys the host. */
  async removeNode(name: string): Promise<void> {
    const member = this.nodes.get(name);
    if (!member) return;
    member.daemonAllowed = false;
    await member.daemon?.stop({ graceMs: 2000 });
    this.nodes.delete(name);
    await this.#options.controlPlane.deleteNode(name);
    await member.host.destroy();
  }

  /** Starts supervising (DaemonSet emulation and reboots). */
  start(): void {
    this.#loop ??= this.#supervise();
    this.#gateLoop ??= this.#gate();
  }

  /** SIGKILLs a node's daemon; it is restarted by the supervisor unless `keepDown`. */
  async killDaemon(name: string, options: { keepDown?: boolean } = {}): Promise<void> {
    const member = this.#member(name);
    if (options.keepDown) member.daemonAllowed = false;
    await member.daemon?.stop({ graceMs: 0 });
    member.daemon = undefined;
  }

  /** Lets the supervisor run a node's daemon again. */
  allowDaemon(name: string): void {
    this.#member(name).daemonAllowed = true;
    this.#listNow = true;
  }

  /**
   * Reboots a machine that did not ask for it (power loss): whatever bootc would
   * do at boot happens (a locked staged deployment is discarded).
   */
  async unexpectedReboot(name: string): Promise<void> {
    await this.#rebootCycle(this.#member(name), { unexpected: true });
  }

  #member(name: string): FleetNode {
    const member = this.nodes.get(name);
    if (!member) throw new Error(`no fleet node ${name}`);
    return member;
  }

  async #supervise(): Promise<void> {
    const signal = this.#abort.signal;
    const nodes = this.#options.controlPlane.client.resource<INode>(Resources.nodes);
    // Reboot requests are local files, looked for often; the Node list that says which
    // daemons should run is an API request, made once a second (a DaemonSet is no quicker).
    let listedAt = 0;
    while (!signal.aborted) {
      try {
        if (this.#listNow || Date.now() - listedAt >= SUPERVISE_LIST_MS) {
          this.#listNow = false;
          listedAt = Date.now();
          await this.#startAndStopDaemons(await nodes.list({ signal }));
        }
        for (const member of this.nodes.values()) {
          if (member.rebooting || member.daemon?.running !== true) continue;
          if (await member.host.rebootRequested()) {
            this.#track(this.#rebootCycle(member, { unexpected: false }));
          }
        }
      } catch {
        // The API server may be restarting (a fault scenario): try again next round.
        if (signal.aborted) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  /** DaemonSet emulation: a daemon on every managed Node the fleet runs, none elsewhere. */
  async #startAndStopDaemons(list: { items: INode[] }): Promise<void> {
    const managed = new Set(
      list.items.filter((n) => n.metadata?.labels?.[LABEL_MANAGED] !== undefined)
        .map((n) => n.metadata!.name!),
    );
    for (const member of this.nodes.values()) {
      if (member.rebooting) continue;
      const running = member.daemon?.running === true;
      if (managed.has(member.name) && member.daemonAllowed && !running) {
        await this.#startDaemon(member);
      } else if (!managed.has(member.name) && running) {
        await member.daemon!.stop({ graceMs: 5000 });
        member.daemon = undefined;
        this.#options.onEvent?.({ type: "daemon-stopped", node: member.name });
      }
    }
  }

  #track(work: Promise<unknown>, what = "reboot"): void {
    const tracked = work.catch((error) => {
      if (this.#abort.signal.aborted) return;
      this.errors.push(`${what}: ${error instanceof Error ? error.message : error}`);
    }).finally(() => this.#busy.delete(tracked));
    this.#busy.add(tracked);
  }

  /** Finds new apply invocations (the simulator holds them until judged) and judges each once. */
  async #gate(): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      for (const member of [...this.nodes.values()]) {
        let pending: ApplyRecord[];
        try {
          pending = await member.host.pendingApplies();
        } catch {
          continue; // the host is being removed
        }
        for (const invocation of pending) {
          if (this.#judging.has(invocation.id)) continue;
          this.#judging.add(invocation.id);
          this.#track(this.#judge(member, invocation), "apply verdict");
        }
      }
      await abortableSleep(25, signal);
    }
  }

  /** Reads the facts of an apply invocation from the API, has them judged, releases the apply. */
  async #judge(member: FleetNode, invocation: ApplyRecord): Promise<void> {
    const signal = this.#abort.signal;
    const client = this.#options.controlPlane.client;
    await this.beforeJudge?.(member.name, invocation);
    const getOrNone = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await fn();
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    };
    const [node, bootcNode] = await retry(() =>
      Promise.all([
        getOrNone(() => client.resource<INode>(Resources.nodes).get(member.name)),
        getOrNone(() => client.resource<BootcNode>(Resources.bootcNodes).get(member.name)),
      ]), signal);
    const evictablePods = await retry(() => this.#evictablePods(member.name, bootcNode), signal);
    const tracker = this.#options.tracker;
    let verdict: ApplyVerdict = {
      allowed: true,
      reason: "Unchecked",
      message: "the fleet runs without an invariant tracker",
    };
    if (tracker) {
      const observation = {
        node: member.name,
        id: invocation.id,
        command: invocation.command,
        invokedAt: Date.parse(invocation.invokedAt),
        read: { node, bootcNode },
        evictablePods,
      };
      // Only when the read alone does not authorize it does the history matter: then let the
      // watch deliver every version up to the read first (it may lag on a loaded machine).
      if (!InvariantTracker.authorizedByRead(observation)) {
        const deadline = Date.now() + 60_000;
        while (!tracker.caughtUp(observation) && Date.now() < deadline && !signal.aborted) {
          await abortableSleep(50, signal);
        }
      }
      verdict = tracker.observeApply(observation);
    }
    try {
      await member.host.answerApply(invocation.id, verdict);
    } catch (error) {
      // A node removed meanwhile has no host left to answer (its apply died with it).
      if (this.nodes.get(member.name) === member) throw error;
      return;
    }
    this.#options.onEvent?.({ type: "apply-judged", node: member.name, verdict });
  }

  async #startDaemon(member: FleetNode): Promise<void> {
    const kubeconfig = await (this.#options.kubeconfigFor?.(member.name) ??
      this.#options.controlPlane.kubeconfigPath);
    const [command, ...prefix] = this.#options.daemonCommand;
    member.daemonStarts++;
    member.daemon = startProcess({
      name: `daemon-${member.name}`,
      command,
      args: [
        ...prefix,
        "run",
        "--kubeconfig",
        kubeconfig,
        "--node-name",
        member.name,
        "--host-root",
        member.host.root,
        "--host-exec-prefix",
        "",
        "--bootc-command",
        member.host.command().join(" "),
        "--systemctl-command",
        member.host.systemctlCommand().join(" "),
        "--bless-boot-command",
        member.host.blessBootCommand().join(" "),
        ...(this.#options.daemonArgs ?? []),
      ],
      logPath: `${this.#options.logDir}/daemon-${member.name}.log`,
    });
    this.#options.onEvent?.({ type: "daemon-started", node: member.name });
  }

  async #rebootCycle(member: FleetNode, options: { unexpected: boolean }): Promise<void> {
    if (member.rebooting) return;
    member.rebooting = true;
    const cp = this.#options.controlPlane;
    try {
      const request = await member.host.rebootRequest();
      const soft = request?.soft ?? false;
      const planned = !options.unexpected;
      if (planned) {
        // The apply that asked for this reboot was judged when it was invoked (see #judge).
        this.#options.tracker?.observeReboot(member.name, {
          invocation: request?.invocation,
          command: request?.command,
        });
        this.#options.tracker?.setMachineDown(member.name, true);
      }
      this.#options.onEvent?.({ type: "reboot-started", node: member.name, soft });
      // The machine goes down: the daemon and the bootc process waiting for systemd die.
      await member.daemon?.stop({ graceMs: 0 });
      member.daemon = undefined;
      await killHostProcesses(member.host.root);
      member.kubeletReady = false;
      await retry(() => cp.setNodeReady(member.name, false), this.#abort.signal);
      this.nodeWrites++;
      const downMs = this.#options.rebootDelayMs ?? 300;
      await new Promise((r) => setTimeout(r, soft ? 50 : downMs));
      let boot = await member.host.reboot(options.unexpected ? { soft: false } : {});
      // A reboot-loop image crashes before Ready and the machine reboots by itself, until its
      // boot counter runs out and the bootloader falls back (bad_boot.ts). The Node stays
      // NotReady and no daemon runs meanwhile; these are not applies, so not told as reboots.
      while (boot.outcome === "crashed" && !this.#abort.signal.aborted) {
        member.bootLoops++;
        member.lastBoot = boot;
        this.#options.onEvent?.({ ...bootEvent("boot-crashed", member.name, boot), soft: false });
        await killHostProcesses(member.host.root);
        await new Promise((r) => setTimeout(r, downMs));
        boot = await member.host.reboot({ soft: false });
      }
      member.lastBoot = boot;
      if (boot.outcome === "fell-back") {
        member.fallBacks++;
        this.#options.onEvent?.(bootEvent("fell-back", member.name, boot));
      }
      while (member.holdDown && !this.#abort.signal.aborted) {
        await new Promise((r) => setTimeout(r, 100));
      }
      if (boot.ready) {
        await retry(() => cp.setNodeReady(member.name, true), this.#abort.signal);
        this.nodeWrites++;
      } else {
        // Up (the supervisor starts the daemon) but the kubelet never gets Ready.
        this.#options.onEvent?.(bootEvent("boot-not-ready", member.name, boot));
      }
      member.kubeletReady = boot.ready;
      if (planned) this.#options.tracker?.setMachineDown(member.name, false);
      member.reboots++;
      this.rebootCount++;
      this.#options.onEvent?.({ type: "reboot-finished", node: member.name, soft: boot.soft });
    } finally {
      member.rebooting = false;
      this.#listNow = true; // its daemon starts again at once
    }
  }

  /**
   * Pods a drain must have evicted: not mirror, not DaemonSet-owned, not finished,
   * and not left alone by the pool's drain policy (`spec.rollout.drain.podSelector`,
   * read here from the pool the BootcNode names, judged by the harness's own matcher).
   */
  async #evictablePods(node: string, bootcNode: BootcNode | undefined): Promise<string[]> {
    const client = this.#options.controlPlane.client;
    const pods = await client.resource<IPod>(Resources.pods).list({
      fieldSelector: `spec.nodeName=${node}`,
    });
    const poolName = bootcNode?.metadata.labels?.[LABEL_POOL];
    const pool = poolName
      ? await client.resource<BootcNodePool>(Resources.bootcNodePools).get(poolName).catch(
        () => undefined,
      )
      : undefined;
    const keep = pool?.spec.rollout?.drain?.podSelector;
    return pods.items.filter((p) =>
      !(keep && selects(keep, p.metadata?.labels ?? {})) &&
      !p.metadata?.annotations?.["kubernetes.io/config.mirror"] &&
      !p.metadata?.ownerReferences?.some((o) => o.kind === "DaemonSet") &&
      p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed"
    ).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
  }

  /** Stops supervising, kills every daemon and destroys the hosts. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop?.catch(() => {});
    await this.#gateLoop?.catch(() => {});
    await Promise.allSettled([...this.#busy]);
    await Promise.allSettled(
      [...this.nodes.values()].map(async (m) => {
        await m.daemon?.stop({ graceMs: 2000 });
        await killHostProcesses(m.host.root);
        await m.host.destroy();
      }),
    );
  }
}

/** A FleetEvent about a boot of a (bad) image. */
function bootEvent(type: FleetEvent["type"], node: string, boot: BootRecord): FleetEvent {
  return {
    type,
    node,
    soft: boot.soft,
    crashes: boot.crashes,
    ...(boot.triedDigest ? { image: boot.triedDigest } : {}),
    ...(boot.bootedDigest ? { booted: boot.bootedDigest } : {}),
    ...(boot.badBoot ? { badBoot: formatBadBoot(boot.badBoot) } : {}),
  };
}

/** How often the supervisor lists Nodes to start and stop daemons. */
const SUPERVISE_LIST_MS = 1_000;

/**
 * Retries `fn` until it succeeds or the fleet stops: the API server may be restarting under a
 * fault scenario, and a kubelet (or a judgment the simulator's apply waits on) never gives up,
 * so giving up here would leave a machine half rebooted or an apply gated for good.
 */
async function retry<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (signal.aborted) throw error;
      await abortableSleep(250, signal);
    }
  }
}

/** SIGKILLs every process whose command line names the host's root (its bootc calls). */
export async function killHostProcesses(root: string): Promise<void> {
  const victims: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (cmdline.split("\0").includes(root)) victims.push(Number(entry.name));
    } catch {
      // The process exited meanwhile.
    }
  }
  for (const pid of victims) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  // Wait until they are gone so the simulator's lock is free.
  for (let i = 0; i < 50 && victims.some((pid) => exists(`/proc/${pid}`)); i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * True when a label selector selects `labels` (matchLabels and the four
 * operators), the harness's own reading, independent of the controller's.
 */
function selects(
  selector: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  },
  labels: Record<string, string>,
): boolean {
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return byLabels && (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    const has = Object.hasOwn(labels, key);
    if (operator === "In") return has && values.includes(labels[key]);
    if (operator === "NotIn") return !has || !values.includes(labels[key]);
    if (operator === "Exists") return has;
    return !has;
  });
}
