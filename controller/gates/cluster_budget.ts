/**
 * Cluster-wide disruption budgets (`BootcDisruptionBudget`, cluster-scoped):
 * every budget whose `nodeSelector` selects a candidate must hold before that
 * node gets a reboot slot, and pools that share a budget take turns by waiting
 * time. Reason `ClusterBudgetExhausted`.
 *
 * ## What the planner must fill in the gate input
 *
 * - `cluster.nodes`: every Node of the cluster (not only the pool's), with its
 *   labels and annotations: a node counts as disrupted when its Node carries the
 *   operator's disruption record (`isDisrupted`), whichever pool put it there,
 *   and percentages are of all Nodes a budget selects.
 * - `cluster.budgets`: every BootcDisruptionBudget, as `{ name, spec }`. Absent or
 *   empty means no cluster budget applies, so it must never be left out when the
 *   cluster has budgets.
 * - `cluster.waiting`: `waitingCandidates()` (`waiting.ts`) over every pool and
 *   every BootcNode (fairness between pools; absent means no other pool
 *   competes).
 * - `disrupted`: this pool's disrupted members plus the slots granted earlier in
 *   the same decision (the planner's one-candidate-at-a-time asks already pass
 *   them): those grants are not on the Nodes yet.
 * - `Candidate.waitingSince`: the `lastTransitionTime` of the BootcNode's Idle
 *   condition (`idleSince()` in `waiting.ts`), the clock `waitingCandidates()` uses.
 *
 * The gate decides on the view it is given; two pools planned at the same
 * moment on the same view could each take the last place of a budget, so the
 * shell must plan pools that share a budget one at a time, each on a view that
 * shows the grants of the one before. A view must not be changed once built:
 * what the gate derives from it (walking every Node) is cached per view object
 * and pool, so the planner's per-candidate asks on one view stay cheap.
 *
 * A held candidate waits for something outside its pool (another pool's node
 * finishing, another pool's older node taking its turn), so the wait has no
 * `until`: the shell must re-plan the pools a budget selects when a Node's
 * disruption record goes away or another pool's status changes (or requeue
 * them periodically).
 *
 * ## Rules
 *
 * - **Count**: the selected nodes that are disrupted (on their Node) or were
 *   granted earlier in this decision, plus the candidate, stay within
 *   `maxUnavailable`: an integer, or a percentage of the selected Nodes rounded
 *   up and at least 1 (`0` and `"0%"` freeze the selected nodes).
 * - **Topology** (with `topologyKey`): at most `maxUnavailablePerDomain` of them
 *   per domain (the value of that node label), and at most
 *   `maxDomainsUnavailable` domains with any. A candidate *without* the label is
 *   refused while a domain limit is set: its domain is unknown, so no promise
 *   about domains could be kept for it (the message says to label it). A
 *   disrupted node without the label counts as a domain of its own.
 * - **Fairness**: other pools' waiting nodes selected by a budget are reserved
 *   in order of waiting time (oldest first), each only when it fits every budget
 *   that selects it on top of what is disrupted now and the reservations before
 *   it. A candidate must fit with the reservations *older* than itself, so the
 *   oldest waiting node of the cluster is held back only by capacity, never by
 *   fairness: no pool starves. Pools that are blocked by something else (paused,
 *   outside a window, waiting for another pool, halted, invalid, or with no room
 *   in their own budget) are left out by `waitingCandidates()` (`waiting.ts`).
 * - **Invalid budgets** fail closed: a budget whose spec is invalid (see
 *   {@linkcode clusterBudgetError}) holds back every node it selects, and every
 *   node when its selector is the invalid part (it cannot be known which nodes
 *   it meant).
 *
 * The gate is monotone: the reservations depend only on what is disrupted on
 * the Nodes, never on what this decision admits, and each limit only grows
 * harder as the set of disrupted nodes grows, so any subset of what it admits
 * is admissible too.
 *
 * @module
 */
