import assert from "node:assert/strict";
import { shortReference } from "../lib/api/display.ts";
import type { BootcNodeSpec, BootcNodeStatus, Condition } from "../lib/api/mod.ts";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_VERIFIED_AT,
  ANNOTATION_VERIFIED_FOR,
  ANNOTATION_WAS_CORDONED,
  findCondition,
  type NodeForReboot,
  rebootAuthorization,
} from "../lib/api/mod.ts";
import type { BootEntry, Host } from "../lib/bootc/types.ts";
import { capabilitiesFromVersion } from "../lib/bootc/version.ts";
import {
  type Action,
  type ActionFailure,
  decide,
  type DecideInput,
  DEFAULT_REBOOT_RECHECK_MS,
  type HostObservation,
  mirrorEntry,
  NOT_A_BOOTC_HOST_MESSAGE,
  NOT_OWNED_MESSAGE,
  pullSuperseded,
  STAGING_REPORT_DELAY_MS,
  statusEqual,
} from "./decide.ts";

const d = (c: string) => "sha256:" + c.repeat(64);
const REPO = "registry.example/os";
const A = `${REPO}@${d("a")}`;
const B = `${REPO}@${d("b")}`;
const C = `${REPO}@${d("c")}`;
const NOW = new Date("2026-05-01T10:00:00Z");
const CAPS = capabilitiesFromVersion("bootc 1.16.10");
const OLD_CAPS = capabilitiesFromVersion("bootc 1.14.1");

interface EntryOptions {
  /** Per-architecture digest reported as imageDigest (defaults to the pullspec's). */
  imageDigest?: string;
  downloadOnly?: boolean;
  incompatible?: boolean;
  softRebootCapable?: boolean;
}

function entry(pullspec: string, o: EntryOptions = {}): BootEntry {
  return {
    image: {
      image: { image: pullspec, transport: "registry" },
      imageDigest: o.imageDigest ?? pullspec.split("@")[1] ?? d("f"),
      version: "1.0",
      timestamp: "2026-04-01T00:00:00Z",
      architecture: "amd64",
    },
    cachedUpdate: null,
    incompatible: o.incompatible ?? false,
    pinned: false,
    softRebootCapable: o.softRebootCapable ?? false,
    ...(o.downloadOnly === undefined ? {} : { downloadOnly: o.downloadOnly }),
    ostree: { checksum: "0", deploySerial: 0, stateroot: "default" },
    composefs: null,
  };
}

function host(
  booted: BootEntry | null,
  staged: BootEntry | null = null,
  rollback: BootEntry | null = null,
  rollbackQueued = false,
): HostObservation {
  const h: Host = {
    apiVersion: "org.containers.bootc/v1",
    kind: "BootcHost",
    metadata: { name: "host" },
    spec: { image: (staged ?? booted)?.image?.image ?? null },
    status: {
      booted,
      staged,
      rollback,
      otherDeployments: [],
      rollbackQueued,
      type: booted ? "bootcHost" : null,
    },
  };
  return { ok: true, host: h };
}

function spec(
  desiredImage: string,
  desiredImageState: "Staged" | "Booted" = "Staged",
  rebootPolicy: "RebootOnly" | "AllowSoftReboot" = "RebootOnly",
  extra: Partial<BootcNodeSpec> = {},
): BootcNodeSpec {
  return { desiredImage, desiredImageState, rebootPolicy, ...extra };
}

/**
 * A persisted status with this Idle reason (and optionally RebootAllowed status/reason, and
 * more conditions as [type, status, reason, message?]).
 */
function persisted(
  reason: string,
  rebootAllowed?: ["True" | "False", string],
  more: [string, "True" | "False" | "Unknown", string, string?][] = [],
): BootcNodeStatus {
  const status = reason === "Idle" ? "True" : "False";
  const conditions: Condition[] = [{
    type: "Idle",
    status,
    reason,
    message: "",
    lastTransitionTime: "2026-05-01T09:00:00Z",
  }];
  if (rebootAllowed) {
    conditions.push({
      type: "RebootAllowed",
      status: rebootAllowed[0],
      reason: rebootAllowed[1],
      message: "",
      lastTransitionTime: "2026-05-01T09:00:00Z",
    });
  }
  for (const [type, st, r, message] of more) {
    conditions.push({
      type,
      status: st,
      reason: r,
      message: message ?? "",
      lastTransitionTime: "2026-05-01T09:00:00Z",
    });
  }
  return { autoUpdatesDisabled: true, conditions };
}

function input(partial: Partial<DecideInput> & Pick<DecideInput, "host">): DecideInput {
  return {
    owned: true,
    capabilities: CAPS,
    autoUpdatesMasked: true,
    now: NOW,
    ...partial,
  };
}

/** The Node annotations of a slot without a finished drain. */
const SLOT = {
  [ANNOTATION_IN_REBOOT_SLOT]: "2026-05-01T09:58:00Z",
  [ANNOTATION_SLOT_POOL]: "workers",
  [ANNOTATION_WAS_CORDONED]: "false",
};

/** The Node annotations of a slot whose drain finished for `image`. */
function drained(image: string): Record<string, string> {
  return {
    ...SLOT,
    [ANNOTATION_DRAINED_AT]: "2026-05-01T09:59:00Z",
    [ANNOTATION_DRAINED_FOR]: image,
  };
}

/** A Node as the controller leaves it: these annotations, cordoned unless told. */
function node(annotations: Record<string, string>, unschedulable = true): NodeForReboot {
  return { metadata: { annotations }, spec: { unschedulable } };
}

/** What the shell passes as `reboot`: the one rule applied to this Node and an owned BootcNode. */
function authorize(s: BootcNodeSpec, n: NodeForReboot | undefined) {
  return rebootAuthorization(n, {
    metadata: { ownerReferences: [{ kind: "BootcNodePool", name: "workers", controller: true }] },
    spec: s,
  });
}

function condition(status: BootcNodeStatus, type: string): Condition | undefined {
  return findCondition(status.conditions, type);
}

interface Case {
  name: string;
  input: DecideInput;
  idle?: [string, string] | "unchanged";
  degraded: [string, string] | [string, string, RegExp] | "unset";
  action: Action;
  persistFirst?: boolean;
  /** Expected RebootAllowed; "unchanged" compares with the persisted one (absent stays absent). */
  rebootAllowed?: [string, string] | [string, string, RegExp] | "unchanged";
  /** Expected retryAt, as milliseconds after NOW. */
  retryInMs?: number;
  /** Other expected conditions by type: [status, reason] (or with a message pattern). */
  conditions?: Record<string, [string, string] | [string, string, RegExp]>;
}

