import assert from "node:assert/strict";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_FAILED_IMAGE,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_WAS_CORDONED,
} from "./constants.ts";
import {
  type BootcNodeFacts,
  type ClassifyInput,
  classifyNode,
  daemonBehindController,
  EffectiveState,
  entryMatches,
  failedCheckOf,
  type NodeClassification,
  type NodeRead,
  NodeState,
} from "./node_state.ts";
import type { BootEntryStatus, Condition } from "./schema.ts";

const REPO = "registry.example/os";
const digest = (seed: string) => `sha256:${seed.repeat(64).slice(0, 64)}`;
const image = (seed: string) => `${REPO}@${digest(seed)}`;
const A = image("a");
const B = image("b");
const C = image("c");
const T = "2026-01-01T00:00:00Z";

function entry(seed: string, extra: Partial<BootEntryStatus> = {}): BootEntryStatus {
  return { image: image(seed), imageDigest: digest(seed), downloadOnly: true, ...extra };
}

function cond(
  type: string,
  status: Condition["status"],
  reason: string,
  message = "",
): Condition {
  return { type, status, reason, message, lastTransitionTime: T };
}

const idle = {
  idle: cond("Idle", "True", "Idle", "Booted image matches desiredImage"),
  staging: cond("Idle", "False", "Staging", `Staging ${B}`),
  locking: cond("Idle", "False", "Locking", "desiredImage is staged unlocked …; locking it"),
  staged: cond("Idle", "False", "Staged", "Image staged, awaiting desiredImageState: Booted"),
  rollback: cond(
    "Idle",
    "False",
    "Staged",
    `${B} is the rollback deployment: nothing to stage; awaiting desiredImageState: Booted`,
  ),
  rebooting: cond("Idle", "False", "Rebooting", `Applying ${B} and rebooting`),
};

interface BnOptions {
  desired?: string;
  /** `status.phaseImage`: what the daemon's report is about (default: `desired`). */
  phaseImage?: string;
  /** `status.verification` (default: about `desired` when a Verified condition is given). */
  verification?: { image: string; failedChecks?: string[] };
  booted?: BootEntryStatus;
  staged?: BootEntryStatus;
  rollback?: BootEntryStatus;
  conditions?: Condition[];
  annotations?: Record<string, string>;
  owned?: boolean;
  requested?: boolean;
  noStatus?: boolean;
}

function bn(o: BnOptions = {}): BootcNodeFacts {
  const desired = o.desired ?? B;
  const word = o.conditions?.some((c) => c.type === "ImageStaged")
    ? []
    : [cond("ImageStaged", "False", "Downloading", `Downloading ${desired}`)];
  return {
    metadata: {
      annotations: o.annotations,
      ownerReferences: o.owned === false
        ? []
        : [{ kind: "BootcNodePool", controller: true, name: "workers" }],
    },
    spec: { desiredImage: desired, desiredImageState: o.requested ? "Booted" : "Staged" },
    status: o.noStatus ? undefined : {
      booted: o.booted ?? entry("a"),
      ...(o.staged ? { staged: o.staged } : {}),
      ...(o.rollback ? { rollback: o.rollback } : {}),
      phaseImage: o.phaseImage ?? desired,
      ...(o.verification || o.conditions?.some((c) => c.type === "Verified")
        ? { verification: o.verification ?? { image: desired } }
        : {}),
      conditions: [
        cond("Degraded", "False", "Healthy", "No errors"),
        ...word,
        ...(o.conditions ?? [idle.idle]),
      ],
    },
  };
}

interface NodeOptions {
  slot?: boolean;
  drainedFor?: string;
  cordoned?: boolean;
  ready?: boolean;
  wasCordonedOnly?: boolean;
}

function node(o: NodeOptions = {}): NodeRead {
  const a: Record<string, string> = {};
  if (o.slot) {
    a[ANNOTATION_IN_REBOOT_SLOT] = T;
    a[ANNOTATION_SLOT_POOL] = "workers";
  }
  if (o.slot || o.wasCordonedOnly) a[ANNOTATION_WAS_CORDONED] = "false";
  if (o.drainedFor) {
    a[ANNOTATION_DRAINED_AT] = T;
    a[ANNOTATION_DRAINED_FOR] = o.drainedFor;
  }
  return { annotations: a, unschedulable: o.cordoned ?? o.slot ?? false, ready: o.ready ?? true };
}

