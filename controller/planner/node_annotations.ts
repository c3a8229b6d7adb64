/**
 * The Node tells its story (MCO-style): on each Node of a pool, the image it
 * boots and its version, the image it should run, and the operator's state for
 * it (`bootc.dev/current-image`, `current-version`, `desired-image`, `state`).
 * Pure: the planner computes the changes, the shell folds them into the Node
 * writes it makes anyway ({@linkcode foldNodeAnnotations}).
 *
 * These are read-only facts for people (`kubectl describe node`), never part of
 * the disruption record: no decision reads them, and a watch event that
 * changes only them wakes no pool. Images are in short form (repository and a
 * 12-hex digest): the full references live once in the BootcNode, and a short
 * value can never be mistaken for one a reboot could be authorised on.
 *
 * The values are those the node will have **after** the plan's writes: a node
 * the plan grants a slot is already Draining in the grant's own write, one it
 * releases is Updated in the release's. So the writes that carry the disruption
 * record carry the annotations too, and only changes the daemon makes (a new
 * desired image acknowledged, booted) cost a Node write of their own; its
 * Staging, and its Staged while slots are handed out, wait for a write made
 * anyway ({@linkcode RIDE_ALONG_STATES}).
 * A value is written only when it differs from the Node's.
 *
 * @module
 */
import {
  ANNOTATION_CURRENT_IMAGE,
  ANNOTATION_CURRENT_VERSION,
  ANNOTATION_DESIRED_IMAGE,
  ANNOTATION_NODE_STATE,
  ANNOTATION_STATE_SINCE,
  type BootcNode,
  NODE_INFO_ANNOTATIONS,
} from "../../lib/api/mod.ts";
import { shortDigest, shortReference } from "../../lib/api/display.ts";
import {
  classifyNode,
  type DesiredImage,
  type NodeClassification,
  NodeState,
} from "../../lib/api/node_state.ts";
import type { Action, MergePatch } from "./plan.ts";
import type { NodeSummary } from "../model/types.ts";

/** Changes to a Node's annotations: a value to set, `null` to remove. */
export type AnnotationChanges = Record<string, string | null>;

/** What {@linkcode nodeAnnotations} reads of a member (the planner's `Member` fits). */
export interface AnnotatedMember {
  node: NodeSummary;
  /** The BootcNode as the plan's sync leaves it (undefined: being created). */
  bn?: BootcNode;
  cls: NodeClassification;
  desired?: DesiredImage;
  /** What `cls` was classified with. */
  context?: {
    desired?: DesiredImage;
    poolTarget?: DesiredImage;
    heldBy?: { reason: string; message: string };
    external?: boolean;
  };
}

/** The short form of an image: `repo@sha256:0123456789ab` (a tag ref gets the digest added). */
export function shortImage(image: string | undefined, digest?: string): string | undefined {
  if (!image) return digest ? `sha256:${shortDigest(digest)}` : undefined;
  if (/@sha256:[a-f0-9]{64}$/.test(image)) return shortReference(image);
  return digest ? `${image}@sha256:${shortDigest(digest)}` : image;
}

/** The four annotations' values for a node with BootcNode `bn` in `state` (absent: removed). */
export function nodeInfo(
  bn: Pick<BootcNode, "spec" | "status"> | undefined,
  state: string,
): Record<string, string | undefined> {
  const booted = bn?.status?.booted;
  return {
    [ANNOTATION_CURRENT_IMAGE]: shortImage(booted?.image, booted?.imageDigest),
    [ANNOTATION_CURRENT_VERSION]: booted?.version || undefined,
    [ANNOTATION_DESIRED_IMAGE]: shortImage(bn?.spec.desiredImage),
    [ANNOTATION_NODE_STATE]: state,
  };
}

/**
 * What to change on a Node whose annotations are `current` so it carries
 * `wanted` (undefined: none of the four); undefined when nothing changes.
 */
export function infoChanges(
  current: Readonly<Record<string, string>> | undefined,
  wanted: Readonly<Record<string, string | undefined>> | undefined,
): AnnotationChanges | undefined {
  const changes: AnnotationChanges = {};
  for (const key of NODE_INFO_ANNOTATIONS) {
    const want = wanted?.[key];
    const have = current?.[key];
    if (want === have) continue;
    if (want !== undefined) changes[key] = want;
    else if (have !== undefined) changes[key] = null;
  }
  return Object.keys(changes).length > 0 ? changes : undefined;
}