const cases: Case[] = [
  {
    name: "booted == desired, nothing staged: Idle",
    input: input({ spec: spec(A), host: host(entry(A)) }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "multi-arch: pullspec keeps the index digest, imageDigest is per-arch: Idle",
    input: input({ spec: spec(A), host: host(entry(A, { imageDigest: d("9") })) }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "desired pinned to the per-arch digest, booted from a tag: Idle",
    input: input({
      spec: spec(`${REPO}@${d("9")}`),
      host: host(entry(`${REPO}:v1`, { imageDigest: d("9") })),
    }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "Idle → Staging: desired differs from booted, nothing staged",
    input: input({ spec: spec(B), status: persisted("Idle"), host: host(entry(A)) }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: B, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "bootc 1.12–1.16.9 stages with switch + upgrade --download-only",
    input: input({ spec: spec(B), host: host(entry(A)), capabilities: OLD_CAPS }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: B, method: "switch-then-upgrade-download-only" },
    persistFirst: true,
  },
  {
    name: "bootc older than 1.12: Degraded 'bootc too old', never stages unlocked",
    input: input({
      spec: spec(B),
      host: host(entry(A)),
      capabilities: capabilitiesFromVersion("bootc 1.11.0"),
    }),
    idle: ["False", "Staging"],
    degraded: ["True", "Error", /^bootc too old: 1\.11\.0/],
    action: { type: "none" },
  },
  {
    name: "Staging → Staged: desired staged locked",
    input: input({
      spec: spec(B),
      status: persisted("Staging"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "older host without downloadOnly: staged desired counts as Staged",
    input: input({ spec: spec(B), host: host(entry(A), entry(B)), capabilities: OLD_CAPS }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "desired staged but unlocked (fall-back interrupted): lock it",
    input: input({
      spec: spec(B),
      status: persisted("Staging"),
      host: host(entry(A), entry(B, { downloadOnly: false })),
    }),
    idle: ["False", "Locking"],
    degraded: ["False", "Healthy"],
    action: { type: "lockStaged" },
  },
  {
    name: "Booted and staged == desired, Node not read yet: read it, write nothing first",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
    }),
    idle: "unchanged",
    degraded: ["False", "Healthy"],
    action: { type: "readNode" },
    persistFirst: false,
    rebootAllowed: "unchanged",
  },
  {
    name: "Staged → Rebooting when Booted, staged == desired and the Node holds slot + drain",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node(drained(B))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "apply", image: B, soft: false, method: "switch" },
    persistFirst: true,
    rebootAllowed: ["True", "SlotAndDrain"],
  },
  {
    name: "AllowSoftReboot adds --soft-reboot=auto; 1.14 applies with upgrade",
    input: input({
      spec: spec(B, "Booted", "AllowSoftReboot"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true, softRebootCapable: true })),
      capabilities: OLD_CAPS,
      reboot: authorize(spec(B, "Booted", "AllowSoftReboot"), node(drained(B))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "apply", image: B, soft: true, method: "upgrade" },
    persistFirst: true,
  },
  {
    name: "Booted by hand, the Node holds no reboot slot: stay Staged, no apply, say why",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node({}, false)),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NoRebootSlot", /holds no reboot slot/],
    retryInMs: DEFAULT_REBOOT_RECHECK_MS,
  },
  {
    name: "Booted, slot held but the drain has not finished: AwaitingDrain",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node(SLOT)),
      rebootRecheckMs: 5_000,
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "AwaitingDrain", /drain has not finished/],
    retryInMs: 5_000,
  },
  {
    name: "Booted, the finished drain was for another image: AwaitingDrain",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node(drained(C))),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "AwaitingDrain", /drain was for .*c{12}, not .*b{12}/],
  },
  {
    name: "Booted, slot and drain but the Node was uncordoned: AwaitingDrain",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node(drained(B), false)),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "AwaitingDrain", /not cordoned/],
  },
  {
    name: "Booted, the Node could not be read: refuse (never assume)",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), undefined),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NoRebootSlot", /could not be read/],
  },
  {
    name:
      "Booted, not authorized, staged unlocked: lock it (an unexpected reboot must not apply it)",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: false })),
      reboot: authorize(spec(B, "Booted"), node({}, false)),
    }),
    idle: ["False", "Locking"],
    degraded: ["False", "Healthy"],
    action: { type: "lockStaged" },
    rebootAllowed: ["False", "NoRebootSlot"],
  },
  {
    name: "Rebooting persisted, no apply running, slot withdrawn meanwhile: back to Staged",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting", ["True", "SlotAndDrain"]),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node({})),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NoRebootSlot"],
  },
  {
    name: "Booted requested but staged != desired (desiredImage changed): re-stage, never apply",
    input: input({
      spec: spec(C, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
    }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: C, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "re-stage when desiredImage changes while staged",
    input: input({
      spec: spec(C),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
    }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: C, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "Rebooting with the apply command running: wait (no Node read)",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting", ["True", "SlotAndDrain"]),
      host: host(entry(A), entry(B, { downloadOnly: false })),
      applyInFlight: true,
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: "unchanged",
  },
  {
    name: "Rebooting persisted but no apply running (restarted before the reboot): read the Node",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
    }),
    idle: "unchanged",
    degraded: ["False", "Healthy"],
    action: { type: "readNode" },
  },
  {
    name: "Rebooting persisted but no apply running, still authorized: apply again",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node(drained(B))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "apply", image: B, soft: false, method: "switch" },
    persistFirst: true,
  },
  {
    name: "Rebooting → Idle: after the reboot booted == desired",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(B), null, entry(A)),
    }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "Rebooting, came back on the old image with desired as rollback: Degraded, no loop",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(A), null, entry(B)),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["True", "Error", /booted .*@sha256:b{12} but the host fell back to .*@sha256:a{12}/],
    action: { type: "none" },
  },
  {
    name:
      "Rebooting into A while the spec moved on to B: not a fall-back from B (B is staged next)",
    input: input({
      spec: spec(B, "Staged"),
      status: {
        conditions: [{
          type: "Idle",
          status: "False",
          reason: "Rebooting",
          message: `Applying ${A} and rebooting`,
          lastTransitionTime: "2026-05-01T09:00:00Z",
        }],
        phaseImage: A,
      },
      host: host(entry(A), null, entry(B)),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "Rebooting, rebooted before apply (locked stage discarded): stage again",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(A), null, entry(C)),
    }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: B, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "unexpected reboot discarded the locked stage (Staged persisted): re-stage",
    input: input({ spec: spec(B), status: persisted("Staged"), host: host(entry(A)) }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: B, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "killed mid-stage (Staging persisted, nothing staged): stage again",
    input: input({ spec: spec(B), status: persisted("Staging"), host: host(entry(A)) }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: B, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "hazard: booted A, staged B unlocked, desired A: lock B first (footnote 11)",
    input: input({
      spec: spec(A),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: false })),
    }),
    idle: ["False", "Locking"],
    degraded: ["False", "Healthy"],
    action: { type: "lockStaged", other: true },
    persistFirst: true,
  },
  {
    name: "hazard: booted A, staged B unlocked, locking B failed: stage a copy of A to discard B",
    input: input({
      spec: spec(A),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: false })),
      failures: {
        "lockStaged:other": { message: "error: Pulling: timed out", attempts: 1, at: NOW },
      },
    }),
    idle: ["False", "Staging"],
    degraded: ["True", "Error", /timed out/],
    action: { type: "stage", image: A, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "another image staged unlocked (a crash between switch and lock): lock it, then D",
    input: input({
      spec: spec(C),
      status: persisted("Staging"),
      host: host(entry(A), entry(B, { downloadOnly: false })),
    }),
    idle: ["False", "Locking"],
    degraded: ["False", "Healthy"],
    action: { type: "lockStaged", other: true },
    persistFirst: true,
  },
  {
    name: "hazard: booted A, staged B locked, desired A (rollout cancelled): replace B too",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
    }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: A, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "booted A with a staged copy of A: Idle (the next boot keeps A)",
    input: input({
      spec: spec(A),
      status: persisted("Staging"),
      host: host(entry(A), entry(A, { downloadOnly: true })),
    }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "booted: null is a clear Degraded reason, not 'nothing installed'",
    input: input({ spec: spec(B), status: persisted("Idle"), host: host(null) }),
    idle: ["True", "Idle"],
    degraded: ["True", "Error", /not a bootc host, or bootc believes it runs in a container/],
    action: { type: "none" },
  },
  {
    name: "incompatible booted deployment: Degraded, no staging",
    input: input({ spec: spec(B), host: host(entry(A, { incompatible: true })) }),
    idle: "unchanged",
    degraded: ["True", "Error", /incompatible/],
    action: { type: "none" },
  },
  {
    name: "bootc status error: Degraded with bootc's message, Idle unchanged",
    input: input({
      spec: spec(B),
      status: persisted("Staged"),
      host: {
        ok: false,
        message: "bootc status: error: Loading sysroot: Timeout waiting for /boot",
        timedOut: false,
        since: NOW,
      },
    }),
    idle: ["False", "Staged"],
    degraded: ["True", "Error", /bootc status failed: bootc status: error: Loading sysroot/],
    action: { type: "none" },
  },
  {
    name: "status blocked by a running pull: tolerated within the grace period",
    input: input({
      spec: spec(B),
      status: persisted("Staging"),
      host: {
        ok: false,
        message: "bootc status: timed out after 120s",
        timedOut: true,
        since: new Date(NOW.getTime() - 60_000),
      },
    }),
    idle: ["False", "Staging"],
    degraded: "unset",
    action: { type: "none" },
  },
  {
    name: "status blocked for longer than the grace period: Degraded",
    input: input({
      spec: spec(B),
      status: persisted("Staging"),
      host: {
        ok: false,
        message: "bootc status: timed out after 120s",
        timedOut: true,
        since: new Date(NOW.getTime() - 11 * 60_000),
      },
    }),
    idle: ["False", "Staging"],
    degraded: ["True", "Error", /timed out/],
    action: { type: "none" },
  },
  {
    name: "auto-update timer not yet masked: mask it first",
    input: input({ spec: spec(B), host: host(entry(A)), autoUpdatesMasked: false }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "maskAutoUpdates" },
    persistFirst: false,
  },
  {
    name: "mask failing and backing off: reported, staging goes on",
    input: input({
      spec: spec(B),
      host: host(entry(A)),
      autoUpdatesMasked: false,
      failures: {
        maskAutoUpdates: { message: "systemctl mask: Access denied", attempts: 1, at: NOW },
      },
    }),
    idle: ["False", "Staging"],
    degraded: ["True", "Error", /Access denied/],
    action: { type: "stage", image: B, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "stage failed recently: Degraded with bootc's error line, waits for backoff",
    input: input({
      spec: spec(B),
      status: persisted("Staging"),
      host: host(entry(A)),
      failures: {
        [`stage:${B}`]: {
          message: "bootc switch --download-only: error: Pulling: manifest unknown",
          attempts: 2,
          at: new Date(NOW.getTime() - 5_000),
        },
      },
    }),
    idle: ["False", "Staging"],
    degraded: ["True", "Error", /^bootc switch --download-only: error: Pulling: manifest unknown$/],
    action: { type: "none" },
  },
  {
    name: "stage failed, backoff elapsed: retry while staying Degraded",
    input: input({
      spec: spec(B),
      host: host(entry(A)),
      failures: {
        [`stage:${B}`]: {
          message: "error: boom",
          attempts: 1,
          at: new Date(NOW.getTime() - 11_000),
        },
      },
    }),
    idle: ["False", "Staging"],
    degraded: ["True", "Error", /error: boom/],
    action: { type: "stage", image: B, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "failure of a previous desired image does not delay the new one",
    input: input({
      spec: spec(C),
      host: host(entry(A)),
      failures: { [`stage:${B}`]: { message: "error: boom", attempts: 5, at: NOW } },
    }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: C, method: "switch-download-only" },
    persistFirst: true,
  },
  {
    name: "missing pull Secret: Degraded naming it, no stage",
    input: input({
      spec: spec(B),
      host: host(entry(A)),
      pullSecretError: "pull secret bootc-operator/regcred: Secret not found",
    }),
    idle: ["False", "Staging"],
    degraded: ["True", "Error", /bootc-operator\/regcred/],
    action: { type: "none" },
  },
  {
    name: "missing pull Secret does not block applying an already staged image",
    input: input({
      spec: spec(B, "Booted"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      pullSecretError: "pull secret x/y: key .dockerconfigjson missing",
      reboot: authorize(spec(B, "Booted"), node(drained(B))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["True", "Error", /dockerconfigjson/],
    action: { type: "apply", image: B, soft: false, method: "switch" },
    persistFirst: true,
  },
  {
    name: "apply failed: stays Rebooting, Degraded, retried after backoff",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(A), entry(B, { downloadOnly: false })),
      failures: {
        [`apply:${B}`]: {
          message: "bootc switch --from-downloaded --apply: error: x",
          attempts: 1,
          at: NOW,
        },
      },
    }),
    idle: ["False", "Rebooting"],
    degraded: ["True", "Error", /--apply: error: x/],
    action: { type: "none" },
    rebootAllowed: "unchanged",
  },
  {
    name: "RebootAllowed True, spec back to Staged (node released): False/NotRequested",
    input: input({
      spec: spec(B),
      status: persisted("Idle", ["True", "SlotAndDrain"]),
      host: host(entry(B), null, entry(A)),
    }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NotRequested"],
  },
  {
    name: "never asked to reboot: no RebootAllowed condition at all",
    input: input({
      spec: spec(B),
      status: persisted("Staging"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: "unchanged",
  },
  {
    name: "Booted while still staging: stage, RebootAllowed not evaluated yet",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staging", ["False", "NoRebootSlot"]),
      host: host(entry(A)),
    }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: B, method: "switch-download-only" },
    rebootAllowed: "unchanged",
  },
  {
    name: "not owned by a pool: Idle NotOwned, nothing staged",
    input: input({
      owned: false,
      spec: spec(B),
      host: host(entry(A)),
    }),
    idle: ["True", "NotOwned"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: "unchanged",
  },
  {
    name: "not owned, Booted by hand on a staged host: no apply, no Node read, NotOwned",
    input: input({
      owned: false,
      spec: spec(B, "Booted"),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      reboot: authorize(spec(B, "Booted"), node(drained(B))),
    }),
    idle: ["True", "NotOwned"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NotOwned"],
  },
  {
    name: "not owned, desired staged unlocked: not even locked (nothing is acted on)",
    input: input({
      owned: false,
      spec: spec(B),
      host: host(entry(A), entry(B, { downloadOnly: false })),
    }),
    idle: ["True", "NotOwned"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "not owned, RebootAllowed left from before: False/NotOwned",
    input: input({
      owned: false,
      spec: spec(A),
      status: persisted("Idle", ["False", "NotRequested"]),
      host: host(entry(A)),
    }),
    idle: ["True", "NotOwned"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NotOwned"],
  },
  {
    name: "not owned, auto-update timer not masked: masking still protects the host",
    input: input({
      owned: false,
      spec: spec(B),
      host: host(entry(A)),
      autoUpdatesMasked: false,
    }),
    idle: ["True", "NotOwned"],
    degraded: ["False", "Healthy"],
    action: { type: "maskAutoUpdates" },
  },
  {
    name: "not owned and not a bootc host: both reported",
    input: input({ owned: false, spec: spec(B), host: host(null) }),
    idle: ["True", "NotOwned"],
    degraded: ["True", "Error", /booted: null/],
    action: { type: "none" },
  },
  {
    name: "apply backing off: no Node read until the backoff elapses",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      failures: {
        [`apply:${B}`]: { message: "error: x", attempts: 1, at: NOW },
      },
    }),
    idle: ["False", "Rebooting"],
    degraded: ["True", "Error", /error: x/],
    action: { type: "none" },
    retryInMs: 10_000,
  },
  {
    name: "apply backoff elapsed: read the Node before retrying",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting"),
      host: host(entry(A), entry(B, { downloadOnly: true })),
      failures: {
        [`apply:${B}`]: { message: "error: x", attempts: 1, at: new Date(NOW.getTime() - 11_000) },
      },
    }),
    degraded: ["True", "Error", /error: x/],
    action: { type: "readNode" },
  },
  // The rollback route: desiredImage is the host's rollback deployment (the previous image).
  {
    name: "rollback route: desired is the rollback deployment, Staged: ready, nothing staged",
    input: input({
      spec: spec(A),
      status: persisted("Idle"),
      host: host(entry(B), null, entry(A)),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    conditions: {
      ImageStaged: ["True", "RollbackDeployment", /@sha256:a{12} is the rollback deployment/],
      Rebooted: ["False", "Waiting"],
    },
  },
  {
    name: "rollback route: matched by the per-arch imageDigest (desired pinned to it)",
    input: input({
      spec: spec(`${REPO}@${d("9")}`),
      host: host(entry(B), null, entry(`${REPO}:v1`, { imageDigest: d("9") })),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
  {
    name: "rollback route, Booted, Node not read: read it, write nothing first",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Staged"),
      host: host(entry(B), null, entry(A)),
    }),
    idle: "unchanged",
    degraded: ["False", "Healthy"],
    action: { type: "readNode" },
    persistFirst: false,
  },
  {
    name: "rollback route, Booted, authorized: Rebooting persisted first, bootc rollback --apply",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Staged"),
      host: host(entry(B), null, entry(A)),
      reboot: authorize(spec(A, "Booted"), node(drained(A))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "rollback", image: A, soft: false },
    persistFirst: true,
    rebootAllowed: ["True", "SlotAndDrain"],
    conditions: { Rebooted: ["False", "RollingBack"], ImageStaged: ["True", "RollbackDeployment"] },
  },
  {
    name: "rollback route, AllowSoftReboot: --soft-reboot=auto",
    input: input({
      spec: spec(A, "Booted", "AllowSoftReboot"),
      host: host(entry(B), null, entry(A)),
      reboot: authorize(spec(A, "Booted", "AllowSoftReboot"), node(drained(A))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "rollback", image: A, soft: true },
  },
  {
    name: "rollback route, Booted, no reboot slot: stays Staged, nothing run, says why",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Staged"),
      host: host(entry(B), null, entry(A)),
      reboot: authorize(spec(A, "Booted"), node({}, false)),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NoRebootSlot"],
    retryInMs: DEFAULT_REBOOT_RECHECK_MS,
  },
  {
    name: "rollback route, drain finished for another image: AwaitingDrain, nothing run",
    input: input({
      spec: spec(A, "Booted"),
      host: host(entry(B), null, entry(A)),
      reboot: authorize(spec(A, "Booted"), node(drained(B))),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "AwaitingDrain"],
  },
  {
    name: "rollback route, another image staged unlocked: lock it (an unexpected reboot)",
    input: input({
      spec: spec(A, "Booted"),
      host: host(entry(B), entry(C, { downloadOnly: false }), entry(A)),
      reboot: authorize(spec(A, "Booted"), node(drained(A))),
    }),
    idle: ["False", "Locking"],
    degraded: ["False", "Healthy"],
    action: { type: "lockStaged" },
  },
  {
    name: "rollback route, another image staged locked, authorized: roll back (bootc drops it)",
    input: input({
      spec: spec(A, "Booted"),
      host: host(entry(B), entry(C, { downloadOnly: true }), entry(A)),
      reboot: authorize(spec(A, "Booted"), node(drained(A))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "rollback", image: A, soft: false },
  },
  {
    name: "rollback route, a rollback already queued: undone first (never left queued)",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Staged"),
      host: host(entry(B), null, entry(A), true),
      reboot: authorize(spec(A, "Booted"), node(drained(A))),
    }),
    idle: "unchanged",
    degraded: ["False", "Healthy"],
    action: { type: "unqueueRollback" },
    persistFirst: false,
  },
  {
    name: "rollback route, its own rollback command running: stays Rebooting, nothing more",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Rebooting", ["True", "SlotAndDrain"], [[
        "Rebooted",
        "False",
        "RollingBack",
      ]]),
      host: host(entry(B), null, entry(A), true),
      applyInFlight: true,
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    conditions: { Rebooted: ["False", "RollingBack"] },
  },
  {
    name: "rollback route, Rebooting persisted, no command running, authorized: issued again " +
      "(not a fall-back)",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Rebooting", ["True", "SlotAndDrain"], [[
        "Rebooted",
        "False",
        "RollingBack",
      ]]),
      host: host(entry(B), null, entry(A)),
      reboot: authorize(spec(A, "Booted"), node(drained(A))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["False", "Healthy"],
    action: { type: "rollback", image: A, soft: false },
  },
  {
    name: "rollback route, Rebooting persisted, slot withdrawn meanwhile: back to Staged",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Rebooting", ["True", "SlotAndDrain"], [[
        "Rebooted",
        "False",
        "RollingBack",
      ]]),
      host: host(entry(B), null, entry(A)),
      reboot: authorize(spec(A, "Booted"), node({})),
    }),
    idle: ["False", "Staged"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    rebootAllowed: ["False", "NoRebootSlot"],
    conditions: { Rebooted: ["False", "Waiting"] },
  },
  {
    name: "rollback route, after the reboot booted = desired: Idle, Rebooted True",
    input: input({
      spec: spec(A, "Booted"),
      status: persisted("Rebooting", ["True", "SlotAndDrain"], [[
        "Rebooted",
        "False",
        "RollingBack",
      ]]),
      host: host(entry(A), null, entry(B)),
    }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    conditions: { Rebooted: ["True", "Rebooted"], ImageStaged: ["True", "Booted"] },
  },
  {
    name: "rollback route on bootc too old: nothing run",
    input: input({
      spec: spec(A, "Booted"),
      host: host(entry(B), null, entry(A)),
      capabilities: capabilitiesFromVersion("bootc 1.11.0"),
      reboot: authorize(spec(A, "Booted"), node(drained(A))),
    }),
    idle: ["False", "Staged"],
    degraded: ["True", "Error", /bootc too old/],
    action: { type: "none" },
  },
  {
    name: "fell back (after an apply of staged D): Degraded names both images, Rebooted FellBack",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Rebooting", ["True", "SlotAndDrain"], [[
        "Rebooted",
        "False",
        "Rebooting",
      ]]),
      host: host(entry(A), null, entry(B)),
      reboot: authorize(spec(B, "Booted"), node(drained(B))),
    }),
    idle: ["False", "Rebooting"],
    degraded: ["True", "Error", /booted .*@sha256:b{12} but the host fell back to .*@sha256:a{12}/],
    action: { type: "none" },
    conditions: {
      Rebooted: [
        "False",
        "FellBack",
        /^booted .*@sha256:b{12} but the host fell back to .*@sha256:a{12}$/,
      ],
    },
  },
  {
    name: "fell back, reported once: stays so (no rollback route) even if Idle was rewritten",
    input: input({
      spec: spec(B, "Booted"),
      status: persisted("Staged", ["True", "SlotAndDrain"], [
        ["ImageStaged", "True", "RollbackDeployment", `${B} is the rollback deployment`],
        ["Rebooted", "False", "FellBack"],
      ]),
      host: host(entry(A), null, entry(B)),
      reboot: authorize(spec(B, "Booted"), node(drained(B))),
    }),
    idle: "unchanged",
    degraded: ["True", "Error", /fell back/],
    action: { type: "none" },
    conditions: { Rebooted: ["False", "FellBack"] },
  },
  {
    name: "fell back, then the controller rolls the node back to the booted image: Idle",
    input: input({
      spec: spec(A),
      status: {
        ...persisted("Rebooting", ["True", "SlotAndDrain"], [
          ["ImageStaged", "True", "RollbackDeployment", `${B} is the rollback deployment`],
          ["Rebooted", "False", "FellBack"],
          ["Verified", "False", "FellBack"],
        ]),
        phaseImage: B,
      },
      host: host(entry(A), null, entry(B)),
    }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
    conditions: {
      Rebooted: ["True", "AlreadyBooted"],
      Verified: ["Unknown", "TargetChanged"],
      Cordoned: ["False", "NotRequired"],
    },
  },
  {
    name: "no spec (standalone status): mirror only",
    input: input({ host: host(entry(A)) }),
    idle: ["True", "Idle"],
    degraded: ["False", "Healthy"],
    action: { type: "none" },
  },
];