import { isDisrupted } from "../../lib/api/annotations.ts";
import { externallyOrchestrated } from "../../lib/api/node_state.ts";
import {
  CLUSTER_MAX_UNAVAILABLE,
  type ClusterBudgetCap,
  intOrPercentError,
  resolveIntOrPercent,
} from "../../lib/api/budget.ts";
import { labelKeyError } from "../../lib/api/validation.ts";
import {
  type LabelMatcher,
  selectorError,
  selectorMatcher,
  selectorsCanOverlap,
} from "../model/selector.ts";
import { formatTime } from "../model/slots.ts";
import type { NodeSummary } from "../model/types.ts";
import type {
  Candidate,
  ClusterBudget,
  ClusterBudgetSpec,
  ClusterView,
  Gate,
  GateDecision,
  GateInput,
  UnseenSlotWrites,
  WaitingNode,
} from "./gate.ts";

export type { ClusterBudget, ClusterBudgetSpec, UnseenSlotWrites, WaitingNode } from "./gate.ts";

/** The wait reason of this gate (it becomes the pool's UpToDate reason). */
export const CLUSTER_BUDGET_EXHAUSTED = "ClusterBudgetExhausted";

/**
 * Why a BootcDisruptionBudget spec is invalid (naming the field), or undefined
 * when it is valid. The CRD should reject all of these; the gate checks again
 * because an object stored before a rule existed must not silently weaken a
 * budget.
 */
export function clusterBudgetError(spec: ClusterBudgetSpec): string | undefined {
  const sel = selectorError(spec.nodeSelector);
  if (sel) return sel;
  if (spec.maxUnavailable === undefined || spec.maxUnavailable === null) {
    return "maxUnavailable is required";
  }
  const valueErr = intOrPercentError(spec.maxUnavailable, CLUSTER_MAX_UNAVAILABLE);
  if (valueErr) return valueErr;
  if (spec.topologyKey !== undefined) {
    const err = labelKeyError(spec.topologyKey);
    if (err) return `topologyKey ${JSON.stringify(spec.topologyKey)} ${err}`;
  }
  for (const field of ["maxUnavailablePerDomain", "maxDomainsUnavailable"] as const) {
    const v = spec[field];
    if (v === undefined) continue;
    if (!Number.isInteger(v) || v < 0) return `${field} ${v} must be an integer >= 0`;
    if (spec.topologyKey === undefined) return `${field} needs topologyKey`;
  }
  return undefined;
}

/** A total order on waiting: time, then pool, then node (ties never hold both sides back). */
function waitKey(since: Date, pool: string, node: string): [number, string, string] {
  return [since.getTime(), pool, node];
}

function compareKeys(a: [number, string, string], b: [number, string, string]): number {
  if (a[0] !== b[0]) return a[0] - b[0];
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0;
}

/** Oldest waiting first (the order fairness between pools goes by). */
export function olderFirst(a: WaitingNode, b: WaitingNode): number {
  return compareKeys(waitKey(a.since, a.pool, a.node), waitKey(b.since, b.pool, b.node));
}

/** A budget prepared against the cluster's nodes. */
interface Prepared {
  name: string;
  spec: ClusterBudgetSpec;
  match: LabelMatcher;
  /** Set when the spec is invalid. */
  error?: string;
  /** The invalid part is the selector: it may mean any node. */
  selectorInvalid?: boolean;
  selected: number;
  limit: number;
  /** Set when a domain limit applies. */
  key?: string;
}

/** Why adding a node would break a budget. */
type Violation =
  | { kind: "count" }
  | { kind: "domain"; domain: string }
  | { kind: "domains"; domain: string }
  | { kind: "unlabeled" };

/** The disrupted (or granted, or reserved) nodes a budget selects. */
class Tally {
  readonly names = new Set<string>();
  /** Disrupted nodes per domain; a node without the label is a domain of its own. */
  readonly perDomain = new Map<string, number>();
  /** Of `names`, those whose Node (so whose labels and domain) is gone. */
  readonly unknown = new Set<string>();

