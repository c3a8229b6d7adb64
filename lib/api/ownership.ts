/**
 * Which pool owns a BootcNode: the one answer every part of the operator reads
 * (controller membership, watch mapping, cluster-budget fairness, metrics, the
 * daemon's reboot authorization, the plugin). A BootcNode belongs to the pool
 * named by its *controller* ownerReference of kind BootcNodePool; a label or a
 * non-controller reference says nothing.
 *
 * @module
 */
import { POOL } from "./constants.ts";

/** The fields of an object {@linkcode owningPool} reads. */
export interface Owned {
  metadata?: {
    ownerReferences?: readonly { kind: string; controller?: boolean; name: string }[];
  };
}

/** The name of the pool that controls `object` (its controller ownerReference), if any. */
export function owningPool(object: Owned | undefined): string | undefined {
  return object?.metadata?.ownerReferences?.find((o) =>
    o.kind === POOL.kind && o.controller === true
  )
    ?.name;
}
