import assert from "node:assert/strict";
import type { ISecret } from "kubernetes-models/v1/Secret";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodeSpec,
  findCondition,
} from "../lib/api/mod.ts";
import { FakeClock } from "../lib/clock.ts";
import { BootcCommandError } from "../lib/bootc/executor.ts";
import {
  Agent,
  type CoreNode,
  DEFAULT_HEALTH_CHECK,
  type HealthCheckIntervals,
  MAX_STATUS_EVENTS,
} from "./agent.ts";
import { API_RETRY, DEFAULT_RETRY, type RetryPolicy, STAGING_REPORT_DELAY_MS } from "./decide.ts";
import {
  FakeBootcHost,
  fakeEntry,
  FakeEvents,
  FakeResource,
  poolOwner,
  waitFor,
} from "./testing.ts";

const d = (c: string) => "sha256:" + c.repeat(64);
const A = `registry.example/os@${d("a")}`;
const B = `registry.example/os@${d("b")}`;
const C = `registry.example/os@${d("c")}`;
const NODE = "worker-1";

/** The BootcNode as the controller writes it (owned by a pool), unless `owned` is false. */
function bootcNode(spec: Partial<BootcNodeSpec>, owned = true): BootcNode {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNode",
    metadata: { name: NODE, ...(owned ? { ownerReferences: poolOwner() } : {}) },
    spec: { desiredImage: A, desiredImageState: "Staged", rebootPolicy: "RebootOnly", ...spec },
  };
}

/** The Node annotations of a reboot slot (no drain yet). */
const SLOT = {
  [ANNOTATION_IN_REBOOT_SLOT]: "2026-05-01T09:58:00Z",
  [ANNOTATION_SLOT_POOL]: "workers",
  [ANNOTATION_WAS_CORDONED]: "false",
};

/** The Node annotations of a slot whose drain finished for `image`. */
function drainedFor(image: string): Record<string, string> {
  return {
    ...SLOT,
    [ANNOTATION_DRAINED_AT]: "2026-05-01T09:59:00Z",
    [ANNOTATION_DRAINED_FOR]: image,
  };
}

/** This node's core/v1 Node with these annotations (cordoned unless told). */
function coreNode(annotations: Record<string, string> = {}, unschedulable = false): CoreNode {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: NODE, annotations },
    spec: { unschedulable },
  };
}

/** A Node the controller has cordoned, drained for `image` and handed a reboot slot. */
function readyToReboot(image: string): CoreNode {
  return coreNode(drainedFor(image), true);
}

interface Harness {
  nodes: FakeResource<BootcNode>;
  coreNodes: FakeResource<CoreNode>;
  events: FakeEvents;
  secrets: FakeResource<ISecret>;
  host: FakeBootcHost;
  clock: FakeClock;
  hostRoot: string;
  agent: Agent;
  idle(): string | undefined;
  rebootAllowed(): string | undefined;
  degraded(): { status?: string; message?: string };
  /** Stops the agent (like a crash: nothing is flushed), keeping API and host. */
  stop(): Promise<void>;
  /** Starts a fresh agent on the same API and host (a restarted pod). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

interface StartOptions {
  /** This node's Node (default: schedulable, no operator annotations). */
  node?: CoreNode;
  /** False: a BootcNode no pool owns. */
  owned?: boolean;
  /** Health check intervals (default: the agent's). */
  healthCheck?: Partial<HealthCheckIntervals>;
  /** Backoff of failed actions (default: 1 s doubling to 8 s). */
  retry?: RetryPolicy;
}

async function start(
  spec: Partial<BootcNodeSpec>,
  host = new FakeBootcHost(A),
  options: StartOptions = {},
): Promise<Harness> {
  const nodes = new FakeResource<BootcNode>();
  const coreNodes = new FakeResource<CoreNode>();
  const events = new FakeEvents();
  const secrets = new FakeResource<ISecret>();
  const clock = new FakeClock("2026-05-01T10:00:00Z");
  const hostRoot = await Deno.makeTempDir();
  nodes.put(bootcNode(spec, options.owned ?? true));
  coreNodes.put(options.node ?? coreNode());
  let controller = new AbortController();
  let done: Promise<void> = Promise.resolve();
  const h: Harness = {
    nodes,
    coreNodes,
    events,
    secrets,
    host,
    clock,
    hostRoot,
    agent: undefined as unknown as Agent,
    idle: () => {
      const c = findCondition(nodes.peek(NODE)?.status?.conditions, "Idle");
      return c ? `${c.status}/${c.reason}` : undefined;
    },
    rebootAllowed: () => {
      const c = findCondition(nodes.peek(NODE)?.status?.conditions, "RebootAllowed");
      return c ? `${c.status}/${c.reason}` : undefined;
    },
    degraded: () => {
      const c = findCondition(nodes.peek(NODE)?.status?.conditions, "Degraded");
      return { status: c?.status, message: c?.message };
    },
    stop: async () => {
      controller.abort();
      await done;
    },
    restart: async () => {
      await h.stop();
      controller = new AbortController();
      h.agent = new Agent({
        nodeName: NODE,
        nodes,
        coreNodes,
        events,
        secrets: () => secrets,
        executor: host,
        hostRoot,
        clock,
        retry: options.retry ?? { initialMs: 1_000, maxMs: 8_000 },
        healthCheck: options.healthCheck,
      });
      done = h.agent.run(controller.signal);
    },
    close: async () => {
      await h.stop();
      await Deno.remove(hostRoot, { recursive: true });
    },
  };
  await h.restart();
  return h;
}