for (const c of cases) {
  Deno.test(`decide: ${c.name}`, () => {
    const out = decide(c.input);
    assert.deepEqual(out.action, c.action);
    if (c.persistFirst !== undefined) assert.equal(out.persistFirst, c.persistFirst);
    // No case here has a spec its status has not acknowledged: nothing waits to be written.
    assert.equal(out.reportAfterMs, undefined);
    const idleCond = condition(out.status, "Idle");
    if (c.idle === "unchanged") {
      assert.deepEqual(idleCond, condition(c.input.status ?? {}, "Idle"));
    } else if (c.idle) {
      assert.deepEqual([idleCond?.status, idleCond?.reason], c.idle);
    }
    const deg = condition(out.status, "Degraded");
    if (c.degraded === "unset") {
      assert.equal(deg, undefined);
    } else {
      assert.deepEqual([deg?.status, deg?.reason], c.degraded.slice(0, 2));
      if (c.degraded[2]) assert.match(deg!.message, c.degraded[2]);
    }
    const allowed = condition(out.status, "RebootAllowed");
    if (c.rebootAllowed === "unchanged") {
      assert.deepEqual(allowed, condition(c.input.status ?? {}, "RebootAllowed"));
    } else if (c.rebootAllowed) {
      assert.deepEqual([allowed?.status, allowed?.reason], c.rebootAllowed.slice(0, 2));
      if (c.rebootAllowed[2]) assert.match(allowed!.message, c.rebootAllowed[2]);
    }
    if (c.retryInMs !== undefined) {
      assert.equal(out.retryAt?.getTime(), NOW.getTime() + c.retryInMs);
    }
    for (const [type, expected] of Object.entries(c.conditions ?? {})) {
      const got = condition(out.status, type);
      assert.deepEqual([got?.status, got?.reason], expected.slice(0, 2), type);
      if (expected[2]) assert.match(got!.message, expected[2], type);
    }
  });
}

