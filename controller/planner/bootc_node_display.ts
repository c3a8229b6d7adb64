/**
 * What `kubectl get bootcnodes` shows of a node besides what its daemon
 * reports: its state (the one classification's, `lib/api/node_state.ts`),
 * what it is about where the state alone does not say (the check a Failed
 * node failed, what a Stalled one waits on), since when, and its desired
 * image in short form, as annotations the controller writes on the BootcNode
 * (`bootc.dev/state`, `state-detail`, `state-since`, `target`; the printer
 * columns read them, `lib/api/crd.ts`).
 *
 * Why annotations the controller writes: the controller already writes the
 * BootcNode (spec, the prior-cordon mirror), so least privilege is kept (the
 * daemon writes only its own BootcNode's status, and replaces that status
 * whole); metadata writes leave `generation` alone, so the daemon's
 * `observedGeneration` rule is untouched; and nothing decides on them.
 *
 * Writes are kept low the way the Node's annotations are (`node_annotations.ts`):
 * the values are those the node has **after** the plan's writes (a granted node
 * is Draining in its grant's mirror write, a released one Updated in its
 * release), so they ride along with the BootcNode writes the plan makes anyway;
 * only changes the daemon makes (booted) cost a write of their own, not its
 * Staging, nor its Staged while slots are handed out (`RIDE_ALONG_STATES`: the
 * PHASE column shows them). The shell folds them in
 * ({@linkcode foldBootcNodeDisplay}).
 *
 * @module
 */
import {
  ANNOTATION_NODE_STATE,
  ANNOTATION_STATE_DETAIL,
  ANNOTATION_STATE_SINCE,
  ANNOTATION_TARGET_SHORT,
  type BootcNode,
} from "../../lib/api/mod.ts";
import { imageSummary } from "../../lib/api/display.ts";
import { type NodeClassification, NodeState } from "../../lib/api/node_state.ts";
import {
  type AnnotatedMember,
  classifiedAfter,
  ridesAlongOnly,
  touchedNodes,
} from "./node_annotations.ts";
import type { Action, MergePatch } from "./plan.ts";
import { formatTime } from "../model/slots.ts";
import type { Target } from "../model/types.ts";
import type { TargetLabel } from "./target_label.ts";

/** Annotation changes of one BootcNode. */
export type DisplayChanges = Record<string, string>;

/** Input of {@linkcode bootcNodeDisplay}. */
export interface BootcNodeDisplayInput {
  /** The pool's members after the plan's decisions. */
  members: readonly AnnotatedMember[];
  /** The plan's writes, in order. */
  actions: readonly Action[];
  /** The pool's target and how people name it (its tag). */
  target?: Target;
  label?: TargetLabel;
  now: Date;
  /** True while no grant is coming (a gate holds the slots, a halt): Staged is written at once. */
  held?: boolean;
}

/**
 * The short form of a desired image: the pool's tag and 12 hex digits when it is
 * the target, else the digest's 12 hex digits (a rollback image). No version:
 * it becomes known only once a node staged the image, and would rewrite every
 * BootcNode; the VERSION column is the booted one's.
 */
export function desiredShort(image: string, target?: Target, label?: TargetLabel): string {
  if (target && image === target.image) {
    return imageSummary({ tag: label?.tag, digest: target.digest });
  }
  return imageSummary({ ref: image });
}

/**
 * What a state is about, where the state alone does not say it: the check a
 * Failed node failed, the reason a Stalled one is stalled; "" otherwise (an
 * empty column, where an absent annotation would read `<none>`).
 */
export function stateDetail(cls: NodeClassification): string {
  if (cls.state === NodeState.Failed) return cls.failedCheck ?? cls.reason;
  if (cls.state === NodeState.Stalled) return cls.reason;
  return "";
}

/**
 * The BootcNode annotation changes of a plan: each member's state and desired
 * image as the plan leaves them, where they differ from its BootcNode's (a new
 * state restarts `state-since`). A BootcNode the plan deletes gets none.
 */
