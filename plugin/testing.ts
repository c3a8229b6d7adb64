/**
 * Fixtures for the plugin's unit tests: pools, BootcNodes and Nodes as plain
 * objects in the shapes the controller and the daemon write.
 *
 * @module
 */
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
} from "../lib/api/constants.ts";
import type { BootcNodePoolStatus, SlotsStatus } from "../lib/api/schema.ts";
import type { BootcNode, BootcNodePool, Condition, EventLike, NodeLike } from "./model.ts";

/** Digest of the old image. */
export const OLD = `sha256:${"a".repeat(64)}`;
/** Digest of the new image. */
export const NEW = `sha256:${"b".repeat(64)}`;
/** Repository of the images. */
export const REPO = "registry.example/os";
/** The reference time of every fixture. */
export const NOW = new Date("2026-03-01T10:10:00Z");

/** `NOW` minus `s` seconds, as the API writes times. */
export function secondsAgo(s: number): string {
  return new Date(NOW.getTime() - s * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A condition that transitioned `s` seconds before `NOW`. */
export function cond(
  type: string,
  status: "True" | "False",
  reason: string,
  message = "",
  s = 60,
): Condition {
  return { type, status, reason, message, lastTransitionTime: secondsAgo(s) };
}

/** Options of {@linkcode bootcNode}. */
export interface BootcNodeFixture {
  pool?: string;
  desired?: string;
  state?: "Staged" | "Booted";
  booted?: string;
  staged?: string;
  /** The Idle condition: [status, reason, seconds ago]. */
  idle?: ["True" | "False", string, number?];
  conditions?: Condition[];
  mirror?: string;
  /** bootc's `version` of the booted and staged entries. */
  bootedVersion?: string;
  stagedVersion?: string;
  /** `status.verification.failedChecks` (Verified is about the desired image when given). */
  failedChecks?: string[];
}

/** A BootcNode owned by `pool` (default "main") with the given status. */
export function bootcNode(name: string, f: BootcNodeFixture = {}): BootcNode {
  const pool = f.pool ?? "main";
  const conditions: Condition[] = [];
  if (f.idle) conditions.push(cond("Idle", f.idle[0], f.idle[1], "", f.idle[2] ?? 60));
  conditions.push(...(f.conditions ?? []));
  return {
    metadata: {
      name,
      labels: { "bootc.dev/pool": pool },
      annotations: f.mirror ? { [ANNOTATION_WAS_CORDONED]: f.mirror } : undefined,
      ownerReferences: [{
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNodePool",
        name: pool,
        uid: "uid",
        controller: true,
      }],
    },
    spec: {
      desiredImage: `${REPO}@${f.desired ?? NEW}`,
      desiredImageState: f.state ?? "Staged",
      rebootPolicy: "RebootOnly",
    },
    status: {
      booted: {
        image: `${REPO}@${f.booted ?? OLD}`,
        imageDigest: f.booted ?? OLD,
        ...(f.bootedVersion ? { version: f.bootedVersion } : {}),
      },
      staged: f.staged
        ? {
          image: `${REPO}@${f.staged}`,
          imageDigest: f.staged,
          ...(f.stagedVersion ? { version: f.stagedVersion } : {}),
        }
        : undefined,
      ...(f.failedChecks || conditions.some((c) => c.type === "Verified")
        ? {
          verification: {
            image: `${REPO}@${f.desired ?? NEW}`,
            ...(f.failedChecks ? { failedChecks: f.failedChecks } : {}),
          },
        }
        : {}),
      conditions,
    },
  };
}

/** Options of {@linkcode node}. */
export interface NodeFixture {
  ready?: boolean;
  cordoned?: boolean;
  /** Seconds since the slot was taken. */
  slot?: number;
  slotPool?: string;
  wasCordoned?: string;
  /** Seconds since the drain finished. */
  drained?: number;
  drainedFor?: string;
}

/** A Node with the given disruption record. */
export function node(name: string, f: NodeFixture = {}): NodeLike {
  const annotations: Record<string, string> = {};
  if (f.slot !== undefined) {
    annotations[ANNOTATION_IN_REBOOT_SLOT] = secondsAgo(f.slot);
    annotations[ANNOTATION_SLOT_POOL] = f.slotPool ?? "main";
    annotations[ANNOTATION_WAS_CORDONED] = f.wasCordoned ?? "false";
  }
  if (f.drained !== undefined) {
    annotations[ANNOTATION_DRAINED_AT] = secondsAgo(f.drained);
    annotations[ANNOTATION_DRAINED_FOR] = f.drainedFor ?? `${REPO}@${NEW}`;
  }
  return {
    metadata: { name, labels: { "bootc.dev/managed": "" }, annotations },
    spec: { unschedulable: f.cordoned ?? f.slot !== undefined },
    status: {
      conditions: [{
        type: "Ready",
        status: f.ready === false ? "False" : "True",
        lastTransitionTime: secondsAgo(3600),
      }],
    },
  };
}

/** Options of {@linkcode pool}. */
export interface PoolFixture {
  target?: string;
  deployed?: string;
  ref?: string;
  paused?: boolean;
  maxUnavailable?: number | string;
  upToDate?: Condition;
  /** `status.notes`: the UpToDate message's parts after the node counts. */
  notes?: string[];
  degraded?: Condition;
  generation?: number;
  observedGeneration?: number;
  slotsInUse?: number;
  /**
   * `status.slots` as the controller publishes it (fields not given: the limit is an integer
   * `maxUnavailable` or 1, set by maxUnavailable); null: none (a controller that predates it).
   */
  slots?: Partial<SlotsStatus> | null;
  /** `status.queue`: node names in order (waiting for `waitingFor`, default BudgetExhausted). */
  queue?: string[];
  waitingFor?: string;
  /** Each queue entry's `blockedBy` (the blocking pods). */
  blockedBy?: string;
  /** Each queue entry's `orderedBy` (what sets its place). */
  orderedBy?: string;
}

/** The `status.slots` and `status.queue` a controller would publish for `f`. */
function published(f: PoolFixture): Pick<BootcNodePoolStatus, "slots" | "queue"> {
  if (f.slots === null) return {};
  const max = f.maxUnavailable ?? 1;
  const queue = (f.queue ?? []).map((node, i) => ({
    node,
    position: i + 1,
    waitingFor: f.waitingFor ?? "BudgetExhausted",
    ...(f.blockedBy ? { blockedBy: f.blockedBy } : {}),
    ...(f.orderedBy ? { orderedBy: f.orderedBy } : {}),
  }));
  return {
    slots: {
      limit: typeof max === "number" ? max : 1,
      inUse: f.slotsInUse ?? 0,
      waiting: queue.length,
      source: "MaxUnavailable",
      name: "maxUnavailable",
      message: `maxUnavailable ${max}`,
      ...f.slots,
    },
    ...(queue.length > 0 ? { queue } : {}),
  };
}

/** A pool "main" (or `name`) rolling out NEW over OLD, started 10 minutes before NOW. */
export function pool(f: PoolFixture = {}, name = "main"): BootcNodePool {
  const target = f.target ?? NEW;
  return {
    metadata: { name, generation: f.generation ?? 1 },
    spec: {
      nodeSelector: { matchLabels: { pool: name } },
      image: { ref: f.ref ?? `${REPO}:stable` },
      rollout: {
        maxUnavailable: f.maxUnavailable ?? 1,
        paused: f.paused ?? false,
      },
      disruption: { rebootPolicy: "RebootOnly" },
    } as unknown as BootcNodePool["spec"],
    status: {
      observedGeneration: f.observedGeneration ?? f.generation ?? 1,
      targetDigest: target,
      targetImage: `${REPO}@${target}`,
      deployedDigest: f.deployed ?? OLD,
      slotsInUse: f.slotsInUse ?? 0,
      ...published(f),
      ...(f.notes ? { notes: f.notes } : {}),
      conditions: [
        f.upToDate ?? cond("UpToDate", "False", "RolloutInProgress", "0/3 updated", 600),
        f.degraded ?? cond("Degraded", "False", "Healthy", "No issues", 3600),
      ],
    },
  };
}

/** An event about a BootcNode `s` seconds before NOW. */
export function event(name: string, reason: string, message: string, s: number): EventLike {
  return {
    involvedObject: { kind: "BootcNode", name },
    type: "Normal",
    reason,
    message,
    count: 1,
    lastTimestamp: secondsAgo(s),
  };
}