const target = { image: B };

interface Case {
  name: string;
  input: ClassifyInput;
  want: Partial<NodeClassification>;
}

const slot = { slot: true, cordoned: true };

const cases: Case[] = [
  {
    name: "not owned by a pool: released",
    input: { bootcNode: bn({ owned: false }), node: node(), target },
    want: { state: NodeState.Released, reason: "NotOwned", waitsOn: "nobody" },
  },
  {
    name: "no BootcNode, no record: released",
    input: { node: node(), target },
    want: { state: NodeState.Released, disrupted: false },
  },
  {
    name: "no BootcNode, but the Node carries a record: pending on the controller, disrupted",
    input: { node: node(slot), target },
    want: { state: NodeState.Pending, waitsOn: "controller", disrupted: true },
  },
  {
    name: "a member whose BootcNode is being created: pending",
    input: { node: node(), target, member: true },
    want: { state: NodeState.Pending, reason: "NoBootcNode" },
  },
  {
    name: "never reported: pending on the daemon",
    input: { bootcNode: bn({ noStatus: true }), node: node(), target },
    want: { state: NodeState.Pending, reason: "AwaitingReport", waitsOn: "daemon" },
  },
  {
    name: "spec still on the old image: pending on the controller",
    input: { bootcNode: bn({ desired: A }), node: node(), target },
    want: { state: NodeState.Pending, reason: "AwaitingSpecSync", waitsOn: "controller" },
  },
  {
    name: "held back by the staging limit: pending on a gate, counted Pending",
    input: {
      bootcNode: bn({ desired: A, staged: entry("a"), conditions: [idle.staged] }),
      node: node(),
      target,
      heldBy: { reason: "StagingLimit", message: "a staging place (maxStaging 1)" },
    },
    want: {
      state: NodeState.Pending,
      reason: "HeldBack",
      waitsOn: "gate",
      counted: EffectiveState.Pending,
    },
  },
  {
    name: "downloading",
    input: { bootcNode: bn({ conditions: [idle.staging] }), node: node(), target },
    want: { state: NodeState.Staging, reason: "Downloading", waitsOn: "daemon" },
  },
  {
    name: "locking an unlocked stage",
    input: { bootcNode: bn({ conditions: [idle.locking] }), node: node(), target },
    want: { state: NodeState.Staging, reason: "Locking", waitsOn: "daemon" },
  },
  {
    name: "staged: ready for a slot",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node(),
      target,
    },
    want: {
      state: NodeState.Staged,
      reason: "ReadyForSlot",
      waitsOn: "gate",
      readyForSlot: true,
      route: "staged",
      effective: EffectiveState.Staged,
    },
  },
  {
    name: "staged but the Node is not Ready: waits on the node",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node({ ready: false }),
      target,
    },
    want: { state: NodeState.Staged, reason: "NotReady", waitsOn: "node", readyForSlot: true },
  },
  {
    name: "external orchestrator: staged waits on it (a gate's wait, not a slot's)",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node(),
      target,
      external: true,
    },
    want: {
      state: NodeState.Staged,
      reason: "ExternalOrchestrator",
      waitsOn: "gate",
      waitsFor: "the external orchestrator to reboot it (rollout.strategy: External)",
      readyForSlot: true,
      disrupted: false,
      counted: EffectiveState.Staged,
    },
  },
  {
    name: "external orchestrator: staged, cordoned by it and NotReady (rebooting): still its wait",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node({ cordoned: true, ready: false }),
      target,
      external: true,
    },
    want: {
      state: NodeState.Staged,
      reason: "ExternalOrchestrator",
      waitsOn: "gate",
      disrupted: false,
    },
  },
  ...[true, false].map((external) => ({
    name: `booted into the target by someone else (external: ${external}), still cordoned: ` +
      "updated, not disrupted",
    input: {
      bootcNode: bn({
        booted: entry("b"),
        rollback: entry("a"),
        conditions: [
          cond("ImageStaged", "True", "Booted", `${B} is booted`),
          cond("Rebooted", "True", "AlreadyBooted", `${B} was already booted: no reboot needed`),
          idle.idle,
        ],
      }),
      node: node({ cordoned: true }),
      target,
      external,
    },
    want: {
      state: NodeState.Updated,
      counted: EffectiveState.UpToDate,
      disrupted: false,
      waitsOn: "nobody" as const,
    },
  })),
  {
    name: "external orchestrator: a node already in its slot goes on as before (drained, Booted)",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged], requested: true }),
      node: node({ ...slot, drainedFor: B }),
      target,
      external: true,
    },
    want: { state: NodeState.Rebooting, reason: "RebootRequested", disrupted: true },
  },
  {
    name: "a Staged report whose staged entry is another image (no rollback): pending",
    input: {
      bootcNode: bn({ staged: entry("c"), conditions: [idle.staged] }),
      node: node(),
      target,
    },
    want: { state: NodeState.Pending, effective: EffectiveState.Pending, readyForSlot: false },
  },
  ...rollbackRoute(),
  {
    name: "slot granted, not cordoned yet: in slot, on the controller",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node({ slot: true, cordoned: false }),
      target,
    },
    want: { state: NodeState.InSlot, reason: "Cordoning", waitsOn: "controller", disrupted: true },
  },
  {
    name: "a record without a slot (finishing or undoing): in slot, on the controller",
    input: { bootcNode: bn(), node: node({ wasCordonedOnly: true }), target },
    want: { state: NodeState.InSlot, reason: "Releasing", disrupted: true },
  },
  {
    name: "cordoned, pods being evicted",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node(slot),
      target,
    },
    want: {
      state: NodeState.Draining,
      waitsOn: "controller",
      readyForSlot: false,
      counted: EffectiveState.Rebooting,
    },
  },
  {
    name: "drain blocked by a PodDisruptionBudget: names it, waits on a gate",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node(slot),
      target,
      drainBlockedBy: "PodDisruptionBudget default/web allows no disruption",
    },
    want: {
      state: NodeState.Draining,
      reason: "DrainBlocked",
      waitsOn: "gate",
      waitsFor: "PodDisruptionBudget default/web allows no disruption",
    },
  },
  {
    name: "retargeted in its slot: draining while the daemon stages the new target",
    input: { bootcNode: bn({ conditions: [idle.staging] }), node: node(slot), target },
    want: { state: NodeState.Draining, waitsOn: "daemon", counted: EffectiveState.Rebooting },
  },
  {
    name: "drained, reboot not requested yet: on the controller",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged] }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: { state: NodeState.Draining, reason: "Drained", waitsOn: "controller" },
  },
  {
    name: "drained and Booted requested: rebooting, on the daemon",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged], requested: true }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: { state: NodeState.Rebooting, reason: "RebootRequested", waitsOn: "daemon" },
  },
  {
    name: "drained but uncordoned by someone: in slot, re-cordon",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.staged], requested: true }),
      node: node({ slot: true, cordoned: false, drainedFor: B }),
      target,
    },
    want: { state: NodeState.InSlot, reason: "Cordoning", waitsOn: "controller" },
  },
  {
    name: "the daemon reboots",
    input: {
      bootcNode: bn({ staged: entry("b"), conditions: [idle.rebooting], requested: true }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: {
      state: NodeState.Rebooting,
      reason: "Rebooting",
      waitsOn: "daemon",
      effective: EffectiveState.Rebooting,
    },
  },
  {
    name: "the daemon rolls back (rollback route)",
    input: {
      bootcNode: bn({
        rollback: entry("b"),
        conditions: [idle.rebooting, cond("Rebooted", "False", "RollingBack", `to ${B}`)],
        requested: true,
      }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: { state: NodeState.Rebooting, reason: "RollingBack", waitsOn: "daemon" },
  },
  {
    name: "retarget to the booted image during a reboot: still rebooting, disrupted",
    input: {
      // Applying C; the pool moved back to A, which is booted.
      bootcNode: bn({
        desired: A,
        staged: entry("c"),
        conditions: [cond("Idle", "False", "Rebooting", `Applying ${C} and rebooting`)],
      }),
      node: node({ slot: true, cordoned: true }),
      target: { image: A },
    },
    want: {
      state: NodeState.Rebooting,
      effective: EffectiveState.Rebooting,
      counted: EffectiveState.Rebooting,
      disrupted: true,
      waitsOn: "daemon",
    },
  },
  {
    name: "the daemon says Rebooting without any record left: disrupted all the same",
    input: {
      bootcNode: bn({ desired: A, conditions: [idle.rebooting] }),
      node: node(),
      target: { image: A },
    },
    want: { state: NodeState.Rebooting, disrupted: true, readyForSlot: false },
  },
  {
    name: "back on the target, the Node not Ready: verifying, on the node",
    input: {
      bootcNode: bn({ booted: entry("b"), requested: true }),
      node: node({ ...slot, drainedFor: B, ready: false }),
      target,
    },
    want: {
      state: NodeState.Verifying,
      reason: "WaitingForReady",
      waitsOn: "node",
      counted: EffectiveState.Rebooting,
    },
  },
  {
    name: "back on the target and Ready: verifying its checks",
    input: {
      bootcNode: bn({ booted: entry("b"), requested: true }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: { state: NodeState.Verifying, reason: "Checking", waitsOn: "controller" },
  },
  {
    name: "verified, soaking minReadySeconds",
    input: {
      bootcNode: bn({
        booted: entry("b"),
        requested: true,
        conditions: [idle.idle, cond("Verified", "True", "ChecksPassed", `verified ${B}: …`)],
      }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: { state: NodeState.Verifying, reason: "Soaking" },
  },
  {
    name: "updated and released",
    input: { bootcNode: bn({ booted: entry("b") }), node: node(), target },
    want: {
      state: NodeState.Updated,
      waitsOn: "nobody",
      counted: EffectiveState.UpToDate,
      disrupted: false,
    },
  },
  {
    name: "updated on a multi-arch index: the per-arch digest matches",
    input: {
      bootcNode: bn({
        booted: { image: `${REPO}:v2`, imageDigest: digest("d"), architecture: "amd64" },
      }),
      node: node(),
      target: { image: B, platforms: [{ digest: digest("d"), architecture: "amd64" }] },
    },
    want: { state: NodeState.Updated },
  },
  {
    name: "failed verification (Halt, holds its slot): failed, naming the check",
    input: {
      bootcNode: bn({
        booted: entry("b"),
        requested: true,
        conditions: [
          idle.idle,
          cond(
            "Verified",
            "False",
            "CheckFailed",
            "node n1 failed health checks: HostHealthy (failed units: app.service)",
          ),
        ],
        verification: { image: B, failedChecks: ["HostHealthy"] },
      }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: {
      state: NodeState.Failed,
      failedCheck: "HostHealthy",
      waitsOn: "user",
      counted: EffectiveState.Degraded,
      disrupted: true,
      effective: EffectiveState.UpToDate,
    },
  },
  {
    name: "fell back after its reboot: failed (FellBack)",
    input: {
      bootcNode: bn({
        rollback: entry("b"),
        requested: true,
        conditions: [
          cond("Idle", "False", "Rebooting", `Applying ${B} and rebooting`),
          cond("ImageStaged", "True", "RollbackDeployment", `${B} is the rollback deployment`),
          cond("Rebooted", "False", "FellBack", `booted ${B} but the host fell back to ${A}`),
        ],
      }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: { state: NodeState.Failed, failedCheck: "FellBack", counted: EffectiveState.Degraded },
  },
  {
    name: "a host that fell back reports a stale Rebooting: up, not disrupted without a record",
    input: {
      bootcNode: bn({
        rollback: entry("b"),
        conditions: [
          idle.rebooting,
          cond("ImageStaged", "True", "RollbackDeployment", `${B} is the rollback deployment`),
          cond("Rebooted", "False", "FellBack", `booted ${B} but the host fell back to ${A}`),
        ],
      }),
      node: node(),
      target,
    },
    want: { state: NodeState.Failed, disrupted: false, readyForSlot: false },
  },
  {
    name: "reported on its spec, not staging yet: pending on the daemon",
    input: { bootcNode: bn(), node: node(), target },
    want: { state: NodeState.Pending, reason: "AwaitingDaemon", waitsOn: "daemon" },
  },
  {
    name: "the daemon reports an error",
    input: {
      bootcNode: {
        ...bn({ conditions: [idle.staging] }),
        status: {
          booted: entry("a"),
          conditions: [cond("Degraded", "True", "Error", "pull failed"), idle.staging],
        },
      },
      node: node(),
      target,
    },
    want: {
      state: NodeState.Degraded,
      effective: EffectiveState.Degraded,
      counted: EffectiveState.Degraded,
    },
  },
  {
    name: "rolled back (onFailure RollbackNode) and released: rolling back, counted Degraded",
    input: {
      bootcNode: bn({ desired: A, annotations: { [ANNOTATION_FAILED_IMAGE]: B } }),
      node: node(),
      target: { image: A },
      poolTarget: { image: B },
    },
    want: {
      state: NodeState.RollingBack,
      phase: NodeState.Updated,
      reason: "RolledBack",
      counted: EffectiveState.Degraded,
    },
  },
  {
    name: "rolling back through its slot: shown rolling back, decided as a drain",
    input: {
      bootcNode: bn({
        desired: A,
        booted: entry("b"),
        rollback: entry("a"),
        annotations: { [ANNOTATION_FAILED_IMAGE]: B },
        conditions: [
          cond("ImageStaged", "True", "RollbackDeployment", `${A} is the rollback deployment`),
          cond("Idle", "False", "Staged", `${A} is the rollback deployment: nothing to stage`),
        ],
      }),
      node: node(slot),
      poolTarget: { image: B },
    },
    want: {
      state: NodeState.RollingBack,
      phase: NodeState.Draining,
      effective: EffectiveState.Staged,
    },
  },
  {
    name: "stalled while pending: shown stalled, decided as pending",
    input: {
      bootcNode: bn({
        conditions: [idle.idle, cond("Stalled", "True", "StagingTimeout", "not staged")],
      }),
      node: node(),
      target,
    },
    want: {
      state: NodeState.Stalled,
      phase: NodeState.Pending,
      reason: "StagingTimeout",
      waitsOn: "daemon",
      counted: EffectiveState.Degraded,
    },
  },
  {
    name: "left the pool, not disrupted: released",
    input: { bootcNode: bn(), node: node(), target, member: false },
    want: { state: NodeState.Released, reason: "LeftPool" },
  },
  {
    name: "left the pool while rebooting: still rebooting and disrupted",
    input: {
      bootcNode: bn({ conditions: [idle.rebooting], requested: true }),
      node: node({ ...slot, drainedFor: B }),
      target,
      member: false,
    },
    want: { state: NodeState.Rebooting, disrupted: true },
  },
];

/** The rollback route (the target is the host's rollback deployment), every variant. */
function rollbackRoute(): Case[] {
  const about = cond("ImageStaged", "True", "RollbackDeployment", `${B} is the rollback …`);
  const ready = {
    state: NodeState.Staged,
    reason: "RollbackRoute",
    route: "rollback" as const,
    readyForSlot: true,
    effective: EffectiveState.Staged,
    counted: EffectiveState.Staged,
    waitsOn: "gate" as const,
  };
  const variants: [string, BootEntryStatus | undefined][] = [
    ["nothing staged", undefined],
    ["another image staged (locked)", entry("c")],
    ["a locked copy of the booted image staged (staged = booted)", entry("a")],
  ];
  const out: Case[] = variants.map(([what, staged]) => ({
    name: `rollback route, ${what}: staged, ready for a slot`,
    input: {
      bootcNode: bn({ staged, rollback: entry("b"), conditions: [about, idle.rollback] }),
      node: node(),
      target,
    },
    want: ready,
  }));
  out.push({
    name: "rollback route reported by an older daemon (no ImageStaged): staged",
    input: {
      bootcNode: {
        ...bn(),
        status: { booted: entry("a"), rollback: entry("b"), conditions: [idle.rollback] },
      },
      node: node(),
      target,
    },
    want: ready,
  });
  out.push({
    name: "rollback deployment, but the report is about another image: pending",
    input: {
      bootcNode: bn({
        rollback: entry("b"),
        staged: entry("c"),
        conditions: [cond("ImageStaged", "True", "Staged", `${C} is staged`), idle.staged],
        phaseImage: C,
      }),
      node: node(),
      target,
    },
    want: { state: NodeState.Pending, readyForSlot: false },
  });
  out.push({
    name: "rollback route in its slot, drained, Booted: rebooting on the daemon",
    input: {
      bootcNode: bn({
        staged: entry("a"),
        rollback: entry("b"),
        conditions: [about, idle.rollback],
        requested: true,
      }),
      node: node({ ...slot, drainedFor: B }),
      target,
    },
    want: { state: NodeState.Rebooting, reason: "RebootRequested", waitsOn: "daemon" },
  });
  return out;
}

for (const c of cases) {
  Deno.test(`classifyNode: ${c.name}`, () => {
    const got = classifyNode(c.input);
    const picked = Object.fromEntries(
      Object.keys(c.want).map((k) => [k, got[k as keyof NodeClassification]]),
    );
    assert.deepEqual(picked, c.want, JSON.stringify(got, null, 1));
    assert.ok(got.message.length > 0, "every state has a message");
  });
}

Deno.test("classifyNode: every state is reached by some case", () => {
  const seen = new Set(cases.map((c) => classifyNode(c.input).state));
  for (const s of Object.values(NodeState)) assert.ok(seen.has(s), `no case for ${s}`);
});

Deno.test("failedCheckOf: names the checks status.verification lists, else the reason", () => {
  const IMG = "quay.io/os@sha256:" + "b".repeat(64);
  const bn = (verification?: { image: string; failedChecks?: string[] }) => ({
    spec: { desiredImage: IMG, desiredImageState: "Booted" as const },
    status: verification ? { verification } : {},
  });
  const listed = bn({ image: IMG, failedChecks: ["NodeReady", "Pods"] });
  assert.equal(failedCheckOf(listed, "CheckFailed"), "NodeReady, Pods");
  assert.equal(failedCheckOf(listed, "FellBack"), "FellBack");
  // Written without the list (an older controller), or about another image: the reason.
  assert.equal(failedCheckOf(bn(), "CheckFailed"), "CheckFailed");
  assert.equal(
    failedCheckOf(
      bn({ image: "quay.io/os@sha256:" + "c".repeat(64), failedChecks: ["Pods"] }),
      "CheckFailed",
    ),
    "CheckFailed",
  );
});

Deno.test("entryMatches: pullspec digest, imageDigest or per-arch index digest", () => {
  const index = digest("1");
  const armManifest = digest("2");
  const amdManifest = digest("3");
  const desired = {
    image: `${REPO}@${index}`,
    platforms: [
      { os: "linux", architecture: "arm64", digest: armManifest },
      { os: "linux", architecture: "amd64", digest: amdManifest },
    ],
  };
  // bootc keeps the pullspec it was given: the index digest.
  assert.ok(entryMatches({ image: `${REPO}@${index}`, imageDigest: amdManifest }, desired));
  // Booted by some other pullspec (e.g. a tag) but the per-arch manifest is the target's.
  assert.ok(
    entryMatches({ image: `${REPO}:v2`, imageDigest: armManifest, architecture: "arm64" }, desired),
  );
  // The arm64 manifest on an amd64 host is not a match.
  assert.ok(
    !entryMatches(
      { image: `${REPO}:v2`, imageDigest: armManifest, architecture: "amd64" },
      desired,
    ),
  );
  assert.ok(!entryMatches({ image: `${REPO}:v1`, imageDigest: digest("9") }, desired));
  assert.ok(!entryMatches(undefined, desired));
});

Deno.test("daemonBehindController: a spec someone else wrote after the controller's is not held against the daemon", () => {
  const bn = (generation: number, observed: number | undefined, written?: string) => ({
    metadata: {
      generation,
      ...(written === undefined ? {} : { annotations: { [ANNOTATION_SPEC_GENERATION]: written } }),
    },
    status: observed === undefined ? {} : { observedGeneration: observed },
  });
  assert.equal(daemonBehindController(bn(3, 3, "3")), false, "caught up");
  assert.equal(daemonBehindController(bn(4, 3, "4")), true, "the controller's change, unreported");
  assert.equal(daemonBehindController(bn(4, 3, "3")), false, "a hand edit after the controller's");
  assert.equal(daemonBehindController(bn(5, 2, "3")), true, "behind the controller's own spec");
  assert.equal(daemonBehindController(bn(4, 3)), true, "no record: unreported as before");
  assert.equal(daemonBehindController(bn(4, 3, "9")), true, "a record ahead of the object");
  assert.equal(daemonBehindController(bn(4, 3, "x")), true, "a garbled record");
  assert.equal(daemonBehindController(bn(4, undefined, "3")), true, "no report at all");
});
