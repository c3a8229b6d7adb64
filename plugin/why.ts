/**
 * `kubectl bootc why NODE`: one explanation of where a node stands in its
 * pool's rollout and what it waits for, from the same facts the controller and
 * the daemon decide on: the node's one classification (`lib/api/node_state.ts`,
 * which the controller plans with), the pool's status and gates, the slot queue
 * and the events. The headline renders the classification; nothing here
 * decides a node's state of its own.
 *
 * @module
 */
import {
  ANNOTATION_UPDATE_PRIORITY,
  NodeConditionType,
  RebootAllowedReason,
} from "../lib/api/constants.ts";
import {
  type NodeClassification,
  type NodeFacts,
  NodeStateReason,
  phaseTargetIs,
  readNodeFacts,
} from "../lib/api/node_state.ts";
import { findCondition } from "../lib/api/conditions.ts";
import { ago, clock, ordinal, shortDigest, shortImage } from "./format.ts";
import type { BootcNode, BootcNodePool, Condition, EventLike, NodeLike } from "./model.ts";
import { eventTime, nodeReady, parseTime } from "./model.ts";
import {
  type Blocker,
  bucketOf,
  classifyMember,
  digestOf,
  owningPool,
  poolBlockers,
  poolTarget,
} from "./progress.ts";
import {
  NOT_PUBLISHED,
  placeText,
  publishedQueue,
  publishedSlots,
  type QueuePlace,
  queuePlace,
  slotHolders,
  slotsText,
} from "./slot_queue.ts";
import type { Style } from "./style.ts";

/** Everything `why` looks at. */
export interface WhyInput {
  name: string;
  bootcNode?: BootcNode;
  node?: NodeLike;
  /** Every pool (the owning one is looked up by name). */
  pools: readonly BootcNodePool[];
  /** Every BootcNode (for the slot queue). */
  bootcNodes: readonly BootcNode[];
  /** Every Node that matters (for the slot queue and the slot holders). */
  nodes: ReadonlyMap<string, NodeLike>;
  /** Events about the node (its BootcNode or its Node). */
  events: readonly EventLike[];
  now: Date;
}

/** The answer: a headline, labelled facts, the conditions and the latest events. */
export interface Explanation {
  name: string;
  headline: string;
  facts: [string, string][];
  conditions: Condition[];
  events: EventLike[];
}

/** How many events `why` shows. */
export const WHY_EVENTS = 6;

/** Explains one node (see the module doc). */
export function explainNode(input: WhyInput): Explanation {
  const { name, bootcNode: bn, node, now } = input;
  const events = nodeEvents(input);
  const facts: [string, string][] = [];
  const result = (headline: string): Explanation => ({
    name,
    headline,
    facts,
    conditions: bn?.status?.conditions ?? [],
    events,
  });
  const read = readNodeFacts({
    node: node &&
      { annotations: node.metadata?.annotations, unschedulable: node.spec?.unschedulable },
    bootcNode: bn,
    now,
  });
  const record = read.record;
  const nodeFacts = (): [string, string][] =>
    node ? [["node", nodeFact(node)], ["disruption", recordFact(read, bn !== undefined, now)]] : [];

  if (!bn) {
    facts.push(...nodeFacts());
    return result(unmanagedHeadline(name, node, record));
  }

  const poolName = owningPool(bn);
  const pool = input.pools.find((p) => p.metadata?.name === poolName);
  const target = pool ? poolTarget(pool) : undefined;
  const cls = classifyMember(bn, node, pool);
  facts.push(
    ["pool", poolName ? `${poolName} → ${shortImage(pool?.status?.targetImage)}` : "none"],
    ...classFacts(bn, cls, now),
    ...nodeFacts(),
  );

  if (!poolName) {
    return result("not owned by any pool: the daemon does nothing until a pool adopts it");
  }
  if (!pool) return result(`its pool ${poolName} does not exist (any more)`);
  const blockers = poolBlockers(pool);
  for (const b of blockers) facts.push([gateLabel(b), blockerText(b)]);
  if (bn.metadata?.deletionTimestamp) {
    return result(`leaving pool ${poolName}: its BootcNode is being deleted`);
  }

  // The queue matters for every node that could wait for a slot: as the controller publishes it.
  const slotsLine = slotsText(pool, slotHolders(poolName, input.nodes.values()));
  // In flight or queued, never both: its classification decides (a queue written before
  // its grant may still list it).
  const place = queuePlace(pool, name, new Set(cls.disrupted ? [name] : []));
  facts.push(["slot queue", queueFact(pool, name, place, slotsLine)]);

  const hasTarget = target !== undefined;
  return result(
    classHeadline({
      cls,
      bn,
      node,
      record,
      pool,
      hasTarget,
      place,
      blockers,
      slotsLine,
      now,
    }),
  );
}

