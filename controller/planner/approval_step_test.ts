/**
 * The approval gate through the whole planner (step 5 and the status): no slot
 * before the revision is approved, verdicts recorded in `status.approval` and
 * never asked again, the webhook asks, and the events.
 */
import assert from "node:assert/strict";
import type { ApprovalSpec, BootcNodePool } from "../../lib/api/mod.ts";
import { findCondition } from "../../lib/api/mod.ts";
import type { ApprovalAnswer } from "../model/approval.ts";
import { annotationVerdict, approvalAsks, approvalEvents, approvalFacts } from "./approval_step.ts";
import { AWAITING_APPROVAL } from "../gates/mod.ts";
import { MAX_APPROVAL_NODES } from "../../lib/api/mod.ts";
import type { Target } from "../model/types.ts";
import { type Plan, planPool } from "./planner.ts";
import { bootcNode, digest, image, input, node, pool } from "../testing/fixtures.ts";

const URL = "https://approve.example/bootc";

/** A pool on image("b") whose history has revision 2 (image a) done, with `approval`. */
function approvalPool(
  approval: ApprovalSpec,
  o: { annotation?: string; status?: BootcNodePool["status"] } = {},
): BootcNodePool {
  const p = pool({ maxUnavailable: 2 });
  p.spec.rollout.approval = approval;
  if (o.annotation !== undefined) {
    p.metadata.annotations = { "bootc.dev/approve-revision": o.annotation };
  }
  p.status = {
    history: [
      { revision: 1, image: image("c"), digest: digest("c"), outcome: "Succeeded" },
      { revision: 2, image: image("a"), digest: digest("a"), outcome: "Succeeded" },
    ],
    ...o.status,
  } as BootcNodePool["status"];
  return p;
}

/** Two staged nodes waiting for a slot. */
const STAGED = {
  nodes: [node("n1"), node("n2")],
  bootcNodes: [
    bootcNode("n1", { phase: "staged", state: "Staged" }),
    bootcNode("n2", { phase: "staged", state: "Staged" }),
  ],
};

function plan(p: BootcNodePool, answers?: ApprovalAnswer[]): Plan {
  return planPool({ ...input(p, STAGED), ...(answers ? { approvalAnswers: answers } : {}) });
}

function granted(plan: Plan): string[] {
  return plan.actions.filter((a) => a.kind === "patchNode" && a.intent === "grant").map((a) =>
    "node" in a ? a.node : ""
  );
}

function upToDate(plan: Plan) {
  return findCondition(plan.status?.conditions, "UpToDate");
}

Deno.test("annotation mode: no slot until bootc.dev/approve-revision names revision 3", () => {
  const waiting = plan(approvalPool({ mode: "Annotation" }));
  assert.deepEqual(granted(waiting), []);
  assert.equal(waiting.status?.state, "AwaitingApproval");
  assert.equal(upToDate(waiting)?.reason, "AwaitingApproval");
  assert.match(
    upToDate(waiting)?.message ?? "",
    /revision 3: set bootc\.dev\/approve-revision=3 \(kubectl bootc approve workers\)/,
  );
  assert.deepEqual(waiting.status?.approval, { revision: 3, image: image("b") });
  assert.equal(waiting.approvalAsks, undefined);

  const approved = plan(approvalPool({ mode: "Annotation" }, { annotation: "3" }));
  assert.deepEqual(granted(approved), ["n1", "n2"]);
  assert.equal(approved.status?.approval?.verdict, "Approved");
  assert.ok(approved.events.some((e) => e.reason === "RevisionApproved"));
});

Deno.test("annotation mode: a stale or garbled value is named, with an event once", () => {
  for (
    const [value, message, type] of [
      ["2", /names revision 2, not the current revision 3/, "Normal"],
      ["three", /"three" is not a revision number/, "Warning"],
    ] as const
  ) {
    const p = approvalPool({ mode: "Annotation" }, { annotation: value });
    const first = plan(p);
    assert.deepEqual(granted(first), [], value);
    assert.match(upToDate(first)?.message ?? "", message, value);
    const event = first.events.find((e) => e.reason === "ApprovalAnnotationIgnored");
    assert.equal(event?.type, type, value);
    assert.match(event?.message ?? "", message, value);
    // The next plan (the status written) says it again in the message, not in an event.
    const again = plan({ ...p, status: first.status });
    assert.match(upToDate(again)?.message ?? "", message, value);
    assert.ok(!again.events.some((e) => e.reason === "ApprovalAnnotationIgnored"), value);
  }
  assert.deepEqual(annotationVerdict(" 3 ", 3), { approved: true });
  assert.deepEqual(annotationVerdict(undefined, 3), { approved: false });
});

