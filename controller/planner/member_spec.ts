/**
 * What a member's BootcNode should say: its spec for the pool's target (the one rule a new
 * BootcNode and a synced one share), the merge patch that brings it there with the pool's
 * label and ownership, the withdrawal a new image makes, and the prior-cordon copy no record
 * backs.
 *
 * @module
 */
import {
  ANNOTATION_DESIRED_SINCE,
  API_VERSION,
  type BootcNode,
  type BootcNodePool,
  type BootcNodeSpec,
  LABEL_POOL,
  owningPool,
  POOL,
} from "../../lib/api/mod.ts";
import { readNodeFacts } from "../../lib/api/node_state.ts";
import { undrainPatch } from "../model/disruption.ts";
import { formatTime } from "../model/slots.ts";
import type { NodeSummary } from "../model/types.ts";
import type { Action, MergePatch, PlanInput } from "./plan.ts";

/** The controller ownerReference a pool puts on its BootcNodes. */
export function ownerReference(pool: BootcNodePool) {
  return {
    apiVersion: API_VERSION,
    kind: POOL.kind,
    name: pool.metadata.name ?? "",
    uid: pool.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * The spec a member's BootcNode should have for `image`: its reboot request as it is in
 * `current` (Staged for a new BootcNode), everything else from the pool. Keys the pool
 * leaves unset are absent.
 */
export function memberSpec(
  input: PlanInput,
  image: string,
  current?: BootcNodeSpec,
): BootcNodeSpec {
  const { pool } = input;
  const spec: BootcNodeSpec = {
    desiredImageState: "Staged",
    ...current,
    desiredImage: image,
    rebootPolicy: pool.spec.disruption?.rebootPolicy ?? "RebootOnly",
    pullSecretRef: pool.spec.pullSecretRef ? { ...pool.spec.pullSecretRef } : undefined,
    pullSecretHash: input.pullSecretHash,
    healthUnits: healthUnitsOf(pool),
    bootAssessment: pool.spec.rollout?.health?.bootAssessment === "Require" ? "Require" : undefined,
    signatureKeys: hostKeysOf(input, current),
  };
  for (const key of Object.keys(spec) as (keyof BootcNodeSpec)[]) {
    if (spec[key] === undefined) delete spec[key];
  }
  return spec;
}

/**
 * A new image for a member: its desired-since time restarts, and a finished
 * drain recorded on its Node (for the old image) is withdrawn. `node` is the Node
 * as it will be after that write.
 */
export function withdrawForNewImage(
  node: NodeSummary,
  now: Date,
): { annotations: Record<string, string>; undrain?: Action; node: NodeSummary } {
  const annotations = { [ANNOTATION_DESIRED_SINCE]: formatTime(now) };
  const undrain = undrainPatch(node);
  if (!undrain) return { annotations, node };
  const nodeAnnotations = { ...node.annotations };
  for (const k of Object.keys((undrain.metadata as MergePatch).annotations as MergePatch)) {
    delete nodeAnnotations[k];
  }
  return {
    annotations,
    undrain: {
      kind: "patchNode",
      node: node.name,
      patch: undrain,
      why: "withdraw drain (new image)",
    },
    node: { ...node, annotations: nodeAnnotations },
  };
}

/**
 * The merge patch that brings `bn` to `wanted`, its pool label and ownership
 * (adopting an orphan, or one left by an earlier pool of the same name), and
 * `annotations`; undefined when nothing changes.
 */
export function syncPatch(
  pool: BootcNodePool,
  bn: BootcNode,
  wanted: BootcNodeSpec,
  annotations: Record<string, string | null>,
): MergePatch | undefined {
  const specPatch: MergePatch = {};
  for (
    const key of [
      "desiredImage",
      "desiredImageState",
      "rebootPolicy",
      "pullSecretHash",
      "bootAssessment",
    ] as const
  ) {
    if (bn.spec[key] !== wanted[key]) specPatch[key] = wanted[key] ?? null;
  }
  for (const key of ["pullSecretRef", "healthUnits", "signatureKeys"] as const) {
    if (JSON.stringify(bn.spec[key] ?? null) !== JSON.stringify(wanted[key] ?? null)) {
      specPatch[key] = wanted[key] ?? null;
    }
  }
  const poolName = pool.metadata.name ?? "";
  const metaPatch: MergePatch = {};
  if (bn.metadata.labels?.[LABEL_POOL] !== poolName) metaPatch.labels = { [LABEL_POOL]: poolName };
  if (adopting(pool, bn)) metaPatch.ownerReferences = [ownerReference(pool)];
  if (Object.keys(annotations).length > 0) metaPatch.annotations = annotations;
  const patch: MergePatch = {};
  if (Object.keys(specPatch).length > 0) patch.spec = specPatch;
  if (Object.keys(metaPatch).length > 0) patch.metadata = metaPatch;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** True when `bn` is not `pool`'s yet (an orphan, or an earlier pool's of the same name). */
function adopting(pool: BootcNodePool, bn: BootcNode): boolean {
  const controller = bn.metadata.ownerReferences?.find((o) => o.kind === POOL.kind && o.controller);
  return owningPool(bn) === undefined || controller?.uid !== pool.metadata.uid;
}

/**
 * A prior-cordon mirror `pool` did not write that no record on the Node backs and no
 * reboot under way needs (`NodeFacts.down`, the one may-be-down rule): left by the pool the
 * BootcNode was orphaned from. Read as a lost record it would be "repaired" into a slot no
 * gate granted; it is dropped instead.
 */
export function staleMirror(pool: BootcNodePool, node: NodeSummary, bn: BootcNode): boolean {
  const facts = readNodeFacts({ node, bootcNode: bn });
  return adopting(pool, bn) && facts.mirror !== undefined && !facts.onNode && !facts.down;
}

/**
 * The keys the host's policy requires for the pool's images: only while the pool enforces.
 * Keys not known this moment (a key Secret unreadable) leave the node's as they are, so the
 * host never drops its policy for a read that failed.
 */
function hostKeysOf(input: PlanInput, current?: BootcNodeSpec): string[] | undefined {
  if (input.pool.spec.image.verification?.mode !== "Enforce") return undefined;
  const keys = input.hostKeys ?? current?.signatureKeys;
  return keys && keys.length > 0 ? [...keys] : undefined;
}

/** The units the pool's health check lists (copied to each BootcNode for its daemon). */
function healthUnitsOf(pool: BootcNodePool): string[] | undefined {
  const units = pool.spec.rollout?.health?.units;
  return units && units.length > 0 ? [...units] : undefined;
}
