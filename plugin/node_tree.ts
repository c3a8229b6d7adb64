/**
 * The per-node tree of `status`: one row per member of a pool with an icon,
 * its state as the one classification gives it (`lib/api/node_state.ts`
 * `classifyNode`: the plugin renders it and decides nothing of its own), the
 * version it runs, its reboot slot or place in the published slot queue
 * (`status.queue`), and what it waits for.
 *
 * ```
 *   ├─ ✔ web-1  Updated   2.0
 *   ├─ ◌ web-2  Draining  1.0  slot  its pods to be evicted
 *   ├─ ॥ web-3  Staged    1.0  #1    a reboot slot (Paused)
 *   └─ ✖ web-4  Failed    2.0  slot  failed HostHealthy: bad.service
 * ```
 *
 * Columns are in order of importance, so a narrow terminal cuts the end of the
 * least important one.
 *
 * @module
 */
import { EffectiveState, type NodeClassification, NodeState } from "../lib/api/node_state.ts";
import type { QueueEntry } from "../lib/api/schema.ts";
import { failedChecksOn, namesHostCheck } from "../lib/api/verified.ts";
import { shortDigest, shortenDigests, truncate } from "./format.ts";
import type { BootcNode } from "./model.ts";
import type { Style } from "./style.ts";

/** The four icons of a node: updated, moving or waiting its turn, failed, held by a gate. */
export type NodeIcon = "updated" | "moving" | "failed" | "held";

/** The glyph of each icon (Argo Rollouts' set). */
export const NODE_GLYPH: Readonly<Record<NodeIcon, string>> = {
  updated: "✔",
  moving: "◌",
  failed: "✖",
  held: "॥",
};

/** One row of the tree. */
export interface NodeRow {
  name: string;
  icon: NodeIcon;
  /** The classification's state (`Updated`, `Draining`, `Stalled`, …). */
  state: string;
  /** The version the node boots (bootc's `version`), else its short digest. */
  version: string;
  /** `slot` while it holds a reboot slot, `#N` at position N of the slot queue, else "". */
  place: string;
  /** What it waits for, or what failed. */
  waits: string;
}

/**
 * Queue reasons that are a node's turn coming, not a hold: the budget in use,
 * the controller reading its pods, a drain elsewhere it must not collide with.
 */
const TURN_REASONS: ReadonlySet<string> = new Set([
  "BudgetExhausted",
  "ClusterBudgetExhausted",
  "PodList",
  "PodDisruptionBudget",
]);

/** Inputs of {@linkcode nodeRow}. */
export interface NodeRowInput {
  bn: BootcNode;
  cls: NodeClassification;
  /** Its entry in the published slot queue, if it is in it. */
  queued?: QueueEntry;
  /** The pool is paused. */
  paused: boolean;
}

/** One member's row (see the module doc). */
export function nodeRow(input: NodeRowInput): NodeRow {
  const { bn, cls, queued } = input;
  const booted = bn.status?.booted;
  return {
    name: bn.metadata?.name ?? "",
    icon: nodeIcon(input),
    state: cls.state,
    version: booted?.version || (booted?.imageDigest ? shortDigest(booted.imageDigest) : "-"),
    place: cls.disrupted ? "slot" : queued ? `#${queued.position}` : "",
    waits: shortenDigests(waitsText(input)),
  };
}

/** The icon: updated, failed, held by a gate (not its turn), or moving. */
export function nodeIcon(input: NodeRowInput): NodeIcon {
  const { cls, queued } = input;
  if (cls.counted === EffectiveState.UpToDate) return "updated";
  if (cls.counted === EffectiveState.Degraded) return "failed";
  if (cls.disrupted) return "moving";
  const held = cls.reason === "HeldBack" ||
    (queued !== undefined && !TURN_REASONS.has(queued.waitingFor)) ||
    (input.paused && (cls.state === NodeState.Staged || cls.state === NodeState.Pending));
  return held ? "held" : "moving";
}

function waitsText(input: NodeRowInput): string {
  const { bn, cls, queued } = input;
  if (cls.state === NodeState.Failed) {
    const units = namesHostCheck(failedChecksOn(bn.status, bn.spec.desiredImage))
      ? bn.status?.hostHealth?.failedUnits ?? []
      : [];
    return `failed ${cls.failedCheck ?? cls.reason}` +
      (units.length > 0 ? `: ${units.join(", ")}` : "");
  }
  if (cls.counted === EffectiveState.Degraded) return cls.message;
  if (queued) return `${cls.waitsFor || "a reboot slot"} (${queued.waitingFor})`;
  return cls.waitsFor;
}

/** Paints a row's icon and state: green, yellow, red, or dim for a hold. */
function paintIcon(style: Style, icon: NodeIcon, text: string): string {
  switch (icon) {
    case "updated":
      return style.green(text);
    case "failed":
      return style.red(text);
    case "held":
      return style.dim(text);
    default:
      return style.yellow(text);
  }
}

/**
 * The tree's lines, each at most `width` columns (Infinity: never cut). Columns
 * are aligned; an empty trailing column takes no room.
 */
export function renderTree(rows: readonly NodeRow[], style: Style, width: number): string[] {
  const w = (pick: (r: NodeRow) => string) => Math.max(0, ...rows.map((r) => pick(r).length));
  const name = w((r) => r.name);
  const state = w((r) => r.state);
  const version = w((r) => r.version);
  const place = w((r) => r.place);
  return rows.map((r, i) => {
    const branch = i === rows.length - 1 ? "└─" : "├─";
    const cells = [r.name.padEnd(name), r.state.padEnd(state), r.version.padEnd(version)];
    if (place > 0) cells.push(r.place.padEnd(place));
    cells.push(r.waits);
    const text = `  ${branch} ${NODE_GLYPH[r.icon]} ${cells.join("  ")}`.trimEnd();
    const fitted = Number.isFinite(width) ? truncate(text, width) : text;
    // The icon and the state are coloured; the rest stays plain.
    const head = `  ${branch} `;
    const iconAt = head.length;
    const stateAt = iconAt + 2 + name + 2;
    const stateEnd = stateAt + r.state.length;
    if (fitted.length < stateEnd) return fitted;
    return fitted.slice(0, iconAt) + paintIcon(style, r.icon, fitted.slice(iconAt, iconAt + 1)) +
      fitted.slice(iconAt + 1, stateAt) +
      paintIcon(style, r.icon, fitted.slice(stateAt, stateEnd)) +
      fitted.slice(stateEnd);
  });
}