/** RFC 7386 JSON merge patch of `patch` onto `target` (a new value; neither is changed). */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target !== null && typeof target === "object" && !Array.isArray(target)
      ? { ...target as Record<string, unknown> }
      : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete base[k];
    else base[k] = applyMergePatch(base[k], v);
  }
  return base;
}

/** A Node summary as `patches` (merge patches of the Node, in order) leave it. */
export function projectNode(node: NodeSummary, patches: readonly MergePatch[]): NodeSummary {
  let out = node;
  for (const p of patches) {
    const metadata = p.metadata as MergePatch | undefined;
    const spec = p.spec as MergePatch | undefined;
    out = {
      ...out,
      ...(metadata?.annotations
        ? {
          annotations: applyMergePatch(out.annotations ?? {}, metadata.annotations) as Record<
            string,
            string
          >,
        }
        : {}),
      ...(metadata?.labels
        ? { labels: applyMergePatch(out.labels, metadata.labels) as Record<string, string> }
        : {}),
      ...(spec && Object.hasOwn(spec, "unschedulable")
        ? { unschedulable: spec.unschedulable === true }
        : {}),
    };
  }
  return out;
}

/** The plan's writes, per node. */
export interface Touched {
  nodePatches: MergePatch[];
  /** The BootcNode as created by the plan, then its patches (spec and status) in order. */
  created?: BootcNode;
  bnPatches: MergePatch[];
  deleted: boolean;
}

export function touchedNodes(actions: readonly Action[]): Map<string, Touched> {
  const out = new Map<string, Touched>();
  const of = (node: string) => {
    let t = out.get(node);
    if (!t) out.set(node, t = { nodePatches: [], bnPatches: [], deleted: false });
    return t;
  };
  for (const a of actions) {
    switch (a.kind) {
      case "patchNode":
        of(a.node).nodePatches.push(a.patch);
        break;
      case "createBootcNode":
        of(a.node).created = a.object;
        break;
      case "patchBootcNode":
      case "patchBootcNodeStatus":
        of(a.node).bnPatches.push(a.patch);
        break;
      case "deleteBootcNode":
        of(a.node).deleted = true;
        break;
    }
  }
  return out;
}

/** A member's classification once the plan's writes are applied (its own if there are none). */
export function classifiedAfter(
  m: AnnotatedMember,
  t: Touched | undefined,
): { cls: NodeClassification; bn?: BootcNode } {
  if (!t || (t.nodePatches.length === 0 && t.bnPatches.length === 0 && !t.created)) {
    return { cls: m.cls, bn: m.bn };
  }
  let bn: BootcNode | undefined = m.bn ?? t.created;
  for (const p of t.bnPatches) if (bn) bn = applyMergePatch(bn, p) as BootcNode;
  const ctx = m.context ?? {};
  const cls = classifyNode({
    bootcNode: bn,
    node: projectNode(m.node, t.nodePatches),
    target: ctx.desired ?? m.desired,
    poolTarget: ctx.poolTarget,
    heldBy: ctx.heldBy,
    external: ctx.external,
    member: true,
  });
  return { cls, bn };
}

/** Input of {@linkcode nodeAnnotations}. */
export interface NodeAnnotationsInput {
  /** The pool's members after the plan's decisions (none while it is deleted). */
  members: readonly AnnotatedMember[];
  /** The plan's writes, in order. */
  actions: readonly Action[];
  /** Every Node, by name, as the caches see it. */
  nodes: ReadonlyMap<string, NodeSummary>;
  /** True while no grant is coming (a gate holds the slots, a halt): Staged is written at once. */
  held?: boolean;
}

/**
 * The Node annotation changes of a plan: each member's four values as the plan
 * leaves it, where they differ from its Node's; a node the plan hands back (its
 * Node patched or its BootcNode deleted, no longer a member) loses them.
 */