Deno.test("decide: no action ever applies without the Node's authorization", () => {
  // Every case that reaches the reboot gate, with every kind of Node the daemon may read.
  const s = spec(B, "Booted");
  const nodes: (NodeForReboot | undefined)[] = [
    undefined,
    node({}),
    node({}, false),
    node(SLOT),
    node(drained(C)),
    node(drained(B), false),
    node({ [ANNOTATION_DRAINED_AT]: "x", [ANNOTATION_DRAINED_FOR]: B }),
  ];
  for (const previous of ["Staged", "Rebooting", "Staging"]) {
    for (const downloadOnly of [true, false]) {
      for (const n of nodes) {
        for (const owned of [true, false]) {
          const out = decide(input({
            owned,
            spec: s,
            status: persisted(previous),
            host: host(entry(A), entry(B, { downloadOnly })),
            reboot: authorize(s, n),
          }));
          assert.notEqual(out.action.type, "apply", JSON.stringify({ previous, n, owned }));
          assert.notEqual(condition(out.status, "Idle")?.reason, "Rebooting");
        }
      }
    }
  }
  const ok = decide(input({
    spec: s,
    host: host(entry(A), entry(B, { downloadOnly: true })),
    reboot: authorize(s, node(drained(B))),
  }));
  assert.equal(ok.action.type, "apply");
});

Deno.test("decide: NotOwned reads clearly", () => {
  const out = decide(input({ owned: false, spec: spec(B), host: host(entry(A)) }));
  assert.equal(condition(out.status, "Idle")?.message, NOT_OWNED_MESSAGE);
  assert.equal(out.keys.length, 0, "no action looked at");
});

