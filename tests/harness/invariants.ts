/**
 * The rollout invariant checker used by the end-to-end scenarios and the demo.
 *
 * {@linkcode InvariantTracker} is pure bookkeeping fed with every Node and
 * BootcNode event, and by the fleet supervisor with every `bootc … --apply` the
 * daemons invoke and every reboot it performs; it records a violation the moment
 * one happens, so a scenario fails on the first breach and not only on the end
 * state. {@linkcode watchInvariants} wires it to informers.
 *
 * The rules:
 * - **Budgets.** A node is *disrupted* while its Node carries any part of the
 *   operator's disruption record ({@linkcode isDisrupted}: slot, prior cordon,
 *   finished drain) or it is rebooting (its daemon reports Idle=False/Rebooting,
 *   or the fleet has its machine down for a reboot it asked for). It counts
 *   toward the pool named in its `bootc.dev/reboot-slot-pool` annotation, else
 *   its BootcNode's pool. Never more disrupted nodes per pool than its
 *   `maxUnavailable`.
 * - **Applies.** Every apply is judged with {@linkcode rebootAuthorization} (the
 *   rule the daemon itself uses) on the state at the moment it was invoked, and
 *   the node must have no pod a drain should have evicted (see "Judging an
 *   apply"). Every reboot the fleet performs for a node must come from an apply
 *   that was judged.
 * - **Prior cordon.** When the operator records `bootc.dev/was-cordoned` on a
 *   node whose previous state the tracker saw, the value must be that state.
 * - **End state** ({@linkcode InvariantTracker.checkFinal}): no Node carries any
 *   disruption annotation, no BootcNode still mirrors a prior cordon, no node is
 *   left cordoned unless the user had cordoned it, and those stay cordoned.
 *
 * ## Judging an apply
 *
 * The daemon re-checks authorization on authoritative reads right before it
 * invokes bootc; the controller may change the facts at any time after that
 * (a new target resets the node to Staged and withdraws its drain), and the
 * machine goes down later still. Judging at reboot time therefore blamed the
 * daemon for what the controller did afterwards. Instead:
 *
 * 1. the simulated bootc records each `--apply` invocation with the time its
 *    process was started, and (gate on) waits before doing anything until the
 *    harness has given its verdict (`tests/bootc_sim/apply_gate.ts`); the fleet
 *    polls for invocations every 25 ms, so the reboot can never come first;
 * 2. the fleet reads the Node and the BootcNode from the API right away (GET,
 *    not a cache) and calls {@linkcode InvariantTracker.observeApply}. If that
 *    state authorizes the reboot, the apply is fine;
 * 3. otherwise the facts may have changed between the daemon's check and the
 *    read. The tracker keeps every Node/BootcNode version it saw from the
 *    watch, ordered by resourceVersion (the etcd revision, so Node and
 *    BootcNode versions interleave in commit order; the fleet first waits until
 *    the watch has delivered the versions the GETs returned). The apply is fine
 *    when some joint state up to the read authorized it and was still current
 *    within `applyWindowMs` (default 15 s) before the invocation: the
 *    successor's arrival time bounds its commit time from above, so a state
 *    that ended before the window is never counted. The window covers the
 *    daemon's own latency between its check and spawning bootc on a loaded
 *    machine; an apply on facts that never authorized it, or that stopped
 *    authorizing it earlier than that, is a violation.
 *
 * The residual blind spot: an authorizing state that the watch coalesced away
 * (a re-list after an API server restart falling exactly between the daemon's
 * check and the read) cannot be seen; the read and the window make that a
 * coincidence of two races, never a matter of load.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import { Informer, type KubeClient, Resources } from "../../lib/kube/mod.ts";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodeForReboot,
  findCondition,
  IdleReason,
  isDisrupted,
  LABEL_POOL,
  NodeConditionType,
  type NodeForReboot,
  owningPool,
  rebootAuthorization,
} from "../../lib/api/mod.ts";

/** Per-pool limits the tracker enforces. */
export interface PoolLimit {
  /** Resolved number of reboot slots (the integer maxUnavailable). */
  maxUnavailable: number;
}

/** The annotations of the Node disruption record. */
const RECORD_ANNOTATIONS = [
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
] as const;