export function bootcNodeDisplay(input: BootcNodeDisplayInput): Map<string, DisplayChanges> {
  const touched = touchedNodes(input.actions);
  const written = new Set(
    input.actions.filter((a) => a.kind === "patchBootcNode" || a.kind === "createBootcNode")
      .map((a) => a.node),
  );
  const out = new Map<string, DisplayChanges>();
  for (const m of input.members) {
    const t = touched.get(m.node.name);
    if (t?.deleted) continue;
    const { cls, bn } = classifiedAfter(m, t);
    if (!bn || bn.metadata.deletionTimestamp) continue;
    const have = bn.metadata.annotations ?? {};
    const changes: DisplayChanges = {};
    const detail = stateDetail(cls);
    // The detail goes with every new state; an absent one reads "" (no write of its own).
    const detailChanged = (have[ANNOTATION_STATE_DETAIL] ?? "") !== detail;
    if (have[ANNOTATION_NODE_STATE] !== cls.state) {
      changes[ANNOTATION_NODE_STATE] = cls.state;
      changes[ANNOTATION_STATE_SINCE] = formatTime(input.now);
      if (detailChanged || have[ANNOTATION_STATE_DETAIL] === undefined) {
        changes[ANNOTATION_STATE_DETAIL] = detail;
      }
    } else if (detailChanged) {
      changes[ANNOTATION_STATE_DETAIL] = detail;
    }
    const short = desiredShort(bn.spec.desiredImage, input.target, input.label);
    if (have[ANNOTATION_TARGET_SHORT] !== short) changes[ANNOTATION_TARGET_SHORT] = short;
    if (Object.keys(changes).length === 0) continue;
    // A daemon-reached state (RIDE_ALONG_STATES) with no BootcNode write to ride along waits
    // (its detail is always empty).
    const held = input.held === true;
    const { [ANNOTATION_STATE_DETAIL]: _detail, ...shown } = changes;
    if (
      !written.has(m.node.name) && detail === "" &&
      ridesAlongOnly(shown, have[ANNOTATION_NODE_STATE], { held })
    ) {
      continue;
    }
    out.set(m.node.name, changes);
  }
  return out;
}

/** Why the shell sends an annotation-only BootcNode write. */
export const BOOTC_NODE_DISPLAY_WHY = "state for kubectl get";

/**
 * `actions` with the BootcNode annotation `changes` folded in: into the plan's
 * last BootcNode patch for that node (the values are those after the plan), or
 * the BootcNode it creates, else an annotation-only patch of its own (intent
 * `annotate`), after the others.
 */
export function foldBootcNodeDisplay(
  actions: readonly Action[],
  changes: ReadonlyMap<string, DisplayChanges> | undefined,
): Action[] {
  const out = [...actions];
  if (!changes || changes.size === 0) return out;
  const last = new Map<string, number>();
  out.forEach((a, i) => {
    if (a.kind === "patchBootcNode" || a.kind === "createBootcNode") last.set(a.node, i);
  });
  for (const [node, set] of changes) {
    const i = last.get(node);
    const a = i === undefined ? undefined : out[i];
    if (a?.kind === "createBootcNode") {
      const metadata = a.object.metadata;
      const object: BootcNode = {
        ...a.object,
        metadata: { ...metadata, annotations: { ...metadata.annotations, ...set } },
      };
      out[i!] = { ...a, object };
    } else if (a?.kind === "patchBootcNode") {
      const metadata = (a.patch.metadata ?? {}) as MergePatch;
      const annotations = { ...(metadata.annotations as MergePatch | undefined), ...set };
      out[i!] = { ...a, patch: { ...a.patch, metadata: { ...metadata, annotations } } };
    } else {
      out.push({
        kind: "patchBootcNode",
        node,
        patch: { metadata: { annotations: set } },
        why: BOOTC_NODE_DISPLAY_WHY,
        intent: "annotate",
      });
    }
  }
  return out;
}