Deno.test("decide: a refusal that repeats writes nothing (re-checks are reads only)", () => {
  const s = spec(B, "Booted");
  const h = host(entry(A), entry(B, { downloadOnly: true }));
  const first = decide(
    input({ spec: s, status: persisted("Staged"), host: h, reboot: authorize(s, node({})) }),
  );
  assert.equal(first.changed, true);
  const again = decide(input({
    spec: s,
    status: first.status,
    host: h,
    reboot: authorize(s, node({})),
    now: new Date(NOW.getTime() + 60_000),
  }));
  assert.equal(again.changed, false);
  assert.equal(again.retryAt?.getTime(), NOW.getTime() + 60_000 + DEFAULT_REBOOT_RECHECK_MS);
  // The slot arrives but not the drain: a new reason is a transition.
  const awaiting = decide(
    input({ spec: s, status: first.status, host: h, reboot: authorize(s, node(SLOT)) }),
  );
  assert.equal(awaiting.changed, true);
  assert.equal(condition(awaiting.status, "RebootAllowed")?.reason, "AwaitingDrain");
  assert.equal(condition(awaiting.status, "Idle")?.reason, "Staged");
});

Deno.test("decide: booted: null message names the container detection", () => {
  const out = decide(input({ spec: spec(A), host: host(null) }));
  assert.equal(condition(out.status, "Degraded")?.message, NOT_A_BOOTC_HOST_MESSAGE);
  assert.equal(out.status.booted, undefined);
});

Deno.test("decide: status mirrors booted, staged and rollback", () => {
  const out = decide(input({
    spec: spec(B),
    generation: 7,
    host: host(
      entry(A),
      entry(B, { downloadOnly: true, softRebootCapable: true, imageDigest: d("8") }),
      { ...entry(C), incompatible: true, image: null },
    ),
  }));
  assert.deepEqual(out.status.booted, {
    image: A,
    imageDigest: d("a"),
    version: "1.0",
    timestamp: "2026-04-01T00:00:00Z",
    architecture: "amd64",
    softRebootCapable: false,
    incompatible: false,
  });
  assert.deepEqual(out.status.staged, {
    image: B,
    imageDigest: d("8"),
    version: "1.0",
    timestamp: "2026-04-01T00:00:00Z",
    architecture: "amd64",
    softRebootCapable: true,
    incompatible: false,
    downloadOnly: true,
  });
  assert.deepEqual(out.status.rollback, { softRebootCapable: false, incompatible: true });
  assert.equal(out.status.observedGeneration, 7);
  assert.equal(out.status.bootcVersion, "1.16.10");
  assert.equal(out.status.autoUpdatesDisabled, true);
});

Deno.test("decide: status error keeps the last known deployments", () => {
  const first = decide(input({ spec: spec(A), host: host(entry(A)) }));
  const out = decide(input({
    spec: spec(A),
    status: first.status,
    host: { ok: false, message: "error: x", timedOut: false, since: NOW },
  }));
  assert.deepEqual(out.status.booted, first.status.booted);
  assert.equal(condition(out.status, "Idle")?.reason, "Idle");
});

Deno.test("decide: no write when nothing changed (no heartbeats)", () => {
  const first = decide(
    input({ spec: spec(B), host: host(entry(A), entry(B, { downloadOnly: true })) }),
  );
  assert.equal(first.changed, true);
  const later = new Date(NOW.getTime() + 3600_000);
  const second = decide(input({
    spec: spec(B),
    status: first.status,
    host: host(entry(A), entry(B, { downloadOnly: true })),
    now: later,
  }));
  assert.equal(second.changed, false);
  assert.equal(second.status, first.status);
  // A real transition changes the status and keeps unrelated transition times.
  const third = decide(input({
    spec: spec(B, "Booted"),
    status: first.status,
    host: host(entry(A), entry(B, { downloadOnly: true })),
    now: later,
    reboot: authorize(spec(B, "Booted"), node(drained(B))),
  }));
  assert.equal(third.changed, true);
  assert.equal(condition(third.status, "Idle")?.reason, "Rebooting");
  assert.equal(
    condition(third.status, "Degraded")?.lastTransitionTime,
    condition(first.status, "Degraded")?.lastTransitionTime,
  );
});

Deno.test("decide: a tolerated status timeout writes nothing", () => {
  const first = decide(
    input({ spec: spec(B), host: host(entry(A), entry(B, { downloadOnly: true })) }),
  );
  const out = decide(input({
    spec: spec(B),
    status: first.status,
    host: { ok: false, message: "timed out", timedOut: true, since: NOW },
  }));
  assert.equal(out.changed, false);
});

Deno.test("decide: autoUpdatesDisabled reported once masked", () => {
  const before = decide(input({ spec: spec(A), host: host(entry(A)), autoUpdatesMasked: false }));
  assert.equal(before.status.autoUpdatesDisabled, false);
  const after = decide(input({ spec: spec(A), host: host(entry(A)), status: before.status }));
  assert.equal(after.status.autoUpdatesDisabled, true);
  assert.equal(after.changed, true);
});

Deno.test("decide: backoff grows and tells when to retry", () => {
  const failure = (attempts: number): ActionFailure => ({ message: "error: x", attempts, at: NOW });
  for (const [attempts, ms] of [[1, 10_000], [2, 20_000], [4, 80_000], [20, 600_000]]) {
    const out = decide(input({
      spec: spec(B),
      host: host(entry(A)),
      failures: { [`stage:${B}`]: failure(attempts) },
    }));
    assert.equal(out.action.type, "none");
    assert.equal(out.retryAt?.getTime(), NOW.getTime() + ms, `attempts ${attempts}`);
    assert.deepEqual(out.keys, [`stage:${B}`]);
  }
});

Deno.test("statusEqual ignores key order and undefined fields", () => {
  assert.equal(
    statusEqual({ booted: { image: "x", imageDigest: "y" } }, {
      booted: { imageDigest: "y", image: "x", version: undefined },
    }),
    true,
  );
  assert.equal(statusEqual({ booted: { image: "x" } }, { booted: { image: "z" } }), false);
});

Deno.test("mirrorEntry omits what bootc did not report", () => {
  assert.equal(mirrorEntry(null), undefined);
  const e = entry(A);
  delete e.image!.architecture;
  assert.equal(mirrorEntry(e)?.architecture, undefined);
  assert.equal("downloadOnly" in mirrorEntry(e)!, false);
});

Deno.test("decide: no rollback is ever run without the Node's authorization", () => {
  const s = spec(A, "Booted");
  const nodes: (NodeForReboot | undefined)[] = [
    undefined,
    node({}),
    node(SLOT),
    node(drained(B)),
    node(drained(A), false),
  ];
  for (const previous of ["Staged", "Rebooting", "Idle"]) {
    for (const n of nodes) {
      for (const owned of [true, false]) {
        for (const queued of [true, false]) {
          const out = decide(input({
            owned,
            spec: s,
            status: persisted(previous, undefined, [["Rebooted", "False", "RollingBack"]]),
            host: host(entry(B), null, entry(A), queued),
            reboot: authorize(s, n),
          }));
          assert.notEqual(out.action.type, "rollback", JSON.stringify({ previous, n, owned }));
          assert.notEqual(out.action.type, "apply");
        }
      }
    }
  }
  // Staged never runs `bootc rollback` (it would change what an unexpected reboot boots).
  for (const queued of [false]) {
    const out = decide(input({ spec: spec(A), host: host(entry(B), null, entry(A), queued) }));
    assert.equal(out.action.type, "none");
  }
});

/** [status, reason] of a condition. */
function sr(status: BootcNodeStatus, type: string): string | undefined {
  const c = condition(status, type);
  return c ? `${c.status}/${c.reason}` : undefined;
}

