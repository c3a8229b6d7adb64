/**
 * Planner step 5: new reboot slots through the gates. The rollout halts when
 * two nodes in slots are unhealthy; otherwise every gate (`gates/`) has its say
 * on the pool's candidates: the whole-set answer says why nodes wait (status,
 * events and the kubectl plugin repeat it), and grants then ask the gates one
 * candidate at a time (`slot_grant.ts`), counting the slots granted before it.
 *
 * The step also says what views need, so that none recomputes it: the pool's
 * slot limit and which budget sets it (`status.slots`, arithmetic in
 * `lib/api/budget.ts`), and the candidates left waiting in the order the grants
 * walk them, each with what holds it (`status.queue`).
 *
 * @module
 */
import {
  type ApprovalStatus,
  owningPool,
  PoolDegradedReason,
  poolSlotLimit,
  type QueueEntry,
  resolveMaxUnhealthy,
  SlotLimitSource,
  type SlotsStatus,
} from "../../lib/api/mod.ts";
import type { CanaryStatus } from "./canary.ts";
import { gatePhase } from "./canary.ts";
import { unrecordedDisruptions } from "./leaving.ts";
import {
  type ApprovalView,
  AWAITING_APPROVAL,
  budgetStates,
  type Candidate,
  clusterSlotCaps,
  type ClusterView,
  composeGates,
  type GateInput,
  GATES,
  type GateWait,
  idleSince,
  waitingCandidates,
} from "../gates/mod.ts";
import type { ApprovalAsks } from "../model/approval.ts";
import { approvalAsks, approvalEvents, approvalFacts, approvalFailing } from "./approval_step.ts";
import type { InFlightResult } from "./in_flight.ts";
import type { Member } from "./membership.ts";
import { type NodePlace, orderCandidates } from "./node_order.ts";
import { mergeOutputs, type PlanInput, type StepOutput, stepOutput, StepWriter } from "./plan.ts";
import { type GrantOutcome, grantSlots, QueueWait, slotCandidates } from "./slot_grant.ts";
import { formatTime } from "../model/slots.ts";
import type { Target } from "../model/types.ts";

/** What step 5 works on. */
export interface GatedSlotsInput {
  input: PlanInput;
  members: readonly Member[];
  /** What step 3 found (read-only): slots in use, unhealthy slot nodes, drains. */
  inFlight: Pick<
    InFlightResult,
    "inUse" | "unhealthy" | "drainingNodes" | "drainingDemand" | "drainingUnknown" | "released"
  >;
  /** Nodes leaving the pool that still count as disrupted. */
  releasing: readonly string[];
  target: Target | undefined;
  /** An image whose rollout is halted: nodes bound for it get no new slot. */
  haltFor?: string;
  /** Members done on the target. */
  updated: number;
  /** Their names (approval verdicts of other members are never dropped). */
  updatedNodes?: readonly string[];
  canary: CanaryStatus | undefined;
  /** The target is the pool's automatic rollback (it needs no approval). */
  rollbackTarget?: boolean;
}

/** What step 5 decided, for the pool's status. */
export interface GatedSlots {
  /** The reason of the first gate that holds nodes back for more than routine pacing. */
  waitReason?: string;
  /** That gate's wait: its reason, message (what blocks, until when) and end. */
  wait?: GateWait;
  /** `status.slots` but `inUse` (the status takes the slots in use after every step). */
  slots: Omit<SlotsStatus, "inUse">;
  /**
   * Every candidate that waits, in the order slots are handed out (the order the
   * grants walk), with what holds it back; the status keeps the first
   * `SLOT_QUEUE_LIMIT`.
   */
  queue: QueueEntry[];
  /** The nodes granted a slot by this plan, in grant order. */
  granted: readonly string[];
  /** Nodes counted against the pool's budget after the grants (leaving ones included). */
  inUse: number;
  /** The grants' writes and events, the halt issue, why the pool waits, wake-ups. */
  out: StepOutput;
  /** `status.approval` after this plan (`spec.rollout.approval`), if the pool asks for one. */
  approval?: ApprovalStatus;
  /** What the approval webhook must still be asked (the shell's poller asks). */
  approvalAsks?: ApprovalAsks;
}

/**
 * Halts on `spec.rollout.maxUnhealthy` unhealthy slots (2 unset), else grants the slots the gates allow. Says why
 * the pool waits, its slot limit and what set it, and the queue of the
 * candidates left waiting (each with the reason of what holds it).
 */