Deno.test("an approval stays recorded for its revision; a new revision asks again", () => {
  const approved = plan(approvalPool({ mode: "Annotation" }, { annotation: "3" }));
  // The annotation removed: the recorded verdict still stands (level-triggered).
  const p = approvalPool({ mode: "Annotation" }, { status: approved.status });
  assert.deepEqual(granted(plan(p)), ["n1", "n2"]);
  // A new image is revision 4: the record for 3 does not apply.
  const next = { ...p, spec: { ...p.spec, image: { ref: image("d") } } };
  const planned = planPool(input(next, {
    nodes: STAGED.nodes,
    bootcNodes: STAGED.bootcNodes.map((bn) => ({
      ...bn,
      spec: { ...bn.spec, desiredImage: image("d") },
    })),
  }));
  assert.equal(planned.status?.approval?.revision, 4);
  assert.equal(planned.status?.approval?.verdict, undefined);
  assert.deepEqual(granted(planned), []);
});

Deno.test("webhook, scope Pool: asked until answered; refusal shown; approval grants", () => {
  const spec: ApprovalSpec = { mode: "Webhook", webhook: { url: URL } };
  const asking = plan(approvalPool(spec));
  assert.deepEqual(asking.approvalAsks?.asks, [{ revision: 3, image: image("b") }]);
  assert.match(upToDate(asking)?.message ?? "", new RegExp(`webhook ${URL} pending`));

  const failing = plan(approvalPool(spec), [{
    revision: 3,
    image: image("b"),
    message: "attempt 2 failed: connection refused",
  }]);
  assert.match(upToDate(failing)?.message ?? "", /pending: attempt 2 failed: connection refused/);
  assert.deepEqual(granted(failing), []);

  const refused = plan(approvalPool(spec), [{
    revision: 3,
    image: image("b"),
    verdict: "Refused",
    message: "CHG-7 rejected",
  }]);
  assert.deepEqual(granted(refused), []);
  assert.equal(refused.status?.state, "ApprovalRefused");
  assert.match(upToDate(refused)?.message ?? "", /revision 3 refused by .*: CHG-7 rejected/);
  const warning = refused.events.find((e) => e.reason === "ApprovalRefused");
  assert.equal(warning?.type, "Warning");
  // Still wanted until the status shows the verdict, then never asked again.
  assert.equal(refused.approvalAsks?.asks.length, 1);
  const after = plan(approvalPool(spec, { status: refused.status }));
  assert.deepEqual(after.approvalAsks?.asks, []);
  assert.equal(after.status?.state, "ApprovalRefused");
  assert.ok(!after.events.some((e) => e.reason === "ApprovalRefused"));

  const approved = plan(approvalPool(spec), [{
    revision: 3,
    image: image("b"),
    verdict: "Approved",
    message: "ok",
  }]);
  assert.deepEqual(granted(approved), ["n1", "n2"]);
  // An answer about another revision counts for nothing.
  const old = plan(approvalPool(spec), [{ revision: 2, image: image("a"), verdict: "Approved" }]);
  assert.deepEqual(granted(old), []);
});

Deno.test("webhook, scope Node: each node asked before its slot, on its own verdict", () => {
  const spec: ApprovalSpec = { mode: "Webhook", scope: "Node", webhook: { url: URL } };
  const asking = plan(approvalPool(spec));
  assert.deepEqual(asking.approvalAsks?.asks.map((a) => a.node), ["n1", "n2"]);
  assert.deepEqual(granted(asking), []);
  const one = plan(approvalPool(spec), [
    { revision: 3, image: image("b"), node: "n1", verdict: "Approved" },
    { revision: 3, image: image("b"), node: "n2", message: "attempt 1 failed: HTTP 503" },
  ]);
  assert.deepEqual(granted(one), ["n1"]);
  assert.deepEqual(one.status?.approval?.nodes, [{ node: "n1", verdict: "Approved" }]);
  assert.match(upToDate(one)?.message ?? "", /pending for n2 \(attempt 1 failed: HTTP 503\)/);
  const after = plan(approvalPool(spec, { status: one.status }));
  assert.deepEqual(after.approvalAsks?.asks.map((a) => a.node), ["n2"]);
});