Deno.test("decide: phase conditions through a whole update, in the writes made anyway", () => {
  const t = (minutes: number) => new Date(NOW.getTime() + minutes * 60_000);
  // Idle on A, the controller's conditions from the last rollout.
  let status = decide(input({ spec: spec(A), host: host(entry(A)) })).status;
  assert.equal(sr(status, "ImageStaged"), "True/Booted");
  assert.equal(sr(status, "Rebooted"), "True/AlreadyBooted");
  assert.equal(sr(status, "Cordoned"), "False/NotRequired");
  status = {
    ...status,
    conditions: [
      ...status.conditions!,
      {
        type: "Verified",
        status: "True",
        reason: "ChecksPassed",
        message: "",
        lastTransitionTime: "2026-05-01T08:00:00Z",
      },
      {
        type: "Stalled",
        status: "False",
        reason: "Progressing",
        message: "",
        lastTransitionTime: "2026-05-01T08:00:00Z",
      },
    ],
  };

  // New target B: the Staging write resets the phases and the controller's Verified.
  let out = decide(input({ spec: spec(B), status, host: host(entry(A)), now: t(1) }));
  assert.equal(out.changed, true);
  assert.equal(out.action.type, "stage");
  status = out.status;
  assert.equal(sr(status, "ImageStaged"), "False/Downloading");
  assert.equal(condition(status, "ImageStaged")?.message, `Downloading ${shortReference(B)}`);
  assert.equal(sr(status, "Cordoned"), "False/Waiting");
  assert.equal(sr(status, "Drained"), "False/Waiting");
  assert.equal(sr(status, "Rebooted"), "False/Waiting");
  assert.equal(sr(status, "Verified"), "Unknown/TargetChanged");
  assert.equal(sr(status, "Stalled"), "False/Progressing", "other controller conditions kept");
  assert.equal(condition(status, "Stalled")?.lastTransitionTime, "2026-05-01T08:00:00Z");
  for (const type of ["ImageStaged", "Cordoned", "Drained", "Rebooted"]) {
    assert.equal(condition(status, type)?.lastTransitionTime, "2026-05-01T10:01:00Z", type);
  }

  // The controller verifies later: not reset again for the same target.
  status = {
    ...status,
    conditions: status.conditions!.map((c) =>
      c.type === "Verified" ? { ...c, status: "False", reason: "CheckFailed" } : c
    ),
  };
  const staged = host(entry(A), entry(B, { downloadOnly: true }));
  out = decide(input({ spec: spec(B), status, host: staged, now: t(2) }));
  status = out.status;
  assert.equal(sr(status, "ImageStaged"), "True/Staged");
  assert.equal(sr(status, "Verified"), "False/CheckFailed", "the controller's answer stands");

  // Booted, the Node read: slot and cordon, drain finished. One write (Rebooting).
  const annotations = drained(B);
  const n = node(annotations);
  out = decide(input({
    spec: spec(B, "Booted"),
    status,
    host: staged,
    node: n,
    reboot: authorize(spec(B, "Booted"), n),
    now: t(3),
  }));
  assert.equal(out.action.type, "apply");
  status = out.status;
  assert.equal(sr(status, "Cordoned"), "True/Cordoned");
  assert.equal(condition(status, "Cordoned")?.lastTransitionTime, "2026-05-01T09:58:00Z");
  assert.equal(sr(status, "Drained"), "True/Drained");
  assert.equal(condition(status, "Drained")?.lastTransitionTime, "2026-05-01T09:59:00Z");
  assert.equal(sr(status, "Rebooted"), "False/Rebooting");

  // After the reboot (the Node is not read; the controller released it): Rebooted True.
  const after = host(entry(B), null, entry(A));
  out = decide(input({ spec: spec(B, "Booted"), status, host: after, now: t(9) }));
  status = out.status;
  assert.equal(sr(status, "Idle"), "True/Idle");
  assert.equal(sr(status, "Rebooted"), "True/Rebooted");
  assert.equal(condition(status, "Rebooted")?.lastTransitionTime, "2026-05-01T10:09:00Z");
  assert.equal(sr(status, "ImageStaged"), "True/Booted");
  assert.equal(sr(status, "Cordoned"), "True/Cordoned", "the phase record stands");
  assert.equal(sr(status, "Drained"), "True/Drained");

  // Idle: nothing to write, ever; the release (back to Staged) changes RebootAllowed only.
  out = decide(input({ spec: spec(B, "Booted"), status, host: after, now: t(60) }));
  assert.equal(out.changed, false);
  out = decide(input({ spec: spec(B), status, host: after, now: t(61) }));
  assert.equal(sr(out.status, "RebootAllowed"), "False/NotRequested");
  for (const type of ["ImageStaged", "Cordoned", "Drained", "Rebooted"]) {
    assert.deepEqual(condition(out.status, type), condition(status, type), type);
  }
  out = decide(input({ spec: spec(B), status: out.status, host: after, now: t(62) }));
  assert.equal(out.changed, false);
});

Deno.test("decide: the controller's Cordoned/Drained (a blocked drain) stand while the Node is not read", () => {
  // B is staged; the controller holds the slot and writes what blocks the drain.
  const staged = host(entry(A), entry(B, { downloadOnly: true }));
  let status = decide(input({ spec: spec(B), host: staged })).status;
  assert.equal(sr(status, "Cordoned"), "False/Waiting");
  const blocked = `Drain for ${B} blocked: PodDisruptionBudget ns/pdb allows 0 disruption(s)`;
  status = {
    ...status,
    conditions: status.conditions!.map((c) =>
      c.type === "Cordoned"
        ? { ...c, status: "True", reason: "Cordoned", message: "Cordoned in a reboot slot" }
        : c.type === "Drained"
        ? { ...c, reason: "DrainBlocked", message: blocked }
        : c
    ),
  };
  const out = decide(input({ spec: spec(B), status, host: staged, now: NOW }));
  assert.equal(sr(out.status, "Cordoned"), "True/Cordoned");
  assert.equal(sr(out.status, "Drained"), "False/DrainBlocked");
  assert.equal(condition(out.status, "Drained")?.message, blocked);
});

Deno.test("decide: a target that only differs by a suffix is a new target", () => {
  const tagged = `${REPO}:1`;
  const first = decide(input({ spec: spec(tagged), host: host(entry(A)) })).status;
  assert.equal(condition(first, "ImageStaged")?.message, `Downloading ${tagged}`);
  const second = decide(input({ spec: spec(`${REPO}:10`), status: first, host: host(entry(A)) }));
  assert.equal(condition(second.status, "ImageStaged")?.message, `Downloading ${REPO}:10`);
  assert.notEqual(
    condition(second.status, "Rebooted")?.message,
    condition(first, "Rebooted")?.message,
  );
});

Deno.test("decide: a status written by an older daemon keeps the controller's conditions", () => {
  const status = persisted("Idle", undefined, [["Verified", "True", "ChecksPassed"]]);
  const out = decide(input({ spec: spec(B), status, host: host(entry(A)) }));
  assert.equal(sr(out.status, "Verified"), "True/ChecksPassed");
  assert.equal(sr(out.status, "ImageStaged"), "False/Downloading");
});

Deno.test("decide: no phase conditions for a BootcNode no pool owns, or an unreadable host", () => {
  const notOwned = decide(input({ owned: false, spec: spec(B), host: host(entry(A)) }));
  for (const type of ["ImageStaged", "Cordoned", "Drained", "Rebooted"]) {
    assert.equal(condition(notOwned.status, type), undefined);
  }
  const first = decide(input({ spec: spec(A), host: host(entry(A)) }));
  const broken = decide(input({
    spec: spec(B),
    status: first.status,
    host: { ok: false, message: "error: x", timedOut: false, since: NOW },
  }));
  assert.deepEqual(
    condition(broken.status, "ImageStaged"),
    condition(first.status, "ImageStaged"),
    "kept until bootc can be read",
  );
});

/** A health check result. */
function check(
  state: "Healthy" | "Starting" | "Unhealthy" | "Unknown",
  reason: string,
  o: { failedUnits?: string[]; message?: string; at?: Date; stopping?: boolean } = {},
) {
  return {
    state,
    reason: reason as "SystemRunning",
    failedUnits: o.failedUnits ?? [],
    message: o.message ?? `${state} message`,
    at: o.at ?? NOW,
    ...(o.stopping ? { stopping: true } : {}),
  };
}

Deno.test("decide: hostHealth and HostHealthy from the check, tied to the booted digest", () => {
  const out = decide(input({
    spec: spec(A),
    host: host(entry(A, { imageDigest: d("9") })),
    health: check("Starting", "Starting"),
  }));
  assert.deepEqual(out.status.hostHealth, {
    bootedDigest: d("9"),
    checkedAt: "2026-05-01T10:00:00Z",
    state: "Starting",
    message: "Starting message",
  });
  assert.equal(sr(out.status, "HostHealthy"), "Unknown/Starting");
  const cases: [ReturnType<typeof check>, string][] = [
    [check("Healthy", "SystemRunning"), "True/SystemRunning"],
    [check("Healthy", "UnitsActive"), "True/UnitsActive"],
    [check("Unhealthy", "UnitFailed", { failedUnits: ["x.service"] }), "False/UnitFailed"],
    [check("Unknown", "CheckError"), "Unknown/CheckError"],
  ];
  for (const [c, expected] of cases) {
    const next = decide(
      input({ spec: spec(A), status: out.status, host: host(entry(A)), health: c }),
    );
    assert.equal(next.changed, true, expected);
    assert.equal(sr(next.status, "HostHealthy"), expected);
    assert.equal(next.status.hostHealth?.state, c.state);
    assert.deepEqual(
      next.status.hostHealth?.failedUnits,
      c.failedUnits.length ? c.failedUnits : undefined,
    );
  }
});