interface NodeView {
  /** Whether a Node event was seen (the previous state is known). */
  seenNode: boolean;
  unschedulable: boolean;
  /** The Node carries part of the disruption record. */
  recorded: boolean;
  wasCordoned?: string;
  /** Pool named by the slot-pool annotation. */
  slotPool?: string;
  /** Pool of the BootcNode (label, else owner). */
  bootcNodePool?: string;
  /** The daemon reports Idle=False/Rebooting. */
  daemonRebooting: boolean;
  /** The fleet has the machine down for a reboot it asked for. */
  machineDown: boolean;
}

/** One disruption interval of a node. */
export interface DisruptionInterval {
  node: string;
  pool?: string;
  start: number;
  end?: number;
}

/** One `bootc … --apply` as the fleet observed it at invocation (see the module doc). */
export interface ApplyObservation {
  /** The node whose daemon invoked it. */
  node: string;
  /** The simulator's invocation id. */
  id: string;
  /** bootc's arguments. */
  command: string[];
  /** When the bootc process was started (ms since the epoch). */
  invokedAt: number;
  /** The Node and BootcNode read from the API (GET) right after the invocation. */
  read: { node?: INode; bootcNode?: BootcNode };
  /** Pods still on the node that a drain must have evicted. */
  evictablePods: string[];
}

/** The tracker's verdict on an apply. */
export interface ApplyVerdict {
  allowed: boolean;
  /** A RebootAllowed reason, or `PodsLeft`. */
  reason: string;
  message: string;
}

/** A judged apply. */
export interface JudgedApply {
  node: string;
  id: string;
  command: string[];
  invokedAt: number;
  /** When it was judged (the tracker's clock): `judgedAt - invokedAt` is the gate's delay. */
  judgedAt: number;
  /** What authorized it: the read at invocation, the watch history, or nothing. */
  basis: "read" | "history" | "none" | "external";
  verdict: ApplyVerdict;
}

/** One version of a Node or BootcNode as the watch delivered it. */
interface HistoryEntry {
  /** resourceVersion as a number (etcd revision), when it is one. */
  rv?: bigint;
  /** When the tracker received it. */
  at: number;
  /** A Node version (null: deleted); absent for a BootcNode entry. */
  node?: NodeForReboot | null;
  /** A BootcNode version (null: deleted); absent for a Node entry. */
  bn?: BootcNodeForReboot | null;
}

interface JointState {
  node?: NodeForReboot | null;
  bn?: BootcNodeForReboot | null;
}

interface History {
  /** Folded older entries (their joint end state). */
  base: JointState;
  entries: HistoryEntry[];
  maxNodeRv?: bigint;
  maxBnRv?: bigint;
}

/** Entries kept per node before the oldest half is folded into the base state. */
const MAX_HISTORY = 400;

function parseRv(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
}

function maxRv(a: bigint | undefined, b: bigint | undefined): bigint | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a > b ? a : b;
}

/** What {@linkcode rebootAuthorization} reads of a Node, and nothing else. */
function nodeFacts(node: INode): NodeForReboot {
  const annotations: Record<string, string> = {};
  for (const key of RECORD_ANNOTATIONS) {
    const value = node.metadata?.annotations?.[key];
    if (value !== undefined) annotations[key] = value;
  }
  return { metadata: { annotations }, spec: { unschedulable: node.spec?.unschedulable === true } };
}

/** What {@linkcode rebootAuthorization} reads of a BootcNode, and nothing else. */
function bootcNodeFacts(bn: BootcNode): BootcNodeForReboot {
  return {
    metadata: {
      ownerReferences: (bn.metadata.ownerReferences ?? []).map((o) => ({
        kind: o.kind,
        controller: o.controller,
        name: o.name,
      })),
    },
    spec: { desiredImage: bn.spec.desiredImage, desiredImageState: bn.spec.desiredImageState },
  };
}