/** Polls an async `check` until it holds. */
async function eventually(check: () => Promise<boolean>, what: string) {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Advances the fake clock step by step until `check` holds. */
async function advanceUntil(h: Harness, check: () => boolean, what: string, stepMs = 1_000) {
  await waitFor(() => {
    if (check()) return true;
    h.clock.advance(stepMs);
    return false;
  }, what);
}

Deno.test("agent: a slow pull says Staging once it has run 5 s, then Staged", async () => {
  const h = await start({ desiredImage: B });
  try {
    const release = h.host.holdStages();
    await waitFor(() => h.host.calls.includes(`stage ${B}`), "stage");
    assert.equal(h.nodes.count("patch", "status"), 0, "nothing written before the pull");
    h.clock.advance(STAGING_REPORT_DELAY_MS - 1);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(h.nodes.count("patch", "status"), 0, "a pull under 5 s says nothing yet");
    h.clock.advance(1);
    await waitFor(() => h.idle() === "False/Staging", "Staging once the pull is slow");
    assert.equal(h.nodes.peek(NODE)?.status?.observedGeneration, 1);
    release();
    await waitFor(() => h.idle() === "False/Staged", "Staged");
    assert.equal(h.nodes.count("patch", "status"), 2, "one write for Staging, one for Staged");
  } finally {
    await h.close();
  }
});

Deno.test("agent: a slow pull's Staging that fails to write is tried again while the pull runs", async () => {
  const h = await start({ desiredImage: B });
  try {
    const release = h.host.holdStages();
    await waitFor(() => h.host.calls.includes(`stage ${B}`), "stage");
    h.nodes.failPatch = new Error("etcdserver: request timed out");
    h.clock.advance(STAGING_REPORT_DELAY_MS);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(h.idle(), undefined, "the first report failed");
    h.nodes.failPatch = undefined;
    await advanceUntil(h, () => h.idle() === "False/Staging", "Staging on a later try");
    assert.equal(h.nodes.peek(NODE)?.status?.observedGeneration, 1);
    release();
    await waitFor(() => h.idle() === "False/Staged", "Staged");
  } finally {
    await h.close();
  }
});

Deno.test("agent: a reboot due as the API server goes away is issued soon after it is back", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B }, host, { retry: DEFAULT_RETRY });
  try {
    await waitFor(() => h.idle() === "False/Staged", "Staged reported");
    const outage = new Error("connect ECONNREFUSED 10.96.0.1:443");
    // The API server goes away just as the daemon persists Rebooting.
    h.nodes.beforePatch = () => {
      for (const r of [h.nodes, h.coreNodes]) {
        r.failPatch = outage;
        r.failGet = outage;
      }
    };
    h.coreNodes.put(readyToReboot(B));
    h.nodes.put({
      ...h.nodes.peek(NODE)!,
      spec: { ...h.nodes.peek(NODE)!.spec, desiredImageState: "Booted" },
    });
    await waitFor(() => h.nodes.failPatch !== undefined, "the outage");
    h.nodes.beforePatch = undefined;
    // Ten minutes down: every try fails, and the tries back off meanwhile.
    const end = h.clock.now().getTime() + 10 * 60_000;
    await advanceUntil(h, () => h.clock.now().getTime() >= end, "the outage", 5_000);
    assert.equal(h.host.rebootRequested, false, "no reboot without the reads");
    for (const r of [h.nodes, h.coreNodes]) {
      r.failPatch = undefined;
      r.failGet = undefined;
    }
    const back = h.clock.now().getTime();
    await advanceUntil(h, () => h.host.rebootRequested, "the apply once the API answers");
    const waited = h.clock.now().getTime() - back;
    assert.ok(waited <= API_RETRY.maxMs, `applied ${waited} ms after the outage`);
    assert.equal(h.idle(), "False/Rebooting");
  } finally {
    await h.close();
  }
});

Deno.test("agent: Idle → Staged in one write for a quick pull, writing only transitions", async () => {
  const h = await start({ desiredImage: B });
  try {
    const seenAtStage: (string | undefined)[] = [];
    h.host.beforeCommand = (call) => {
      if (call.startsWith("stage")) seenAtStage.push(h.idle());
    };
    await waitFor(() => h.idle() === "False/Staged", "Staged");
    assert.deepEqual(seenAtStage, [undefined], "no Staging written before the pull");
    assert.deepEqual(h.host.calls, ["version", "status", "mask", "status", `stage ${B}`, "status"]);
    assert.equal(h.nodes.count("patch", "status"), 1, "one write: Staged");
    const status = h.nodes.peek(NODE)!.status!;
    assert.equal(status.staged?.image, B);
    assert.equal(status.staged?.downloadOnly, true);
    assert.equal(status.booted?.image, A);
    assert.equal(status.autoUpdatesDisabled, true);
    assert.equal(status.bootcVersion, "1.16.10");
    assert.equal(h.degraded().status, "False");

    // Host change signals and polls re-read bootc but write nothing new.
    for (let i = 0; i < 3; i++) {
      const reads = h.host.calls.length;
      h.agent.kick();
      await waitFor(() => h.host.calls.length > reads, "a status read");
    }
    h.clock.advance(5 * 60_000);
    await waitFor(() => h.host.calls.filter((c) => c === "status").length >= 6, "poll");
    assert.equal(h.nodes.count("patch", "status"), 1);
    assert.equal(h.nodes.count("watch"), 1);
    assert.equal(h.nodes.count("list"), 1);
    assert.equal(h.nodes.count("get"), 0);
    assert.equal(h.coreNodes.calls.length, 0, "the Node is read only when an apply is due");
    assert.equal(h.rebootAllowed(), undefined, "never asked to reboot: no RebootAllowed");
    // Staging and Staged are conditions, no events (events mark the reboot and failures);
    // kicks and polls record nothing either.
    assert.deepEqual(h.events.events.map((e) => `${e.type}/${e.reason}`), []);
    assert.deepEqual(
      h.nodes.calls.filter((c) => c.verb === "watch").map((c) => c.fieldSelector),
      [`metadata.name=${NODE}`],
    );
  } finally {
    await h.close();
  }
});

Deno.test("agent: Booted re-reads status, Node and BootcNode right before, persists Rebooting, applies once; Idle after reboot", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start(
    {
      desiredImage: B,
      desiredImageState: "Booted",
      rebootPolicy: "AllowSoftReboot",
    },
    host,
    { node: readyToReboot(B) },
  );
  try {
    let idleAtApply: string | undefined;
    let allowedAtApply: string | undefined;
    let readsAtApply: number[] = [];
    h.host.beforeCommand = (call) => {
      if (call.startsWith("apply")) {
        idleAtApply = h.idle();
        allowedAtApply = h.rebootAllowed();
        readsAtApply = [h.coreNodes.count("get"), h.nodes.count("get")];
      }
    };
    await waitFor(() => h.host.rebootRequested, "apply");
    assert.equal(idleAtApply, "False/Rebooting");
    assert.equal(allowedAtApply, "True/SlotAndDrain");
    // One Node read to decide, the Node and the BootcNode once more right before bootc, and
    // the Node again after Rebooting was persisted (the write may have taken long).
    assert.deepEqual(readsAtApply, [3, 1]);
    const applyAt = h.host.calls.indexOf("apply switch soft");
    assert.equal(h.host.calls[applyAt - 1], "status", "status read right before apply");
    await waitFor(() => h.events.of("Rebooting").length === 1, "Rebooting event");
    assert.match(h.events.of("Rebooting")[0].message, /Applying .*@sha256:b{12} and rebooting/);
    // The reboot is the Node's story: `kubectl describe node` shows it.
    assert.equal(h.events.of("Rebooting")[0].involved, `Node/${NODE}`);
    // While the command runs, nothing else happens.
    h.agent.kick();
    h.clock.advance(10 * 60_000);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(h.host.calls.filter((c) => c.startsWith("apply")).length, 1);

    // The host reboots into B; the pod restarts.
    await h.stop();
    h.host.reboot();
    await h.restart();
    await waitFor(() => h.idle() === "True/Idle", "Idle after reboot");
    const status = h.nodes.peek(NODE)!.status!;
    assert.equal(status.booted?.image, B);
    assert.equal(status.rollback?.image, A);
    assert.equal(status.staged, undefined);
  } finally {
    await h.close();
  }
});