Deno.test("decide: host health writes only when state, reason, units or boot change", () => {
  const later = (minutes: number) => new Date(NOW.getTime() + minutes * 60_000);
  const unhealthy = (units: string[], at: Date, message = "m") =>
    check("Unhealthy", "UnitFailed", { failedUnits: units, at, message });
  const first = decide(input({
    spec: spec(A),
    host: host(entry(A)),
    health: unhealthy(["a.service"], NOW),
  }));
  // A later check with the same answer (new checkedAt, even another message): no write.
  const same = decide(input({
    spec: spec(A),
    status: first.status,
    host: host(entry(A)),
    health: unhealthy(["a.service"], later(5), "other words"),
    now: later(5),
  }));
  assert.equal(same.changed, false);
  assert.equal(same.status.hostHealth?.checkedAt, "2026-05-01T10:00:00Z");
  // Other failed units: a write.
  const more = decide(input({
    spec: spec(A),
    status: first.status,
    host: host(entry(A)),
    health: unhealthy(["a.service", "b.service"], later(6)),
  }));
  assert.equal(more.changed, true);
  assert.deepEqual(more.status.hostHealth?.failedUnits, ["a.service", "b.service"]);
  // The same answer on another boot (the booted digest moved): a write.
  const rebooted = decide(input({
    spec: spec(A),
    status: first.status,
    host: host(entry(B)),
    health: unhealthy(["a.service"], later(7)),
  }));
  assert.equal(rebooted.status.hostHealth?.bootedDigest, d("b"));
  assert.equal(rebooted.status.hostHealth?.checkedAt, "2026-05-01T10:07:00Z");
  // No check: the last report stands.
  const none = decide(input({ spec: spec(A), status: first.status, host: host(entry(A)) }));
  assert.equal(none.changed, false);
});

Deno.test("decide: 'stopping' is ignored during this node's own reboot, reported otherwise", () => {
  const s = spec(B, "Booted");
  const healthy = decide(input({
    spec: s,
    status: persisted("Rebooting"),
    host: host(entry(A), entry(B, { downloadOnly: false })),
    applyInFlight: true,
    health: check("Healthy", "SystemRunning"),
  }));
  const stopping = check("Unhealthy", "UnitFailed", { stopping: true });
  const during = decide(input({
    spec: s,
    status: healthy.status,
    host: host(entry(A), entry(B, { downloadOnly: false })),
    applyInFlight: true,
    health: stopping,
  }));
  assert.equal(during.changed, false);
  assert.equal(during.status.hostHealth?.state, "Healthy");
  const unexpected = decide(input({
    spec: spec(A),
    status: decide(input({ spec: spec(A), host: host(entry(A)) })).status,
    host: host(entry(A)),
    health: stopping,
  }));
  assert.equal(unexpected.status.hostHealth?.state, "Unhealthy");
});

Deno.test("decide: host health is reported for a BootcNode no pool owns too", () => {
  const out = decide(input({
    owned: false,
    spec: spec(A),
    host: host(entry(A)),
    health: check("Healthy", "SystemRunning"),
  }));
  assert.equal(sr(out.status, "HostHealthy"), "True/SystemRunning");
});

Deno.test("decide: retargeted while its own apply runs: stays Rebooting, does nothing, phases kept", () => {
  // Applying B (unlocked by the apply); the pool moved to A (booted) or to C (the rollback).
  const rebooting = persisted("Rebooting", ["True", "SlotAndDrain"], [
    ["ImageStaged", "True", "Staged", `${B} is staged`],
    ["Rebooted", "False", "Rebooting", `Rebooting into ${B}`],
  ]);
  rebooting.conditions![0].message = `Applying ${B} and rebooting`;
  for (const want of [A, C]) {
    const r = decide(input({
      spec: spec(want),
      status: rebooting,
      host: host(entry(A), entry(B, { downloadOnly: false }), entry(C)),
      applyInFlight: true,
    }));
    assert.deepEqual(r.action, { type: "none" }, want);
    assert.equal(condition(r.status, "Idle")?.reason, "Rebooting");
    assert.equal(condition(r.status, "Rebooted")?.message, `Rebooting into ${B}`);
  }
});

Deno.test("decide: back from a reboot into B after a retarget to A (now the rollback): the rollback route, not FellBack", () => {
  const rebooting = persisted("Rebooting", ["True", "SlotAndDrain"], [
    ["ImageStaged", "True", "Staged", `${B} is staged`],
    ["Rebooted", "False", "Rebooting", `Rebooting into ${B}`],
  ]);
  rebooting.conditions![0].message = `Applying ${B} and rebooting`;
  rebooting.phaseImage = B;
  const r = decide(
    input({ spec: spec(A), status: rebooting, host: host(entry(B), null, entry(A)) }),
  );
  assert.deepEqual(r.action, { type: "none" });
  assert.equal(condition(r.status, "Idle")?.reason, "Staged");
  assert.match(condition(r.status, "Idle")?.message ?? "", /is the rollback deployment/);
  assert.equal(condition(r.status, "Degraded")?.status, "False");
});

// rollout.strategy External: another orchestrator reboots the host; the daemon stages,
// reports and never applies, and reads the outcome sanely whoever rebooted.
const STAGED_B: [string, "True", string, string] = [
  "ImageStaged",
  "True",
  "Staged",
  `${B} is staged`,
];

Deno.test("decide: External: staged and locked, Staged spec, a cordoned drained Node: nothing applied", () => {
  const staged = persisted("Staged", undefined, [STAGED_B]);
  const r = decide(input({
    spec: spec(B),
    status: staged,
    host: host(entry(A), entry(B, { downloadOnly: true })),
    // The orchestrator's cordon (no record of ours): the spec alone never asks for a reboot.
    node: node({}, true),
    reboot: authorize(spec(B), node({}, true)),
  }));
  assert.deepEqual(r.action, { type: "none" });
  assert.equal(condition(r.status, "Idle")?.reason, "Staged");
  assert.equal(condition(r.status, "Degraded")?.status, "False");
});

Deno.test("decide: External: rebooted into the target by someone else: Idle, RebootedExternally, no fallback", () => {
  const staged = persisted("Staged", undefined, [
    ["ImageStaged", "True", "Staged", `${B} is staged`],
    ["Rebooted", "False", "Waiting", `Waiting to reboot into ${B}`],
  ]);
  const r = decide(input({ spec: spec(B), status: staged, host: host(entry(B), null, entry(A)) }));
  assert.deepEqual(r.action, { type: "none" });
  assert.equal(condition(r.status, "Idle")?.reason, "Idle");
  assert.equal(condition(r.status, "Degraded")?.status, "False");
  const rebooted = condition(r.status, "Rebooted");
  assert.equal(rebooted?.status, "True");
  assert.equal(rebooted?.reason, "RebootedExternally");
  assert.match(rebooted?.message ?? "", /after a reboot this daemon did not start/);
  assert.equal(condition(r.status, "ImageStaged")?.status, "True");
  assert.equal(r.status.booted?.image, B);
});

Deno.test("decide: External: rebooted into another image by someone else: stages the target again", () => {
  const staged = persisted("Staged", undefined, [STAGED_B]);
  const r = decide(input({ spec: spec(B), status: staged, host: host(entry(C), null, entry(A)) }));
  assert.equal(r.action.type, "stage");
  assert.equal(condition(r.status, "Idle")?.reason, "Staging");
  assert.equal(condition(r.status, "Degraded")?.status, "False");
  assert.notEqual(condition(r.status, "Rebooted")?.reason, "FellBack");
});

Deno.test("decide: External: the orchestrator booted the target and rolled back: no FellBack, no reset", () => {
  // It was never this daemon's reboot (Idle never said Rebooting): the target is the rollback
  // deployment, so it is simply staged again by the rollback route.
  const staged = persisted("Staged", undefined, [STAGED_B]);
  const r = decide(input({ spec: spec(B), status: staged, host: host(entry(A), null, entry(B)) }));
  assert.deepEqual(r.action, { type: "none" });
  assert.equal(condition(r.status, "Idle")?.reason, "Staged");
  assert.equal(condition(r.status, "Degraded")?.status, "False");
  assert.notEqual(condition(r.status, "Rebooted")?.reason, "FellBack");
});