/** The headline of a node without a BootcNode. */
function unmanagedHeadline(
  name: string,
  node: NodeLike | undefined,
  record: NodeFacts["record"],
): string {
  if (!node) return `there is no Node and no BootcNode named ${name}`;
  return Object.keys(record).length > 0
    ? "no BootcNode, but the Node carries a disruption record: the controller of the pool " +
      `named in it (${record.pool ?? "unknown"}) restores it`
    : "not managed: no pool selects this node (it has no BootcNode)";
}

/** The node's classification and images as facts. */
function classFacts(bn: BootcNode, cls: NodeClassification, now: Date): [string, string][] {
  const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
  const idleText = idle
    ? ` (Idle=${idle.status}/${idle.reason}, ${ago(parseTime(idle.lastTransitionTime), now)})`
    : "";
  return [
    ["phase", `${bucketOf(cls)}${idleText}`],
    ["state", `${cls.state}/${cls.reason}`],
    ["waits for", cls.waitsFor ? `${cls.waitsFor} (${cls.waitsOn})` : "nothing"],
    ["desired", `${shortImage(bn.spec?.desiredImage)} (${bn.spec?.desiredImageState})`],
    ["booted", entryFact(bn.status?.booted)],
    ["staged", entryFact(bn.status?.staged)],
  ];
}

/** The events about the node (its BootcNode or its Node), the latest {@linkcode WHY_EVENTS}. */
function nodeEvents(input: WhyInput): EventLike[] {
  return [...input.events]
    .filter((e) =>
      e.involvedObject?.name === input.name &&
      (e.involvedObject.kind === "BootcNode" || e.involvedObject.kind === "Node")
    )
    .sort((a, b) => (eventTime(a)?.getTime() ?? 0) - (eventTime(b)?.getTime() ?? 0))
    .slice(-WHY_EVENTS);
}

/** What a headline of a classified node renders. */
interface HeadlineContext {
  cls: NodeClassification;
  bn: BootcNode;
  node: NodeLike | undefined;
  record: NodeFacts["record"];
  pool: BootcNodePool;
  /** The pool has a target. */
  hasTarget: boolean;
  place: QueuePlace;
  blockers: readonly Blocker[];
  slotsLine: string;
  now: Date;
}