  constructor(readonly budget: Prepared) {}

  clone(): Tally {
    const t = new Tally(this.budget);
    for (const n of this.names) t.names.add(n);
    for (const [d, k] of this.perDomain) t.perDomain.set(d, k);
    for (const n of this.unknown) t.unknown.add(n);
    return t;
  }

  add(name: string, labels: Record<string, string>): void {
    if (this.names.has(name) || !this.budget.match(labels)) return;
    this.names.add(name);
    if (this.budget.key === undefined) return;
    const domain = labels[this.budget.key] ?? unlabeledDomain(name);
    this.perDomain.set(domain, (this.perDomain.get(domain) ?? 0) + 1);
  }

  /**
   * Counts `name`, whose labels are unknown, as selected: in a domain of its own (one more
   * domain down) and, for the per-domain limit, in every domain (it may be in any).
   */
  addUnknown(name: string): void {
    if (this.names.has(name)) return;
    this.names.add(name);
    this.unknown.add(name);
    if (this.budget.key !== undefined) this.perDomain.set(unlabeledDomain(name), 1);
  }

  /** Disrupted nodes that may be in `domain`: those in it, and those of unknown domain. */
  inDomain(domain: string): number {
    return (this.perDomain.get(domain) ?? 0) + this.unknown.size;
  }

  /** Why adding `name` (selected by this budget) would break it, if it would. */
  violation(name: string, labels: Record<string, string>): Violation | undefined {
    if (this.names.has(name)) return undefined;
    const b = this.budget;
    if (this.names.size + 1 > b.limit) return { kind: "count" };
    if (b.key === undefined) return undefined;
    const domain = labels[b.key];
    if (domain === undefined) return { kind: "unlabeled" };
    const perDomain = b.spec.maxUnavailablePerDomain;
    if (perDomain !== undefined && this.inDomain(domain) + 1 > perDomain) {
      return { kind: "domain", domain };
    }
    const maxDomains = b.spec.maxDomainsUnavailable;
    const here = this.perDomain.get(domain) ?? 0;
    if (maxDomains !== undefined && here === 0 && this.perDomain.size + 1 > maxDomains) {
      return { kind: "domains", domain };
    }
    return undefined;
  }

  /** For messages: the domains with disrupted nodes. */
  domains(): string[] {
    return [...this.perDomain.keys()].map((d) => d.startsWith(UNLABELED) ? "(unlabeled)" : d)
      .sort();
  }
}

const UNLABELED = "\u0000unlabeled:";
function unlabeledDomain(node: string): string {
  return UNLABELED + node;
}

function prepare(budget: ClusterBudget, nodes: ReadonlyMap<string, NodeSummary>): Prepared {
  const spec = budget.spec ?? ({} as ClusterBudgetSpec);
  const error = clusterBudgetError(spec);
  const selectorInvalid = error !== undefined && selectorError(spec.nodeSelector) !== undefined;
  const match = selectorInvalid ? () => true : selectorMatcher(spec.nodeSelector);
  let selected = 0;
  for (const node of nodes.values()) if (match(node.labels ?? {})) selected++;
  let limit = 0;
  if (!error) limit = resolveIntOrPercent(spec.maxUnavailable, selected, CLUSTER_MAX_UNAVAILABLE);
  const hasDomainLimit = spec.maxUnavailablePerDomain !== undefined ||
    spec.maxDomainsUnavailable !== undefined;
  return {
    name: budget.name,
    spec,
    match,
    error,
    selectorInvalid,
    selected,
    limit,
    key: hasDomainLimit ? spec.topologyKey : undefined,
  };
}