export function planGatedSlots(step: GatedSlotsInput): GatedSlots {
  const { input, members, target, inFlight } = step;
  const cluster = clusterView(input);
  const disrupted = [
    ...members.filter((m) => m.disrupted).map((m) => m.node.name),
    ...step.releasing,
  ];
  const limit = slotLimitStatus(input, members, cluster, disrupted);
  const { ordered: all, places } = orderCandidates(
    slotCandidates(members),
    input.pool,
    input.controllerNode,
  );
  // A node this plan releases hands its slot on in this plan: the shell applies a grant
  // only once the releases giving it room succeeded (shell/apply_order.ts), so the pool's own gates count
  // it neither disrupted nor waiting for it; released on the target, it is updated (the
  // canary's count stays whole). Cluster budgets still count it from its Node till then.
  const released = new Set(inFlight.released);
  const releasedUpdated =
    members.filter((m) =>
      released.has(m.node.name) && target !== undefined && m.bn?.spec.desiredImage === target.image
    ).length;
  const inUse = step.releasing.length + inFlight.inUse;
  const approval = target
    ? approvalFacts({
      pool: input.pool,
      target,
      rollback: step.rollbackTarget ?? false,
      answers: input.approvalAnswers,
      members: members.map((m) => m.node.name),
      done: step.updatedNodes,
    })
    : undefined;
  let decided: Decided;
  if (limit.maxUnhealthy !== undefined && inFlight.unhealthy.length >= limit.maxUnhealthy) {
    const issues = [{
      reason: PoolDegradedReason.RolloutHalted,
      message: `rollout halted: ${inFlight.unhealthy.length} node(s) in reboot slots are ` +
        `unhealthy (${inFlight.unhealthy.join("; ")}); spec.rollout.maxUnhealthy allows ` +
        `${limit.maxUnhealthy - 1}`,
    }];
    decided = {
      held: new Map(all.map((m) => [m.node.name, QueueWait.RolloutHalted])),
      granted: [],
      inUse,
      out: stepOutput({ issues }),
    };
  } else if (!target) {
    decided = { held: new Map(), granted: [], inUse, out: stepOutput() };
  } else {
    decided = throughGates(step, all, places, {
      cluster,
      disrupted: disrupted.filter((n) => !released.has(n)),
      updated: step.updated + releasedUpdated,
      released: inFlight.released,
      target,
      inUse,
      approval,
    });
  }
  const queue = queueOf(all, decided.held, decided.blockedBy, places);
  const approvalOut = mergeOutputs([
    stepOutput({ events: approvalEvents(input.pool, approval) }),
    approvalFailing(input.pool, approval, {
      now: input.now,
      awaiting: decided.wait?.reason === AWAITING_APPROVAL,
    }),
  ]);
  return {
    waitReason: decided.wait?.reason,
    wait: decided.wait,
    slots: { ...limit, waiting: queue.length },
    queue,
    granted: decided.granted,
    inUse: decided.inUse,
    out: mergeOutputs([decided.out, approvalOut, preconditionIssues(input)]),
    approval: approval?.record,
    // In slot order: with more waiting than the record takes, the next ones are asked.
    approvalAsks: approvalAsks(
      input.pool,
      approval,
      new Map(queue.map((q) => [q.node, q.waitingFor])),
    ),
  };
}

/** What holds each candidate, the grants, and why the pool waits. */
interface Decided {
  held: ReadonlyMap<string, string>;
  /** What holds a held candidate, where its reason has a subject (the blocking pods). */
  blockedBy?: ReadonlyMap<string, string>;
  granted: readonly string[];
  inUse: number;
  wait?: GateWait;
  out: StepOutput;
}

/**
 * The gates' say on `all` (the slot candidates) and the grants they allow:
 * what holds each candidate left waiting, and the reason of the first gate
 * that holds nodes back for more than routine pacing.
 */