/** The headline: the node's classification in words. */
function classHeadline(ctx: HeadlineContext): string {
  const { cls, bn, pool, now, node } = ctx;
  const conditions = bn.status?.conditions;
  const note = inFlightNote(cls.disrupted);
  switch (cls.state) {
    case "Staged": {
      if (!node) return "staged, but its Node is missing: not a slot candidate";
      if (cls.reason === NodeStateReason.NotReady) {
        return "staged, but its Node is not Ready: not a slot candidate";
      }
      const text = stagedHeadline(pool, ctx.place, ctx.blockers, ctx.slotsLine);
      return cls.route === "rollback"
        ? text.replace(/^staged/, "staged (the target is its rollback deployment)")
        : text;
    }
    case "Pending":
      if (!ctx.hasTarget) return "the pool has no target image yet";
      return pendingHeadline(ctx);
    case "Degraded": {
      const c = findCondition(conditions, NodeConditionType.Degraded);
      return `degraded: ${c?.message || c?.reason || cls.message}${note}`;
    }
    case "Stalled": {
      const c = findCondition(conditions, NodeConditionType.Stalled);
      return `stalled (${cls.reason}): ${c?.message ?? cls.message}${note}`;
    }
    case "Failed":
      return cls.message +
        (cls.disrupted
          ? " (it holds its reboot slot: the pool's onFailure policy decides what comes next)"
          : "");
    case "Updated":
      return `up to date: runs ${shortImage(pool.status?.targetImage)}`;
    case "Staging": {
      const idle = findCondition(conditions, NodeConditionType.Idle);
      const since = clock(parseTime(idle?.lastTransitionTime) ?? now);
      return cls.reason === NodeStateReason.Locking
        ? `locking the staged ${shortImage(bn.spec?.desiredImage)} (staged unlocked: an ` +
          `unexpected reboot would apply it; since ${since})`
        : `downloading ${shortImage(bn.spec?.desiredImage)} (staging since ${since})`;
    }
    case "InSlot":
    case "Draining":
    case "Rebooting":
    case "Verifying":
      return inFlightHeadline(ctx);
    default:
      return cls.message;
  }
}

/** The headline of a node pending on the target: what it waits for to start. */
function pendingHeadline(ctx: HeadlineContext): string {
  const { cls, bn, pool } = ctx;
  switch (cls.reason) {
    case NodeStateReason.HeldBack:
      return `queued for staging: ${cls.waitsFor}`;
    case NodeStateReason.AwaitingSpecSync:
      return "waiting for the controller to give it the new target " +
        `(desired ${shortDigest(digestOf(bn.spec?.desiredImage))}, target ${
          shortDigest(pool.status?.targetDigest)
        })`;
    case NodeStateReason.AwaitingReport:
      return "waiting for the daemon to report on its current spec (it has not yet)";
    default: {
      const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
      return `waiting for the daemon to start staging${idle?.message ? ` (${idle.message})` : ""}`;
    }
  }
}

/** The headline of a node the operator is disrupting. */
function inFlightHeadline(ctx: HeadlineContext): string {
  const { cls, bn, record, now } = ctx;
  const conditions = bn.status?.conditions;
  const idle = findCondition(conditions, NodeConditionType.Idle);
  const allowed = findCondition(conditions, NodeConditionType.RebootAllowed);
  const slot = `holds a reboot slot (taken ${ago(parseTime(record.slotAt), now)})`;
  const desired = bn.spec?.desiredImage ?? "";
  const since = ago(parseTime(idle?.lastTransitionTime), now);
  switch (cls.reason) {
    case NodeStateReason.Releasing:
      return "the operator is finishing or undoing its work here (a disruption record without " +
        "a reboot slot)";
    case NodeStateReason.Cordoning:
      return `${slot}; not cordoned: waiting for ${cls.waitsFor}`;
    case NodeStateReason.DrainBlocked:
      return `${slot}; draining, blocked: ${cls.waitsFor}`;
    case NodeStateReason.Draining:
      return `${slot}; draining: cordoned, evicting its pods` +
        (cls.waitsOn === "daemon" ? `; then waiting for ${cls.waitsFor}` : "");
    case "Drained":
      return "drained; waiting for the controller to request the reboot (desiredImageState Booted)";
    case NodeStateReason.RebootRequested:
      return allowed?.status === "False" && allowed.reason !== RebootAllowedReason.SlotAndDrain
        ? `reboot requested, but the daemon refuses (${allowed.reason}): ${allowed.message}`
        : "reboot requested and allowed; waiting for the daemon to apply the staged image";
    case NodeStateReason.RollingBack:
      return `rolling back to ${shortImage(desired)} (its rollback deployment; since ${since})`;
    case "Rebooting":
      return phaseTargetIs(bn.status, desired) === false
        ? `rebooting (${idle?.message ?? "another image"}; since ${since}); the target moved ` +
          "meanwhile: it is " +
          "redone once the node is back"
        : `rebooting into ${shortImage(desired)} (since ${since})`;
    case NodeStateReason.WaitingForReady:
      return "back on the target image; waiting for the Node to become Ready before the slot is released";
    case NodeStateReason.Soaking:
      return "back on the target image, Ready and verified; the slot is released once " +
        "minReadySeconds have passed and the controller's next reconcile runs";
    default:
      return "back on the target image and Ready; being verified (health checks), then the " +
        "slot is released once minReadySeconds have passed";
  }
}

