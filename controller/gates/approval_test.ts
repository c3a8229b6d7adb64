import assert from "node:assert/strict";
import { gateInput } from "./_testing.ts";
import {
  APPROVAL_REFUSED,
  approvalGate,
  approvalSpecErrors,
  AWAITING_APPROVAL,
  POOL_ASK,
} from "./approval.ts";
import type { ApprovalView, GateInput } from "./gate.ts";
import type { ApprovalSpec } from "../../lib/api/mod.ts";
import { APPROVAL_CASES } from "../../tests/admission/cases.ts";

const NOW = "2026-01-01T01:00:00Z";
const URL = "https://approve.example/bootc";
const ANNOTATION: ApprovalSpec = { mode: "Annotation" };
const WEBHOOK: ApprovalSpec = { mode: "Webhook", webhook: { url: URL } };
const PER_NODE: ApprovalSpec = { ...WEBHOOK, scope: "Node" };

/** A gate input for pool "pool" (the fixture's name) with `approval` and 3 candidates. */
function input(
  spec: ApprovalSpec | undefined,
  view?: ApprovalView,
  rollback?: string[],
): GateInput {
  const base = gateInput({ now: NOW, candidates: 3 });
  return {
    ...base,
    pool: {
      ...base.pool,
      spec: { ...base.pool.spec, rollout: { ...base.pool.spec.rollout, approval: spec } },
    },
    candidates: base.candidates.map((c) =>
      rollback?.includes(c.name) ? { ...c, rollback: true } : c
    ),
    ...(view ? { approval: view } : {}),
  };
}

function view(record: Partial<ApprovalView["record"]> = {}, extra: Partial<ApprovalView> = {}) {
  return { revision: 3, record: { revision: 3, image: "img", ...record }, ...extra };
}

const names = (d: { admit: readonly { name: string }[] }) => d.admit.map((c) => c.name);

Deno.test("approvalGate: decides on the revision's record", () => {
  const cases: {
    name: string;
    spec?: ApprovalSpec;
    view?: ApprovalView;
    rollback?: string[];
    admitted: string[];
    wait?: { reason: string; message: RegExp };
  }[] = [
    { name: "no approval asked: everyone", admitted: ["n-0", "n-1", "n-2"] },
    {
      name: "annotation not set: nobody, says how to approve",
      spec: ANNOTATION,
      view: view(),
      admitted: [],
      wait: {
        reason: AWAITING_APPROVAL,
        message: /^revision 3: set bootc\.dev\/approve-revision=3 \(kubectl bootc approve \S+\)$/,
      },
    },
    {
      name: "annotation garbled: the wait names it",
      spec: ANNOTATION,
      view: view({ message: 'bootc.dev/approve-revision="three" is not a revision number' }),
      admitted: [],
      wait: { reason: AWAITING_APPROVAL, message: /approve-revision=3 .*; .*"three" is not/ },
    },
    {
      name: "approved: everyone",
      spec: ANNOTATION,
      view: view({ verdict: "Approved" }),
      admitted: ["n-0", "n-1", "n-2"],
    },
    {
      name: "automatic rollback target: no approval",
      spec: WEBHOOK,
      view: view({}, { rollback: true }),
      admitted: ["n-0", "n-1", "n-2"],
    },
    {
      name: "nodes rolling back from a failed image pass while the revision waits",
      spec: ANNOTATION,
      view: view(),
      rollback: ["n-1"],
      admitted: ["n-1"],
      wait: { reason: AWAITING_APPROVAL, message: /revision 3/ },
    },
    {
      name: "no revision known: fail closed",
      spec: ANNOTATION,
      admitted: [],
      wait: { reason: AWAITING_APPROVAL, message: /not known/ },
    },
    {
      name: "webhook pending: names the endpoint and the last attempt",
      spec: WEBHOOK,
      view: view({}, {
        pending: new Map([[POOL_ASK, "attempt 2 failed: connection refused"]]),
      }),
      admitted: [],
      wait: {
        reason: AWAITING_APPROVAL,
        message: new RegExp(
          `^revision 3: webhook ${URL} pending: attempt 2 failed: connection refused$`,
        ),
      },
    },
    {
      name: "webhook refused: nobody, the refuser's message",
      spec: WEBHOOK,
      view: view({ verdict: "Refused", message: "CHG-42 rejected" }),
      admitted: [],
      wait: { reason: APPROVAL_REFUSED, message: /revision 3 refused by .*: CHG-42 rejected/ },
    },
    {
      name: "per node: each on its own verdict",
      spec: PER_NODE,
      view: view({ nodes: [{ node: "n-1", verdict: "Approved" }] }),
      admitted: ["n-1"],
      wait: { reason: AWAITING_APPROVAL, message: /pending for n-0, n-2$/ },
    },
    {
      name: "per node: a refusal is shown first",
      spec: PER_NODE,
      view: view({
        nodes: [{ node: "n-0", verdict: "Refused", message: "busy" }, {
          node: "n-1",
          verdict: "Approved",
        }],
      }),
      admitted: ["n-1"],
      wait: { reason: APPROVAL_REFUSED, message: /refused n-0 \(busy\)/ },
    },
    {
      name: "per node: all approved, no wait",
      spec: PER_NODE,
      view: view({
        nodes: ["n-0", "n-1", "n-2"].map((node) => ({ node, verdict: "Approved" as const })),
      }),
      admitted: ["n-0", "n-1", "n-2"],
    },
  ];
  for (const c of cases) {
    const d = approvalGate.decide(input(c.spec, c.view, c.rollback));
    assert.deepEqual(names(d), c.admitted, c.name);
    assert.equal(d.wait?.reason, c.wait?.reason, c.name);
    if (c.wait) assert.match(d.wait!.message, c.wait.message, c.name);
  }
});

