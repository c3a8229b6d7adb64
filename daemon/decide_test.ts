import assert from "node:assert/strict";
import type { BootcNodeSpec, BootcNodeStatus, Condition } from "../lib/api/mod.ts";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
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
      rollbackQueued: false,
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

/** A persisted status with this Idle reason (and optionally RebootAllowed status/reason). */
function persisted(
  reason: string,
  rebootAllowed?: ["True" | "False", string],
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
    idle: ["False", "Staging"],
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
    rebootAllowed: ["False", "AwaitingDrain", /drain was for .*c{64}, not .*b{64}/],
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
    idle: ["False", "Staging"],
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
    degraded: ["True", "Error", /node rolled back/],
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
    name: "hazard: booted A, staged B unlocked, desired A: stage a copy of A to discard B",
    input: input({
      spec: spec(A),
      status: persisted("Staged"),
      host: host(entry(A), entry(B, { downloadOnly: false })),
    }),
    idle: ["False", "Staging"],
    degraded: ["False", "Healthy"],
    action: { type: "stage", image: A, method: "switch-download-only" },
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
