/**
 * Test harness: a real Kubernetes control plane ({@linkcode startControlPlane}),
 * polling ({@linkcode waitFor}) and the kwok conventions fake nodes follow.
 *
 * @module
 */

export * from "./control_plane.ts";
export {
  DEFAULT_CONTROLLERS,
  SERVICE_ACCOUNT_ISSUER,
  SERVICE_CLUSTER_IP_RANGE,
} from "./control_plane_args.ts";
export {
  FAST_POD_ANNOTATIONS,
  KWOK_MANAGED_ANNOTATION,
  KWOK_MANAGED_VALUE,
  NOT_READY_ANNOTATION,
} from "./kwok.ts";
export { describeObservation, waitFor, type WaitForOptions, WaitTimeoutError } from "./wait.ts";
