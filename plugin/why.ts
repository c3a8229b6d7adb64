/**
 * `kubectl bootc why NODE`: one explanation of where a node stands in its
 * pool's rollout and what it waits for, from the same facts the controller and
 * the daemon decide on: the BootcNode (spec, status, conditions), the Node's
 * disruption record, the pool's status and gates, the slot queue and the events.
 *
 * @module
 */
import {
  ANNOTATION_WAS_CORDONED,
  IdleReason,
  NodeConditionType,
  RebootAllowedReason,
} from "../lib/api/constants.ts";
import { disruptionRecord } from "../lib/api/annotations.ts";
import { findCondition } from "../lib/api/conditions.ts";
import { ago, clock, ordinal, shortDigest, shortImage } from "./format.ts";
import type { BootcNode, BootcNodePool, Condition, EventLike, NodeLike } from "./model.ts";
import { eventTime, nodeReady, parseTime } from "./model.ts";
import {
  type Blocker,
  classifyNode,
  digestOf,
  disrupted,
  entryProvides,
  owningPool,
  poolBlockers,
  poolMembers,
  poolTarget,
} from "./progress.ts";
import { resolveMaxUnavailable, slotHolders, slotQueue } from "./slot_queue.ts";
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
  const events = [...input.events]
    .filter((e) =>
      e.involvedObject?.name === name &&
      (e.involvedObject.kind === "BootcNode" || e.involvedObject.kind === "Node")
    )
    .sort((a, b) => (eventTime(a)?.getTime() ?? 0) - (eventTime(b)?.getTime() ?? 0))
    .slice(-WHY_EVENTS);
  const facts: [string, string][] = [];
  const result = (headline: string): Explanation => ({
    name,
    headline,
    facts,
    conditions: bn?.status?.conditions ?? [],
    events,
  });
  const record = node ? disruptionRecord(node) : {};
  const nodeFacts = (): [string, string][] =>
    node ? [["node", nodeFact(node)], ["disruption", recordFact(record, bn, now)]] : [];

  if (!bn) {
    facts.push(...nodeFacts());
    if (!node) return result(`there is no Node and no BootcNode named ${name}`);
    return result(
      Object.keys(record).length > 0
        ? "no BootcNode, but the Node carries a disruption record: the controller of the pool " +
          `named in it (${record.pool ?? "unknown"}) restores it`
        : "not managed: no pool selects this node (it has no BootcNode)",
    );
  }

  const poolName = owningPool(bn);
  const pool = input.pools.find((p) => p.metadata?.name === poolName);
  const target = pool ? poolTarget(pool) : undefined;
  const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
  const bucket = classifyNode(bn, node, target);
  const idleText = idle
    ? ` (Idle=${idle.status}/${idle.reason}, ${ago(parseTime(idle.lastTransitionTime), now)})`
    : "";
  facts.push(
    ["pool", poolName ? `${poolName} → ${shortImage(pool?.status?.targetImage)}` : "none"],
    ["phase", `${bucket}${idleText}`],
    ["desired", `${shortImage(bn.spec?.desiredImage)} (${bn.spec?.desiredImageState})`],
    ["booted", entryFact(bn.status?.booted)],
    ["staged", entryFact(bn.status?.staged)],
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
  const mentions = poolMentions(pool, name);

  const degraded = findCondition(bn.status?.conditions, NodeConditionType.Degraded);
  const stalled = findCondition(bn.status?.conditions, NodeConditionType.Stalled);
  const inFlight = disrupted(bn, node);
  const desiredDigest = digestOf(bn.spec?.desiredImage);

  // The queue matters for every node that could wait for a slot.
  const queue = slotQueue(pool, input.bootcNodes, input.nodes);
  const members = poolMembers(poolName, input.bootcNodes).length;
  const max = resolveMaxUnavailable(pool.spec?.rollout?.maxUnavailable, members);
  const holders = slotHolders(poolName, input.nodes.values());
  const slotsText = `${holders.length}/${max ?? "?"} slot(s) in use` +
    (holders.length > 0 ? ` (${holders.join(", ")})` : "");
  const position = queue.indexOf(name);
  facts.push([
    "slot queue",
    position >= 0
      ? `${ordinal(position + 1)} of ${queue.length}: ${
        queue.map((n) => (n === name ? `[${n}]` : n)).join(", ")
      } · ${slotsText}`
      : `not a candidate · ${queue.length} waiting · ${slotsText}`,
  ]);

  if (degraded?.status === "True") {
    return result(`degraded: ${degraded.message || degraded.reason}` + inFlightNote(inFlight));
  }
  if (stalled?.status === "True") {
    return result(`stalled (${stalled.reason}): ${stalled.message}` + inFlightNote(inFlight));
  }

  if (inFlight) return result(inFlightHeadline(bn, node, record, target, mentions, now));

  if (target && entryProvides(bn.status?.booted, target)) {
    return result(`up to date: runs ${shortImage(pool.status?.targetImage)}`);
  }
  if (!target) return result(`the pool has no target image yet${mentionText(mentions)}`);
  if (desiredDigest !== target.digest) {
    const queued = blockers.find((b) => b.reason === "StagingLimit");
    return result(
      queued
        ? `queued for staging: ${queued.message}`
        : "waiting for the controller to give it the new target " +
          `(desired ${shortDigest(desiredDigest)}, target ${shortDigest(target.digest)})`,
    );
  }
  if (bucket === "staging") {
    return result(
      `downloading ${shortImage(bn.spec?.desiredImage)} (staging since ${
        clock(parseTime(idle?.lastTransitionTime) ?? now)
      })`,
    );
  }
  if (bucket === "staged") {
    if (!node) return result("staged, but its Node is missing: not a slot candidate");
    if (!nodeReady(node)) return result("staged, but its Node is not Ready: not a slot candidate");
    const wait = blockers.find((b) => b.kind === "wait");
    const halted = blockers.find((b) => b.reason === "RolloutHalted");
    const place = `${ordinal(position + 1)} of ${queue.length} in the slot queue`;
    if (halted) {
      return result(`staged, waiting for a reboot slot (${place}): the rollout is halted`);
    }
    if (wait) {
      return result(
        `staged, waiting for a reboot slot (${place}): the pool waits (${wait.reason})`,
      );
    }
    const free = max === undefined ? 0 : Math.max(0, max - holders.length);
    if (position < free) {
      return result(
        `staged, next for a reboot slot (${place}, ${free} free)${mentionText(mentions)}`,
      );
    }
    return result(
      `staged, waiting for a reboot slot (${place}); ${slotsText}${mentionText(mentions)}`,
    );
  }
  // Pending on the target: the daemon has not moved yet.
  const reported = bn.status?.observedGeneration;
  const generation = bn.metadata?.generation;
  if (generation !== undefined && (reported === undefined || reported < generation)) {
    return result("waiting for the daemon to report on its current spec (it has not yet)");
  }
  return result(
    `waiting for the daemon to start staging${idle?.message ? ` (${idle.message})` : ""}`,
  );
}

