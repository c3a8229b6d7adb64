/**
 * Property: the daemon and the controller never both wait on each other. Random
 * host states, specs, previous reports and Node records go through the daemon's
 * `decide`; the status it writes is then classified the way the controller and
 * the plugin read it (`lib/api/node_state.ts`). Whenever the daemon waits for the
 * controller (Idle=False/Staged, nothing to do: "awaiting desiredImageState:
 * Booted", or a refused reboot), the classification must not say the node waits
 * on its daemon: an undisrupted node is ready for a slot, a disrupted one waits on
 * the controller, a gate or the Node.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNodeSpec,
  type BootcNodeStatus,
  classifyNode,
  type Condition,
  findCondition,
  type NodeForReboot,
  rebootAuthorization,
} from "../lib/api/mod.ts";
import type { BootEntry, Host } from "../lib/bootc/types.ts";
import { capabilitiesFromVersion } from "../lib/bootc/version.ts";
import { decide, type Decision } from "./decide.ts";
import { fakeEntry } from "./testing.ts";

const d = (c: string) => "sha256:" + c.repeat(64);
const IMAGES = ["a", "b", "c"].map((c) => `registry.example/os@${d(c)}`);
const NOW = new Date("2026-05-01T10:00:00Z");
const T = "2026-05-01T09:00:00Z";
const OWNER = [{ kind: "BootcNodePool", name: "workers", controller: true }];

/** A small seeded PRNG (mulberry32): the same cases on every run. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface World {
  spec: BootcNodeSpec;
  host: Host;
  status?: BootcNodeStatus;
  node: NodeForReboot & { ready: boolean };
  applyInFlight: boolean;
  capsVersion: string;
}

function randomWorld(r: () => number): World {
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

function run(w: World): Decision {
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

/** The daemon waits for the controller: Staged, nothing to do. */
function daemonWaits(decision: Decision): boolean {
  const idle = findCondition(decision.status.conditions, "Idle");
  return decision.action.type === "none" && idle?.status === "False" &&
    idle.reason === "Staged";
}

Deno.test("property: the daemon and the controller never both wait on each other", () => {
  const r = rng(22);
  let waits = 0;
  const seen = new Set<string>();
  for (let i = 0; i < 20_000; i++) {
    const w = randomWorld(r);
    const decision = run(w);
    const cls = classifyNode({
      bootcNode: {
        metadata: { ownerReferences: OWNER },
        spec: w.spec,
        status: decision.status,
      },
      node: {
        annotations: w.node.metadata?.annotations,
        unschedulable: w.node.spec?.unschedulable,
        ready: w.node.ready,
      },
      member: true,
    });
    if (!daemonWaits(decision)) continue;
    waits++;
    seen.add(`${cls.state}/${cls.reason}`);
    const why = () => JSON.stringify({ world: w, status: decision.status, cls }, null, 1);
    assert.notEqual(cls.waitsOn, "daemon", why());
    const degraded = findCondition(decision.status.conditions, "Degraded")?.status === "True";
    if (degraded) continue; // an error the daemon reports: someone must act (shown as Degraded)
    if (!cls.disrupted) assert.ok(cls.readyForSlot, `not ready for a slot: ${why()}`);
    else assert.ok(["controller", "gate", "node"].includes(cls.waitsOn), why());
  }
  // The generator reaches the daemon's waiting states, rollback route included.
  assert.ok(waits > 1000, `only ${waits} waiting states`);
  for (const want of ["Staged/ReadyForSlot", "Staged/RollbackRoute", "Draining/Drained"]) {
    assert.ok([...seen].includes(want), `never reached ${want}: ${[...seen]}`);
  }
});