Deno.test("approvalGate: monotone (any subset of what it admits is admitted)", () => {
  const v = view({ nodes: [{ node: "n-1", verdict: "Approved" }] });
  const full = input(PER_NODE, v);
  const d = approvalGate.decide(full);
  for (const c of d.admit) {
    const one = approvalGate.decide({ ...full, candidates: [c] });
    assert.deepEqual(names(one), [c.name]);
  }
});

Deno.test("approvalSpecErrors: the CRD's rules, naming the field", () => {
  assert.deepEqual(approvalSpecErrors(undefined), []);
  assert.deepEqual(approvalSpecErrors(ANNOTATION), []);
  assert.deepEqual(approvalSpecErrors(PER_NODE), []);
  assert.match(
    approvalSpecErrors({ mode: "Webhook" }).join(),
    /^spec\.rollout\.approval: webhook is required with mode: Webhook/,
  );
  assert.match(
    approvalSpecErrors({ mode: "Annotation", scope: "Node" }).join(),
    /scope: Node needs mode: Webhook/,
  );
  assert.match(
    approvalSpecErrors({ ...WEBHOOK, webhook: { url: "ftp://x" } }).join(),
    /^spec\.rollout\.approval\.webhook\.url: must be an absolute http/,
  );
  assert.match(
    approvalSpecErrors({ mode: "Sometimes" } as unknown as ApprovalSpec).join(),
    /mode: "Sometimes" is not one of Annotation, Webhook/,
  );
});

Deno.test("approvalSpecErrors agrees with admission (tests/admission/cases.ts)", () => {
  for (const c of APPROVAL_CASES) {
    const errors = approvalSpecErrors(c.approval as unknown as ApprovalSpec);
    const label = JSON.stringify(c.approval);
    if (!c.refused || c.refused.schemaOnly) {
      if (!c.refused) assert.deepEqual(errors, [], label);
      continue;
    }
    const mine = errors.find((e) => e.startsWith(`${c.refused!.field}: `));
    assert.ok(mine, `${label}: ${errors.join("; ")}`);
    // Enums: the API server lists the supported values, the controller says the same.
    assert.ok(c.refused.message.test(mine) || /is not one of/.test(mine), `${label}: ${mine}`);
  }
});
