/**
 * The `node.bootc.dev/v1alpha1` API: types, schemas, constants, CRDs and
 * condition helpers.
 *
 * @module
 */
export * from "./constants.ts";
export * from "./schema.ts";
export * from "./conditions.ts";
export * from "./annotations.ts";
export * from "./drain_conditions.ts";
export * from "./validation.ts";
export * from "./budget.ts";
export * from "./ownership.ts";
export * from "./node_state.ts";
export * from "./pool_state.ts";
export * from "./verified.ts";
export { bootcDisruptionBudgetCrd, bootcNodeCrd, bootcNodePoolCrd, toOpenApi } from "./crd.ts";
