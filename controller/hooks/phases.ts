/**
 * Which hook phases a plan reaches, read purely from what the plan already
 * decided (hooks decide nothing of their own):
 *
 * | phase                  | the plan…                                                        |
 * | ---------------------- | ---------------------------------------------------------------- |
 * | `NodePreDrain`         | grants the node a reboot slot (the write marked `grant`): the drain starts next |
 * | `NodePreReboot`        | sets the node's BootcNode `desiredImageState: Booted` (reboot requested) |
 * | `NodePostVerification` | releases the node verified (its `NodeUpdated` event)             |
 * | `RolloutStarted`       | adds a revision to `status.history`                              |
 * | `RolloutCompleted`     | turns a revision `Succeeded`                                     |
 * | `RolloutHalted`        | turns a revision `Failed`, or the pool's `status.state` `Halted` |
 * | `RolloutRolledBack`    | turns a revision `RolledBack`                                    |
 *
 * Pool phases compare the stored status with the plan's, so a phase is found
 * once per change the plan makes. Each occurrence carries a deterministic id
 * (pool, revision, phase; for a node its name and slot time) that receivers can
 * de-duplicate on, and the shell too when a reconcile plans a write again.
 *
 * @module
 */
import {
  ANNOTATION_IN_REBOOT_SLOT,
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  type HookPhase,
  type HookSpec,
  type Revision,
  RevisionOutcome,
} from "../../lib/api/mod.ts";
import { PoolState } from "../../lib/api/pool_state.ts";
import { formatTime } from "../model/slots.ts";
import type { NodeSummary } from "../model/types.ts";
import { type Action, isSlotGrant, type PlannedEvent } from "../planner/plan.ts";

/** The event the planner records when a verified node's slot is released. */
export const NODE_UPDATED_REASON = "NodeUpdated";

/** An image as hooks report it. */
export interface HookImage {
  image?: string;
  digest?: string;
}

/** One phase the plan reached. */
export interface HookOccurrence {
  /** Deterministic: receivers de-duplicate on it. */
  id: string;
  phase: HookPhase;
  pool: string;
  node?: string;
  /** The revision (status.history) the phase belongs to; 0 when none is known. */
  revision: number;
  /** The image rolled out. */
  target: HookImage;
  /** The image the node runs (node phases, when reported). */
  booted?: HookImage;
  /** When the plan reached it (RFC 3339). */
  time: string;
}

/** What {@linkcode hookOccurrences} reads. */
export interface HookPhaseInput {
  /** The pool as planned: its stored status is the "before". */
  pool: BootcNodePool;
  plan: {
    actions: readonly Action[];
    events: readonly PlannedEvent[];
    status?: BootcNodePoolStatus;
  };
  /** Nodes and BootcNodes the plan was made from. */
  nodes: ReadonlyMap<string, NodeSummary>;
  bootcNodes: ReadonlyMap<string, BootcNode>;
  now: Date;
}

/**
 * The phases `input.plan` reaches: node phases, slots ending before slots starting (a
 * release's `NodePostVerification` goes out before the drain of the node taking its slot),
 * each kind in plan order; then the pool's.
 */
export function hookOccurrences(input: HookPhaseInput): HookOccurrence[] {
  const nodes = nodeOccurrences(input).sort((a, b) => SLOT_ORDER[a.phase] - SLOT_ORDER[b.phase]);
  return [...nodes, ...poolOccurrences(input)];
}

/** Where a node phase stands in a plan's hand-off of slots: ends first, then starts. */
const SLOT_ORDER: Record<string, number> = {
  NodePostVerification: 0,
  NodePreReboot: 1,
  NodePreDrain: 2,
};

/** A write the shell made (its store and object name), as `cache_guard.ts` records it. */
export interface WrittenRef {
  store: string;
  name: string;
}

/**
 * The occurrences whose writes went through: a node's phase needs a write of
 * that node (its Node or BootcNode), a pool's its status write. The rest were
 * not reached after all (a conflict, an API error, a status write not yet due);
 * the next reconcile plans them again from the same facts, so none is lost and
 * no receiver hears of a drain or a reboot that did not start.
 */
export function writtenOccurrences(
  occurrences: readonly HookOccurrence[],
  written: readonly WrittenRef[],
): HookOccurrence[] {
  const wrote = (store: string, name: string) =>
    written.some((w) => w.store === store && w.name === name);
  return occurrences.filter((o) =>
    o.node !== undefined
      ? wrote("nodes", o.node) || wrote("bootcNodes", o.node)
      : wrote("pools", o.pool)
  );
}