/** Pure invariant bookkeeping; see the module doc. */
export class InvariantTracker {
  readonly violations: string[] = [];
  readonly intervals: DisruptionInterval[] = [];
  readonly reboots: { node: string; at: number; invocation?: string }[] = [];
  /** Every apply judged so far. */
  readonly applies: JudgedApply[] = [];
  /** The most nodes of any one pool disrupted at once. */
  maxDisrupted = 0;
  #limits: Map<string, PoolLimit>;
  #preCordoned: Set<string>;
  #views = new Map<string, NodeView>();
  #open = new Map<string, DisruptionInterval>();
  #history = new Map<string, History>();
  #judged = new Set<string>();
  /** Nodes whose next apply is an external orchestrator's (see {@linkcode expectExternalApply}). */
  #external = new Map<string, string>();
  #now: () => number;
  #applyWindowMs: number;

  /**
   * @param options.limits maxUnavailable per pool name
   * @param options.preCordoned nodes the user had cordoned before the rollout
   * @param options.applyWindowMs how long before an apply's invocation an authorizing
   *   state may have ended (the daemon's check-to-spawn latency; default 15 s)
   */
  constructor(options: {
    limits: Record<string, PoolLimit>;
    preCordoned?: Iterable<string>;
    now?: () => number;
    applyWindowMs?: number;
  }) {
    this.#limits = new Map(Object.entries(options.limits));
    this.#preCordoned = new Set(options.preCordoned ?? []);
    this.#now = options.now ?? Date.now;
    this.#applyWindowMs = options.applyWindowMs ?? 15_000;
  }

  /** Records that the user cordoned `node` before the rollout. */
  markPreCordoned(node: string): void {
    this.#preCordoned.add(node);
  }

  /**
   * The next apply invoked on `node` is an external orchestrator's (a test playing
   * one, `rollout.strategy: External`): it cordoned and drained the node itself, so
   * the operator's slot and drain record do not apply. That one apply is allowed
   * with reason `ExternalOrchestrator` (the pods rule still holds); any other apply
   * on the node is judged as usual, so a daemon that applies on its own is caught.
   */
  expectExternalApply(node: string, who = "the external orchestrator"): void {
    this.#external.set(node, who);
  }

  /** Changes the limit of a pool (for scenarios that edit maxUnavailable). */
  setLimit(pool: string, limit: PoolLimit): void {
    this.#limits.set(pool, limit);
  }