Deno.test("decide: a pull of a new spec says Staging only once slow; a re-stage says it at once", () => {
  const fresh = decide(input({
    spec: spec(B),
    generation: 2,
    status: { ...persisted("Idle"), observedGeneration: 1 },
    host: host(entry(A)),
  }));
  assert.equal(fresh.action.type, "stage");
  assert.equal(fresh.persistFirst, false);
  assert.equal(fresh.reportAfterMs, STAGING_REPORT_DELAY_MS);
  assert.equal(fresh.status.observedGeneration, 2, "the report, when written, acknowledges it");
  // The status claims to describe this spec (staged, then the stage was lost): said at once.
  const lost = decide(input({
    spec: spec(B),
    generation: 2,
    status: { ...persisted("Staged"), observedGeneration: 2 },
    host: host(entry(A)),
  }));
  assert.equal(lost.action.type, "stage");
  assert.equal(lost.persistFirst, true);
  assert.equal(lost.reportAfterMs, undefined);
});

Deno.test("pullSuperseded: a pull is stopped only when the BootcNode wants another image", () => {
  assert.equal(pullSuperseded(B, spec(B)), false, "still wanted");
  assert.equal(pullSuperseded(B, { ...spec(B), desiredImageState: "Booted" }), false);
  assert.equal(pullSuperseded(B, spec(C)), true, "retargeted");
  assert.equal(pullSuperseded(B, spec(A)), true, "reverted to the booted image");
  assert.equal(pullSuperseded(B, undefined), false, "a deleted BootcNode comes back");
});

Deno.test("decide: a failed lock of another unlocked stage is kept while D is staged, and retried after its backoff", () => {
  const failed = {
    "lockStaged:other": { message: "error: Pulling: timed out", attempts: 1, at: NOW },
  };
  const meanwhile = decide(input({
    spec: spec(C),
    status: persisted("Staging"),
    host: host(entry(A), entry(B, { downloadOnly: false })),
    failures: failed,
  }));
  assert.deepEqual(meanwhile.action, { type: "stage", image: C, method: "switch-download-only" });
  assert.ok(meanwhile.keys.includes("lockStaged:other"), "the lock's failure is not forgotten");
  // The daemon wakes for the lock's retry even when nothing else is due (review 16 L3).
  const stalled = decide(input({
    spec: spec(C),
    status: persisted("Staging"),
    host: host(entry(A), entry(B, { downloadOnly: false })),
    failures: {
      ...failed,
      [`stage:${C}`]: { message: "error: pull failed", attempts: 5, at: NOW },
    },
  }));
  assert.equal(stalled.action.type, "none");
  assert.ok(
    stalled.retryAt && stalled.retryAt.getTime() <= NOW.getTime() + 60_000,
    "woken by the lock's retry",
  );
  const later = decide(input({
    spec: spec(C),
    status: persisted("Staging"),
    host: host(entry(A), entry(B, { downloadOnly: false })),
    failures: failed,
    now: new Date(NOW.getTime() + 60_000),
  }));
  assert.deepEqual(later.action, { type: "lockStaged", other: true });
  assert.equal(later.persistFirst, true, "the new spec is acknowledged before the lock");
});

Deno.test("decide: the controller's verdict in the release is recorded in the acknowledgement", () => {
  const released = {
    [ANNOTATION_VERIFIED_FOR]: B,
    [ANNOTATION_VERIFIED_AT]: "2026-05-01T09:59:30Z",
    [ANNOTATION_SPEC_GENERATION]: "4",
  };
  const base = {
    spec: spec(B),
    host: host(entry(B), null, entry(A)),
    generation: 4,
    annotations: released,
    // Booted after its reboot, reported on generation 3 (the reboot request).
    status: {
      ...persisted("Idle", ["True", "SlotAndDrain"], [
        ["Verified", "Unknown", "TargetChanged"],
        ["Updated", "False", "TargetChanged"],
      ]),
      observedGeneration: 3,
    },
  };
  const out = decide(input(base));
  assert.equal(out.changed, true);
  assert.equal(out.status.observedGeneration, 4);
  const verified = condition(out.status, "Verified");
  assert.deepEqual(
    [verified?.status, verified?.reason, verified?.lastTransitionTime],
    ["True", "ChecksPassed", "2026-05-01T09:59:30Z"],
  );
  assert.deepEqual(out.status.verification, { image: B }, "Verified is about B");
  const updated = condition(out.status, "Updated");
  assert.deepEqual(
    [updated?.status, updated?.reason, updated?.lastTransitionTime],
    ["True", "UpdateComplete", "2026-05-01T09:59:30Z"],
  );
  // Recorded once: deciding again on the written status changes nothing.
  assert.equal(decide(input({ ...base, status: out.status })).changed, false);

  // Not the controller's last word on this spec, or not about what the host boots: ignored.
  const ignored: [string, Partial<DecideInput>][] = [
    ["a later spec edit", { generation: 5 }],
    ["a reboot requested again", { spec: spec(B, "Booted") }],
    ["another image", { spec: spec(C), host: host(entry(C)) }],
    ["not booted yet", { host: host(entry(A), entry(B)) }],
    ["a garbled time", { annotations: { ...released, [ANNOTATION_VERIFIED_AT]: "soon" } }],
    ["no generation record", {
      annotations: {
        [ANNOTATION_VERIFIED_FOR]: B,
        [ANNOTATION_VERIFIED_AT]: "2026-05-01T09:59:30Z",
      },
    }],
  ];
  for (const [name, change] of ignored) {
    const o = decide(input({ ...base, ...change }));
    assert.notEqual(condition(o.status, "Updated")?.status, "True", name);
    assert.notEqual(condition(o.status, "Verified")?.status, "True", name);
  }
  // A time later than now (a hand edit): ignored.
  const future = decide(input({
    ...base,
    annotations: { ...released, [ANNOTATION_VERIFIED_AT]: "2099-01-01T00:00:00Z" },
  }));
  assert.notEqual(condition(future.status, "Updated")?.status, "True");

  // Only in the write that acknowledges the release: the controller revised its verdict
  // since (Verified=False: the node turned unhealthy while its Node release failed).
  const revised: BootcNodeStatus = {
    ...out.status,
    conditions: out.status.conditions!.map((c) =>
      c.type === "Verified"
        ? { ...c, status: "False", reason: "CheckFailed", message: "Host: app.service failed" }
        : c
    ),
  };
  const later = decide(input({ ...base, status: revised, now: new Date(NOW.getTime() + 60_000) }));
  assert.equal(condition(later.status, "Verified")?.status, "False");
  assert.equal(later.changed, false, "nothing written back");

  // Revised before this daemon acknowledged the release (it was down): the revision stands.
  const failedFirst: BootcNodeStatus = {
    ...base.status,
    conditions: [
      ...base.status.conditions!.filter((c) => c.type !== "Verified"),
      {
        type: "Verified",
        status: "False",
        reason: "CheckFailed",
        message: "Host: app.service failed",
        lastTransitionTime: "2026-05-01T09:59:50Z",
      },
    ],
  };
  const ack = decide(input({ ...base, status: failedFirst }));
  assert.equal(condition(ack.status, "Verified")?.status, "False");
  assert.notEqual(condition(ack.status, "Updated")?.status, "True");

  // Acknowledged without it (an older daemon, or bootc status unreadable then): recorded
  // by the next write that can, once.
  const missed = decide(input({ ...base, status: { ...base.status, observedGeneration: 4 } }));
  assert.equal(condition(missed.status, "Updated")?.status, "True");
  assert.equal(condition(missed.status, "Updated")?.lastTransitionTime, "2026-05-01T09:59:30Z");
  assert.equal(decide(input({ ...base, status: missed.status })).changed, false);
});

Deno.test("decide: status.phaseImage says which image the phase conditions are about", () => {
  const staging = decide(input({ spec: spec(B), host: host(entry(A)) }));
  assert.equal(staging.status.phaseImage, B);
  // Retargeted to C: the phase conditions start over for C, read from the field alone.
  const retargeted = decide(input({
    spec: spec(C),
    status: staging.status,
    host: host(entry(A), entry(B, { downloadOnly: true })),
  }));
  assert.equal(retargeted.status.phaseImage, C);
  assert.equal(condition(retargeted.status, "ImageStaged")?.reason, "Downloading");
  // A report of a daemon that wrote no phaseImage is about an unknown image: its phase
  // conditions are kept with their times, never read as another image's and started over.
  const old = { ...staging.status, phaseImage: undefined };
  const later = new Date(NOW.getTime() + 60_000);
  const kept = decide(input({ spec: spec(B), status: old, host: host(entry(A)), now: later }));
  assert.equal(kept.status.phaseImage, B);
  assert.equal(
    condition(kept.status, "ImageStaged")?.lastTransitionTime,
    condition(staging.status, "ImageStaged")?.lastTransitionTime,
  );
  const moved = decide(input({
    spec: spec(B),
    status: { ...staging.status, phaseImage: C },
    host: host(entry(A)),
    now: later,
  }));
  assert.notEqual(
    condition(moved.status, "ImageStaged")?.lastTransitionTime,
    condition(staging.status, "ImageStaged")?.lastTransitionTime,
  );
});
