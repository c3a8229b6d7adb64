/**
 * How the test control plane drives kwok: which nodes it manages, which stage
 * files it loads, and the annotation that makes a fake node NotReady.
 *
 * @module
 */

/** Nodes with this annotation (value {@linkcode KWOK_MANAGED_VALUE}) are simulated by kwok. */
export const KWOK_MANAGED_ANNOTATION = "kwok.x-k8s.io/node";
/** Value of {@linkcode KWOK_MANAGED_ANNOTATION} on kwok-managed nodes. */
export const KWOK_MANAGED_VALUE = "fake";
/** While "true", the project's kwok stage holds the node NotReady (see kwok_node_not_ready.yaml). */
export const NOT_READY_ANNOTATION = "kwok.bootc-operator.test/not-ready";

/** The project's own stage files, shipped beside this module. */
export const PROJECT_STAGE_FILES: readonly string[] = [
  new URL("./kwok_node_not_ready.yaml", import.meta.url).pathname,
];

/**
 * The stage files passed to kwok with `--config`: kwok's node and pod
 * lifecycle stages (copied by tests/kube/build.sh into `<binDir>/kwok-stages`)
 * plus {@linkcode PROJECT_STAGE_FILES}. `names` lists that folder's entries.
 */
export function kwokStageFiles(stageDir: string, names: readonly string[]): string[] {
  const upstream = names
    .filter((n) => n.endsWith(".yaml") && n !== "kustomization.yaml")
    .sort()
    .map((n) => `${stageDir}/${n}`);
  return [...upstream, ...PROJECT_STAGE_FILES];
}

/** The kwok command line for a control plane reachable through `kubeconfigPath`. */
export function kwokArgs(
  options: { kubeconfigPath: string; stageFiles: readonly string[] },
): string[] {
  return [
    `--kubeconfig=${options.kubeconfigPath}`,
    "--manage-all-nodes=false",
    `--manage-nodes-with-annotation-selector=${KWOK_MANAGED_ANNOTATION}=${KWOK_MANAGED_VALUE}`,
    // No kwok HTTP server (logs/exec/port-forward): nothing to collide on.
    "--server-address=",
    ...options.stageFiles.map((f) => `--config=${f}`),
  ];
}

/** kwok's pod lifecycle stages whose delays can be overridden per pod through annotations. */
const POD_STAGES = [
  "pod-create",
  "pod-init-container-running",
  "pod-init-container-completed",
  "pod-ready",
  "pod-complete",
];

/**
 * Pod annotations that shrink kwok's pod lifecycle delays (default 1–6 s per
 * stage, so 2–12 s until Running) to under 100 ms per stage. Put them on pods
 * and on pod templates (DaemonSets) that tests wait for.
 */
export const FAST_POD_ANNOTATIONS: Readonly<Record<string, string>> = Object.fromEntries(
  POD_STAGES.flatMap((stage) => [
    [`${stage}.stage.kwok.x-k8s.io/delay`, "0s"],
    [`${stage}.stage.kwok.x-k8s.io/jitter-delay`, "100ms"],
  ]),
);