  #view(name: string): NodeView {
    let v = this.#views.get(name);
    if (!v) {
      v = {
        seenNode: false,
        unschedulable: false,
        recorded: false,
        daemonRebooting: false,
        machineDown: false,
      };
      this.#views.set(name, v);
    }
    return v;
  }

  #remember(name: string, entry: Omit<HistoryEntry, "at">): void {
    let h = this.#history.get(name);
    if (!h) {
      h = { base: {}, entries: [] };
      this.#history.set(name, h);
    }
    const e: HistoryEntry = { ...entry, at: this.#now() };
    if (e.rv !== undefined) {
      if ("node" in e) h.maxNodeRv = maxRv(h.maxNodeRv, e.rv);
      else h.maxBnRv = maxRv(h.maxBnRv, e.rv);
    }
    // Keep entries in resourceVersion (commit) order; the two watches may deliver out of it.
    let i = h.entries.length;
    while (
      e.rv !== undefined && i > 0 && h.entries[i - 1].rv !== undefined &&
      h.entries[i - 1].rv! > e.rv
    ) i--;
    h.entries.splice(i, 0, e);
    if (h.entries.length > MAX_HISTORY) {
      for (const old of h.entries.splice(0, MAX_HISTORY / 2)) applyEntry(h.base, old);
    }
  }

  /** Feeds a Node add/update. */
  observeNode(node: INode): void {
    const name = node.metadata?.name;
    if (!name) return;
    const v = this.#view(name);
    const annotations = node.metadata?.annotations ?? {};
    const unschedulable = node.spec?.unschedulable === true;
    const wasCordoned = annotations[ANNOTATION_WAS_CORDONED];
    if (v.seenNode && v.wasCordoned === undefined && wasCordoned !== undefined) {
      // The operator records the prior cordon state in the write that cordons: it must be
      // the state the node had just before. (A node cordoned by us whose record was lost and
      // is being restored from the BootcNode's mirror is not judged here: we cannot tell.)
      if (!v.unschedulable && wasCordoned !== "false") {
        this.violations.push(
          `${name}: ${ANNOTATION_WAS_CORDONED}=${wasCordoned} recorded on a node that was schedulable`,
        );
      } else if (v.unschedulable && this.#preCordoned.has(name) && wasCordoned !== "true") {
        this.violations.push(
          `${name}: ${ANNOTATION_WAS_CORDONED}=${wasCordoned} recorded on a node the user had cordoned`,
        );
      }
    }
    v.seenNode = true;
    v.unschedulable = unschedulable;
    v.wasCordoned = wasCordoned;
    v.recorded = isDisrupted(node);
    v.slotPool = annotations[ANNOTATION_SLOT_POOL];
    this.#remember(name, { rv: parseRv(node.metadata?.resourceVersion), node: nodeFacts(node) });
    this.#evaluate(name);
  }

  /** Feeds a Node deletion (the last object, or just its name). */
  deleteNode(node: INode | string): void {
    const name = typeof node === "string" ? node : node.metadata?.name ?? "";
    if (!name) return;
    const v = this.#view(name);
    v.seenNode = false;
    v.unschedulable = false;
    v.recorded = false;
    v.wasCordoned = undefined;
    v.slotPool = undefined;
    // A deletion carries the last version's resourceVersion, not its own: kept in arrival order.
    this.#remember(name, { node: null });
    this.#evaluate(name);
  }

  /** Feeds a BootcNode add/update. */
  observeBootcNode(bn: BootcNode): void {
    const name = bn.metadata.name;
    if (!name) return;
    const v = this.#view(name);
    v.bootcNodePool = bn.metadata.labels?.[LABEL_POOL] ?? owningPool(bn) ?? v.bootcNodePool;
    const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
    v.daemonRebooting = idle?.status === "False" && idle.reason === IdleReason.Rebooting;
    this.#remember(name, { rv: parseRv(bn.metadata.resourceVersion), bn: bootcNodeFacts(bn) });
    this.#evaluate(name);
  }

  /** Feeds a BootcNode deletion (the last object, or just its name). */
  deleteBootcNode(bn: BootcNode | string): void {
    const name = typeof bn === "string" ? bn : bn.metadata.name ?? "";
    if (!name) return;
    this.#view(name).daemonRebooting = false;
    this.#remember(name, { bn: null });
    this.#evaluate(name);
  }

  /** The fleet took a machine down for a reboot it asked for (true), or brought it back. */
  setMachineDown(node: string, down: boolean): void {
    this.#view(node).machineDown = down;
    this.#evaluate(node);
  }

  /**
   * True once the watch has delivered the versions of the Node and the BootcNode in
   * `read` (or newer), so the history holds every version up to the read.
   */
  caughtUp(observation: Pick<ApplyObservation, "node" | "read">): boolean {
    const h = this.#history.get(observation.node);
    const nodeRv = parseRv(observation.read.node?.metadata?.resourceVersion);
    const bnRv = parseRv(observation.read.bootcNode?.metadata.resourceVersion);
    const seen = (have: bigint | undefined, want: bigint | undefined) =>
      want === undefined || (have !== undefined && have >= want);
    return seen(h?.maxNodeRv, nodeRv) && seen(h?.maxBnRv, bnRv);
  }

  /** Whether the state `read` at invocation authorizes the reboot by itself. */
  static authorizedByRead(observation: Pick<ApplyObservation, "read">): boolean {
    return authorizationOf(observation.read).allowed;
  }

  /**
   * Judges one apply (see "Judging an apply" in the module doc); records a violation
   * when it was not authorized or pods a drain must evict were still on the node.
   */
  observeApply(observation: ApplyObservation): ApplyVerdict {
    const { node, command } = observation;
    const atRead = authorizationOf(observation.read);
    let verdict: ApplyVerdict;
    let basis: JudgedApply["basis"] = "read";
    const external = this.#external.get(node);
    if (external !== undefined) {
      this.#external.delete(node);
      basis = "external";
      verdict = {
        allowed: true,
        reason: "ExternalOrchestrator",
        message: `invoked by ${external}, which cordoned and drained the node itself`,
      };
    } else if (atRead.allowed) {
      verdict = { allowed: true, reason: atRead.reason, message: atRead.message };
    } else {
      const earlier = this.#authorizedBefore(observation);
      basis = earlier ? "history" : "none";
      verdict = earlier
        ? {
          allowed: true,
          reason: earlier.reason,
          message: `authorized just before the invocation (${earlier.message}); ` +
            `changed by the time it was read: ${atRead.message}`,
        }
        : { allowed: false, reason: atRead.reason, message: atRead.message };
    }
    const what = `bootc ${command.join(" ")}`;
    if (!verdict.allowed) {
      this.violations.push(
        `${node} invoked ${what} without authorization (${verdict.reason}: ${verdict.message})`,
      );
    }
    if (observation.evictablePods.length > 0) {
      this.violations.push(
        `${node} invoked ${what} with pods still on it: ${observation.evictablePods.join(", ")}`,
      );
      if (verdict.allowed) {
        verdict = {
          allowed: false,
          reason: "PodsLeft",
          message: `pods still on the node: ${observation.evictablePods.join(", ")}`,
        };
      }
    }
    this.#judged.add(observation.id);
    this.applies.push({
      node,
      id: observation.id,
      command: [...command],
      invokedAt: observation.invokedAt,
      judgedAt: this.#now(),
      basis,
      verdict,
    });
    return verdict;
  }

  /** An authorizing joint state still current within the window before the invocation. */
  #authorizedBefore(observation: ApplyObservation): ApplyVerdict | undefined {
    const h = this.#history.get(observation.node);
    if (!h) return undefined;
    const windowStart = observation.invokedAt - this.#applyWindowMs;
    const upper = maxRv(
      parseRv(observation.read.node?.metadata?.resourceVersion),
      parseRv(observation.read.bootcNode?.metadata.resourceVersion),
    );
    const state: JointState = { ...h.base };
    for (let k = -1; k < h.entries.length; k++) {
      if (k >= 0) {
        const e = h.entries[k];
        // Versions after the read are after the invocation: not evidence for it.
        if (upper !== undefined && e.rv !== undefined && e.rv > upper) break;
        applyEntry(state, e);
      }
      const next = h.entries[k + 1];
      // Its successor arrived before the window: this state ended before it, too.
      if (next && next.at < windowStart) continue;
      if (!state.node || !state.bn) continue;
      const a = rebootAuthorization(state.node, state.bn);
      if (a.allowed) {
        const rv = k >= 0 ? h.entries[k].rv : undefined;
        return {
          allowed: true,
          reason: a.reason,
          message: rv === undefined ? a.message : `${a.message}, at resourceVersion ${rv}`,
        };
      }
    }
    return undefined;
  }

  /**
   * Records that the fleet is about to reboot `node` for the reboot request of
   * apply invocation `invocation`, which must have been judged.
   */
  observeReboot(node: string, options: { invocation?: string | null; command?: string[] }): void {
    this.reboots.push({ node, at: this.#now(), invocation: options.invocation ?? undefined });
    if (!options.invocation || !this.#judged.has(options.invocation)) {
      this.violations.push(
        `${node} rebooted for ${
          options.command?.join(" ") ?? "a reboot request"
        } whose apply was never judged (invocation ${options.invocation ?? "unknown"})`,
      );
    }
  }

  #poolOf(v: NodeView): string | undefined {
    return v.slotPool ?? v.bootcNodePool;
  }

  #disrupted(v: NodeView): boolean {
    return v.recorded || v.daemonRebooting || v.machineDown;
  }

  #evaluate(name: string): void {
    const v = this.#view(name);
    const now = this.#now();
    const disrupted = this.#disrupted(v);
    const open = this.#open.get(name);
    if (disrupted && !open) {
      const interval = { node: name, pool: this.#poolOf(v), start: now };
      this.#open.set(name, interval);
      this.intervals.push(interval);
    } else if (!disrupted && open) {
      open.end = now;
      this.#open.delete(name);
    } else if (open && !open.pool) {
      open.pool = this.#poolOf(v);
    }
    const perPool = new Map<string, string[]>();
    for (const [n, view] of this.#views) {
      const pool = this.#poolOf(view);
      if (!this.#disrupted(view) || !pool) continue;
      perPool.set(pool, [...perPool.get(pool) ?? [], n]);
    }
    for (const [pool, who] of perPool) {
      this.maxDisrupted = Math.max(this.maxDisrupted, who.length);
      const limit = this.#limits.get(pool);
      if (limit && who.length > limit.maxUnavailable) {
        this.violations.push(
          `pool ${pool}: ${who.length} nodes disrupted at once (${who.join(", ")}), ` +
            `maxUnavailable is ${limit.maxUnavailable}`,
        );
      }
    }
  }

  /**
   * End-state checks: no disruption record left on a Node, no prior cordon still
   * mirrored on a BootcNode, no node of ours left cordoned, prior cordons kept.
   * `nodes` and `bootcNodes` are the final objects; returns the violations found now.
   */
  checkFinal(nodes: INode[], bootcNodes: BootcNode[]): string[] {
    const problems: string[] = [];
    for (const node of nodes) {
      const name = node.metadata?.name ?? "";
      const unschedulable = node.spec?.unschedulable === true;
      if (this.#preCordoned.has(name) && !unschedulable) {
        problems.push(`${name} was cordoned before the rollout but is schedulable now`);
      }
      if (!this.#preCordoned.has(name) && unschedulable) {
        problems.push(`${name} is left cordoned`);
      }
      const left = RECORD_ANNOTATIONS.filter((k) => node.metadata?.annotations?.[k] !== undefined);
      if (left.length > 0) {
        problems.push(`${name} still carries the disruption record (${left.join(", ")})`);
      }
    }
    for (const bn of bootcNodes) {
      const mirror = bn.metadata.annotations?.[ANNOTATION_WAS_CORDONED];
      if (mirror !== undefined) {
        problems.push(
          `${bn.metadata.name}: the BootcNode still mirrors a prior cordon state ` +
            `(${ANNOTATION_WAS_CORDONED}=${mirror})`,
        );
      }
    }
    return problems;
  }

  /**
   * Delays between a slot being freed (a disruption interval ending) and the next
   * node of the same pool being disrupted, in milliseconds.
   */
  handoffDelays(): number[] {
    const delays: number[] = [];
    const sorted = [...this.intervals].sort((a, b) => a.start - b.start);
    for (const interval of sorted) {
      if (interval.end === undefined) continue;
      const next = sorted.find((o) =>
        o.pool === interval.pool && o.node !== interval.node && o.start >= interval.end!
      );
      if (next) delays.push(next.start - interval.end);
    }
    return delays;
  }
}

