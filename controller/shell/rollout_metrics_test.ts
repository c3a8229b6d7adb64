import assert from "node:assert/strict";
import type { BootcNode, BootcNodePool, Revision } from "../../lib/api/mod.ts";
import {
  expectedRolloutSeconds,
  MAX_BOOTED_IMAGES,
  OTHER_IMAGES,
  revisionTimes,
  rolloutObservation,
} from "./rollout_metrics.ts";
import { bootcNode, digest, image, pool } from "../testing/fixtures.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const iso = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

function revision(
  n: number,
  outcome: Revision["outcome"],
  from: number,
  to?: number,
): Revision {
  return {
    revision: n,
    image: image(String(n)),
    digest: digest(String(n)),
    startedAt: iso(from),
    ...(to !== undefined ? { endedAt: iso(to) } : {}),
    outcome,
  };
}

/** `bn` with its booted entry's version set. */
function withVersion(bn: BootcNode, version: string, staged = false): BootcNode {
  const status = bn.status!;
  return {
    ...bn,
    status: staged
      ? { ...status, staged: { ...status.staged!, version } }
      : { ...status, booted: { ...status.booted!, version } },
  };
}

Deno.test("expected rollout duration: the median of the succeeded revisions, none before one", () => {
  assert.equal(expectedRolloutSeconds([]), undefined);
  assert.equal(expectedRolloutSeconds([revision(1, "Progressing", 0)]), undefined);
  assert.equal(
    expectedRolloutSeconds([revision(1, "RolledBack", 0, 60), revision(2, "Failed", 60, 90)]),
    undefined,
    "failed and rolled-back rollouts say nothing about how long one takes",
  );
  // 10, 20 and 60 minutes: the median is 20 (one slow rollout does not drag it up).
  const history = [
    revision(1, "Succeeded", 0, 10),
    revision(2, "Succeeded", 100, 160),
    revision(3, "RolledBack", 200, 201),
    revision(4, "Succeeded", 300, 320),
  ];
  assert.equal(expectedRolloutSeconds(history), 20 * 60);
  // An even number of them: the mean of the middle two.
  assert.equal(
    expectedRolloutSeconds([...history, revision(5, "Succeeded", 400, 440)]),
    30 * 60,
  );
  // An unreadable time is left out rather than guessed.
  assert.equal(
    expectedRolloutSeconds([{ ...revision(1, "Succeeded", 0, 10), endedAt: "soon" }]),
    undefined,
  );
});

Deno.test("revision times: the latest start, its end only once ended, the newest rollback", () => {
  const running = revisionTimes([
    revision(1, "Succeeded", 0, 10),
    revision(2, "RolledBack", 20, 25),
    revision(3, "Succeeded", 25, 30),
    revision(4, "Progressing", 40),
  ]);
  assert.equal(running.startedAt, T0 + 40 * 60_000);
  assert.equal(running.ended, undefined);
  assert.equal(running.lastRollbackAt, T0 + 25 * 60_000);
  assert.equal(running.expectedSeconds, 7.5 * 60);
  const done = revisionTimes([revision(1, "Succeeded", 0, 10), revision(2, "Failed", 20, 50)]);
  assert.deepEqual(done.ended, { at: T0 + 50 * 60_000, outcome: "Failed" });
  assert.equal(done.lastRollbackAt, undefined);
  assert.deepEqual(revisionTimes([]), {
    startedAt: undefined,
    ended: undefined,
    expectedSeconds: undefined,
    lastRollbackAt: undefined,
  });
});

Deno.test("rollout observation: paused from the spec, the circuit from its condition", () => {
  const paused = pool({ paused: true });
  const status: BootcNodePool["status"] = {
    conditions: [{
      type: "CircuitOpen",
      status: "True",
      reason: "TooManyFailedRollouts",
      message: "3 consecutive failed rollouts",
      lastTransitionTime: iso(0),
    }],
  };
  const o = rolloutObservation("workers", status, paused.spec, []);
  assert.equal(o.paused, true);
  assert.equal(o.circuitOpen, true);
  assert.equal(o.target, undefined, "nothing resolved yet: no target");
  const closed = rolloutObservation(
    "workers",
    {
      conditions: [{ ...status.conditions![0], status: "False", reason: "Closed" }],
    },
    pool().spec,
    [],
  );
  assert.equal(closed.paused, false);
  assert.equal(closed.circuitOpen, false);
  assert.equal(rolloutObservation("workers", undefined, undefined, []).paused, false);
});

Deno.test("target labels: the planner's short form and version, and 12 hex of the digest", () => {
  const status: BootcNodePool["status"] = {
    targetDigest: digest("b"),
    targetImage: image("b"),
    targetShort: "stable (2.0) bbbbbbbbbbbb",
    targetVersion: "2.0",
  };
  const o = rolloutObservation("workers", status, pool().spec, []);
  assert.deepEqual(o.target, {
    target: "stable (2.0) bbbbbbbbbbbb",
    version: "2.0",
    digest: "bbbbbbbbbbbb",
  });
  // Before the planner named it (or from an older status): the short digest alone.
  const bare = rolloutObservation("workers", { targetDigest: digest("b") }, pool().spec, []);
  assert.deepEqual(bare.target, { target: "bbbbbbbbbbbb", version: "", digest: "bbbbbbbbbbbb" });
});

Deno.test("booted images: members per image, the target under its digest, bounded", () => {
  const status = { targetDigest: digest("b"), targetImage: image("b") };
  const members = [
    withVersion(bootcNode("n1", { booted: image("b") }), "2.0"),
    withVersion(bootcNode("n2", { booted: image("b") }), "2.0"),
    withVersion(bootcNode("n3", { booted: image("a") }), "1.0"),
    bootcNode("n4", { phase: "pending" }), // no report yet: not counted
    bootcNode("x", { pool: "other", booted: image("b") }),
  ];
  const o = rolloutObservation("workers", status, pool().spec, members);
  assert.deepEqual(o.booted, [
    { image: { version: "2.0", digest: "bbbbbbbbbbbb" }, nodes: 2 },
    { image: { version: "1.0", digest: "aaaaaaaaaaaa" }, nodes: 1 },
  ]);
  // A fleet on many images: the biggest groups get series, the rest one "other".
  const seeds = "0123456789cdef".split("");
  const many = seeds.flatMap((s, i) =>
    Array.from({ length: i + 1 }, (_, j) => bootcNode(`m${s}${j}`, { booted: image(s) }))
  );
  const bounded = rolloutObservation("workers", status, pool().spec, many).booted;
  assert.equal(bounded.length, MAX_BOOTED_IMAGES + 1);
  assert.equal(bounded[0].nodes, seeds.length, "most nodes first");
  const other = bounded.at(-1)!;
  assert.deepEqual(other.image, { version: "", digest: OTHER_IMAGES });
  assert.equal(
    bounded.reduce((n, b) => n + b.nodes, 0),
    many.length,
    "every node counted once",
  );
});
