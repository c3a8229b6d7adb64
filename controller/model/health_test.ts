import assert from "node:assert/strict";
import type { BootcNode, HealthSpec } from "../../lib/api/mod.ts";
import {
  evaluateHealth,
  fellBack,
  type HealthInput,
  healthTimeoutMs,
  type HealthVerdict,
  soakVerdict,
} from "./health.ts";
import { bootcNode, image, node, pod } from "../testing/fixtures.ts";
import type { NodeSummary, PodSummary } from "./types.ts";

// The reboot into image("b") was requested at REQUESTED; the node is back and Ready since BACK.
const REQUESTED = new Date("2026-01-01T01:00:00Z");
const BACK = "2026-01-01T01:02:00Z";
const at = (s: number) => new Date(Date.parse(BACK) + s * 1000);
const desired = { image: image("b") };

/** A node back from its reboot into image("b"), Ready since BACK, host Healthy. */
function back(opts: Parameters<typeof bootcNode>[1] = {}): BootcNode {
  return bootcNode("n1", { booted: image("b"), rollback: image("a"), ...opts });
}

function judge(over: Partial<HealthInput> = {}): HealthVerdict {
  return evaluateHealth({
    node: node("n1", { readySince: BACK }),
    bn: back(),
    desired,
    rebootRequestedAt: REQUESTED,
    pods: [],
    now: at(10),
    ...over,
  });
}

function checkStates(v: HealthVerdict): Record<string, string> {
  return "checks" in v ? Object.fromEntries(v.checks.map((c) => [c.name, c.state])) : {};
}

Deno.test("fellBack: booted another deployment with the desired one as rollback, nothing staged", () => {
  const cases: [string, BootcNode, boolean][] = [
    ["fell back", bootcNode("n1", { booted: image("a"), rollback: image("b") }), true],
    ["running the target", back(), false],
    ["still on the old image, target staged", bootcNode("n1", { phase: "staged" }), false],
    [
      "old image, target staged and also the rollback",
      bootcNode("n1", { phase: "staged", rollback: image("b") }),
      false,
    ],
    ["old image, rollback is something else", bootcNode("n1", { rollback: image("z") }), false],
    ["no status", bootcNode("n1", { phase: "pending" }), false],
  ];
  for (const [name, bn, want] of cases) {
    assert.equal(fellBack(bn, desired), want, name);
  }
});

Deno.test("evaluateHealth: the verdict for each host state after the reboot", () => {
  const cases: {
    name: string;
    over: Partial<HealthInput>;
    state: HealthVerdict["state"];
    checks?: Record<string, string>;
    message?: RegExp;
  }[] = [
    {
      name: "healthy, Ready, no extra checks",
      over: {},
      state: "Passed",
      checks: { NodeReady: "passed", HostHealthy: "passed" },
    },
    {
      name: "a unit failed: fails at once, naming the check and the unit",
      over: { bn: back({ host: "Unhealthy" }) },
      state: "Failed",
      checks: { NodeReady: "passed", HostHealthy: "failed" },
      message: /node n1 failed health checks: HostHealthy \(failed units: app\.service\)/,
    },
    {
      name: "host still starting: checking",
      over: { bn: back({ host: "Starting" }) },
      state: "Checking",
      checks: { NodeReady: "passed", HostHealthy: "pending" },
    },
    {
      name: "no host report yet: checking",
      over: { bn: back({ host: "none" }) },
      state: "Checking",
      checks: { HostHealthy: "pending" },
    },
    {
      name: "a Healthy report for the previous boot does not count",
      over: {
        bn: (() => {
          const bn = back();
          bn.status!.hostHealth!.bootedDigest = image("a").split("@")[1];
          return bn;
        })(),
      },
      state: "Checking",
      checks: { HostHealthy: "pending" },
    },
    {
      name: "Node not Ready yet: checking",
      over: { node: node("n1", { ready: false, readySince: BACK }) },
      state: "Checking",
      checks: { NodeReady: "pending", HostHealthy: "passed" },
    },
    {
      name: "still on the old image (rebooting)",
      over: { bn: bootcNode("n1", { phase: "rebooting", state: "Booted" }) },
      state: "NotBooted",
    },
    {
      name: "fell back by itself: detected at once, before any timeout",
      over: { bn: bootcNode("n1", { booted: image("a"), rollback: image("b") }), now: at(1) },
      state: "FellBack",
      message: /node n1 booted .*@sha256:b+ and fell back to .*@sha256:a+ by itself/,
    },
    {
      name: "fell back but no reboot was requested: not judged a fallback",
      over: {
        bn: bootcNode("n1", { booted: image("a"), rollback: image("b") }),
        rebootRequestedAt: undefined,
      },
      state: "NotBooted",
    },
  ];
  for (const c of cases) {
    const v = judge(c.over);
    assert.equal(v.state, c.state, c.name);
    if (c.checks) {
      const got = checkStates(v);
      for (const [k, s] of Object.entries(c.checks)) assert.equal(got[k], s, `${c.name}: ${k}`);
    }
    if (c.message) assert.match("message" in v ? v.message : "", c.message, c.name);
  }
});