/** The headline of a node the operator is disrupting. */
function inFlightHeadline(
  bn: BootcNode,
  node: NodeLike | undefined,
  record: ReturnType<typeof disruptionRecord>,
  target: ReturnType<typeof poolTarget>,
  mentions: string[],
  now: Date,
): string {
  const idle = findCondition(bn.status?.conditions, NodeConditionType.Idle);
  const allowed = findCondition(bn.status?.conditions, NodeConditionType.RebootAllowed);
  const slotAt = parseTime(record.slotAt);
  if (record.slotAt === undefined) {
    return "the operator is finishing or undoing its work here (a disruption record without a " +
      `reboot slot)${mentionText(mentions)}`;
  }
  if (target && entryProvides(bn.status?.booted, target)) {
    return node && !nodeReady(node)
      ? "back on the target image; waiting for the Node to become Ready before the slot is released"
      : "back on the target image and Ready; the slot is released once minReadySeconds have " +
        "passed and the controller's next reconcile runs";
  }
  if (idle?.status === "False" && idle.reason === IdleReason.Rebooting) {
    return `rebooting into ${shortImage(bn.spec?.desiredImage)} (since ${
      ago(parseTime(idle.lastTransitionTime), now)
    })`;
  }
  const drained = record.drainedAt !== undefined && record.drainedFor === bn.spec?.desiredImage;
  if (!drained) {
    return `holds a reboot slot (taken ${ago(slotAt, now)}); draining: cordoned, evicting its ` +
      `pods${mentionText(mentions)}`;
  }
  if (bn.spec?.desiredImageState !== "Booted") {
    return "drained; waiting for the controller to request the reboot (desiredImageState Booted)";
  }
  if (allowed?.status === "False" && allowed.reason !== RebootAllowedReason.SlotAndDrain) {
    return `reboot requested, but the daemon refuses (${allowed.reason}): ${allowed.message}`;
  }
  return "reboot requested and allowed; waiting for the daemon to apply the staged image";
}

function inFlightNote(inFlight: boolean): string {
  return inFlight ? " (it holds its reboot slot until it recovers or the controller gives up)" : "";
}

/** Fragments of the pool's condition messages that name the node (e.g. a PDB wait). */
export function poolMentions(pool: BootcNodePool, name: string): string[] {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  // The name as a whole word: "n1" must not match "n10".
  const word = new RegExp(`(^|[^A-Za-z0-9.-])${escaped}($|[^A-Za-z0-9-])`);
  const out: string[] = [];
  for (const c of pool.status?.conditions ?? []) {
    for (const fragment of c.message.split("; ")) {
      if (word.test(fragment) && !out.includes(fragment)) out.push(fragment);
    }
  }
  return out;
}

function mentionText(mentions: string[]): string {
  return mentions.length > 0 ? `; the pool says: ${mentions.join("; ")}` : "";
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

function recordFact(
  record: ReturnType<typeof disruptionRecord>,
  bn: BootcNode | undefined,
  now: Date,
): string {
  const parts: string[] = [];
  if (record.slotAt !== undefined) {
    parts.push(`reboot slot since ${stamp(record.slotAt, now)} for pool ${record.pool ?? "?"}`);
  }
  if (record.wasCordoned !== undefined) parts.push(`was cordoned before: ${record.wasCordoned}`);
  if (record.drainedAt !== undefined) {
    const forDesired = record.drainedFor === bn?.spec?.desiredImage;
    parts.push(
      `drained ${stamp(record.drainedAt, now)} for ${shortImage(record.drainedFor)}` +
        (bn ? (forDesired ? " (the desired image)" : " (NOT the desired image)") : ""),
    );
  }
  const mirror = bn?.metadata?.annotations?.[ANNOTATION_WAS_CORDONED];
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