Deno.test("agent: Booted granted while our Staged write is out is acted on without a poll", async () => {
  const h = await start({ desiredImage: B });
  try {
    // The controller grants the slot between our write's arrival and its answer: the answer
    // shows the new spec first, and the watch then delivers it as an older event.
    let granted = false;
    h.nodes.beforePatch = () => {
      if (granted) return;
      granted = true;
      h.coreNodes.put(readyToReboot(B));
      h.nodes.put(bootcNode({ desiredImage: B, desiredImageState: "Booted" }));
    };
    await waitFor(() => h.host.rebootRequested, "the apply, with the clock standing still");
    assert.ok(granted);
  } finally {
    await h.close();
  }
});

Deno.test("agent: the staged digest is checked right before apply (--from-downloaded applies anything)", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  let statusReads = 0;
  let stagedAtApply: string | undefined;
  host.beforeCommand = (call) => {
    // Right after the read that decides to apply, another image gets staged.
    if (call === "status" && ++statusReads === 2) {
      queueMicrotask(() => host.staged = fakeEntry(C, { downloadOnly: true }));
    }
    if (call.startsWith("apply")) stagedAtApply = host.staged?.image?.image.image;
  };
  const h = await start({ desiredImage: B, desiredImageState: "Booted" }, host, {
    node: readyToReboot(B),
  });
  try {
    await waitFor(() => h.host.rebootRequested, "apply");
    assert.equal(stagedAtApply, B, "C was replaced by B before applying");
    assert.ok(h.host.calls.indexOf(`stage ${B}`) < h.host.calls.indexOf("apply switch"));
  } finally {
    await h.close();
  }
});

Deno.test("agent: a failing apply is Degraded with bootc's message and retried after backoff", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B, desiredImageState: "Booted" }, host, {
    node: readyToReboot(B),
  });
  try {
    await waitFor(() => h.host.rebootRequested, "apply");
    h.host.finishApply("bootc switch --from-downloaded --apply: error: Rebooting: access denied");
    await waitFor(() => h.degraded().status === "True", "Degraded");
    assert.match(h.degraded().message!, /error: Rebooting: access denied/);
    assert.equal(h.idle(), "False/Rebooting");
    await waitFor(() => h.events.of("ApplyFailed").length === 1, "ApplyFailed event");
    assert.match(h.events.of("ApplyFailed")[0].message, /access denied/);
    await advanceUntil(
      h,
      () => h.host.calls.filter((c) => c.startsWith("apply")).length === 2,
      "retried apply",
    );
  } finally {
    await h.close();
  }
});

Deno.test("agent: desiredImage changed while staging → re-stage, never apply the old image", async () => {
  const h = await start({ desiredImage: B }, undefined, { node: readyToReboot(C) });
  try {
    const release = h.host.holdStages();
    await waitFor(() => h.host.calls.includes(`stage ${B}`), "stage B");
    h.nodes.put(bootcNode({ desiredImage: C, desiredImageState: "Booted" }));
    release();
    await waitFor(() => h.host.calls.includes(`stage ${C}`), "stage C");
    await waitFor(() => h.host.rebootRequested, "apply of C");
    assert.equal(h.host.staged?.image?.image.image, C);
    assert.equal(h.idle(), "False/Rebooting");
  } finally {
    await h.close();
  }
});

Deno.test("agent: a pull the spec no longer wants is stopped, not waited for", async () => {
  const h = await start({ desiredImage: B });
  try {
    h.host.holdStages(); // a pull hung on its registry: never released
    await waitFor(() => h.host.calls.includes(`stage ${B}`), "stage B");
    h.clock.advance(STAGING_REPORT_DELAY_MS);
    await waitFor(() => h.idle() === "False/Staging", "Staging (a slow pull)");
    // The pool is reverted to what the node runs: the hung pull is stopped and the node settles.
    h.nodes.put(bootcNode({ desiredImage: A }));
    await waitFor(() => h.idle() === "True/Idle", "Idle on the booted image");
    assert.equal(h.host.staged, null, "the stopped pull staged nothing");
    assert.equal(h.degraded().status, "False", "a stopped pull is no failure");
    assert.deepEqual(h.events.of("StagingFailed"), []);
    // A retarget mid-pull: the old pull is stopped and the new image pulled at once.
    h.nodes.put(bootcNode({ desiredImage: B }));
    await waitFor(() => h.host.calls.filter((c) => c === `stage ${B}`).length === 2, "stage B");
    h.nodes.put(bootcNode({ desiredImage: C }));
    await waitFor(() => h.host.calls.includes(`stage ${C}`), "stage C without waiting for B");
    assert.equal(h.host.staged, null);
    assert.deepEqual(h.events.of("StagingFailed"), []);
  } finally {
    await h.close();
  }
});

Deno.test("agent: killed mid-stage, the restarted daemon stages again", async () => {
  const h = await start({ desiredImage: B });
  try {
    h.host.holdStages();
    await waitFor(() => h.host.calls.includes(`stage ${B}`), "stage");
    h.clock.advance(STAGING_REPORT_DELAY_MS);
    await waitFor(() => h.idle() === "False/Staging", "Staging (a slow pull)");
    await h.stop(); // the pull dies with it: nothing staged
    const release = h.host.holdStages();
    release();
    h.host.calls.length = 0;
    await h.restart();
    await waitFor(() => h.idle() === "False/Staged", "Staged after restart");
    assert.deepEqual(h.host.calls, ["version", "status", "mask", "status", `stage ${B}`, "status"]);
  } finally {
    await h.close();
  }
});

Deno.test("agent: an unexpected reboot discards the locked stage → re-staged", async () => {
  const h = await start({ desiredImage: B });
  try {
    await waitFor(() => h.idle() === "False/Staged", "Staged");
    await h.stop();
    h.host.reboot();
    assert.equal(h.host.booted?.image?.image.image, A, "a locked stage is not applied");
    await h.restart();
    await waitFor(() => h.host.calls.filter((c) => c === `stage ${B}`).length === 2, "re-stage");
    await waitFor(() => h.idle() === "False/Staged", "Staged again");
  } finally {
    await h.close();
  }
});

