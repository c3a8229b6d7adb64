import assert from "node:assert/strict";
import {
  ANNOTATION_RESET_CIRCUIT,
  ANNOTATION_RETRY_REVISION,
  type BootcNodePool,
  type OnFailure,
  type Revision,
} from "../../lib/api/mod.ts";
import {
  circuitOpen,
  DEFAULT_MAX_ROLLBACKS,
  effectiveTarget,
  type FailureRecord,
  failureRecord,
  maxRollbacks,
  recordFailure,
  respondToFailure,
  retriedRevision,
} from "./failure_policy.ts";
import { digest, image, pool, REPO } from "../testing/fixtures.ts";
import type { Target } from "../model/types.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const TAG = `${REPO}:latest`;
const t = (seed: string): Target => ({ image: image(seed), digest: digest(seed) });
const empty: FailureRecord = { failedDigests: [], consecutiveFailures: 0 };

function withRollout(
  p: BootcNodePool,
  rollout: Partial<NonNullable<BootcNodePool["spec"]["rollout"]>>,
): BootcNodePool {
  p.spec.rollout = { ...p.spec.rollout, ...rollout };
  return p;
}

Deno.test("failureRecord: reads status; a new reset annotation zeroes the count once", () => {
  const status = {
    failedDigests: [digest("b")],
    consecutiveFailures: 3,
    circuitReset: "1",
    rollbackHold: { ref: image("b"), failedImage: image("b"), image: image("a"), at: "x" },
  };
  const cases: { name: string; reset?: string; count: number; circuitReset?: string }[] = [
    { name: "no annotation", count: 3, circuitReset: "1" },
    { name: "annotation already acted on", reset: "1", count: 3, circuitReset: "1" },
    { name: "new annotation value", reset: "2", count: 0, circuitReset: "2" },
  ];
  for (const c of cases) {
    const p = pool({ status });
    if (c.reset) p.metadata.annotations = { [ANNOTATION_RESET_CIRCUIT]: c.reset };
    const r = failureRecord(p);
    assert.equal(r.consecutiveFailures, c.count, c.name);
    assert.equal(r.circuitReset, c.circuitReset, c.name);
    // The reset only closes the circuit: failed digests and the hold stay.
    assert.deepEqual(r.failedDigests, [digest("b")], c.name);
    assert.deepEqual(r.rollbackHold, status.rollbackHold, c.name);
  }
  assert.deepEqual(failureRecord(pool()), {
    failedDigests: [],
    consecutiveFailures: 0,
    circuitReset: undefined,
    rollbackHold: undefined,
  });
});

Deno.test("failureRecord: a retry forgets its failed revision only while the pool moved on from it", () => {
  const r = (revision: number, seed: string, outcome: Revision["outcome"]): Revision => ({
    revision,
    image: image(seed),
    digest: digest(seed),
    startedAt: "t",
    outcome,
  });
  const hold = { ref: TAG, failedImage: image("b"), image: image("a"), at: "t" };
  const rolledBack = [r(1, "a", "Succeeded"), r(2, "b", "RolledBack"), r(3, "a", "Succeeded")];
  const cases: {
    name: string;
    retry?: string;
    history: Revision[];
    forgiven: boolean;
  }[] = [
    { name: "no annotation", history: rolledBack, forgiven: false },
    { name: "the rolled-back revision", retry: "2", history: rolledBack, forgiven: true },
    { name: "a revision that succeeded", retry: "1", history: rolledBack, forgiven: false },
    { name: "no such revision", retry: "9", history: rolledBack, forgiven: false },
    { name: "not a number", retry: "two", history: rolledBack, forgiven: false },
    {
      // Halted in place (Halt, RollbackNode): forgetting would record it again at once.
      name: "the newest revision failed",
      retry: "2",
      history: [r(1, "a", "Succeeded"), r(2, "b", "Failed")],
      forgiven: false,
    },
    {
      // The retry rolled it out again: a later failure is a new one, recorded and held.
      name: "already rolled out again",
      retry: "2",
      history: [...rolledBack, r(4, "b", "RolledBack"), r(5, "a", "Progressing")],
      forgiven: false,
    },
  ];
  for (const c of cases) {
    const p = pool({
      ref: TAG,
      status: {
        history: c.history,
        failedDigests: [digest("c"), digest("b")],
        consecutiveFailures: 2,
        rollbackHold: hold,
      },
    });
    if (c.retry) p.metadata.annotations = { [ANNOTATION_RETRY_REVISION]: c.retry };
    const record = failureRecord(p);
    assert.equal(retriedRevision(p)?.revision, c.forgiven ? 2 : undefined, c.name);
    assert.deepEqual(
      record.failedDigests,
      c.forgiven ? [digest("c")] : [digest("c"), digest("b")],
      c.name,
    );
    assert.deepEqual(record.rollbackHold, c.forgiven ? undefined : hold, c.name);
    // A retry is no circuit reset: the count stays.
    assert.equal(record.consecutiveFailures, 2, c.name);
  }
  // With the hold and the failed digest forgotten, the spec's image is the target again.
  const p = pool({
    ref: TAG,
    status: { history: rolledBack, failedDigests: [digest("b")], rollbackHold: hold },
  });
  p.metadata.annotations = { [ANNOTATION_RETRY_REVISION]: "2" };
  const effective = effectiveTarget({
    pool: p,
    specTarget: t("b"),
    priorTarget: t("a"),
    record: failureRecord(p),
  });
  assert.deepEqual(effective.target, t("b"));
  assert.equal(effective.rollback, false);
});

