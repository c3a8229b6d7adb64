/**
 * A thin Kubernetes client on Deno `fetch`: configuration (in-cluster,
 * kubeconfig, exec plugins), a transport seam, typed resource clients, errors
 * parsed from `metav1.Status`, and controller building blocks.
 *
 * @module
 */

export * from "./types.ts";
export * from "./config.ts";
export * from "./errors.ts";
export * from "./transport.ts";
export * from "./resources.ts";
export * from "./client.ts";
export * from "./deadline.ts";
export * from "./backoff.ts";
export * from "./store.ts";
export * from "./informer.ts";
export * from "./workqueue.ts";
export * from "./leader.ts";
export * from "./events.ts";