Deno.test("agent: stage errors are Degraded with bootc's error line and retried", async () => {
  const host = new FakeBootcHost(A);
  host.stageError = "error: Switching: Pulling: manifest unknown";
  const h = await start({ desiredImage: B }, host);
  try {
    await waitFor(() => h.degraded().status === "True", "Degraded");
    assert.equal(h.degraded().message, `bootc switch --download-only: ${host.stageError}`);
    assert.equal(h.idle(), "False/Staging");
    assert.equal(h.events.of("StagingFailed").length, 1);
    assert.equal(h.events.of("StagingFailed")[0].type, "Warning");
    assert.match(h.events.of("StagingFailed")[0].message, /manifest unknown/);
    h.host.stageError = undefined;
    await advanceUntil(h, () => h.idle() === "False/Staged", "recovered");
    assert.equal(h.degraded().status, "False");
  } finally {
    await h.close();
  }
});

Deno.test("agent: bootc status errors and booted: null are Degraded", async () => {
  const h = await start({ desiredImage: B }, new FakeBootcHost(null));
  try {
    await waitFor(() => h.degraded().status === "True", "Degraded");
    assert.match(h.degraded().message!, /no booted deployment \(booted: null\)/);
    assert.equal(h.host.calls.some((c) => c.startsWith("stage")), false);
    // booted: null is an answer, not a failing command: no StatusFailed.
    assert.equal(h.events.of("StatusFailed").length, 0);
    h.host.booted = fakeEntry(A);
    h.host.statusError = "error: Loading sysroot: Timeout waiting for /boot";
    h.agent.kick();
    await waitFor(
      () => /Loading sysroot/.test(h.degraded().message ?? ""),
      "status error reported",
    );
    // Retries (kicks, backoff) repeat the same error: one event.
    for (let i = 0; i < 3; i++) {
      const reads = h.host.calls.length;
      h.agent.kick();
      await waitFor(() => h.host.calls.length > reads, "a status read");
    }
    assert.equal(h.events.of("StatusFailed").length, 1);
    assert.equal(h.events.of("StatusFailed")[0].type, "Warning");
    assert.equal(
      h.events.of("StatusFailed")[0].message,
      "bootc status: error: Loading sysroot: Timeout waiting for /boot",
    );
    // Distinct messages are recorded, at most MAX_STATUS_EVENTS per streak.
    for (const n of [1, 2, 3, 4]) {
      h.host.statusError = `error: failure ${n}`;
      const reads = h.host.calls.length;
      h.agent.kick();
      await waitFor(() => h.host.calls.length > reads, "a status read");
    }
    assert.equal(h.events.of("StatusFailed").length, MAX_STATUS_EVENTS);
    h.host.statusError = undefined;
    await advanceUntil(h, () => h.idle() === "False/Staged", "recovered");
    // A new streak may record again.
    h.host.statusError = "error: Loading sysroot: Timeout waiting for /boot";
    h.agent.kick();
    await waitFor(() => h.events.of("StatusFailed").length === MAX_STATUS_EVENTS + 1, "new streak");
  } finally {
    await h.close();
  }
});

Deno.test("agent: a status timeout is an event only once it outlasts the busy grace", async () => {
  const host = new FakeBootcHost(A);
  let blocked = false;
  let timeouts = 0;
  const status = host.status.bind(host);
  host.status = () => {
    if (!blocked) return status();
    timeouts++;
    return Promise.reject(
      new BootcCommandError("bootc status: timed out after 120s", {
        argv: ["bootc", "status"],
        code: 143,
        signal: "SIGTERM",
        stdout: "",
        stderr: "",
        timedOut: true,
        durationMs: 120_000,
      }),
    );
  };
  const h = await start({ desiredImage: A }, host);
  try {
    await waitFor(() => h.idle() === "True/Idle", "Idle");
    blocked = true; // A pull elsewhere holds the sysroot lock: status blocks.
    for (let i = 1; i <= 3; i++) {
      h.agent.kick();
      await waitFor(() => timeouts >= i, "a timed-out status read");
      h.clock.advance(60_000);
    }
    assert.equal(h.events.of("StatusFailed").length, 0, "within the grace: no event");
    await advanceUntil(
      h,
      () => h.events.of("StatusFailed").length === 1,
      "StatusFailed after the grace",
      60_000,
    );
    assert.match(h.events.of("StatusFailed")[0].message, /timed out/);
  } finally {
    await h.close();
  }
});

Deno.test("agent: pull Secret written atomically with mode 0600, rotated, removed; missing → Degraded", async () => {
  const auth1 = JSON.stringify({ auths: { "registry.example": { auth: btoa("u:p1") } } });
  const auth2 = JSON.stringify({ auths: { "registry.example": { auth: btoa("u:p2") } } });
  const secret = (content: string): ISecret => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "regcred", namespace: "bootc-operator" },
    type: "kubernetes.io/dockerconfigjson",
    data: { ".dockerconfigjson": btoa(content) },
  });
  const ref = { name: "regcred", namespace: "bootc-operator" };
  const h = await start({ desiredImage: A });
  const file = `${h.hostRoot}/run/ostree/auth.json`;
  const read = () => Deno.readTextFile(file).catch(() => undefined);
  try {
    await waitFor(() => h.idle() === "True/Idle", "Idle");
    // A reference to a Secret that does not exist.
    h.nodes.put(bootcNode({ desiredImage: A, pullSecretRef: ref, pullSecretHash: "h1" }));
    await waitFor(() => h.degraded().status === "True", "Degraded");
    assert.equal(h.degraded().message, "pull secret bootc-operator/regcred: Secret not found");
    // Retried with backoff: the same error is recorded once.
    h.clock.advance(1_000);
    h.agent.kick();
    await waitFor(() => h.secrets.count("get") >= 2, "a retry");
    assert.equal(h.events.of("PullSecretFailed").length, 1);
    assert.equal(h.events.of("PullSecretFailed")[0].type, "Warning");
    assert.equal(
      h.events.of("PullSecretFailed")[0].message,
      "pull secret bootc-operator/regcred: Secret not found",
    );
    // The Secret appears: retried with backoff.
    h.secrets.put(secret(auth1));
    await advanceUntil(h, () => h.degraded().status === "False", "installed");
    assert.equal(await read(), auth1);
    await waitFor(() => h.events.of("AuthFileWritten").length === 1, "AuthFileWritten");
    assert.equal(
      h.events.of("AuthFileWritten")[0].message,
      "Wrote the credentials of pull Secret bootc-operator/regcred to the host's " +
        "/run/ostree/auth.json",
    );
    assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
    const gets = h.secrets.count("get");
    // Rotation: the controller bumps the hash.
    h.secrets.put(secret(auth2));
    h.agent.kick();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(h.secrets.count("get"), gets, "no GET without a hash change (no Secret watch)");
    h.nodes.put(bootcNode({ desiredImage: A, pullSecretRef: ref, pullSecretHash: "h2" }));
    await waitFor(() => h.secrets.count("get") === gets + 1, "re-fetch");
    await eventually(async () => (await read()) === auth2, "rotated file");
    // The marker beside it is written right after the file (atomically too): no leftovers.
    const listing = () =>
      [...Deno.readDirSync(`${h.hostRoot}/run/ostree`)].map((e) => e.name).sort().join(" ");
    await waitFor(
      () => listing() === "auth.json auth.json.bootc-operator",
      "only the file and its marker",
    );
    // The event follows the write (recorded after it): wait for it rather than race it.
    await waitFor(() => h.events.of("AuthFileWritten").length === 2, "rotation writes again");
    // The reference goes away: the file goes too.
    h.nodes.put(bootcNode({ desiredImage: A }));
    await eventually(async () => (await read()) === undefined, "removed file");
    await waitFor(() => h.events.of("AuthFileRemoved").length === 1, "AuthFileRemoved");
    assert.equal(h.events.of("AuthFileRemoved")[0].type, "Normal");
    // A key missing from the Secret is named.
    h.secrets.put({ ...secret(auth1), data: {} });
    h.nodes.put(bootcNode({ desiredImage: A, pullSecretRef: ref, pullSecretHash: "h3" }));
    await waitFor(() => /has no \.dockerconfigjson key/.test(h.degraded().message ?? ""), "key");
    await waitFor(() => h.events.of("PullSecretFailed").length === 2, "a new error is recorded");
    assert.match(h.events.of("PullSecretFailed")[1].message, /has no \.dockerconfigjson key/);
  } finally {
    await h.close();
  }
});