export function nodeAnnotations(input: NodeAnnotationsInput): Map<string, AnnotationChanges> {
  const touched = touchedNodes(input.actions);
  const out = new Map<string, AnnotationChanges>();
  const members = new Set<string>();
  for (const m of input.members) {
    const name = m.node.name;
    members.add(name);
    const node = input.nodes.get(name);
    if (!node) continue;
    const t = touched.get(name);
    const { cls, bn } = classifiedAfter(m, t);
    const changes = infoChanges(node.annotations, nodeInfo(bn, cls.state));
    if (!changes) continue;
    // A daemon-reached state (RIDE_ALONG_STATES) with no Node write to ride along waits.
    const shown = node.annotations?.[ANNOTATION_NODE_STATE];
    if (!t?.nodePatches.length && ridesAlongOnly(changes, shown, { held: input.held === true })) {
      continue;
    }
    out.set(name, changes);
  }
  for (const name of touched.keys()) {
    if (members.has(name)) continue;
    const changes = infoChanges(input.nodes.get(name)?.annotations, undefined);
    if (changes) out.set(name, changes);
  }
  return out;
}

/**
 * States the daemon reaches on its own that are worth no display write of
 * their own when shown after Pending (a Node or BootcNode write made anyway
 * carries them): Staging, which passes, and Staged while slots are being
 * handed out, since the node then waits for its slot, which is what Pending
 * says, and its grant's write shows the next state. The daemon's own report
 * shows them meanwhile (the Idle condition, the BootcNode's PHASE column, the
 * plugin's classification). Staged is written at once while no grant is coming
 * (a gate holds the pool: paused, a closed window, an approval, an external
 * orchestrator; or the rollout is halted), after Staging (a shown Staging must not outlive the
 * download), and from any other state (Degraded, Failed, …): a stale view must
 * not keep saying something worse, or something else for long.
 */
export const RIDE_ALONG_STATES: ReadonlyMap<string, { whileHeld: boolean }> = new Map([
  [NodeState.Staging, { whileHeld: true }],
  [NodeState.Staged, { whileHeld: false }],
]);

/** When display states may wait for a write made anyway. */
export interface RideAlong {
  /** True while no grant is coming (a gate holds the pool's slots: paused, External, …). */
  held: boolean;
}

/**
 * True when display `changes` to annotations showing `shown` (Pending) only
 * move it into a {@linkcode RIDE_ALONG_STATES} one (with its `state-since`,
 * on a BootcNode) that may wait.
 */
export function ridesAlongOnly(
  changes: Readonly<Record<string, string | null>>,
  shown: string | undefined,
  o: RideAlong,
): boolean {
  const state = changes[ANNOTATION_NODE_STATE];
  if (typeof state !== "string" || shown !== NodeState.Pending) return false;
  const rule = RIDE_ALONG_STATES.get(state);
  if (!rule || (o.held && !rule.whileHeld)) return false;
  return Object.keys(changes).every((k) =>
    k === ANNOTATION_NODE_STATE || k === ANNOTATION_STATE_SINCE
  );
}

/** Why the shell sends an annotation-only Node write. */
export const NODE_ANNOTATIONS_WHY = "node annotations";

/**
 * `actions` with the annotation `changes` folded in: into the last Node patch
 * the plan makes for that node (the values are those after the plan), else in
 * an annotation-only Node patch of its own, intent `annotate`, after the others.
 */
export function foldNodeAnnotations(
  actions: readonly Action[],
  changes: ReadonlyMap<string, AnnotationChanges> | undefined,
): Action[] {
  const out = [...actions];
  if (!changes || changes.size === 0) return out;
  const last = new Map<string, number>();
  out.forEach((a, i) => {
    if (a.kind === "patchNode") last.set(a.node, i);
  });
  for (const [node, set] of changes) {
    const i = last.get(node);
    const a = i === undefined ? undefined : out[i];
    if (a?.kind !== "patchNode") {
      out.push({
        kind: "patchNode",
        node,
        patch: { metadata: { annotations: set } },
        why: NODE_ANNOTATIONS_WHY,
        intent: "annotate",
      });
      continue;
    }
    const metadata = (a.patch.metadata ?? {}) as MergePatch;
    const annotations = { ...(metadata.annotations as MergePatch | undefined), ...set };
    out[i!] = { ...a, patch: { ...a.patch, metadata: { ...metadata, annotations } } };
  }
  return out;
}

/**
 * `actions` (writes handing nodes back, none of them members of any pool) with
 * the Node annotations for people removed from each node they patch.
 */
export function withoutNodeInfo(
  actions: readonly Action[],
  nodes: ReadonlyMap<string, NodeSummary>,
): Action[] {
  return foldNodeAnnotations(actions, nodeAnnotations({ members: [], actions, nodes }));
}