Deno.test("circuitOpen: maxRollbacks consecutive failures (default 3)", () => {
  assert.equal(DEFAULT_MAX_ROLLBACKS, 3);
  const cases: { max?: number; count: number; open: boolean }[] = [
    { count: 2, open: false },
    { count: 3, open: true },
    { count: 4, open: true },
    { max: 1, count: 0, open: false },
    { max: 1, count: 1, open: true },
    { max: 5, count: 4, open: false },
  ];
  for (const c of cases) {
    const p = withRollout(pool(), { maxRollbacks: c.max });
    assert.equal(maxRollbacks(p), c.max ?? 3);
    assert.equal(
      circuitOpen(p, { ...empty, consecutiveFailures: c.count }),
      c.open,
      JSON.stringify(c),
    );
  }
});

Deno.test("effectiveTarget: holds, failed digests and the open circuit", () => {
  const hold = { ref: image("b"), failedImage: image("b"), image: image("a"), at: "t" };
  const tagHold = { ref: TAG, failedImage: image("b"), image: image("a"), at: "t" };
  const cases: {
    name: string;
    ref?: string;
    spec?: Target;
    prior?: Target;
    record?: Partial<FailureRecord>;
    /** generation vs observedGeneration. */
    specChanged?: boolean;
    want: Target | undefined;
    rollback?: boolean;
    note?: RegExp;
  }[] = [
    { name: "nothing recorded: the spec", spec: t("b"), prior: t("a"), want: t("b") },
    {
      name: "resolution failed: the prior target",
      ref: TAG,
      spec: undefined,
      prior: t("a"),
      want: t("a"),
    },
    {
      name: "pool rollback hold, pinned ref unchanged",
      spec: t("b"),
      prior: t("b"),
      record: { rollbackHold: hold, failedDigests: [digest("b")] },
      want: t("a"),
      rollback: true,
      note: /rolled back to .*@sha256:a+ after .*@sha256:b+ failed; change spec\.image\.ref/,
    },
    {
      name: "hold, tag still means the failed image",
      ref: TAG,
      spec: t("b"),
      prior: t("a"),
      record: { rollbackHold: tagHold, failedDigests: [digest("b")] },
      want: t("a"),
      rollback: true,
    },
    {
      name: "hold, tag not resolved (registry down)",
      ref: TAG,
      spec: undefined,
      prior: t("a"),
      record: { rollbackHold: tagHold, failedDigests: [digest("b")] },
      want: t("a"),
      rollback: true,
    },
    {
      name: "hold ends when the user changes the ref",
      ref: image("c"),
      spec: t("c"),
      prior: t("a"),
      record: { rollbackHold: hold, failedDigests: [digest("b")] },
      want: t("c"),
      specChanged: true,
    },
    {
      name: "hold ends when the tag moves to a new digest",
      ref: TAG,
      spec: t("c"),
      prior: t("a"),
      record: { rollbackHold: tagHold, failedDigests: [digest("b")] },
      want: t("c"),
    },
    {
      name: "a tag that resolves to a failed digest is not rolled out again",
      ref: TAG,
      spec: t("b"),
      prior: t("a"),
      record: { failedDigests: [digest("b")] },
      want: t("a"),
      note: /resolves to sha256:b+, which failed its health checks before; not rolled out again/,
    },
    {
      name: "a pinned ref to a failed digest is the user's explicit choice",
      spec: t("b"),
      prior: t("a"),
      record: { failedDigests: [digest("b")] },
      want: t("b"),
    },
    {
      name: "circuit open: a tag that moved by itself is not adopted",
      ref: TAG,
      spec: t("c"),
      prior: t("a"),
      record: { consecutiveFailures: 3 },
      want: t("a"),
      note:
        /circuit open: .*:latest now resolves to sha256:c+; not rolled out until the circuit is reset \(annotate the pool with bootc\.dev\/reset-circuit-breaker\)/,
    },
    {
      name: "circuit open, but the user changed the spec: adopted",
      ref: TAG,
      spec: t("c"),
      prior: t("a"),
      record: { consecutiveFailures: 3 },
      specChanged: true,
      want: t("c"),
    },
    {
      name: "circuit open, pinned ref: the user's choice",
      spec: t("c"),
      prior: t("a"),
      record: { consecutiveFailures: 3 },
      want: t("c"),
    },
    {
      name: "circuit closed: the moved tag is adopted",
      ref: TAG,
      spec: t("c"),
      prior: t("a"),
      record: { consecutiveFailures: 2 },
      want: t("c"),
    },
  ];
  for (const c of cases) {
    const p = pool({
      ref: c.ref ?? c.spec?.image ?? image("b"),
      generation: 2,
      status: { observedGeneration: c.specChanged ? 1 : 2 },
    });
    const got = effectiveTarget({
      pool: p,
      specTarget: c.spec,
      priorTarget: c.prior,
      record: { ...empty, ...c.record },
    });
    assert.deepEqual(got.target, c.want, c.name);
    assert.equal(got.rollback, c.rollback ?? false, c.name);
    if (c.note) assert.match(got.note ?? "", c.note, c.name);
    else if (!c.rollback) assert.equal(got.note, undefined, c.name);
    if (c.rollback) assert.deepEqual(got.hold, c.record?.rollbackHold, c.name);
  }
});