Deno.test("agent: BootcNode status rewritten when someone else clobbers it", async () => {
  const h = await start({ desiredImage: A });
  try {
    await waitFor(() => h.idle() === "True/Idle", "Idle");
    const node = h.nodes.peek(NODE)!;
    await h.nodes.patch(NODE, [{ op: "add", path: "/status", value: {} }], {
      type: "json",
      subresource: "status",
    });
    assert.equal(node.status !== undefined, true);
    await waitFor(() => h.idle() === "True/Idle", "rewritten");
  } finally {
    await h.close();
  }
});

/** Lets the agent run a little (real time) without waiting on a condition that must not occur. */
async function settle(h: Harness, rounds = 5) {
  for (let i = 0; i < rounds; i++) {
    const reads = h.host.calls.length;
    h.agent.kick();
    await waitFor(() => h.host.calls.length > reads, "a reconcile");
  }
}

Deno.test("agent: Booted set by hand without a reboot slot: never applies, says why, re-checks the Node by reads only", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B, desiredImageState: "Booted" }, host, {
    node: coreNode({}, false),
  });
  try {
    await waitFor(() => h.rebootAllowed() === "False/NoRebootSlot", "RebootAllowed False");
    assert.equal(h.idle(), "False/Staged");
    assert.match(
      findCondition(h.nodes.peek(NODE)!.status!.conditions, "RebootAllowed")!.message,
      /holds no reboot slot/,
    );
    assert.equal(h.events.of("RebootRefused").length, 1);
    assert.equal(h.events.of("RebootRefused")[0].type, "Warning");
    assert.match(h.events.of("RebootRefused")[0].message, /^NoRebootSlot: /);
    const writes = h.nodes.count("patch", "status");
    // Host signals and the recheck deadline read the Node again; nothing is written or applied.
    await settle(h);
    const gets = h.coreNodes.count("get");
    h.clock.advance(30_000);
    await waitFor(() => h.coreNodes.count("get") > gets, "recheck of the Node");
    assert.equal(h.host.calls.some((c) => c.startsWith("apply")), false);
    assert.equal(h.host.rebootRequested, false);
    assert.equal(h.host.staged?.downloadOnly, true, "still staged, locked");
    assert.equal(h.nodes.count("patch", "status"), writes, "a refusal that repeats writes nothing");
    assert.equal(h.events.of("RebootRefused").length, 1, "one event per transition");

    // The controller takes a slot and drains (the Node changes, the BootcNode does not).
    h.coreNodes.put(coreNode(SLOT, true));
    await advanceUntil(h, () => h.rebootAllowed() === "False/AwaitingDrain", "AwaitingDrain");
    assert.equal(h.events.of("RebootRefused").length, 2);
    assert.equal(h.host.rebootRequested, false);
    h.coreNodes.put(readyToReboot(B));
    await advanceUntil(h, () => h.host.rebootRequested, "apply once drained");
    assert.equal(h.rebootAllowed(), "True/SlotAndDrain");
    assert.equal(h.idle(), "False/Rebooting");
  } finally {
    await h.close();
  }
});

Deno.test("agent: slot held, drain not finished (or finished for another image): AwaitingDrain, no apply", async () => {
  for (
    const node of [
      coreNode(SLOT, true),
      coreNode(drainedFor(C), true),
      coreNode(drainedFor(B), false),
    ]
  ) {
    const host = new FakeBootcHost(A);
    host.staged = fakeEntry(B, { downloadOnly: true });
    const h = await start({ desiredImage: B, desiredImageState: "Booted" }, host, { node });
    try {
      await waitFor(() => h.rebootAllowed() === "False/AwaitingDrain", "AwaitingDrain");
      await settle(h);
      assert.equal(h.idle(), "False/Staged");
      assert.equal(h.host.rebootRequested, false);
      assert.equal(h.events.of("RebootRefused").length, 1);
    } finally {
      await h.close();
    }
  }
});

Deno.test("agent: the Node cannot be read: refuse (never assume)", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B, desiredImageState: "Booted" }, host, {
    node: readyToReboot(B),
  });
  h.coreNodes.failGet = new Error('nodes "worker-1" is forbidden');
  try {
    await waitFor(() => h.rebootAllowed() === "False/NoRebootSlot", "refused");
    assert.match(
      findCondition(h.nodes.peek(NODE)!.status!.conditions, "RebootAllowed")!.message,
      /could not be read \(nodes "worker-1" is forbidden\)/,
    );
    await settle(h);
    assert.equal(h.host.rebootRequested, false);
    // Readable again: the next recheck applies.
    h.coreNodes.failGet = undefined;
    await advanceUntil(h, () => h.host.rebootRequested, "apply");
  } finally {
    await h.close();
  }
});