/** What a budget holds now (its status): the nodes it selects, its limit, those disrupted. */
export interface BudgetUsage {
  /** Nodes it selects (every node while its selector is invalid). */
  selected: number;
  /** `maxUnavailable` resolved against `selected` (0 while the spec is invalid). */
  limit: number;
  /** Why the spec is invalid (naming the field), if it is. */
  error?: string;
  /** The selected nodes that carry the disruption record, by name, sorted. */
  disrupted: string[];
}

/**
 * The members of External pools (`rollout.strategy: External`) whose Node is
 * cordoned or not Ready: disruptions an outside orchestrator makes, without the
 * operator's record. A budget that selects them counts them like the operator's
 * own, so pools sharing it never add to what the orchestrator has down.
 */
export function externalDisruptions(
  pools: readonly {
    pool: { spec?: { rollout?: { strategy?: string } } };
    members: readonly string[];
  }[],
  nodes: ReadonlyMap<string, NodeSummary>,
): Set<string> {
  const out = new Set<string>();
  for (const { pool, members } of pools) {
    if (!externallyOrchestrated(pool)) continue;
    for (const name of members) {
      const node = nodes.get(name);
      if (node && (node.unschedulable || !node.ready)) out.add(name);
    }
  }
  return out;
}

/**
 * The nodes every budget counts as disrupted: the operator's record, or an orchestrator's,
 * with the slot writes the view does not show yet (`unseen`) counted as written.
 */
function disruptedNodes(
  nodes: ReadonlyMap<string, NodeSummary>,
  external: ReadonlySet<string>,
  unseen?: UnseenSlotWrites,
): Set<string> {
  const out = new Set(external);
  for (const [name, node] of nodes) {
    if (isDisrupted({ metadata: { annotations: node.annotations } })) out.add(name);
  }
  for (const name of unseen?.released ?? []) out.delete(name);
  for (const name of unseen?.granted ?? []) out.add(name);
  return out;
}

/** `cluster.unrecorded` less the nodes whose release was written. */
function stillUnrecorded(cluster: ClusterView): ClusterView["unrecorded"] {
  const released = cluster.unseen?.released;
  return released
    ? (cluster.unrecorded ?? []).filter((u) => !released.has(u.node))
    : cluster.unrecorded;
}

/**
 * A budget's usage on `nodes`, from the facts this gate decides on: the same
 * selection, limit and disruption record (`isDisrupted` on the Node), plus the
 * `external` disruptions ({@linkcode externalDisruptions}) and the `unrecorded` ones
 * (`ClusterView.unrecorded`).
 */
export function budgetUsage(
  budget: ClusterBudget,
  nodes: ReadonlyMap<string, NodeSummary>,
  external: ReadonlySet<string> = new Set(),
  unrecorded: ClusterView["unrecorded"] = [],
): BudgetUsage {
  const p = prepare(budget, nodes);
  const t = new Tally(p);
  for (const name of disruptedNodes(nodes, external)) {
    t.add(name, nodes.get(name)?.labels ?? {});
  }
  addUnrecorded(t, unrecorded);
  return {
    selected: p.selected,
    limit: p.limit,
    ...(p.error !== undefined ? { error: p.error } : {}),
    disrupted: [...t.names].sort(),
  };
}

function violationMessage(t: Tally, v: Violation): string {
  const b = t.budget;
  const head = `BootcDisruptionBudget ${b.name}:`;
  switch (v.kind) {
    case "count": {
      const of = typeof b.spec.maxUnavailable === "string"
        ? ` (maxUnavailable ${b.spec.maxUnavailable} of ${b.selected} selected)`
        : ` (${b.selected} selected)`;
      return `${head} ${t.names.size} of ${b.limit} allowed nodes disrupted${of}${unknownNote(t)}`;
    }
    case "domain":
      return `${head} ${t.inDomain(v.domain)} of ${b.spec.maxUnavailablePerDomain} ` +
        `allowed nodes disrupted in ${b.key}=${v.domain}${unknownNote(t)}`;
    case "domains":
      return `${head} ${t.perDomain.size} of ${b.spec.maxDomainsUnavailable} allowed ${b.key} ` +
        `domains have disrupted nodes (${t.domains().join(", ")})${unknownNote(t)}`;
    case "unlabeled":
      return `${head} the node has no ${b.key} label, so its domain is unknown and it gets ` +
        `no slot (label the node)`;
  }
}