Deno.test("evaluateHealth: pending checks fail with their names once the health timeout passes", () => {
  const health: HealthSpec = { timeoutSeconds: 300 };
  assert.equal(healthTimeoutMs(health), 300_000);
  assert.equal(healthTimeoutMs(undefined), 600_000);
  const starting = back({ host: "Starting" });
  const cases: { name: string; now: Date; readySince?: string; ready?: boolean; state: string }[] =
    [
      { name: "just before the deadline", now: at(299), state: "Checking" },
      { name: "at the deadline", now: at(300), state: "Failed" },
      // The clock starts when the node is Ready again, not at the reboot request.
      {
        name: "Ready since long before the reboot: counts from the request",
        readySince: "2025-01-01T00:00:00Z",
        now: new Date(REQUESTED.getTime() + 299_000),
        state: "Checking",
      },
      {
        name: "Ready since long before the reboot, past request + timeout",
        readySince: "2025-01-01T00:00:00Z",
        now: new Date(REQUESTED.getTime() + 300_000),
        state: "Failed",
      },
      // A node that never gets Ready is the reboot timeout's business.
      { name: "never Ready", ready: false, now: at(10_000), state: "Checking" },
    ];
  for (const c of cases) {
    const v = judge({
      bn: starting,
      health,
      node: node("n1", { ready: c.ready ?? true, readySince: c.readySince ?? BACK }),
      now: c.now,
    });
    assert.equal(v.state, c.state, c.name);
    if (v.state === "Checking" && c.ready !== false && !c.readySince) {
      assert.equal(v.deadline.toISOString(), at(300).toISOString(), c.name);
    }
    if (v.state === "Failed") {
      assert.match(
        v.message,
        /node n1 failed health checks: HostHealthy \(.*\) within 300s/,
        c.name,
      );
    }
  }
});

