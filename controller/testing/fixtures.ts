/**
 * Builders of plain planner inputs for unit tests and benchmarks.
 *
 * @module
 */
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  API_VERSION,
  type BootcNode,
  type BootcNodePool,
  type Condition,
  LABEL_POOL,
  POOL,
} from "../../lib/api/mod.ts";
import { type PlanInput, POOL_FINALIZER } from "../planner/planner.ts";
import type { NodeSummary, PdbSummary, PodSummary } from "../model/types.ts";

/** A 64-hex digest made from a short seed, e.g. `digest("a")`. */
export function digest(seed: string): string {
  return `sha256:${seed.repeat(64).slice(0, 64)}`;
}

/** The repository the fixtures use. */
export const REPO = "quay.io/example/os";

/** `REPO@digest(seed)`. */
export function image(seed: string): string {
  return `${REPO}@${digest(seed)}`;
}

/** A pool selecting `role=worker`, pinned to `image("b")`, with a finalizer. */
export function pool(
  overrides: {
    name?: string;
    ref?: string;
    maxUnavailable?: number | string;
    paused?: boolean;
    selector?: BootcNodePool["spec"]["nodeSelector"];
    drainTimeoutSeconds?: number;
    rebootTimeoutSeconds?: number;
    minReadySeconds?: number;
    status?: BootcNodePool["status"];
    generation?: number;
  } = {},
): BootcNodePool {
  const name = overrides.name ?? "workers";
  return {
    apiVersion: API_VERSION,
    kind: POOL.kind,
    metadata: {
      name,
      uid: `uid-${name}`,
      generation: overrides.generation ?? 1,
      finalizers: [POOL_FINALIZER],
    },
    spec: {
      nodeSelector: overrides.selector ?? { matchLabels: { role: "worker" } },
      image: { ref: overrides.ref ?? image("b") },
      rollout: {
        maxUnavailable: overrides.maxUnavailable ?? 1,
        paused: overrides.paused ?? false,
        drainTimeoutSeconds: overrides.drainTimeoutSeconds ?? 600,
        rebootTimeoutSeconds: overrides.rebootTimeoutSeconds ?? 1800,
        minReadySeconds: overrides.minReadySeconds ?? 0,
      },
      disruption: { rebootPolicy: "RebootOnly" },
    },
    status: overrides.status,
  };
}

/** A Ready, schedulable worker node. */
export function node(name: string, overrides: Partial<NodeSummary> = {}): NodeSummary {
  return {
    name,
    labels: { role: "worker", "bootc.dev/managed": "" },
    unschedulable: false,
    ready: true,
    readySince: "2025-12-01T00:00:00Z",
    ...overrides,
  };
}

/** Daemon-reported phase of a BootcNode fixture. */
export type Phase =
  | "idle"
  | "pending"
  | "staging"
  | "staged"
  | "rebooting"
  | "degraded";