/** Names the counted nodes whose Node object is gone: what the wait also waits for. */
function unknownNote(t: Tally): string {
  if (t.unknown.size === 0) return "";
  const names = [...t.unknown].sort().join(", ");
  return `; counted: ${names}, disrupted with its Node object gone (it may be down; until ` +
    `its Node is back or its pool lets it go)`;
}

/** One held-back candidate. */
interface Hold {
  node: string;
  message: string;
  /** Only this pool's own nodes fill the budget: the normal pace of its rollout. */
  routine: boolean;
}

/** What a decision starts from: the same for every ask of one pool on one view. */
interface Baseline {
  /** A budget whose selector is invalid: it could mean any node. */
  broken?: Prepared;
  /** Per budget, the selected nodes disrupted on their Node. */
  base: Tally[];
  /** Other pools' waiting nodes that would fit, oldest first. */
  reserved: WaitingNode[];
}

/**
 * Counts the nodes disrupted with no record on their Node (`ClusterView.unrecorded`): by
 * their labels while their Node exists; else in every budget their pool's selector does
 * not rule out (their labels went with the Node).
 */
function addUnrecorded(t: Tally, unrecorded: ClusterView["unrecorded"]): void {
  for (const u of unrecorded ?? []) {
    if (u.labels) t.add(u.node, u.labels);
    else if (selectorsCanOverlap(t.budget.spec.nodeSelector, u.poolSelector)) t.addUnknown(u.node);
  }
}

/** The earliest time a node counted without its Node's record stops counting by itself. */
function unrecordedUntil(cluster: ClusterView): Date | undefined {
  const times = (cluster.unrecorded ?? []).flatMap((u) => u.until ? [u.until.getTime()] : []);
  return times.length > 0 ? new Date(Math.min(...times)) : undefined;
}

/**
 * Baselines per view and pool: the planner asks once for the whole set and
 * then once per candidate on the same view, and preparing walks every Node.
 * Views are read-only, so caching by identity is safe.
 */
const baselines = new WeakMap<ClusterView, Map<string, Baseline>>();

function baseline(cluster: ClusterView, poolName: string): Baseline {
  let perPool = baselines.get(cluster);
  if (!perPool) baselines.set(cluster, perPool = new Map());
  const cached = perPool.get(poolName);
  if (cached) return cached;
  const prepared = (cluster.budgets ?? []).map((b) => prepare(b, cluster.nodes));
  const broken = prepared.find((p) => p.selectorInvalid);

  // What the Nodes say is disrupted (by the operator, or an External pool's
  // orchestrator): the base of the reservations.
  const onNodes = disruptedNodes(
    cluster.nodes,
    externalDisruptions(cluster.pools, cluster.nodes),
    cluster.unseen,
  );
  const base = prepared.map((p) => {
    const t = new Tally(p);
    for (const name of onNodes) t.add(name, cluster.nodes.get(name)?.labels ?? {});
    addUnrecorded(t, stillUnrecorded(cluster));
    return t;
  });

  // Other pools' waiting nodes, reserved oldest first where they fit every budget.
  // Nothing of this decision (candidates, grants) goes in: that keeps the gate monotone.
  const reserving = base.map((t) => t.clone());
  const reserved: WaitingNode[] = [];
  const others = [...(cluster.waiting ?? [])]
    .filter((w) => w.pool !== poolName && !onNodes.has(w.node))
    .sort(olderFirst);
  for (const w of others) {
    const applicable = reserving.filter((t) => t.budget.match(w.labels));
    if (applicable.length === 0) continue;
    if (applicable.some((t) => t.budget.error || t.violation(w.node, w.labels))) continue;
    reserved.push(w);
    for (const t of applicable) t.add(w.node, w.labels);
  }
  const out: Baseline = { broken, base, reserved };
  perPool.set(poolName, out);
  return out;
}

