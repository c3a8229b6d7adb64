/**
 * The one interface every rollout policy implements. A gate is a small pure
 * function: given the pool, the nodes that could take a reboot slot now (in the
 * order they would get one), a read-only view of the cluster and the clock, it
 * says which of them may proceed and, when it holds any back, why and until
 * when. The planner composes gates in one place ({@linkcode composeGates}):
 * each gate sees only what the gates before it admitted, so the most
 * restrictive wins, and every grant is a subset of what every gate admitted.
 *
 * Gates must be monotone: any subset of what a gate admits is also admissible
 * (true of count limits, per-domain limits and time windows alike), so a later
 * step that skips an admitted node (a PodDisruptionBudget) never breaks a gate.
 *
 * @module
 */
import type { LabelSelector } from "../model/selector.ts";
import type { ApprovalStatus, BootcNodePool } from "../../lib/api/mod.ts";
import type { QueryVerdict } from "../model/health.ts";
import type { ObjectVerdict } from "../model/object_check.ts";
import type { NodeSummary } from "../model/types.ts";

/** A node that could take a reboot slot now. */
export interface Candidate {
  name: string;
  labels: Record<string, string>;
  /** Since when it has been staged and waiting for a slot, when known (fairness). */
  waitingSince?: Date;
  /** Bound for an image other than the pool's target: it is being rolled back. */
  rollback?: boolean;
}

/** Another pool, as gates see it. */
export interface PoolView {
  name: string;
  pool: BootcNodePool;
  /** Its member node names, when known (from BootcNode ownership). */
  members: readonly string[];
}

/** What gates may read of the cluster. */
export interface ClusterView {
  /** Every pool, this one included. */
  pools: readonly PoolView[];
  /** Every Node, by name (annotations carry the operator's disruption record). */
  nodes: ReadonlyMap<string, NodeSummary>;
  /**
   * Every BootcDisruptionBudget (cluster-scoped). Absent means none, so the
   * planner must fill it whenever the cluster has any (see `cluster_budget.ts`).
   */
  budgets?: readonly ClusterBudget[];
  /**
   * Nodes of every pool that wait for a reboot slot and could take one, oldest
   * first (`waitingCandidates()` in `cluster_budget.ts` computes it): pools
   * sharing a cluster budget take turns by waiting time. Absent means none known.
   */
  waiting?: readonly WaitingNode[];
  /**
   * Nodes disrupted by their BootcNode's account whose Node carries no disruption record
   * (`unrecordedDisruptions` in `controller/planner/leaving.ts`): the Node object deleted
   * while they reboot, or back without its record, or the record removed. Absent means none.
   */
  unrecorded?: readonly UnrecordedDisruption[];
  /**
   * Slot writes of this controller the view does not show yet (grants under way or
   * landed, releases landed): counted as written, so a plan and the check at each grant's
   * write (`grantRefusal`) agree. Absent means none.
   */
  unseen?: UnseenSlotWrites;
}

/** Slot writes the cluster view may not show yet (`ClusterView.unseen`). */
export interface UnseenSlotWrites {
  /** Nodes granted a slot (or whose grant is under way): disrupted, whatever the view says. */
  granted: ReadonlySet<string>;
  /** Nodes whose slot was released: no longer disrupted, whatever the view says. */
  released: ReadonlySet<string>;
}

/**
 * A node disrupted with no record on its Node to count it by. With its Node, its labels
 * say which budgets select it; without, only its pool's selector says which cannot.
 */
export interface UnrecordedDisruption {
  node: string;
  /** The Node's labels, when the Node exists. */
  labels?: Record<string, string>;
  /** The owning pool's node selector, when the Node is gone (absent: the pool is unknown). */
  poolSelector?: LabelSelector;
  /**
   * When it stops counting by itself (a Rebooting hold's reboot timeout), when nothing its
   * pool writes marks that moment (no pool, or only the daemon's Rebooting holds it).
   */
  until?: Date;
}

/** The spec of a cluster-scoped BootcDisruptionBudget (node.bootc.dev/v1alpha1). */
export interface ClusterBudgetSpec {
  /** Which nodes (of any pool, or none) it covers; empty or absent selects every node. */
  nodeSelector?: LabelSelector;
  /** Selected nodes that may be disrupted at once: an integer, or a percentage of the selected nodes. */
  maxUnavailable: number | string;
  /** A node label whose values are topology domains (e.g. `topology.kubernetes.io/zone`). */
  topologyKey?: string;
  /** With `topologyKey`: at most this many selected nodes disrupted per domain. */
  maxUnavailablePerDomain?: number;
  /** With `topologyKey`: at most this many domains with any selected node disrupted. */
  maxDomainsUnavailable?: number;
}

/** A BootcDisruptionBudget as gates see it. */
export interface ClusterBudget {
  name: string;
  spec: ClusterBudgetSpec;
}

/** A node of some pool that waits for a reboot slot (fairness between pools). */
export interface WaitingNode {
  pool: string;
  node: string;
  /** Since when it waits (the same clock as {@linkcode Candidate.waitingSince}). */
  since: Date;
  labels: Record<string, string>;
}

