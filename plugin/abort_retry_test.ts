import assert from "node:assert/strict";
import type { Revision } from "../lib/api/schema.ts";
import { planAbort, planRetry, retryableRevision } from "./abort_retry.ts";
import { cond, NEW, NOW, OLD, pool, REPO, secondsAgo } from "./testing.ts";

const THIRD = `sha256:${"c".repeat(64)}`;
const rev = (revision: number, digest: string, outcome: Revision["outcome"]): Revision => ({
  revision,
  image: `${REPO}@${digest}`,
  digest,
  startedAt: secondsAgo(1000 - revision * 100),
  outcome,
});

Deno.test("abort mid-rollout returns to the last good revision", () => {
  const p = pool({ ref: `${REPO}:v2`, target: NEW, deployed: OLD });
  p.metadata.resourceVersion = "7";
  p.status!.history = [rev(1, OLD, "Succeeded"), rev(2, NEW, "Progressing")];
  const plan = planAbort(p);
  assert.equal(plan.kind, "patch");
  assert.deepEqual(plan.kind === "patch" && plan.patch, {
    metadata: { resourceVersion: "7" },
    spec: { image: { ref: `${REPO}@${OLD}` } },
  });
  assert.equal(
    plan.message,
    `pool main: rollout aborted: spec.image.ref ${REPO}:v2 → ${REPO}@${OLD} (revision 1, the ` +
      "last one that succeeded; the rollout of bbbbbbbbbbbb stops there). The pool no longer " +
      `follows ${REPO}:v2; set spec.image.ref back to it to resume.`,
  );
  // A halted rollout (its revision Failed) is aborted the same way.
  p.status!.history[1].outcome = "Failed";
  assert.equal(planAbort(p).kind, "patch");
});

Deno.test("abort after an automatic rollback settles the spec on the image the pool runs", () => {
  const p = pool({ ref: `${REPO}:v2`, target: OLD, deployed: OLD });
  p.status!.rollbackHold = {
    ref: `${REPO}:v2`,
    failedImage: `${REPO}@${NEW}`,
    image: `${REPO}@${OLD}`,
    at: secondsAgo(60),
  };
  p.status!.history = [
    rev(1, OLD, "Succeeded"),
    rev(2, NEW, "RolledBack"),
    rev(3, OLD, "Succeeded"),
  ];
  const plan = planAbort(p);
  assert.equal(plan.kind, "patch");
  assert.deepEqual(plan.kind === "patch" && plan.patch.spec, { image: { ref: `${REPO}@${OLD}` } });
  assert.match(
    plan.message,
    /^pool main: rollout of registry\.example\/os@sha256:bbbbbbbbbbbb aborted; it stays on registry\.example\/os@sha256:aaaaaaaaaaaa, the image it runs: spec\.image\.ref registry\.example\/os:v2 → /,
  );
  // The failure record keeps a tag's new image out (no hold): the same.
  const failedBefore = pool({
    ref: `${REPO}:v3`,
    target: OLD,
    deployed: OLD,
    upToDate: cond("UpToDate", "False", "ImageFailedBefore", "…"),
  });
  assert.equal(planAbort(failedBefore).kind, "patch");
});

Deno.test("abort refuses when there is nothing to abort, or nothing good to go back to", () => {
  const idle = pool({
    target: NEW,
    deployed: NEW,
    upToDate: cond("UpToDate", "True", "AllUpdated"),
  });
  assert.deepEqual(planAbort(idle), {
    kind: "nothing",
    message: "nothing to abort: pool main is not rolling out (it runs " +
      "registry.example/os@sha256:bbbbbbbbbbbb)",
  });
  const first = pool({ target: NEW });
  delete first.status!.deployedDigest;
  first.status!.history = [rev(1, NEW, "Progressing")];
  const plan = planAbort(first);
  assert.equal(plan.kind, "nothing");
  assert.match(plan.message, /^cannot abort: nothing to roll back to: pool main has no earlier/);
});

Deno.test("retry forgets the failed revision the pool moved on from, and closes the circuit", () => {
  const p = pool({ ref: `${REPO}:v2`, target: OLD, deployed: OLD });
  p.status!.history = [
    rev(1, OLD, "Succeeded"),
    rev(2, NEW, "RolledBack"),
    rev(3, OLD, "Succeeded"),
  ];
  p.status!.failedDigests = [NEW];
  p.status!.consecutiveFailures = 3;
  assert.equal(retryableRevision(p)?.revision, 2);
  const plan = planRetry(p, NOW);
  assert.deepEqual(plan.kind === "patch" && plan.patch, {
    metadata: { annotations: { "bootc.dev/retry-revision": "2" } },
  });
  assert.equal(
    plan.message,
    `pool main: retrying revision 2 (${REPO}@sha256:bbbbbbbbbbbb): the controller forgets its ` +
      "failure and rolls it out again while spec.image.ref means it",
  );
  // With the circuit open both annotations go in one patch.
  p.status!.conditions!.push(cond("CircuitOpen", "True", "TooManyFailedRollouts", "3 in a row"));
  const both = planRetry(p, NOW);
  assert.deepEqual(both.kind === "patch" && both.patch, {
    metadata: {
      annotations: {
        "bootc.dev/retry-revision": "2",
        "bootc.dev/reset-circuit-breaker": "2026-03-01T10:10:00.000Z",
      },
    },
  });
  assert.match(both.message, /; circuit breaker reset \(3 failed rollouts in a row\)/);
  // Already rolled out again since: that failure is no longer the one to retry.
  p.status!.history.push(rev(4, NEW, "Progressing"));
  assert.equal(retryableRevision(p), undefined);
});

Deno.test("retry refuses a rollout halted in place, and a pool with nothing failed", () => {
  const halted = pool({ target: NEW, deployed: OLD });
  halted.spec.rollout = { ...halted.spec.rollout, onFailure: "Halt" } as typeof halted.spec.rollout;
  halted.status!.history = [rev(1, OLD, "Succeeded"), rev(2, NEW, "Failed")];
  halted.status!.failedDigests = [NEW];
  const plan = planRetry(halted, NOW);
  assert.equal(plan.kind, "nothing");
  assert.match(
    plan.message,
    /^cannot retry: the rollout of .*@sha256:bbbbbbbbbbbb \(revision 2\) is halted in place \(onFailure Halt\).*kubectl bootc abort main/,
  );
  const fine = pool({ target: NEW, deployed: NEW });
  fine.status!.history = [rev(1, THIRD, "Succeeded"), rev(2, NEW, "Succeeded")];
  assert.deepEqual(planRetry(fine, NOW), {
    kind: "nothing",
    message: "nothing to retry: pool main has no failed image to roll out again and its " +
      "circuit breaker is closed",
  });
});