/** "2nd of 3: n2, [n3], n4 · 1/1 slot(s) in use (n1)": the published queue around `name`. */
function queueFact(pool: BootcNodePool, name: string, place: QueuePlace, slots: string): string {
  const queue = publishedQueue(pool) ?? [];
  const more = place.kind !== "unknown" && place.of > queue.length
    ? `, … ${place.of - queue.length} more`
    : "";
  const list = queue.map((e) => (e.node === name ? `[${e.node}]` : e.node)).join(", ") + more;
  switch (place.kind) {
    case "unknown":
      return `${NOT_PUBLISHED} · ${slots}`;
    case "queued": {
      const by = place.entry.orderedBy ? ` (placed by ${place.entry.orderedBy})` : "";
      return `${ordinal(place.entry.position)} of ${place.of}${by}: ${list} · ${slots}`;
    }
    case "beyond":
      return `after the first ${place.shown} of ${place.of}: ${list} · ${slots}`;
    case "none":
      return `not a candidate · ${place.of} waiting · ${slots}`;
  }
}

/**
 * The headline of a staged, Ready node waiting for its slot: the pool's gate
 * if one holds every node, else what the controller published holds this one.
 */
function stagedHeadline(
  pool: BootcNodePool,
  place: QueuePlace,
  blockers: readonly Blocker[],
  slots: string,
): string {
  const head = `staged, waiting for a reboot slot (${placeText(place)})`;
  const waitingFor = place.kind === "queued" ? place.entry.waitingFor : undefined;
  if (blockers.some((b) => b.reason === "RolloutHalted") || waitingFor === "RolloutHalted") {
    return `${head}: the rollout is halted`;
  }
  const wait = blockers.find((b) => b.kind === "wait");
  if (wait) return `${head}: the pool waits (${wait.reason})`;
  if (waitingFor === "PodDisruptionBudget") {
    return `${head}: its drain would wait on a PodDisruptionBudget that a drain in flight ` +
      "needs";
  }
  if (waitingFor === "BlockingPod" && place.kind === "queued") {
    return `${head}: blocking pods run on it (${
      place.entry.blockedBy ?? "spec.rollout.blockingPodSelector"
    })`;
  }
  if (waitingFor === "Skipped") {
    return `staged, skipped: its Node's ${ANNOTATION_UPDATE_PRIORITY} is 0 (no reboot slot ` +
      "until it changes)";
  }
  if (waitingFor === "PodList") {
    return `${head}: the controller reads its pods before it grants the slot`;
  }
  if (waitingFor !== undefined && waitingFor !== "BudgetExhausted") {
    return `${head}: it waits (${waitingFor})`;
  }
  const published = publishedSlots(pool);
  const free = published ? Math.max(0, published.limit - published.inUse) : 0;
  if (place.kind === "queued" && place.entry.position <= free) {
    return `staged, next for a reboot slot (${placeText(place)}, ${free} free)`;
  }
  return `${head}; ${slots}`;
}

function inFlightNote(inFlight: boolean): string {
  return inFlight ? " (it holds its reboot slot until it recovers or the controller gives up)" : "";
}

function gateLabel(b: Blocker): string {
  return b.kind === "wait" ? "pool waits" : b.kind === "degraded" ? "pool degraded" : "pool note";
}

function blockerText(b: Blocker): string {
  return b.reason ? `${b.reason}: ${b.message}` : b.message;
}