/** Input of a gate. */
export interface GateInput {
  pool: BootcNodePool;
  /** Candidates still in the running, in grant order. */
  candidates: readonly Candidate[];
  /** This pool's members that are disrupted now (they hold slots). */
  disrupted: readonly string[];
  /**
   * This pool's members the plan releases: no longer in `disrupted` (their slots go on
   * once the releases succeed), still on their Nodes for the cluster budgets till then.
   */
  released?: readonly string[];
  /** Number of members of the pool. */
  memberCount: number;
  /** Members running the target and no longer disrupted (the canary counts them). */
  updated?: number;
  /** The pool's canary phase for the current target, when it has a canary. */
  canary?: CanaryPhase;
  /**
   * The approval gate's facts (`spec.rollout.approval`): the current revision and
   * its recorded verdicts; absent while no revision is known (the gate then holds).
   */
  approval?: ApprovalView;
  /**
   * The latest answer to the pool's alert query (`spec.rollout.preconditions.alerts`,
   * `alerts.ts`); absent while none came yet.
   */
  alerts?: QueryVerdict;
  /**
   * The latest verdict of each `spec.rollout.preconditions.objects` check, index by index
   * (`objects.ts`); undefined where none came yet.
   */
  objects?: readonly (ObjectVerdict | undefined)[];
  cluster: ClusterView;
  now: Date;
}

/** A pool's canary for its current target (`status.canary`). */
export interface CanaryPhase {
  phase: "Updating" | "Soaking" | "Passed" | "Failed";
  /** Size of the canary batch. */
  nodes: number;
  /** RFC 3339 end of the soak. */
  soakUntil?: string;
}

/** What the approval gate decides on (`approval.ts`; the planner computes it). */
export interface ApprovalView {
  /** The current rollout revision. */
  revision: number;
  /** The pool's new `status.approval` (the decided verdicts, for `revision`). */
  record: ApprovalStatus;
  /** The pool's automatic rollback target: no approval needed. */
  rollback?: boolean;
  /** The webhook's pending asks: what their last attempt said, by node ("" for the pool). */
  pending?: ReadonlyMap<string, string>;
}

/** Why a gate holds candidates back. */
export interface GateWait {
  /** A condition reason such as `OutsideMaintenanceWindow` or `BudgetExhausted`. */
  reason: string;
  /** For people: what blocks and until when, in the pool's time zone where it has one. */
  message: string;
  /** When the gate may open (a reconcile is scheduled then). */
  until?: Date;
  /**
   * True when the wait is the normal pace of a rollout (slots busy with nodes in
   * flight) rather than a block; such waits do not headline the pool's status.
   */
  routine?: boolean;
}

/** A gate's answer. */
export interface GateDecision {
  /** The candidates that may proceed (a subset of the input, same order). */
  admit: readonly Candidate[];
  /** Set when any candidate was held back (or when nothing may start now). */
  wait?: GateWait;
}

/** A condition reason a gate may report (the `reason` of its {@linkcode GateWait}). */
export interface GateReason {
  /** E.g. `OutsideMaintenanceWindow`; the pool's UpToDate reason when it headlines. */
  reason: string;
  /**
   * True when a pool whose UpToDate condition carries this reason can take no
   * reboot slot whatever the cluster budgets say (paused, outside a window):
   * its staged nodes then do not compete for cluster budgets, so they hold no
   * other pool back (fairness, `waiting.ts`). False when the pool still hands
   * out slots under it (a canary's rollbacks, the cluster budget itself).
   */
  blocksPool: boolean;
}

/** What a gate's spec check reads. */
export interface SpecCheckInput {
  pool: BootcNodePool;
  /** Every pool, this one included (checks across pools, such as ordering cycles). */
  pools: readonly BootcNodePool[];
}

/**
 * A rollout policy. Everything the rest of the controller needs to know about
 * one is here, so adding a policy is its gate file, its line in `GATES`
 * (`registry.ts`) and its schema field: the spec check (`validate.ts`) and the
 * fairness between pools (`waiting.ts`) derive from these members.
 */
export interface Gate {
  /** Short name, for logs and tests. */
  readonly name: string;
  /** Every reason {@linkcode Gate.decide} may put in a wait. */
  readonly reasons: readonly GateReason[];
  /**
   * What is wrong with the spec fields this gate reads, each message naming its
   * field (`spec.maintenance.windows[1].schedule: …`); [] when nothing is. The
   * pool's InvalidSpec condition lists them and the pool gets no slot; `decide`
   * still fails closed on a spec it cannot read. Absent: nothing to check.
   */
  validate?(input: SpecCheckInput): string[];
  decide(input: GateInput): GateDecision;
}

/** The outcome of {@linkcode composeGates}. */
export interface Composition {
  admit: readonly Candidate[];
  /** Every wait, in gate order (the first is the headline). */
  waits: GateWait[];
  /**
   * Each candidate held back, by name: the reason of the gate that dropped it
   * (the first to), e.g. `BudgetExhausted` (the pool's slot queue publishes it).
   */
  heldBy: ReadonlyMap<string, string>;
}

/** Runs `gates` in order, each on what the previous admitted. */
export function composeGates(gates: readonly Gate[], input: GateInput): Composition {
  let candidates = input.candidates;
  const waits: GateWait[] = [];
  const heldBy = new Map<string, string>();
  for (const gate of gates) {
    const d = gate.decide({ ...input, candidates });
    const allowed = new Set(d.admit.map((c) => c.name));
    for (const c of candidates) {
      if (!allowed.has(c.name)) heldBy.set(c.name, d.wait?.reason ?? gate.name);
    }
    candidates = candidates.filter((c) => allowed.has(c.name));
    if (d.wait) waits.push(d.wait);
  }
  return { admit: candidates, waits, heldBy };
}

/** Admits everything (a gate with nothing to say). */
export function admitAll(input: GateInput): GateDecision {
  return { admit: input.candidates };
}