function applyEntry(state: JointState, e: HistoryEntry): void {
  if ("node" in e) state.node = e.node;
  else state.bn = e.bn;
}

function authorizationOf(read: ApplyObservation["read"]) {
  return rebootAuthorization(
    read.node ? nodeFacts(read.node) : undefined,
    read.bootcNode ? bootcNodeFacts(read.bootcNode) : {},
  );
}

/** A running invariant watch; `stop()` ends it. */
export interface InvariantWatch {
  /** Resolves once both informers have listed. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

/** Feeds every Node and BootcNode event to `tracker` until stopped. */
export function watchInvariants(client: KubeClient, tracker: InvariantTracker): InvariantWatch {
  const ac = new AbortController();
  // Reconnect faster than the operator does after an API server restart, so the
  // tracker's view does not lag behind what the controller and daemons act on.
  const backoff = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.2 };
  const nodes = new Informer<INode>({ resource: client.resource<INode>(Resources.nodes), backoff });
  nodes.onAdd((n) => tracker.observeNode(n));
  nodes.onUpdate((_, n) => tracker.observeNode(n));
  nodes.onDelete((n) => tracker.deleteNode(n));
  const bootcNodes = new Informer<BootcNode>({
    resource: client.resource<BootcNode>(Resources.bootcNodes),
    backoff,
  });
  bootcNodes.onAdd((bn) => tracker.observeBootcNode(bn));
  bootcNodes.onUpdate((_, bn) => tracker.observeBootcNode(bn));
  bootcNodes.onDelete((bn) => tracker.deleteBootcNode(bn));
  const running = Promise.all([nodes.start(ac.signal), bootcNodes.start(ac.signal)]);
  return {
    synced: Promise.all([nodes.waitForSync(ac.signal), bootcNodes.waitForSync(ac.signal)])
      .then(() => {}),
    async stop() {
      ac.abort();
      await running;
    },
  };
}