Deno.test("a person's annotation overrules a refusing webhook", () => {
  const spec: ApprovalSpec = { mode: "Webhook", webhook: { url: URL } };
  const refused = plan(approvalPool(spec), [{
    revision: 3,
    image: image("b"),
    verdict: "Refused",
    message: "no",
  }]);
  const p = approvalPool(spec, { status: refused.status, annotation: "3" });
  const overruled = plan(p);
  assert.deepEqual(granted(overruled), ["n1", "n2"]);
  assert.equal(overruled.status?.approval?.verdict, "Approved");
  assert.match(
    overruled.status?.approval?.message ?? "",
    /approved by bootc.dev\/approve-revision=3/,
  );
  assert.deepEqual(overruled.approvalAsks?.asks, []);
});

/** A pool of `count` members n0… on revision 3 with scope Node, and its target. */
function bigPool(count: number) {
  const p = approvalPool({ mode: "Webhook", scope: "Node", webhook: { url: URL } });
  const target = { image: image("b"), platforms: [] } as unknown as Target;
  const members = Array.from({ length: count }, (_, i) => `n${i}`);
  return { p, target, members };
}

/** The webhook's verdicts for `nodes` (every fifth refused). */
function verdicts(nodes: readonly string[]): ApprovalAnswer[] {
  return nodes.map((n, i) => ({
    revision: 3,
    image: image("b"),
    node: n,
    verdict: i % 5 === 0 ? "Refused" as const : "Approved" as const,
  }));
}

Deno.test("scope Node, more nodes than the record takes: no verdict a node needs is dropped", () => {
  const { p, target, members } = bigPool(MAX_APPROVAL_NODES + 88);
  // Answers for every member (say, asked before an upgrade): the record takes what fits.
  const answers = verdicts(members);
  let status = p.status;
  let first: string[] | undefined;
  for (let round = 0; round < 4; round++) {
    const pool = { ...p, status };
    const facts = approvalFacts({ pool, target, rollback: false, answers, members })!;
    const nodes = (facts.record.nodes ?? []).map((n) => n.node);
    assert.equal(nodes.length, MAX_APPROVAL_NODES);
    first ??= nodes;
    // The same verdicts every plan: no churn, no event after the first plan, no new ask.
    assert.deepEqual(nodes, first, `round ${round}`);
    assert.equal(approvalEvents(pool, facts).length, round === 0 ? MAX_APPROVAL_NODES : 0);
    assert.equal(facts.room, 0);
    status = { ...status, approval: facts.record } as BootcNodePool["status"];
  }
});

Deno.test("scope Node, a full record: only verdicts of nodes on the target make room", () => {
  const { p, target, members } = bigPool(MAX_APPROVAL_NODES + 88);
  const full = verdicts(members.slice(0, MAX_APPROVAL_NODES)).map(({ node, verdict }) => ({
    node: node!,
    verdict: verdict!,
  }));
  p.status = {
    ...p.status,
    approval: { revision: 3, image: image("b"), nodes: full },
  } as BootcNodePool["status"];
  // The newest verdicts' nodes are done; the oldest (n0 refused among them) are not.
  const done = members.slice(400, MAX_APPROVAL_NODES);
  const fresh = verdicts(members.slice(MAX_APPROVAL_NODES));
  const facts = approvalFacts({ pool: p, target, rollback: false, answers: fresh, members, done })!;
  const kept = new Map((facts.record.nodes ?? []).map((n) => [n.node, n.verdict]));
  assert.equal(kept.size, MAX_APPROVAL_NODES);
  for (const n of members.slice(0, 400)) assert.ok(kept.has(n), n);
  assert.equal(kept.get("n0"), "Refused");
  for (const n of members.slice(MAX_APPROVAL_NODES)) assert.ok(kept.has(n), n);
  // 88 done ones went (oldest first); 24 done ones stay, so 24 more nodes may be asked.
  assert.ok(!kept.has("n400") && !kept.has("n487") && kept.has("n488"));
  assert.equal(facts.room, 24);
});

Deno.test("scope Node: only as many nodes are asked as the record has room for, in slot order", () => {
  const { p, target, members } = bigPool(MAX_APPROVAL_NODES + 88);
  // Slot order is the held map's order: last member first.
  const held = new Map([...members].reverse().map((n) => [n, AWAITING_APPROVAL]));
  const facts = approvalFacts({ pool: p, target, rollback: false, members })!;
  const asks = approvalAsks(p, facts, held)!.asks.map((a) => a.node);
  assert.equal(asks.length, MAX_APPROVAL_NODES);
  assert.deepEqual(asks.slice(0, 2), [`n${members.length - 1}`, `n${members.length - 2}`]);
  assert.ok(!asks.includes("n0"));
  // The record full of verdicts still needed: asks only what this plan records.
  const answered = approvalFacts({
    pool: p,
    target,
    rollback: false,
    members,
    answers: verdicts(asks as string[]),
  })!;
  const next = approvalAsks(p, answered, held)!.asks.map((a) => a.node);
  assert.deepEqual(new Set(next), new Set(asks));
  const stored = { ...p, status: { ...p.status, approval: answered.record } } as BootcNodePool;
  const later = approvalFacts({ pool: stored, target, rollback: false, members })!;
  assert.deepEqual(approvalAsks(stored, later, held)!.asks, []);
});

