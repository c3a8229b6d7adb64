import assert from "node:assert/strict";
import { classifyMember, type Member } from "./membership.ts";
import { NO_OUTPUT } from "./plan.ts";
import { rolloutRecord } from "./rollout_record.ts";
import { bootcNode, digest, image, input, node, pool } from "../testing/fixtures.ts";

const T0 = "2026-01-01T00:00:00Z";

function revision(seed: string, n: number, outcome: string) {
  return { revision: n, image: image(seed), digest: digest(seed), startedAt: T0, outcome };
}

/** Two members that both run `image(seed)`, done; the pool's past as given. */
function record(
  seed: string,
  status: ReturnType<typeof pool>["status"],
  opts: { rollback?: boolean; maxRollbacks?: number } = {},
) {
  const p = pool({ status });
  if (opts.maxRollbacks !== undefined) {
    p.spec.rollout = { ...p.spec.rollout, maxRollbacks: opts.maxRollbacks };
  }
  const target = { image: image(seed), digest: digest(seed) };
  const bns = ["n1", "n2"].map((n) =>
    bootcNode(n, { desired: target.image, booted: target.image })
  );
  const i = input(p, { nodes: [node("n1"), node("n2")], bootcNodes: bns });
  const members: Member[] = bns.map((bn) => {
    const node = i.nodes.get(bn.metadata.name ?? "")!;
    return { node, bn, ...classifyMember(node, bn), disrupted: false };
  });
  return rolloutRecord({
    input: i,
    members,
    target,
    onTarget: () => true,
    effective: { target, rollback: opts.rollback ?? false },
    health: {
      newFailure: false,
      record: {
        failedDigests: status?.failedDigests ?? [],
        consecutiveFailures: status?.consecutiveFailures ?? 0,
      },
      out: NO_OUTPUT,
    },
    canary: undefined,
    updated: members.length,
  }).rollout;
}

Deno.test("rolloutRecord: a new image that succeeds ends the run of failures", () => {
  const r = record("c", {
    history: [
      revision("a", 1, "Succeeded"),
      revision("b", 2, "Failed"),
      revision("c", 3, "Progressing"),
    ],
    consecutiveFailures: 1,
    failedDigests: [digest("b")],
  });
  assert.equal(r.history?.at(-1)?.outcome, "Succeeded");
  assert.equal(r.consecutiveFailures, 0);
  assert.deepEqual(r.failedDigests, [digest("b")], "the failed digest stays remembered");
  assert.equal(r.circuit?.open, false);
});

Deno.test("rolloutRecord: going back to an image that succeeded before does not reset the count", () => {
  const r = record("a", {
    history: [
      revision("a", 1, "Succeeded"),
      revision("b", 2, "RolledBack"),
      revision("a", 3, "Progressing"),
    ],
    consecutiveFailures: 1,
  }, { rollback: true });
  assert.equal(r.consecutiveFailures, 1);
});

Deno.test("rolloutRecord: the circuit opens at maxRollbacks and says how to reset it", () => {
  const r = record("a", {
    history: [revision("a", 1, "Succeeded")],
    consecutiveFailures: 2,
  }, { maxRollbacks: 2 });
  assert.equal(r.circuit?.open, true);
  assert.match(r.circuit?.message ?? "", /2 consecutive failed rollouts \(maxRollbacks 2\)/);
  assert.match(r.circuit?.message ?? "", /kubectl annotate bnp workers/);
});