Deno.test("evaluateHealth: pods the pool selects on the node must be Ready", () => {
  const health: HealthSpec = { podSelector: { matchLabels: { app: "cni" } } };
  const cni = (name: string, o: Partial<PodSummary> = {}) =>
    pod(name, "n1", { labels: { app: "cni" }, daemonSet: true, ready: true, ...o });
  const cases: {
    name: string;
    pods: PodSummary[] | undefined;
    state: string;
    needPods?: boolean;
    message?: RegExp;
  }[] = [
    { name: "all selected pods Ready", pods: [cni("cni-1"), pod("web", "n1")], state: "Passed" },
    { name: "no selected pod at all", pods: [pod("web", "n1")], state: "Passed" },
    {
      name: "a selected pod not Ready",
      pods: [cni("cni-1", { ready: false })],
      state: "Checking",
      message: /1 selected pod\(s\) not Ready: default\/cni-1/,
    },
    {
      name: "unselected pods not Ready do not matter",
      pods: [cni("cni-1"), pod("web", "n1", { ready: false })],
      state: "Passed",
    },
    {
      name: "terminating and completed pods do not count",
      pods: [cni("old", { ready: false, terminating: true }), cni("job", { completed: true })],
      state: "Passed",
    },
    { name: "pods not listed: ask for them", pods: undefined, state: "Checking", needPods: true },
  ];
  for (const c of cases) {
    const v = judge({ health, pods: c.pods });
    assert.equal(v.state, c.state, c.name);
    if (v.state === "Checking") {
      assert.equal(v.needPods, c.needPods ?? false, c.name);
      const p = v.checks.find((x) => x.name === "Pods");
      assert.equal(p?.state, "pending", c.name);
      if (c.message) assert.match(p?.message ?? "", c.message, c.name);
    }
  }
  // Still not Ready when the timeout runs out: fails naming the pod.
  const late = judge({
    health: { ...health, timeoutSeconds: 60 },
    pods: [cni("cni-1", { ready: false })],
    now: at(60),
  });
  assert.equal(late.state, "Failed");
  assert.match(late.state === "Failed" ? late.message : "", /Pods \(1 selected pod\(s\) not Ready/);
  // Pods that cannot be listed (lost permission) are unknown, not failed, past the timeout.
  const unreadable = "listing the pods of node n1 failed: pods is forbidden";
  const blind = judge({
    health: { ...health, timeoutSeconds: 60 },
    pods: undefined,
    podsUnreadable: unreadable,
    now: at(600),
  });
  assert.equal(blind.state, "Checking");
  if (blind.state === "Checking") {
    assert.equal(blind.checks.find((x) => x.name === "Pods")?.message, unreadable);
  }
  // Another check pending past the timeout still fails, naming only that one.
  const other = judge({
    bn: back({ host: "Starting" }),
    health: { ...health, timeoutSeconds: 60 },
    pods: undefined,
    podsUnreadable: unreadable,
    now: at(60),
  });
  assert.equal(other.state, "Failed");
  const message = other.state === "Failed" ? other.message : "";
  assert.match(message, /HostHealthy/);
  assert.doesNotMatch(message, /Pods/);
});

Deno.test("evaluateHealth: the Prometheus query must be empty for forSeconds", () => {
  const health: HealthSpec = {
    prometheus: { url: "http://prom:9090", query: "up == 0", forSeconds: 120 },
  };
  const now = at(200);
  const cases: { name: string; query: HealthInput["query"]; state: string; msg: RegExp }[] = [
    { name: "not run yet", query: undefined, state: "Checking", msg: /query not run yet/ },
    {
      name: "empty long enough",
      query: { last: "empty", emptySince: at(80) },
      state: "Passed",
      msg: /empty for 120s/,
    },
    {
      name: "empty, not long enough",
      query: { last: "empty", emptySince: at(100) },
      state: "Checking",
      msg: /empty for 100s of 120s/,
    },
    {
      name: "not empty",
      query: { last: "nonEmpty", emptySince: at(0), message: "1 series: node=n1" },
      state: "Checking",
      msg: /1 series: node=n1/,
    },
    { name: "query error", query: { last: "error" }, state: "Checking", msg: /query failed/ },
  ];
  for (const c of cases) {
    const v = judge({ health, query: c.query, now });
    assert.equal(v.state, c.state, c.name);
    const q = "checks" in v ? v.checks.find((x) => x.name === "Prometheus") : undefined;
    assert.match(q?.message ?? "", c.msg, c.name);
  }
  // The default forSeconds is 60.
  const v = judge({
    health: { prometheus: { url: "http://prom:9090", query: "up == 0" } },
    query: { last: "empty", emptySince: at(140) },
    now,
  });
  assert.equal(v.state, "Passed");
});

Deno.test("evaluateHealth: a failed check wins over pending ones and is named alone", () => {
  const v = judge({
    bn: back({ host: "Unhealthy" }),
    node: node("n1", { ready: false, readySince: BACK }),
    health: { podSelector: { matchLabels: { app: "cni" } } },
    pods: undefined,
  });
  assert.equal(v.state, "Failed");
  assert.equal(
    v.state === "Failed" ? v.message : "",
    "node n1 failed health checks: HostHealthy (failed units: app.service)",
  );
});

Deno.test("soakVerdict: a released canary node fails on a failed unit, a fallback or NotReady past its grace", () => {
  const now = new Date("2026-01-01T02:00:00Z");
  const soakStart = new Date("2026-01-01T01:59:30Z");
  const cases: {
    name: string;
    n: NodeSummary;
    bn: BootcNode;
    graceS?: number;
    want: "Healthy" | RegExp | { failsAt: string };
  }[] = [
    { name: "healthy", n: node("n1"), bn: back(), want: "Healthy" },
    {
      name: "a unit failed",
      n: node("n1"),
      bn: back({ host: "Unhealthy" }),
      want: /node n1 failed health checks: HostHealthy \(failed units: app\.service\)/,
    },
    {
      name: "fell back to the previous deployment",
      n: node("n1"),
      bn: bootcNode("n1", { booted: image("a"), rollback: image("b") }),
      want: /node n1 fell back from .*@sha256:b+ to its previous deployment/,
    },
    {
      name: "NotReady for 1s without a grace: fails at once",
      n: node("n1", { ready: false, readySince: "2026-01-01T01:59:59Z" }),
      bn: back(),
      want: /^node n1 is not Ready since 2026-01-01T01:59:59Z$/,
    },
    {
      name: "NotReady since an unknown time: fails even with a grace",
      n: node("n1", { ready: false, readySince: undefined }),
      bn: back(),
      graceS: 30,
      want: /node n1 is not Ready since an unknown time/,
    },
    {
      name: "NotReady for 29s with a grace of 30s: holds the soak until the grace ends",
      n: node("n1", { ready: false, readySince: "2026-01-01T01:59:31Z" }),
      bn: back(),
      graceS: 30,
      want: { failsAt: "2026-01-01T02:00:01.000Z" },
    },
    {
      name: "NotReady for 30s with a grace of 30s",
      n: node("n1", { ready: false, readySince: "2026-01-01T01:59:30Z" }),
      bn: back(),
      graceS: 30,
      want: /node n1 is not Ready since 2026-01-01T01:59:30Z, longer than its grace of 30s/,
    },
    {
      name: "without a grace, Ready again since the soak began: was NotReady during it",
      n: node("n1", { readySince: "2026-01-01T01:59:40Z" }),
      bn: back(),
      want:
        /node n1 was not Ready during the canary soak \(Ready again since 2026-01-01T01:59:40Z\)/,
    },
    {
      name: "with a grace, a flap that is over is tolerated",
      n: node("n1", { readySince: "2026-01-01T01:59:40Z" }),
      bn: back(),
      graceS: 30,
      want: "Healthy",
    },
    {
      name: "Ready since before the soak",
      n: node("n1", { readySince: "2026-01-01T01:59:30Z" }),
      bn: back(),
      want: "Healthy",
    },
    {
      name: "host starting is not a failure",
      n: node("n1"),
      bn: back({ host: "Starting" }),
      want: "Healthy",
    },
    { name: "not on the image at all", n: node("n1"), bn: bootcNode("n1"), want: "Healthy" },
  ];
  for (const c of cases) {
    const got = soakVerdict({
      node: c.n,
      bn: c.bn,
      desired,
      graceMs: (c.graceS ?? 0) * 1000,
      soakStart,
      now,
    });
    if (c.want === "Healthy") assert.deepEqual(got, { state: "Healthy" }, c.name);
    else if (c.want instanceof RegExp) {
      assert.equal(got.state, "Failed", c.name);
      assert.match("message" in got ? got.message : "", c.want, c.name);
    } else {
      assert.equal(got.state, "NotReady", c.name);
      assert.equal("failsAt" in got ? got.failsAt.toISOString() : "", c.want.failsAt, c.name);
    }
  }
});

Deno.test("fellBack: the daemon's Rebooted condition tells a fall-back from a rollback about to happen", () => {
  const desired = { image: image("a") };
  const withRebooted = (reason: string) => {
    const bn = bootcNode("n1", { booted: image("b"), desired: image("a"), rollback: image("a") });
    bn.status!.conditions!.push({
      type: "Rebooted",
      status: "False",
      reason,
      message: "",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    });
    return bn;
  };
  // Rolling back to a (its rollback deployment): not a fall-back.
  assert.equal(fellBack(withRebooted("RollingBack"), desired), false);
  assert.equal(fellBack(withRebooted("Waiting"), desired), false);
  // The daemon saw the host come back on the previous deployment.
  assert.equal(fellBack(withRebooted("FellBack"), desired), true);
});

Deno.test("evaluateHealth: a boot that failed its assessment fails the BootAssessment check", () => {
  for (const reason of ["BootIncomplete", "BootMarkedBad"]) {
    const bn = back({ host: "Unhealthy" });
    bn.status!.conditions = [
      ...(bn.status!.conditions ?? []),
      {
        type: "HostHealthy",
        status: "False",
        reason,
        message: "the boot did not reach boot-complete.target",
        lastTransitionTime: BACK,
      },
    ];
    const v = judge({ bn });
    assert.equal(v.state, "Failed", reason);
    assert.deepEqual(checkStates(v).BootAssessment, "failed", reason);
    assert.equal(checkStates(v).HostHealthy, undefined, reason);
  }
});
