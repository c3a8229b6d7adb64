/**
 * A fleet of simulated bootc hosts, each a kwok Node plus a {@linkcode SimulatedHost}
 * and, while the Node carries `bootc.dev/managed`, the REAL daemon executable as a
 * child process (what the DaemonSet does in a cluster).
 *
 * The supervisor also plays the machine: when a host's bootc asked systemd for a
 * reboot, the "machine goes down" (daemon and bootc killed, Node NotReady), the
 * simulator reboots the deployments, and the machine comes back (Node Ready,
 * daemon restarted). Every reboot is reported to the invariant tracker together
 * with the pods still on the node, so "no reboot without a finished drain" is
 * checked at the moment it matters.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import type { IPod } from "kubernetes-models/v1/Pod";
import { type BootcNode, LABEL_MANAGED } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { SimulatedHost } from "../bootc_sim/host.ts";
import type { ControlPlane } from "./control_plane.ts";
import type { InvariantTracker } from "./invariants.ts";
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
  /** Receives every reboot with the pods left on the node. */
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
  type: "daemon-started" | "daemon-stopped" | "reboot-started" | "reboot-finished";
  node: string;
  soft?: boolean;
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
  reboots: number;
}

/** The fleet supervisor; see the module doc. */
export class Fleet {
  readonly nodes = new Map<string, FleetNode>();
  #options: FleetOptions;
  #abort = new AbortController();
  #loop?: Promise<void>;
  #busy = new Set<Promise<unknown>>();
  /** Reboots performed so far. */
  rebootCount = 0;
  /** Node writes the supervisor itself made (readiness flips), to tell them from the operator's. */
  nodeWrites = 0;
  /** Errors from the supervisor loop (reported by scenarios). */
  readonly errors: string[] = [];

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
    });
    await cp.createNode(name, {
      labels: options.labels,
      unschedulable: options.unschedulable,
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
    while (!signal.aborted) {
      try {
        const list = await nodes.list({ signal });
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
          if (running && await member.host.rebootRequested()) {
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

  #track(work: Promise<unknown>): void {
    const tracked = work.catch((error) => {
      this.errors.push(`reboot: ${error instanceof Error ? error.message : error}`);
    }).finally(() => this.#busy.delete(tracked));
    this.#busy.add(tracked);
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
      if (!options.unexpected) {
        const pods = await retry(() => this.#evictablePods(member.name));
        const current = await retry(() =>
          cp.client.resource<BootcNode>(Resources.bootcNodes).get(member.name)
        );
        this.#options.tracker?.observeReboot(member.name, pods, current);
      }
      this.#options.onEvent?.({ type: "reboot-started", node: member.name, soft });
      // The machine goes down: the daemon and the bootc process waiting for systemd die.
      await member.daemon?.stop({ graceMs: 0 });
      member.daemon = undefined;
      await killHostProcesses(member.host.root);
      await retry(() => cp.setNodeReady(member.name, false));
      this.nodeWrites++;
      await new Promise((r) => setTimeout(r, soft ? 50 : this.#options.rebootDelayMs ?? 300));
      await member.host.reboot(options.unexpected ? { soft: false } : {});
      while (member.holdDown && !this.#abort.signal.aborted) {
        await new Promise((r) => setTimeout(r, 100));
      }
      await retry(() => cp.setNodeReady(member.name, true));
      this.nodeWrites++;
      member.reboots++;
      this.rebootCount++;
      this.#options.onEvent?.({ type: "reboot-finished", node: member.name, soft });
    } finally {
      member.rebooting = false;
    }
  }

  /** Pods a drain must have evicted: not mirror, not DaemonSet-owned, not finished. */
  async #evictablePods(node: string): Promise<string[]> {
    const pods = await this.#options.controlPlane.client.resource<IPod>(Resources.pods).list({
      fieldSelector: `spec.nodeName=${node}`,
    });
    return pods.items.filter((p) =>
      !p.metadata?.annotations?.["kubernetes.io/config.mirror"] &&
      !p.metadata?.ownerReferences?.some((o) => o.kind === "DaemonSet") &&
      p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed"
    ).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
  }

  /** Stops supervising, kills every daemon and destroys the hosts. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop?.catch(() => {});
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

/** Retries `fn` for up to a minute: the API server may be restarting under a fault scenario. */
async function retry<T>(fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 250));
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
