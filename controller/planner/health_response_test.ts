import assert from "node:assert/strict";
import { ANNOTATION_FAILED_IMAGE, PoolDegradedReason } from "../../lib/api/mod.ts";
import { failureRecord } from "./failure_policy.ts";
import { type HealthResponse, respondToHealth } from "./health_response.ts";
import { classifyMember, type Member } from "./membership.ts";
import { bootcNode, digest, image, input, node, pool } from "../testing/fixtures.ts";

const TARGET = { image: image("b"), digest: digest("b") };
const GOOD = image("a");

/** One node failed on the target; `onFailure` and the pool's past as given. */
function scene(
  onFailure: "Halt" | "RollbackNode" | "RollbackPool",
  opts: { failures?: string[]; marked?: string[]; status?: ReturnType<typeof pool>["status"] } = {},
) {
  const p = pool({ status: opts.status });
  p.spec.rollout = { ...p.spec.rollout, onFailure };
  const names = ["n1", "n2", "n3"];
  const bns = names.map((n) => {
    const bn = bootcNode(n, { phase: "idle" });
    if (opts.marked?.includes(n)) {
      bn.metadata.annotations = {
        ...bn.metadata.annotations,
        [ANNOTATION_FAILED_IMAGE]: TARGET.image,
      };
    }
    return bn;
  });
  const i = input(p, { nodes: names.map((n) => node(n)), bootcNodes: bns });
  const failures = (opts.failures ?? []).map((n) => ({ node: n, message: `${n}: unit failed` }));
  const members: Member[] = bns.map((bn) => {
    const node = i.nodes.get(bn.metadata.name ?? "")!;
    return { node, bn, ...classifyMember(node, bn), disrupted: false };
  });
  const respond = (): HealthResponse =>
    respondToHealth({
      input: i,
      failures,
      members,
      target: TARGET,
      effective: { target: TARGET, rollback: false },
      record: failureRecord(p),
      lastGood: GOOD,
      onTarget: (m) => m.bn?.spec.desiredImage === TARGET.image,
    });
  return { respond };
}

Deno.test("respondToHealth: Halt records the failure once and halts the target", () => {
  const r = scene("Halt", { failures: ["n1"] }).respond();
  const plan = r.out;
  assert.equal(r.failed?.outcome, "Failed");
  assert.equal(r.newFailure, true);
  assert.equal(r.haltFor, TARGET.image);
  assert.deepEqual(r.record.failedDigests, [TARGET.digest]);
  assert.equal(r.record.consecutiveFailures, 1);
  assert.deepEqual(plan.issues.map((i) => i.reason), [PoolDegradedReason.HealthCheckFailed]);
  // The same target failing again in a later pass is not a new failure.
  const { respond: again } = scene("Halt", {
    failures: ["n1"],
    status: { failedDigests: [TARGET.digest], consecutiveFailures: 1 },
  });
  const later = again();
  assert.equal(later.newFailure, false);
  assert.equal(later.record.consecutiveFailures, 1);
});

Deno.test("respondToHealth: RollbackPool halts the target and holds the pool on the good image", () => {
  const r = scene("RollbackPool", { failures: ["n2"] }).respond();
  const plan = r.out;
  assert.equal(r.failed?.outcome, "RolledBack");
  assert.equal(r.haltFor, TARGET.image);
  assert.equal(r.record.rollbackHold?.image, GOOD);
  assert.equal(r.record.rollbackHold?.failedImage, TARGET.image);
  assert.deepEqual(plan.issues.map((i) => i.reason), [PoolDegradedReason.RolledBack]);
  assert.ok(plan.events.some((e) => e.reason === "RollingBack"));
});

Deno.test("respondToHealth: RollbackNode marks the failed node; the marks, or the history, keep the halt", () => {
  const r = scene("RollbackNode", { failures: ["n3"] }).respond();
  const plan = r.out;
  assert.equal(r.haltFor, TARGET.image);
  assert.deepEqual(
    plan.actions.map((a) => "why" in a ? `${a.node}:${a.why}` : a.kind),
    ["n3:mark failed (roll back)"],
  );
  // A later pass: no failure in flight, n3 carries the mark.
  const marked = scene("RollbackNode", { marked: ["n3"] }).respond();
  assert.equal(marked.haltFor, TARGET.image);
  assert.equal(marked.failed, undefined);
  // The mark edited away: the history still says the target failed here.
  const history = [{
    revision: 2,
    image: TARGET.image,
    digest: TARGET.digest,
    startedAt: "2026-01-01T00:00:00Z",
    outcome: "Failed",
  }];
  const remembered = scene("RollbackNode", { status: { history } }).respond();
  assert.equal(remembered.haltFor, TARGET.image);
  // Nothing failed and nothing marked: no halt.
  assert.equal(scene("RollbackNode").respond().haltFor, undefined);
});