function throughGates(
  step: GatedSlotsInput,
  all: readonly Member[],
  places: ReadonlyMap<string, NodePlace>,
  view: {
    cluster: ClusterView;
    /** The pool's nodes the gates count as disrupted, and as updated. */
    disrupted: readonly string[];
    updated: number;
    /** The pool's nodes this plan releases (left out of `disrupted`). */
    released: readonly string[];
    target: Target;
    inUse: number;
    approval?: ApprovalView;
  },
): Decided {
  const { input, haltFor } = step;
  const image = view.target.image;
  // A halted target gives no new slot to nodes bound for it (rollbacks still proceed), and a
  // skipped node (priority 0) gets none at all.
  const heldBack = (m: Member) =>
    haltFor !== undefined && m.bn?.spec.desiredImage === haltFor
      ? QueueWait.RolloutHalted
      : places.get(m.node.name)?.skipped
      ? QueueWait.Skipped
      : undefined;
  const candidates = all.filter((m) => heldBack(m) === undefined);
  const held = new Map<string, string>(
    all.flatMap((m) => heldBack(m) ? [[m.node.name, heldBack(m)!] as const] : []),
  );
  const gateInput: GateInput = {
    pool: input.pool,
    candidates: candidates.map((m) => toCandidate(m, image)),
    disrupted: view.disrupted,
    ...(view.released.length > 0 ? { released: view.released } : {}),
    memberCount: step.members.length,
    updated: view.updated,
    canary: gatePhase(step.canary),
    ...(view.approval ? { approval: view.approval } : {}),
    ...(input.alerts ? { alerts: input.alerts } : {}),
    ...(input.objectChecks ? { objects: input.objectChecks } : {}),
    cluster: view.cluster,
    now: input.now,
  };
  const { admit, waits, heldBy } = composeGates(GATES, gateInput);
  for (const [name, reason] of heldBy) held.set(name, reason);
  const grants = admit.length > 0
    ? grantThroughGates(step, candidates, gateInput, admit.length, view.inUse)
    : undefined;
  if (grants) heldAfterGrants(held, candidates, grants);
  const w = new StepWriter(input.pool.metadata.name ?? "", input.now);
  for (const wait of waits) {
    if (wait.until) w.wakeAt(wait.until);
    // Routine waits (the budget's pace) are news only when a schedule sets the pace.
    if (!wait.routine || wait.until) w.notes.push(wait.message);
  }
  return {
    held,
    blockedBy: grants?.blockedBy,
    granted: grants?.granted ?? [],
    inUse: grants?.inUse ?? view.inUse,
    wait: waits.find((w) => !w.routine),
    out: mergeOutputs([grants?.out ?? stepOutput(), w.output()]),
  };
}

/**
 * Grants slots one candidate at a time, each asking the gates again given the
 * grants before it (`slot_grant.ts`).
 */
function grantThroughGates(
  step: GatedSlotsInput,
  candidates: readonly Member[],
  gateInput: GateInput,
  admitted: number,
  inUse: number,
): GrantOutcome {
  const { inFlight } = step;
  return grantSlots(candidates, step.input, {
    inUse,
    drainingNodes: inFlight.drainingNodes,
    drainingDemand: inFlight.drainingDemand,
    drainingUnknown: inFlight.drainingUnknown,
  }, (m, granted) => {
    const one = composeGates(GATES, {
      ...gateInput,
      candidates: gateInput.candidates.filter((c) => c.name === m.node.name),
      disrupted: [...gateInput.disrupted, ...granted],
    });
    return one.admit.length === 1 ? undefined : one.heldBy.get(m.node.name);
  }, admitted + 5);
}

/**
 * `held` (the gates' reasons) updated after the grants: granted ones leave it,
 * the walk's reasons win, and a candidate the walk did not reach (it stopped to
 * read pods first) waits for that too.
 */
function heldAfterGrants(
  held: Map<string, string>,
  candidates: readonly Member[],
  outcome: GrantOutcome,
): void {
  const granted = new Set(outcome.granted);
  for (const name of granted) held.delete(name);
  for (const [name, reason] of outcome.held) held.set(name, reason);
  for (const m of candidates) {
    if (!granted.has(m.node.name) && !held.has(m.node.name)) {
      held.set(m.node.name, QueueWait.PodList);
    }
  }
}

/** The candidates left waiting, in grant order, with what holds each (none: granted). */
function queueOf(
  all: readonly Member[],
  held: ReadonlyMap<string, string>,
  blockedBy: ReadonlyMap<string, string> | undefined,
  places: ReadonlyMap<string, NodePlace>,
): QueueEntry[] {
  const out: QueueEntry[] = [];
  for (const m of all) {
    const waitingFor = held.get(m.node.name);
    if (waitingFor === undefined) continue;
    const by = blockedBy?.get(m.node.name);
    const orderedBy = places.get(m.node.name)?.orderedBy;
    out.push({
      node: m.node.name,
      position: out.length + 1,
      waitingFor,
      ...(by ? { blockedBy: by.slice(0, 512) } : {}),
      ...(orderedBy ? { orderedBy: orderedBy.slice(0, 128) } : {}),
    });
  }
  return out;
}

/**
 * The pool's slot limit now and what set it (`lib/api/budget.ts`): the budget
 * gate's limit (maxUnavailable, active scheduled budgets), capped by the cluster
 * budgets that select every member. An unreadable spec: 0 (InvalidSpec).
 */