/**
 * The cluster budgets that select every one of the pool's `members` (a Node
 * name each), with the room other pools' disrupted nodes leave in them: each
 * caps the pool's slot limit (`lib/api/budget.ts`, `poolSlotLimit`). `own` are
 * the nodes whose disruption is this pool's (members and nodes it is handing
 * back). A budget that selects only some members caps no pool: it holds those
 * nodes back one by one (the gate). Topology limits are per node too. Empty
 * for a pool without members.
 */
export function clusterSlotCaps(
  cluster: ClusterView,
  poolName: string,
  members: readonly string[],
  own: ReadonlySet<string>,
): ClusterBudgetCap[] {
  if (members.length === 0 || (cluster.budgets ?? []).length === 0) return [];
  const { base } = baseline(cluster, poolName);
  const out: ClusterBudgetCap[] = [];
  for (const t of base) {
    const b = t.budget;
    const all = members.every((m) => b.match(cluster.nodes.get(m)?.labels ?? {}));
    if (!all) continue;
    out.push({
      name: b.name,
      maxUnavailable: b.spec.maxUnavailable,
      selected: b.selected,
      disruptedElsewhere: [...t.names].filter((n) => !own.has(n)).length,
      ...(b.error !== undefined ? { invalid: b.error } : {}),
    });
  }
  return out;
}

/**
 * Why a slot for `candidate` written now would break a cluster budget that selects it, on
 * `cluster` as it stands at the write (its `unseen` writes counted); undefined when every
 * such budget has room. The gate's own count and topology rules, without its fairness
 * between pools (a plan's choice, not a limit): the one check every grant passes as it is
 * written, whatever the view it was planned on.
 */
export function grantRefusal(
  cluster: ClusterView,
  candidate: { name: string; labels: Record<string, string> },
): string | undefined {
  const budgets = cluster.budgets ?? [];
  if (budgets.length === 0) return undefined;
  const onNodes = disruptedNodes(
    cluster.nodes,
    externalDisruptions(cluster.pools, cluster.nodes),
    cluster.unseen,
  );
  const labelsOf = (name: string) => cluster.nodes.get(name)?.labels ?? {};
  for (const budget of budgets) {
    const p = prepare(budget, cluster.nodes);
    if (!p.match(candidate.labels)) continue;
    if (p.error) return `BootcDisruptionBudget ${p.name} is invalid: ${p.error}`;
    const t = new Tally(p);
    for (const name of onNodes) t.add(name, labelsOf(name));
    addUnrecorded(t, stillUnrecorded(cluster));
    const v = t.violation(candidate.name, candidate.labels);
    if (v) return violationMessage(t, v);
  }
  return undefined;
}

