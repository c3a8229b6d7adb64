/**
 * Random worlds of one node for the cross-component property tests: a host's
 * bootc status, the BootcNode's spec and last report, and the Node's disruption
 * record and cordon, with the daemon's decision on them. Seeded, so every run
 * draws the same worlds.
 *
 * @module
 */
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNodeSpec,
  type BootcNodeStatus,
  type Condition,
  type NodeForReboot,
  rebootAuthorization,
} from "../../lib/api/mod.ts";
import type { BootEntry, Host } from "../../lib/bootc/types.ts";
import { capabilitiesFromVersion } from "../../lib/bootc/version.ts";
import { decide, type Decision } from "../../daemon/decide.ts";
import { fakeEntry } from "../../daemon/testing.ts";

const d = (c: string): string => "sha256:" + c.repeat(64);
/** The three images worlds draw from. */
export const IMAGES: readonly string[] = ["a", "b", "c"].map((c) => `registry.example/os@${d(c)}`);
/** The clock of every world. */
export const NOW = new Date("2026-05-01T10:00:00Z");
/** When every recorded fact of a world happened (an hour before {@linkcode NOW}). */
export const T = "2026-05-01T09:00:00Z";
/** The controller ownerReference of a world's BootcNode. */
export const OWNER = [{ kind: "BootcNodePool", name: "workers", controller: true }];

/** A small seeded PRNG (mulberry32): the same cases on every run. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One drawn world. */
export interface World {
  spec: BootcNodeSpec;
  host: Host;
  status?: BootcNodeStatus;
  node: NodeForReboot & { ready: boolean };
  applyInFlight: boolean;
  capsVersion: string;
}

/**
 * Draws one world. With `damage`, parts of the Node's record may be missing (a hand
 * edit, another tool, a write cut short), so a forged or damaged record is drawn too.
 */
export function randomWorld(r: () => number, options: { damage?: boolean } = {}): World {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const maybe = (p = 0.5) => r() < p;
  const want = pick(IMAGES);
  const other = pick(IMAGES);
  const entryOrNull = (p: number): BootEntry | null =>
    maybe(p) ? fakeEntry(pick(IMAGES), { downloadOnly: maybe(0.7) }) : null;
  const booted = fakeEntry(pick(IMAGES));
  const staged = entryOrNull(0.6);
  const rollback = entryOrNull(0.7);
  const host: Host = {
    apiVersion: "org.containers.bootc/v1",
    kind: "BootcHost",
    metadata: { name: "host" },
    spec: { image: (staged ?? booted).image?.image ?? null },
    status: {
      booted,
      staged,
      rollback,
      otherDeployments: [],
      rollbackQueued: maybe(0.1),
      type: "bootcHost",
    },
  };
  const annotations: Record<string, string> = {};
  if (maybe(0.5)) {
    annotations[ANNOTATION_IN_REBOOT_SLOT] = T;
    annotations[ANNOTATION_SLOT_POOL] = "workers";
    annotations[ANNOTATION_WAS_CORDONED] = "false";
    if (maybe(0.6)) {
      annotations[ANNOTATION_DRAINED_AT] = T;
      annotations[ANNOTATION_DRAINED_FOR] = maybe(0.8) ? want : other;
    }
  }
  if (options.damage) {
    for (const key of [ANNOTATION_SLOT_POOL, ANNOTATION_WAS_CORDONED, ANNOTATION_IN_REBOOT_SLOT]) {
      if (maybe(0.15)) delete annotations[key];
    }
  }
  return {
    spec: {
      desiredImage: want,
      desiredImageState: maybe() ? "Booted" : "Staged",
      rebootPolicy: maybe() ? "RebootOnly" : "AllowSoftReboot",
    },
    host,
    status: maybe(0.8) ? previousStatus(r, pick, want, other) : undefined,
    node: { metadata: { annotations }, spec: { unschedulable: maybe(0.7) }, ready: maybe(0.8) },
    applyInFlight: maybe(0.15),
    capsVersion: maybe(0.9) ? "bootc 1.16.10" : "bootc 1.14.1",
  };
}

/** A previous report: an Idle reason, perhaps a Rebooted phase, about `want` or another image. */
function previousStatus(
  r: () => number,
  pick: <T>(xs: readonly T[]) => T,
  want: string,
  other: string,
): BootcNodeStatus {
  const about = r() < 0.7 ? want : other;
  const idle = pick(["Idle", "Staging", "Staged", "Rebooting"] as const);
  const conditions: Condition[] = [
    {
      type: "Idle",
      status: idle === "Idle" ? "True" : "False",
      reason: idle,
      message: idle === "Rebooting" ? `Applying ${about} and rebooting` : "",
      lastTransitionTime: T,
    },
    {
      type: "ImageStaged",
      status: "True",
      reason: "Staged",
      message: `${about} is staged`,
      lastTransitionTime: T,
    },
  ];
  if (r() < 0.5) {
    conditions.push({
      type: "Rebooted",
      status: "False",
      reason: pick(["Waiting", "Rebooting", "RollingBack", "FellBack"]),
      message: `about ${about}`,
      lastTransitionTime: T,
    });
  }
  return { autoUpdatesDisabled: true, conditions };
}

/** The daemon's decision in `w`, its reboot authorization read from the world's Node. */
export function runDaemon(w: World): Decision {
  const bn = { metadata: { ownerReferences: OWNER }, spec: w.spec };
  return decide({
    spec: w.spec,
    owned: true,
    reboot: rebootAuthorization(w.node, bn),
    node: w.node,
    status: w.status,
    host: { ok: true, host: w.host },
    capabilities: capabilitiesFromVersion(w.capsVersion),
    autoUpdatesMasked: true,
    applyInFlight: w.applyInFlight,
    now: NOW,
  });
}