function entryFact(entry: { image?: string; imageDigest?: string } | undefined): string {
  if (!entry?.image && !entry?.imageDigest) return "none";
  const image = shortImage(entry.image);
  const digest = entry.imageDigest && digestOf(entry.image) !== entry.imageDigest
    ? ` (${shortDigest(entry.imageDigest)})`
    : "";
  return `${image}${digest}`;
}

function nodeFact(node: NodeLike): string {
  return `${nodeReady(node) ? "Ready" : "NotReady"}, ${
    node.spec?.unschedulable ? "cordoned" : "schedulable"
  }`;
}

function recordFact(facts: NodeFacts, hasBootcNode: boolean, now: Date): string {
  const { record, mirror } = facts;
  const parts: string[] = [];
  if (record.slotAt !== undefined) {
    parts.push(`reboot slot since ${stamp(record.slotAt, now)} for pool ${record.pool ?? "?"}`);
  }
  if (record.wasCordoned !== undefined) parts.push(`was cordoned before: ${record.wasCordoned}`);
  if (record.drainedAt !== undefined) {
    parts.push(
      `drained ${stamp(record.drainedAt, now)} for ${shortImage(record.drainedFor)}` +
        (hasBootcNode ? (facts.drained ? " (the desired image)" : " (NOT the desired image)") : ""),
    );
  }
  if (mirror !== undefined && record.wasCordoned === undefined) {
    parts.push(`only the BootcNode's mirror remains (was cordoned before: ${mirror})`);
  }
  return parts.length > 0 ? parts.join("; ") : "none";
}

function stamp(raw: string, now: Date): string {
  const t = parseTime(raw);
  return t ? `${clock(t)} (${ago(t, now)})` : raw;
}

/** Renders an explanation as text. */
export function renderWhy(e: Explanation, style: Style, now: Date): string {
  const out: string[] = [`${style.bold(e.name)}: ${e.headline}`, ""];
  const labelWidth = Math.max(...e.facts.map(([l]) => l.length), 0) + 2;
  for (const [label, value] of e.facts) out.push(`  ${label.padEnd(labelWidth)}${value}`);
  if (e.conditions.length > 0) {
    out.push("", "Conditions:");
    const rows = e.conditions.map((c) => [
      c.type,
      c.status,
      c.reason,
      ago(parseTime(c.lastTransitionTime), now).replace(/ ago$/, "") || "-",
      c.message,
    ]);
    out.push(
      ...table(
        ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
        rows,
        (row, text) => conditionColor(style, row[0], row[1], text),
      ),
    );
  }
  out.push("", `Events (latest ${WHY_EVENTS}):`);
  if (e.events.length === 0) out.push("  none");
  else {
    const rows = e.events.map((ev) => [
      ago(eventTime(ev), now).replace(/ ago$/, "") || "-",
      ev.type ?? "",
      ev.reason ?? "",
      `${ev.message ?? ""}${(ev.count ?? 1) > 1 ? ` (×${ev.count})` : ""}`,
    ]);
    out.push(
      ...table(
        ["AGE", "TYPE", "REASON", "MESSAGE"],
        rows,
        (row, text) => row[1] === "Warning" ? style.yellow(text) : text,
      ),
    );
  }
  return out.join("\n") + "\n";
}

/** The conditions whose True is bad are red when True; RebootAllowed is green when True. */
function conditionColor(style: Style, type: string, status: string, text: string): string {
  if ((type === "Degraded" || type === "Stalled") && status === "True") return style.red(text);
  if (type === "RebootAllowed" && status === "True") return style.green(text);
  return text;
}

function table(
  header: string[],
  rows: string[][],
  paintRow: (row: string[], text: string) => string,
): string[] {
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (i === header.length - 1 ? 0 : r[i].length)))
  );
  const line = (cells: string[]) =>
    ("  " + cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join("  "))
      .trimEnd();
  return [line(header), ...rows.map((r) => paintRow(r, line(r)))];
}