function slotLimitStatus(
  input: PlanInput,
  members: readonly Member[],
  cluster: ClusterView,
  disrupted: readonly string[],
): Omit<SlotsStatus, "inUse" | "waiting"> {
  const { pool, now } = input;
  try {
    const l = poolSlotLimit({
      maxUnavailable: pool.spec.rollout?.maxUnavailable,
      budgets: budgetStates(pool, now),
      clusterCaps: clusterSlotCaps(
        cluster,
        pool.metadata.name ?? "",
        members.map((m) => m.node.name),
        new Set(disrupted),
      ),
      memberCount: members.length,
    });
    return {
      limit: l.limit,
      source: l.source,
      name: l.name,
      ...(l.until ? { until: formatTime(l.until) } : {}),
      message: l.message,
      maxUnhealthy: resolveMaxUnhealthy(pool.spec.rollout?.maxUnhealthy, members.length),
    };
  } catch (e) {
    return invalidSlots((e as Error).message);
  }
}

/** `status.slots` of a pool whose spec cannot be read: no new slot. */
export function invalidSlots(why: string): Omit<SlotsStatus, "inUse" | "waiting"> {
  return {
    limit: 0,
    source: SlotLimitSource.InvalidSpec,
    name: "spec",
    message: `no new reboot slots: the spec is invalid (${why})`.slice(0, 1024),
  };
}

/** What {@linkcode budgetView} reads. */
export interface BudgetViewInput
  extends Pick<PlanInput, "bootcNodes" | "nodes" | "budgets" | "unseen" | "now"> {
  /** Every pool. */
  pools: readonly PlanInput["pool"][];
}

/**
 * The cluster as the budgets count it: pools with their members, Nodes, budgets and the
 * disruptions no Node records. The gates plan on it, and each grant is checked on it again
 * as it is written (`grantRefusal`).
 */
export function budgetView(input: BudgetViewInput): ClusterView {
  const { pools } = input;
  const members = new Map<string, string[]>();
  for (const bn of input.bootcNodes.values()) {
    const owner = owningPool(bn);
    if (owner === undefined) continue;
    const list = members.get(owner) ?? [];
    list.push(bn.metadata.name ?? "");
    members.set(owner, list);
  }
  const budgets = input.budgets ?? [];
  // Only cluster budgets read these; without any, it is not worth computing.
  const unrecorded = budgets.length > 0
    ? unrecordedDisruptions({
      pools,
      bootcNodes: input.bootcNodes.values(),
      nodes: input.nodes,
      now: input.now,
    })
    : [];
  return {
    pools: pools.map((p) => ({
      name: p.metadata.name ?? "",
      pool: p,
      members: members.get(p.metadata.name ?? "") ?? [],
    })),
    nodes: input.nodes,
    budgets,
    unrecorded,
    ...(input.unseen ? { unseen: input.unseen } : {}),
  };
}

/** The read-only view of the cluster the gates decide on (built once per plan). */
function clusterView(input: PlanInput): ClusterView {
  const pools = input.poolObjects ?? [input.pool];
  const view = budgetView({ ...input, pools });
  if ((view.budgets ?? []).length === 0) return { ...view, waiting: [] };
  // Fairness between pools only matters when a budget spans them.
  const waiting = waitingCandidates({
    pools,
    bootcNodes: input.bootcNodes.values(),
    nodes: input.nodes,
    now: input.now,
    unrecorded: new Set((view.unrecorded ?? []).map((u) => u.node)),
  });
  return { ...view, waiting };
}

/**
 * `PreconditionFailing` while an object check cannot be evaluated (its expression errs, its
 * kind is unknown, the controller may not read it): a problem for the user, beyond the wait.
 */
function preconditionIssues(input: PlanInput): StepOutput {
  const errors = (input.objectChecks ?? []).flatMap((v) => v?.state === "error" ? [v.message] : []);
  if (errors.length === 0) return stepOutput();
  return stepOutput({
    issues: [{ reason: PoolDegradedReason.PreconditionFailing, message: errors.join("; ") }],
  });
}

/**
 * A member as gates see it; the Idle condition's transition time says how long
 * it waited (the clock fairness between pools uses, `idleSince`).
 */
function toCandidate(m: Member, targetImage?: string): Candidate {
  return {
    name: m.node.name,
    labels: m.node.labels,
    waitingSince: idleSince(m.bn),
    ...(targetImage !== undefined && m.bn && m.bn.spec.desiredImage !== targetImage
      ? { rollback: true }
      : {}),
  };
}