Deno.test("agent: slot withdrawn between the decision and bootc: the last-moment reads refuse", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B, desiredImageState: "Staged" }, host, {
    node: readyToReboot(B),
  });
  try {
    await waitFor(() => h.idle() === "False/Staged", "Staged");
    // The first Node read (to decide) authorizes; the one right before bootc does not.
    h.coreNodes.beforeGet = () => {
      if (h.coreNodes.count("get") === 2) h.coreNodes.put(coreNode({}, false));
    };
    h.nodes.put(bootcNode({ desiredImage: B, desiredImageState: "Booted" }));
    await waitFor(() => h.rebootAllowed() === "False/NoRebootSlot", "refused");
    await settle(h);
    assert.equal(h.host.calls.some((c) => c.startsWith("apply")), false);
    assert.equal(h.idle(), "False/Staged");
    assert.equal(h.events.of("RebootRefused").length, 1);
    assert.equal(h.events.of("Rebooting").length, 0);
  } finally {
    await h.close();
  }
});

Deno.test("agent: drain record removed while Rebooting is being written: the Node is read again, no apply", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B, desiredImageState: "Staged" }, host, {
    node: readyToReboot(B),
  });
  try {
    await waitFor(() => h.idle() === "False/Staged", "Staged");
    // Every read before the write authorizes; while the Rebooting write is out (the daemon
    // frozen, say), someone removes the drain record and uncordons the Node.
    h.nodes.beforePatch = () => {
      if (h.nodes.peek(NODE)?.spec.desiredImageState !== "Booted") return;
      h.nodes.beforePatch = undefined;
      h.coreNodes.put(coreNode(SLOT, false));
    };
    h.nodes.put(bootcNode({ desiredImage: B, desiredImageState: "Booted" }));
    await waitFor(() => h.events.of("RebootRefused").length > 0, "refused after the write");
    await settle(h);
    assert.equal(h.host.calls.some((c) => c.startsWith("apply")), false);
    assert.equal(h.host.rebootRequested, false);
    assert.equal(h.events.of("Rebooting").length, 0);
    assert.notEqual(h.idle(), "False/Rebooting", "not left saying Rebooting");
  } finally {
    await h.close();
  }
});

Deno.test("agent: spec back to Staged just before bootc (the watch lags): the BootcNode GET refuses", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B, desiredImageState: "Booted" }, host, {
    node: readyToReboot(B),
  });
  try {
    h.nodes.beforeGet = () => {
      h.nodes.beforeGet = undefined;
      h.nodes.put(bootcNode({ desiredImage: B, desiredImageState: "Staged" }));
    };
    await waitFor(
      () => h.nodes.count("get") === 1 || h.host.rebootRequested,
      "the last-moment BootcNode read",
    );
    await settle(h);
    assert.equal(h.host.calls.some((c) => c.startsWith("apply")), false);
    assert.equal(h.idle(), "False/Staged");
  } finally {
    await h.close();
  }
});

Deno.test("agent: a BootcNode no pool owns is never acted on until a pool adopts it", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: false });
  const ref = { name: "regcred", namespace: "bootc-operator" };
  const h = await start(
    { desiredImage: C, desiredImageState: "Booted", pullSecretRef: ref, pullSecretHash: "h1" },
    host,
    { owned: false, node: readyToReboot(C) },
  );
  try {
    await waitFor(() => h.idle() === "True/NotOwned", "NotOwned");
    await settle(h);
    assert.deepEqual(
      h.host.calls.filter((c) => c !== "status" && c !== "version"),
      ["mask"],
      "only the auto-update timer is masked",
    );
    assert.equal(h.host.staged?.downloadOnly, false, "not even locked");
    assert.equal(h.coreNodes.calls.length, 0, "no Node read");
    assert.equal(h.secrets.calls.length, 0, "no pull Secret fetched");
    assert.equal(h.rebootAllowed(), "False/NotOwned");
    assert.equal(h.degraded().status, "False");
    assert.match(
      findCondition(h.nodes.peek(NODE)!.status!.conditions, "Idle")!.message,
      /not controlled by a BootcNodePool/,
    );
    // A pool adopts it (metadata only: no generation bump): the daemon starts working.
    h.secrets.put({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "regcred", namespace: "bootc-operator" },
      type: "kubernetes.io/dockerconfigjson",
      data: {
        ".dockerconfigjson": btoa(
          JSON.stringify({ auths: { "registry.example": { auth: btoa("u:p") } } }),
        ),
      },
    });
    h.nodes.put(
      bootcNode({
        desiredImage: C,
        desiredImageState: "Staged",
        pullSecretRef: ref,
        pullSecretHash: "h1",
      }),
    );
    await waitFor(() => h.idle() === "False/Staged", "Staged once owned");
    assert.equal(h.host.staged?.image?.image.image, C);
    assert.equal(h.rebootAllowed(), "False/NotRequested");
  } finally {
    await h.close();
  }
});

Deno.test("agent: adoption is noticed without a spec change", async () => {
  const h = await start({ desiredImage: B }, undefined, { owned: false });
  try {
    await waitFor(() => h.idle() === "True/NotOwned", "NotOwned");
    const stored = h.nodes.peek(NODE)!;
    const generation = stored.metadata.generation;
    h.nodes.put({ ...stored, metadata: { ...stored.metadata, ownerReferences: poolOwner() } });
    assert.equal(h.nodes.peek(NODE)!.metadata.generation, generation);
    await waitFor(() => h.idle() === "False/Staged", "Staged once owned");
  } finally {
    await h.close();
  }
});

/** Counts of API requests: [BootcNode gets, lists, status patches, Node gets]. */
function apiCalls(h: Harness): number[] {
  return [
    h.nodes.count("get"),
    h.nodes.count("list"),
    h.nodes.count("patch", "status"),
    h.coreNodes.count("get"),
  ];
}

/** Advances the fake clock by `ms` and lets the agent run what became due. */
async function tick(h: Harness, ms: number, queriesBefore: number) {
  h.clock.advance(ms);
  await waitFor(() => h.host.healthQueries > queriesBefore, "a health check");
  await new Promise((r) => setTimeout(r, 20));
}