Deno.test("webhook failing past progressTimeoutSeconds: Degraded ApprovalWebhookFailing, once", () => {
  const spec: ApprovalSpec = { mode: "Webhook", webhook: { url: URL } };
  const p = approvalPool(spec);
  p.spec.rollout.progressTimeoutSeconds = 120;
  // input()'s clock reads 2026-01-01T01:00:00Z.
  const failing = (since: string, node?: string): ApprovalAnswer[] => [{
    revision: 3,
    image: image("b"),
    ...(node ? { node } : {}),
    message: "attempt 9 failed: connection refused",
    failingSince: since,
  }];
  const early = plan(p, failing("2026-01-01T00:59:00Z"));
  assert.equal(early.status?.state, AWAITING_APPROVAL);
  assert.notEqual(findCondition(early.status?.conditions, "Degraded")?.status, "True");
  // Woken when the bound passes (60 s left), not left to the next attempt.
  assert.ok(early.requeueAfterMs !== undefined && early.requeueAfterMs <= 60_000);

  const late = plan(p, failing("2026-01-01T00:57:59Z"));
  const degraded = findCondition(late.status?.conditions, "Degraded");
  assert.equal(degraded?.status, "True");
  assert.equal(degraded?.reason, "ApprovalWebhookFailing");
  assert.match(
    degraded?.message ?? "",
    new RegExp(
      `approval webhook ${URL} has failed since 2026-01-01T00:57:59Z: attempt 9 failed: ` +
        "connection refused; revision 3 waits; fix the endpoint or set bootc.dev/approve-revision=3",
    ),
  );
  assert.equal(late.status?.state, "ApprovalWebhookFailing");
  assert.deepEqual(granted(late), []);
  // One Warning, from the Degraded transition (no second one from the step).
  const warnings = late.events.filter((e) => e.reason === "ApprovalWebhookFailing");
  assert.deepEqual(warnings.map((e) => e.type), ["Warning"]);
  // The streak is in the status: a restarted controller (its poller knows nothing yet) keeps
  // the condition and its bound, and a later live failure does not move the start.
  assert.equal(late.status?.approval?.webhookFailingSince, "2026-01-01T00:57:59Z");
  const restarted = plan(approvalPool(spec, { status: late.status }));
  p.status = late.status;
  const again = plan(p);
  assert.equal(
    findCondition(again.status?.conditions, "Degraded")?.reason,
    "ApprovalWebhookFailing",
  );
  assert.ok(!again.events.some((e) => e.reason === "ApprovalWebhookFailing"), "no new event");
  assert.equal(restarted.status?.approval?.webhookFailingSince, "2026-01-01T00:57:59Z");
  const relive = plan(p, failing("2026-01-01T00:59:30Z"));
  assert.equal(relive.status?.approval?.webhookFailingSince, "2026-01-01T00:57:59Z");
  assert.equal(findCondition(relive.status?.conditions, "Degraded")?.status, "True");
  // No longer a webhook: gone too.
  const byAnnotation = approvalPool({ mode: "Annotation" }, { status: late.status });
  assert.equal(plan(byAnnotation).status?.approval?.webhookFailingSince, undefined);
  // Answered: the streak is gone.
  const answered = plan(p, [{
    revision: 3,
    image: image("b"),
    verdict: "Approved",
    message: "ok",
  }]);
  assert.equal(answered.status?.approval?.webhookFailingSince, undefined);
  assert.notEqual(findCondition(answered.status?.conditions, "Degraded")?.status, "True");

  // Scope Node names the node asked for.
  const perNode = approvalPool({ ...spec, scope: "Node" });
  perNode.spec.rollout.progressTimeoutSeconds = 120;
  const node = plan(perNode, failing("2026-01-01T00:50:00Z", "n1"));
  assert.match(
    findCondition(node.status?.conditions, "Degraded")?.message ?? "",
    /\(asking for n1\)/,
  );

  // A person's approval ends it: the failing ask is no longer pending.
  const byHand = plan(approvalPool(spec, { annotation: "3" }), failing("2026-01-01T00:00:00Z"));
  assert.notEqual(findCondition(byHand.status?.conditions, "Degraded")?.status, "True");
  assert.deepEqual(granted(byHand), ["n1", "n2"]);
});