Deno.test("respondToFailure: each onFailure policy, without a good image and with the circuit open", () => {
  const failures = [
    {
      node: "n1",
      message: "node n1 failed health checks: HostHealthy (failed units: app.service)",
    },
  ];
  const cases: {
    name: string;
    policy?: OnFailure;
    lastGood?: string;
    count?: number;
    kind: string;
    message: RegExp;
    nodes?: string[];
  }[] = [
    {
      name: "default is Halt",
      lastGood: image("a"),
      kind: "halt",
      message: /app\.service\); the rollout of .*@sha256:b+ is halted$/,
    },
    {
      name: "Halt",
      policy: "Halt",
      lastGood: image("a"),
      kind: "halt",
      message: /is halted$/,
    },
    {
      name: "RollbackNode",
      policy: "RollbackNode",
      lastGood: image("a"),
      kind: "rollbackNodes",
      nodes: ["n1"],
      message: /rolling n1 back to .*@sha256:a+; the rollout of .*@sha256:b+ is halted/,
    },
    {
      name: "RollbackPool",
      policy: "RollbackPool",
      lastGood: image("a"),
      kind: "rollbackPool",
      message: /app\.service\); rolling the pool back to .*@sha256:a+$/,
    },
    {
      name: "RollbackPool with nothing to go back to",
      policy: "RollbackPool",
      kind: "halt",
      message: /no earlier image succeeded in this pool, so nothing to roll back to/,
    },
    {
      name: "RollbackNode with nothing to go back to",
      policy: "RollbackNode",
      kind: "halt",
      message: /nothing to roll back to/,
    },
    {
      name: "RollbackPool, circuit open: halt",
      policy: "RollbackPool",
      lastGood: image("a"),
      count: 3,
      kind: "halt",
      message: /the circuit is open \(3 failed rollouts in a row\), so no automatic rollback/,
    },
    {
      name: "RollbackPool, one below the limit: still rolls back",
      policy: "RollbackPool",
      lastGood: image("a"),
      count: 2,
      kind: "rollbackPool",
      message: /rolling the pool back/,
    },
  ];
  for (const c of cases) {
    const p = withRollout(pool(), { onFailure: c.policy });
    const r = respondToFailure({
      pool: p,
      target: t("b"),
      failures,
      lastGood: c.lastGood,
      record: { ...empty, consecutiveFailures: c.count ?? 0 },
    });
    assert.equal(r.kind, c.kind, c.name);
    assert.match(r.message, c.message, c.name);
    if (r.kind !== "halt") assert.equal(r.to, c.lastGood, c.name);
    if (r.kind === "rollbackNodes") assert.deepEqual(r.nodes, c.nodes, c.name);
  }
});

Deno.test("recordFailure: counts a target once, keeps digests unique and capped, sets the hold", () => {
  const first = recordFailure(empty, t("b"), false);
  assert.deepEqual(first, { failedDigests: [digest("b")], consecutiveFailures: 1 });
  // The same failure seen again in the next plan is not counted twice.
  assert.deepEqual(recordFailure(first, t("b"), true), first);
  const second = recordFailure(first, t("c"), false, {
    ref: image("c"),
    image: image("a"),
    now: NOW,
  });
  assert.deepEqual(second, {
    failedDigests: [digest("b"), digest("c")],
    consecutiveFailures: 2,
    rollbackHold: {
      ref: image("c"),
      failedImage: image("c"),
      image: image("a"),
      at: "2026-01-01T01:00:00Z",
    },
  });
  // The input is not changed.
  assert.deepEqual(first.failedDigests, [digest("b")]);
  // At most 32 digests, the oldest dropped.
  let r: FailureRecord = empty;
  for (let i = 0; i < 40; i++) {
    const d = `sha256:${i.toString(16).padStart(64, "0")}`;
    r = recordFailure(r, { image: `${REPO}@${d}`, digest: d }, false);
  }
  assert.equal(r.failedDigests.length, 32);
  assert.equal(r.failedDigests[0], `sha256:${(8).toString(16).padStart(64, "0")}`);
  assert.equal(r.consecutiveFailures, 40);
});