/** A BootcNode owned by `poolName`, booted into `booted`, desiring `desired`. */
export function bootcNode(
  name: string,
  opts: {
    pool?: string;
    booted?: string;
    desired?: string;
    phase?: Phase;
    state?: "Staged" | "Booted";
    slotAt?: string;
    wasCordoned?: boolean;
    drainedAt?: string;
    arch?: string;
    bootedDigest?: string;
    degradedMessage?: string;
    /** The daemon's host check for the booted image (default Healthy; "none": no report). */
    host?: "Healthy" | "Unhealthy" | "Starting" | "none";
    rollback?: string;
    /** When the controller recorded the node verified on `desired` (Verified=True). */
    verifiedAt?: string;
  } = {},
): BootcNode {
  const poolName = opts.pool ?? "workers";
  const desired = opts.desired ?? image("b");
  const booted = opts.booted ?? image("a");
  const phase = opts.phase ?? "idle";
  const conditions: Condition[] = [];
  const t = "2026-01-01T00:00:00Z";
  const idle = (status: "True" | "False", reason: string): Condition => ({
    type: "Idle",
    status,
    reason,
    message: "",
    lastTransitionTime: t,
  });
  if (phase === "idle") conditions.push(idle("True", "Idle"));
  if (phase === "staging") conditions.push(idle("False", "Staging"));
  if (phase === "staged") conditions.push(idle("False", "Staged"));
  if (phase === "rebooting") conditions.push(idle("False", "Rebooting"));
  conditions.push({
    type: "Degraded",
    status: phase === "degraded" ? "True" : "False",
    reason: phase === "degraded" ? "Error" : "Healthy",
    message: phase === "degraded" ? (opts.degradedMessage ?? "error: boom") : "",
    lastTransitionTime: t,
  });
  if (opts.verifiedAt) {
    conditions.push({
      type: "Verified",
      status: "True",
      reason: "ChecksPassed",
      message: `verified ${desired}`,
      lastTransitionTime: opts.verifiedAt,
    });
  }
  const annotations: Record<string, string> = {};
  if (opts.slotAt) {
    annotations[ANNOTATION_IN_REBOOT_SLOT] = opts.slotAt;
    annotations[ANNOTATION_WAS_CORDONED] = String(opts.wasCordoned ?? false);
  }
  if (opts.drainedAt) annotations[ANNOTATION_DRAINED_AT] = opts.drainedAt;
  return {
    apiVersion: API_VERSION,
    kind: "BootcNode",
    metadata: {
      name,
      uid: `uid-bn-${name}`,
      labels: { [LABEL_POOL]: poolName },
      annotations,
      ownerReferences: [{
        apiVersion: API_VERSION,
        kind: POOL.kind,
        name: poolName,
        uid: `uid-${poolName}`,
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    spec: {
      desiredImage: desired,
      desiredImageState: opts.state ?? "Staged",
      rebootPolicy: "RebootOnly",
    },
    status: phase === "pending" ? undefined : {
      booted: {
        image: booted,
        imageDigest: opts.bootedDigest ?? booted.split("@")[1],
        architecture: opts.arch ?? "amd64",
      },
      staged: phase === "staged" || phase === "rebooting"
        ? { image: desired, imageDigest: desired.split("@")[1], architecture: opts.arch ?? "amd64" }
        : undefined,
      rollback: opts.rollback
        ? { image: opts.rollback, imageDigest: opts.rollback.split("@")[1], architecture: "amd64" }
        : undefined,
      ...(opts.verifiedAt ? { verification: { image: desired } } : {}),
      hostHealth: opts.host === "none" ? undefined : {
        bootedDigest: opts.bootedDigest ?? booted.split("@")[1],
        checkedAt: t,
        state: opts.host ?? "Healthy",
        ...(opts.host === "Unhealthy" ? { failedUnits: ["app.service"] } : {}),
      },
      conditions,
    },
  };
}

/** A running pod on `nodeName`. */
export function pod(
  name: string,
  nodeName: string,
  overrides: Partial<PodSummary> = {},
): PodSummary {
  return {
    namespace: "default",
    name,
    nodeName,
    labels: { app: "web" },
    mirror: false,
    daemonSet: false,
    terminating: false,
    completed: false,
    ...overrides,
  };
}

/** A PDB over `app=<app>` in "default". */
export function pdb(name: string, app: string, disruptionsAllowed: number): PdbSummary {
  return {
    namespace: "default",
    name,
    selector: { matchLabels: { app } },
    disruptionsAllowed,
  };
}

/** A full planner input from lists. */
export function input(
  p: BootcNodePool,
  opts: {
    nodes?: NodeSummary[];
    bootcNodes?: BootcNode[];
    pods?: PodSummary[];
    pdbs?: PdbSummary[];
    otherPools?: BootcNodePool[];
    now?: string;
    resolution?: PlanInput["resolution"];
    pullSecretHash?: string;
    pullSecretIssue?: PlanInput["pullSecretIssue"];
  } = {},
): PlanInput {
  const podsByNode = new Map<string, PodSummary[]>();
  for (const x of opts.pods ?? []) {
    const list = podsByNode.get(x.nodeName) ?? [];
    list.push(x);
    podsByNode.set(x.nodeName, list);
  }
  // bootcNode()'s slot options describe the Node's disruption record: move it there,
  // leaving the BootcNode's mirror of the prior cordon state.
  const nodes = (opts.nodes ?? []).map((n) => ({ ...n }));
  for (const bn of opts.bootcNodes ?? []) {
    const a = bn.metadata.annotations ?? {};
    const n = nodes.find((x) => x.name === bn.metadata.name);
    if (!n || a[ANNOTATION_IN_REBOOT_SLOT] === undefined) continue;
    n.annotations = {
      ...n.annotations,
      [ANNOTATION_IN_REBOOT_SLOT]: a[ANNOTATION_IN_REBOOT_SLOT],
      [ANNOTATION_SLOT_POOL]: bn.metadata.labels?.[LABEL_POOL] ?? "workers",
      [ANNOTATION_WAS_CORDONED]: a[ANNOTATION_WAS_CORDONED] ?? "false",
      ...(a[ANNOTATION_DRAINED_AT] !== undefined
        ? {
          [ANNOTATION_DRAINED_AT]: a[ANNOTATION_DRAINED_AT],
          [ANNOTATION_DRAINED_FOR]: bn.spec.desiredImage,
        }
        : {}),
    };
  }
  const bootcNodes = (opts.bootcNodes ?? []).map((bn) => {
    const a = { ...bn.metadata.annotations };
    delete a[ANNOTATION_IN_REBOOT_SLOT];
    delete a[ANNOTATION_DRAINED_AT];
    return { ...bn, metadata: { ...bn.metadata, annotations: a } };
  });
  return {
    pool: p,
    pools: [p, ...(opts.otherPools ?? [])].map((q) => ({
      name: q.metadata.name ?? "",
      uid: q.metadata.uid,
      selector: q.spec.nodeSelector,
    })),
    nodes: new Map(nodes.map((n) => [n.name, n])),
    bootcNodes: new Map(bootcNodes.map((b) => [b.metadata.name ?? "", b])),
    podsByNode,
    pdbs: opts.pdbs ?? [],
    resolution: opts.resolution,
    pullSecretHash: opts.pullSecretHash,
    pullSecretIssue: opts.pullSecretIssue,
    now: new Date(opts.now ?? "2026-01-01T01:00:00Z"),
  };
}