/** Holds candidates back while a cluster budget that selects them has no room for them. */
export const clusterBudgetGate: Gate = {
  name: "clusterBudget",
  // The budgets are cluster objects, checked where they are read (clusterBudgetError).
  reasons: [{ reason: CLUSTER_BUDGET_EXHAUSTED, blocksPool: false }],
  decide(input: GateInput): GateDecision {
    const budgets = input.cluster.budgets ?? [];
    if (budgets.length === 0 || input.candidates.length === 0) {
      return { admit: input.candidates };
    }
    const poolName = input.pool.metadata.name ?? "";
    const { broken, base, reserved } = baseline(input.cluster, poolName);
    if (broken) {
      return {
        admit: [],
        wait: {
          reason: CLUSTER_BUDGET_EXHAUSTED,
          message: `BootcDisruptionBudget ${broken.name} is invalid: ${broken.error}; ` +
            "no node gets a reboot slot until it is fixed",
        },
      };
    }

    // This decision: disrupted now, granted earlier, admitted so far.
    // The pool's own, released ones included: a hold on them is the pool's own pace.
    const own = new Set([...input.disrupted, ...input.released ?? []]);
    const current = base.map((t) => {
      const c = t.clone();
      for (const name of input.disrupted) {
        const node = input.cluster.nodes.get(name);
        if (node) c.add(name, node.labels ?? {});
      }
      return c;
    });
    const admit: Candidate[] = [];
    const holds: Hold[] = [];
    for (const cand of input.candidates) {
      const hold = judge(cand, poolName, current, reserved, own, input.now);
      if (hold) {
        holds.push(hold);
        continue;
      }
      admit.push(cand);
      own.add(cand.name);
      for (const t of current) t.add(cand.name, cand.labels);
    }
    if (holds.length === 0) return { admit };
    const until = unrecordedUntil(input.cluster);
    return {
      admit,
      wait: {
        reason: CLUSTER_BUDGET_EXHAUSTED,
        message: summarize(holds),
        routine: holds.every((h) => h.routine),
        // A node counted off its record until a time that no write marks: planned again then.
        ...(until ? { until } : {}),
      },
    };
  },
};

/** Why `cand` must wait, or undefined when every budget selecting it has room. */
function judge(
  cand: Candidate,
  poolName: string,
  current: readonly Tally[],
  reserved: readonly WaitingNode[],
  own: ReadonlySet<string>,
  now: Date,
): Hold | undefined {
  const applicable = current.filter((t) => t.budget.match(cand.labels));
  for (const t of applicable) {
    if (t.budget.error) {
      return {
        node: cand.name,
        message: `BootcDisruptionBudget ${t.budget.name} is invalid: ${t.budget.error}; ` +
          "the nodes it selects get no reboot slot until it is fixed",
        routine: false,
      };
    }
  }
  for (const t of applicable) {
    const v = t.violation(cand.name, cand.labels);
    if (v) {
      const routine = v.kind !== "unlabeled" && [...t.names].every((n) => own.has(n));
      return { node: cand.name, message: violationMessage(t, v), routine };
    }
  }
  // A candidate without a waiting time waits from now: it never jumps the queue.
  const key = waitKey(cand.waitingSince ?? now, poolName, cand.name);
  const older = reserved.filter((w) => compareKeys(waitKey(w.since, w.pool, w.node), key) < 0);
  if (older.length === 0) return undefined;
  for (const t of applicable) {
    const withOlder = t.clone();
    const first = older.filter((w) => t.budget.match(w.labels));
    for (const w of first) withOlder.add(w.node, w.labels);
    if (!withOlder.violation(cand.name, cand.labels)) continue;
    const w = first[0];
    const more = first.length > 1 ? ` and ${first.length - 1} more older waiting node(s)` : "";
    return {
      node: cand.name,
      message: `BootcDisruptionBudget ${t.budget.name}: node ${w.node} of pool ${w.pool}, ` +
        `waiting since ${formatTime(w.since)}${more}, goes first (${t.names.size} of ` +
        `${t.budget.limit} allowed nodes disrupted)`,
      routine: false,
    };
  }
  return undefined;
}

/** One line for people: which nodes wait for what (the first few reasons). */
function summarize(holds: readonly Hold[]): string {
  const byMessage = new Map<string, string[]>();
  for (const h of holds) {
    const list = byMessage.get(h.message) ?? [];
    list.push(h.node);
    byMessage.set(h.message, list);
  }
  const parts: string[] = [];
  for (const [message, nodes] of byMessage) {
    if (parts.length === 3) {
      parts.push(`and ${byMessage.size - 3} more reasons`);
      break;
    }
    const who = nodes.length > 3
      ? `${nodes.slice(0, 3).join(", ")} and ${nodes.length - 3} more`
      : nodes.join(", ");
    parts.push(`${who} ${nodes.length === 1 ? "waits" : "wait"}: ${message}`);
  }
  return parts.join("; ");
}