Deno.test("agent: host health checked before the first write, on a timer, written only on change", async () => {
  const host = new FakeBootcHost(A);
  host.systemStateText = "starting";
  const h = await start({ desiredImage: A }, host);
  try {
    await waitFor(() => h.idle() === "True/Idle", "Idle");
    let status = h.nodes.peek(NODE)!.status!;
    assert.equal(h.nodes.count("patch", "status"), 1, "one write, with the health in it");
    assert.deepEqual(status.hostHealth, {
      bootedDigest: d("a"),
      checkedAt: "2026-05-01T10:00:00Z",
      state: "Starting",
      message: "the system is still starting (systemctl is-system-running: starting)",
    });
    const c = findCondition(status.conditions, "HostHealthy")!;
    assert.deepEqual([c.status, c.reason], ["Unknown", "Starting"]);

    // Timed checks with the same answer: local commands only, no API request, no bootc.
    const calls = apiCalls(h);
    const bootc = h.host.calls.length;
    for (let i = 0; i < 4; i++) {
      await tick(h, DEFAULT_HEALTH_CHECK.startingMs, h.host.healthQueries);
    }
    assert.deepEqual(apiCalls(h), calls);
    assert.equal(h.host.calls.length, bootc, "no bootc command for a timed check");

    // Running: one write (Healthy), from the timer.
    host.systemStateText = "running";
    await tick(h, DEFAULT_HEALTH_CHECK.startingMs, h.host.healthQueries);
    await waitFor(() => h.nodes.peek(NODE)?.status?.hostHealth?.state === "Healthy", "Healthy");
    status = h.nodes.peek(NODE)!.status!;
    assert.equal(status.hostHealth?.checkedAt, "2026-05-01T10:01:15Z");
    assert.equal(h.nodes.count("patch", "status"), 2);
    assert.equal(h.events.of("HostRecovered").length, 0, "never unhealthy: nothing recovered");

    // Degraded: Unhealthy naming the failed unit, an event; then running again: recovered.
    host.systemStateText = "degraded";
    host.failed = ["bad.service"];
    await tick(h, DEFAULT_HEALTH_CHECK.startingMs, h.host.healthQueries);
    await waitFor(() => h.events.of("HostUnhealthy").length === 1, "HostUnhealthy event");
    status = h.nodes.peek(NODE)!.status!;
    assert.equal(status.hostHealth?.state, "Unhealthy");
    assert.deepEqual(status.hostHealth?.failedUnits, ["bad.service"]);
    const unhealthy = findCondition(status.conditions, "HostHealthy")!;
    assert.deepEqual([unhealthy.status, unhealthy.reason], ["False", "UnitFailed"]);
    assert.equal(h.events.of("HostUnhealthy")[0].type, "Warning");
    assert.match(h.events.of("HostUnhealthy")[0].message, /failed units: bad\.service/);
    const writes = h.nodes.count("patch", "status");
    await tick(h, DEFAULT_HEALTH_CHECK.startingMs, h.host.healthQueries);
    assert.equal(h.nodes.count("patch", "status"), writes, "the same failure: no write");
    assert.equal(h.events.of("HostUnhealthy").length, 1, "nor another event");
    host.systemStateText = "running";
    host.failed = [];
    await tick(h, DEFAULT_HEALTH_CHECK.startingMs, h.host.healthQueries);
    await waitFor(() => h.events.of("HostRecovered").length === 1, "HostRecovered event");
    assert.equal(h.nodes.peek(NODE)!.status!.hostHealth?.state, "Healthy");

    // After the first 15 minutes, a check a minute.
    h.clock.advance(DEFAULT_HEALTH_CHECK.settleMs);
    await waitFor(
      () =>
        h.agent.nextHealthCheck?.getTime() ===
          h.clock.now().getTime() + DEFAULT_HEALTH_CHECK.settledMs,
      "the settled schedule",
    );
    const settled = h.host.healthQueries;
    h.clock.advance(DEFAULT_HEALTH_CHECK.startingMs);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(h.host.healthQueries, settled, "no check 15 s later");
    await tick(h, DEFAULT_HEALTH_CHECK.settledMs - DEFAULT_HEALTH_CHECK.startingMs, settled);
    assert.equal(h.host.healthQueries, settled + 1);
  } finally {
    await h.close();
  }
});