/** The hooks of `hooks` that want `phase` (unset phases: all). */
export function hooksFor(hooks: readonly HookSpec[] | undefined, phase: HookPhase): HookSpec[] {
  return (hooks ?? []).filter((h) => !h.phases || h.phases.includes(phase));
}

/** The node phase an action or event of the plan is, with its node and (a grant's) slot time. */
function nodePhaseOf(
  input: HookPhaseInput,
  item: Action | PlannedEvent,
): { phase: HookPhase; node: string; slotAt?: string } | undefined {
  if (!("kind" in item)) {
    const node = item.regarding.name;
    return item.regarding.kind === "Node" && item.reason === NODE_UPDATED_REASON &&
        input.bootcNodes.has(node)
      ? { phase: "NodePostVerification", node }
      : undefined;
  }
  if (item.kind === "patchNode" && isSlotGrant(item)) {
    return { phase: "NodePreDrain", node: item.node, slotAt: slotTimeOf(item.patch) };
  }
  if (item.kind !== "patchBootcNode") return undefined;
  const spec = item.patch.spec as { desiredImageState?: string } | undefined;
  return spec?.desiredImageState === "Booted"
    ? { phase: "NodePreReboot", node: item.node }
    : undefined;
}

function nodeOccurrences(input: HookPhaseInput): HookOccurrence[] {
  const out: HookOccurrence[] = [];
  const poolName = input.pool.metadata.name ?? "";
  const history = input.plan.status?.history ?? input.pool.status?.history;
  for (const item of [...input.plan.actions, ...input.plan.events]) {
    const found = nodePhaseOf(input, item);
    if (!found) continue;
    const { phase, node } = found;
    const bn = input.bootcNodes.get(node);
    const target = bn?.spec.desiredImage;
    const revision = revisionOf(history, target);
    // The slot's time tells a node's second update within one revision from its first.
    const slotAt = found.slotAt ?? input.nodes.get(node)?.annotations?.[ANNOTATION_IN_REBOOT_SLOT];
    const booted = bn?.status?.booted;
    out.push({
      id: [poolName, `r${revision}`, node, phase, slotAt ?? "-"].join("/"),
      phase,
      pool: poolName,
      node,
      revision,
      target: { image: target, digest: digestOf(target) },
      ...(booted ? { booted: { image: booted.image, digest: booted.imageDigest } } : {}),
      time: formatTime(input.now),
    });
  }
  return out;
}

const OUTCOME_PHASE: Partial<Record<string, HookPhase>> = {
  [RevisionOutcome.Succeeded]: "RolloutCompleted",
  [RevisionOutcome.Failed]: "RolloutHalted",
  [RevisionOutcome.RolledBack]: "RolloutRolledBack",
};

function poolOccurrences(input: HookPhaseInput): HookOccurrence[] {
  const after = input.plan.status;
  if (!after) return [];
  const before = input.pool.status;
  const prior = new Map((before?.history ?? []).map((r) => [r.revision, r]));
  const found: { phase: HookPhase; revision: Revision }[] = [];
  for (const r of after.history ?? []) {
    const old = prior.get(r.revision);
    if (!old) found.push({ phase: "RolloutStarted", revision: r });
    const phase = OUTCOME_PHASE[r.outcome];
    if (phase && old?.outcome !== r.outcome) found.push({ phase, revision: r });
  }
  const last = after.history?.at(-1);
  if (last && after.state === PoolState.Halted && before?.state !== PoolState.Halted) {
    if (!found.some((f) => f.phase === "RolloutHalted" && f.revision === last)) {
      found.push({ phase: "RolloutHalted", revision: last });
    }
  }
  const poolName = input.pool.metadata.name ?? "";
  return found.map(({ phase, revision: r }) => ({
    id: [poolName, `r${r.revision}`, phase].join("/"),
    phase,
    pool: poolName,
    revision: r.revision,
    target: { image: r.image, digest: r.digest },
    time: formatTime(input.now),
  }));
}

/** The newest revision rolling out `image`, else the newest; 0 without history. */
function revisionOf(history: readonly Revision[] | undefined, image: string | undefined): number {
  const list = history ?? [];
  const match = [...list].reverse().find((r) => r.image === image);
  return (match ?? list.at(-1))?.revision ?? 0;
}

function slotTimeOf(patch: Record<string, unknown>): string | undefined {
  const annotations = (patch.metadata as { annotations?: Record<string, string> } | undefined)
    ?.annotations;
  return annotations?.[ANNOTATION_IN_REBOOT_SLOT];
}

function digestOf(image: string | undefined): string | undefined {
  const at = image?.lastIndexOf("@") ?? -1;
  return image && at >= 0 ? image.slice(at + 1) : undefined;
}