Deno.test("agent: healthUnits are checked with is-active; a check that cannot run is Unknown", async () => {
  const host = new FakeBootcHost(A);
  host.systemStateText = "degraded"; // ignored: the units decide
  host.unitActive = { "kubelet.service": "active", "crio.service": "activating" };
  const h = await start(
    { desiredImage: A, healthUnits: ["kubelet.service", "crio.service"] },
    host,
    { healthCheck: { startingMs: 1_000 } },
  );
  try {
    await waitFor(() => h.nodes.peek(NODE)?.status?.hostHealth?.state === "Starting", "Starting");
    assert.equal(
      h.nodes.peek(NODE)!.status!.hostHealth?.message,
      "waiting for units: crio.service (activating)",
    );
    host.unitActive["crio.service"] = "failed";
    await advanceUntil(
      h,
      () => h.nodes.peek(NODE)?.status?.hostHealth?.state === "Unhealthy",
      "Unhealthy",
    );
    assert.deepEqual(h.nodes.peek(NODE)!.status!.hostHealth?.failedUnits, ["crio.service"]);
    host.systemctlError = "cannot run nsenter";
    await advanceUntil(
      h,
      () => h.nodes.peek(NODE)?.status?.hostHealth?.state === "Unknown",
      "Unknown",
    );
    const c = findCondition(h.nodes.peek(NODE)!.status!.conditions, "HostHealthy")!;
    assert.deepEqual([c.status, c.reason], ["Unknown", "CheckError"]);
    assert.match(c.message, /cannot check the host's health: systemctl: cannot run nsenter/);
  } finally {
    await h.close();
  }
});

Deno.test("agent: rollback route: nothing staged, Staged; Booted and authorized → Rebooting persisted, bootc rollback --apply once; Idle after reboot", async () => {
  const host = new FakeBootcHost(B);
  host.rollback = fakeEntry(A);
  // The controller rolled the node back: desiredImage is the previous image, A.
  const h = await start({ desiredImage: A }, host);
  try {
    await waitFor(() => h.idle() === "False/Staged", "Staged (ready)");
    let status = h.nodes.peek(NODE)!.status!;
    assert.match(findCondition(status.conditions, "Idle")!.message, /rollback deployment/);
    const staged = findCondition(status.conditions, "ImageStaged")!;
    assert.deepEqual([staged.status, staged.reason], ["True", "RollbackDeployment"]);
    assert.equal(h.host.calls.filter((c) => c.startsWith("stage")).length, 0, "nothing staged");
    assert.equal(h.host.calls.filter((c) => c.startsWith("rollback")).length, 0);
    assert.equal(h.host.rollbackQueued, false, "no rollback queued without --apply");
    assert.equal(h.events.of("Staged").length, 0, "nothing was staged: no Staged event");

    let idleAtRollback: string | undefined;
    let rebootedAtRollback: string | undefined;
    h.host.beforeCommand = (call) => {
      if (call.startsWith("rollback")) {
        idleAtRollback = h.idle();
        const c = findCondition(h.nodes.peek(NODE)?.status?.conditions, "Rebooted");
        rebootedAtRollback = `${c?.status}/${c?.reason}`;
      }
    };
    h.coreNodes.put(readyToReboot(A));
    h.nodes.put({
      ...h.nodes.peek(NODE)!,
      spec: { ...h.nodes.peek(NODE)!.spec, desiredImageState: "Booted" },
    });
    await waitFor(() => h.host.rebootRequested, "rollback --apply");
    assert.equal(idleAtRollback, "False/Rebooting");
    assert.equal(rebootedAtRollback, "False/RollingBack");
    assert.deepEqual(h.host.calls.filter((c) => c.startsWith("rollback")), ["rollback"]);
    const rollbackAt = h.host.calls.indexOf("rollback");
    assert.equal(h.host.calls[rollbackAt - 1], "status", "status read right before");
    await waitFor(() => h.events.of("RollingBack").length === 1, "RollingBack event");
    assert.match(
      h.events.of("RollingBack")[0].message,
      /^Rolling back to .*@sha256:a{12} \(the rollback/,
    );
    status = h.nodes.peek(NODE)!.status!;
    const cordoned = findCondition(status.conditions, "Cordoned")!;
    assert.deepEqual([cordoned.status, cordoned.lastTransitionTime], [
      "True",
      "2026-05-01T09:58:00Z",
    ]);
    const drained = findCondition(status.conditions, "Drained")!;
    assert.deepEqual([drained.status, drained.lastTransitionTime], [
      "True",
      "2026-05-01T09:59:00Z",
    ]);
    // While it runs nothing more happens (no second rollback, which would toggle it back).
    h.agent.kick();
    h.clock.advance(60_000);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(h.host.calls.filter((c) => c.startsWith("rollback")).length, 1);

    await h.stop();
    h.host.reboot();
    await h.restart();
    await waitFor(() => h.idle() === "True/Idle", "Idle after the rollback");
    status = h.nodes.peek(NODE)!.status!;
    assert.equal(status.booted?.image, A);
    assert.equal(status.rollback?.image, B);
    const rebooted = findCondition(status.conditions, "Rebooted")!;
    assert.deepEqual([rebooted.status, rebooted.reason], ["True", "Rebooted"]);
    assert.equal(h.degraded().status, "False");
  } finally {
    await h.close();
  }
});

Deno.test("agent: rollback route: a queued rollback is undone; refused without a slot", async () => {
  const host = new FakeBootcHost(B);
  host.rollback = fakeEntry(A);
  host.rollbackQueued = true; // an interrupted rollback --apply, or someone's bootc rollback
  const h = await start({ desiredImage: A, desiredImageState: "Booted" }, host);
  try {
    await waitFor(() => h.rebootAllowed() === "False/NoRebootSlot", "refused");
    assert.equal(h.host.rollbackQueued, false);
    assert.deepEqual(h.host.calls.filter((c) => c.startsWith("rollback") || c.startsWith("unq")), [
      "unqueueRollback",
    ]);
    assert.equal(h.idle(), "False/Staged");
    assert.equal(h.host.rebootRequested, false);
  } finally {
    await h.close();
  }
});

Deno.test("agent: the host fell back after the apply: Degraded names both images, no rollback, status mirrors the host", async () => {
  const host = new FakeBootcHost(A);
  host.staged = fakeEntry(B, { downloadOnly: true });
  const h = await start({ desiredImage: B, desiredImageState: "Booted" }, host, {
    node: readyToReboot(B),
  });
  try {
    await waitFor(() => h.host.rebootRequested, "apply");
    await h.stop();
    // B boots, fails boot assessment, and the host falls back to A: B is now the rollback.
    h.host.reboot();
    [h.host.booted, h.host.rollback] = [h.host.rollback, h.host.booted];
    await h.restart();
    await waitFor(() => h.degraded().status === "True", "Degraded");
    assert.match(
      h.degraded().message!,
      /booted .*@sha256:b{12} but the host fell back to .*@sha256:a{12}/,
    );
    const status = h.nodes.peek(NODE)!.status!;
    assert.equal(status.booted?.image, A);
    assert.equal(status.rollback?.image, B);
    assert.equal(status.staged, undefined);
    const rebooted = findCondition(status.conditions, "Rebooted")!;
    assert.deepEqual([rebooted.status, rebooted.reason], ["False", "FellBack"]);
    // The Node still authorizes B, and B is the rollback deployment: still, no loop.
    h.agent.kick();
    h.clock.advance(60_000);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(h.host.calls.filter((c) => c.startsWith("rollback")).length, 0);
    assert.equal(h.host.rebootRequested, false);
  } finally {
    await h.close();
  }
});

Deno.test("agent: a whole update, health included, costs a bounded number of status writes", async () => {
  const host = new FakeBootcHost(A);
  const h = await start({ desiredImage: A }, host);
  try {
    await waitFor(() => h.idle() === "True/Idle", "Idle");
    const base = h.nodes.count("patch", "status");
    const setSpec = (spec: Partial<BootcNodeSpec>) => {
      const bn = h.nodes.peek(NODE)!;
      h.nodes.put({ ...bn, spec: { ...bn.spec, ...spec } });
    };
    setSpec({ desiredImage: B });
    await waitFor(() => h.idle() === "False/Staged", "Staged");
    h.coreNodes.put(readyToReboot(B));
    setSpec({ desiredImageState: "Booted" });
    await waitFor(() => h.host.rebootRequested, "apply");
    await h.stop();
    h.host.reboot();
    h.host.systemStateText = "starting"; // the daemon comes up before the boot finished
    await h.restart();
    await waitFor(() => h.idle() === "True/Idle", "Idle after the reboot");
    h.host.systemStateText = "running";
    await advanceUntil(
      h,
      () => h.nodes.peek(NODE)?.status?.hostHealth?.state === "Healthy",
      "Healthy",
    );
    // The controller releases the node.
    h.coreNodes.put(coreNode());
    setSpec({ desiredImageState: "Staged" });
    await waitFor(() => h.rebootAllowed() === "False/NotRequested", "released");
    const writes = h.nodes.count("patch", "status") - base;
    // Staged (a quick pull: no Staging), Rebooting, Idle (+ Starting), Healthy, released.
    assert.equal(writes, 5);
    const s = h.nodes.peek(NODE)!.status!;
    for (
      const [type, expected] of [
        ["ImageStaged", "True/Booted"],
        ["Cordoned", "True/Cordoned"],
        ["Drained", "True/Drained"],
        ["Rebooted", "True/Rebooted"],
        ["HostHealthy", "True/SystemRunning"],
      ]
    ) {
      const c = findCondition(s.conditions, type);
      assert.equal(`${c?.status}/${c?.reason}`, expected, type);
    }
  } finally {
    await h.close();
  }
});
