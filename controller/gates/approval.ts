/**
 * `spec.rollout.approval`: no node takes a reboot slot for a rollout revision
 * (`status.history` numbering) until the revision is approved. Staging goes on
 * and nodes in flight finish; only new slots wait.
 *
 * - `mode: Annotation`: a person or tool sets `bootc.dev/approve-revision=N`
 *   on the pool (`kubectl bootc approve POOL`), N the current revision. Any
 *   other value approves nothing and the wait message says why.
 * - `mode: Webhook`: the controller POSTs to the endpoint beside the work
 *   queue (`pollers/approval_requests.ts`); a 2xx approves, a 4xx other than
 *   408 and 429 refuses with its message, anything else is retried. `scope: Pool` asks once per
 *   revision, `scope: Node` once per node and revision, when the node reaches
 *   this gate (the gates before it admitted it).
 *
 * In both modes the annotation naming the current revision approves it (a
 * person may always overrule a refusing or unreachable webhook). Decided
 * verdicts live in `status.approval` (`planner/approval_step.ts` keeps them),
 * so a restarted controller neither asks again nor forgets an approval.
 * Rollbacks of a failed image (a candidate's `rollback`, or a pool's
 * automatic rollback target) need no approval: undoing a bad image must not
 * wait for anyone.
 *
 * @module
 */
import type { ApprovalSpec } from "../../lib/api/mod.ts";
import { ANNOTATION_APPROVE_REVISION } from "../../lib/api/mod.ts";
import type {
  ApprovalView,
  Candidate,
  Gate,
  GateDecision,
  GateInput,
  GateWait,
  SpecCheckInput,
} from "./gate.ts";

/** Reason while a revision (or a node) waits for its approval. */
export const AWAITING_APPROVAL = "AwaitingApproval";
/** Reason after the webhook refused the revision (or a node). */
export const APPROVAL_REFUSED = "ApprovalRefused";

/** The key of the pool-wide ask in {@linkcode ApprovalView.pending}. */
export const POOL_ASK = "";

/** How people are told to approve revision `revision` of `pool`. */
export function approveHint(pool: string, revision: number): string {
  return `set ${ANNOTATION_APPROVE_REVISION}=${revision} (kubectl bootc approve ${pool})`;
}

/**
 * What is wrong with `spec.rollout.approval` (the CRD's rules, for objects that
 * did not pass admission), each message naming its field.
 */
export function approvalSpecErrors(spec: ApprovalSpec | undefined): string[] {
  if (!spec) return [];
  const f = "spec.rollout.approval";
  const errors: string[] = [];
  if (spec.mode !== "Annotation" && spec.mode !== "Webhook") {
    errors.push(`${f}.mode: "${spec.mode}" is not one of Annotation, Webhook`);
  }
  if ((spec.mode === "Webhook") !== (spec.webhook !== undefined)) {
    errors.push(`${f}: webhook is required with mode: Webhook and not allowed otherwise`);
  }
  if (spec.scope !== undefined && spec.scope !== "Pool" && spec.scope !== "Node") {
    errors.push(`${f}.scope: "${spec.scope}" is not one of Pool, Node`);
  } else if (spec.scope === "Node" && spec.mode !== "Webhook") {
    errors.push(`${f}: scope: Node needs mode: Webhook (an annotation approves a whole revision)`);
  }
  const url = spec.webhook?.url;
  if (url !== undefined && !/^https?:\/\/[^/?#@\s]+([/?#]\S*)?$/.test(url)) {
    errors.push(
      `${f}.webhook.url: must be an absolute http:// or https:// URL with a host and ` +
        "no credentials, e.g. https://hooks.example.com/bootc",
    );
  }
  if (url !== undefined && spec.webhook?.secretRef && !url.startsWith("https://")) {
    errors.push(
      `${f}.webhook: a secretRef (bearer token, client certificate) needs an https:// url: ` +
        "credentials are never sent in the clear",
    );
  }
  return errors;
}

/** The approval gate (see the module documentation). */
export const approvalGate: Gate = {
  name: "approval",
  // Both block: a pool waiting for a person or a webhook takes no slot whatever the
  // cluster budgets say (with scope Node, until the next node's verdict).
  reasons: [
    { reason: AWAITING_APPROVAL, blocksPool: true },
    { reason: APPROVAL_REFUSED, blocksPool: true },
  ],
  validate({ pool }: SpecCheckInput): string[] {
    return approvalSpecErrors(pool.spec.rollout?.approval);
  },
  decide(input: GateInput): GateDecision {
    const spec = input.pool.spec.rollout?.approval;
    if (!spec) return { admit: input.candidates };
    const view = input.approval;
    // Undoing a failed image needs no approval.
    const back = input.candidates.filter((c) => c.rollback);
    const rest = input.candidates.filter((c) => !c.rollback);
    if (!view) {
      return held(input.candidates, back, {
        reason: AWAITING_APPROVAL,
        message: "approval: the revision is not known yet",
      });
    }
    const r = view.record;
    if (view.rollback || r.verdict === "Approved" || r.verdict === "NotRequired") {
      return { admit: input.candidates };
    }
    const url = spec.webhook?.url ?? "";
    if (r.verdict === "Refused") {
      return held(input.candidates, back, {
        reason: APPROVAL_REFUSED,
        message: `revision ${r.revision} refused by ${url}: ${r.message ?? "no message"}`,
      });
    }
    if (spec.mode !== "Webhook" || (spec.scope ?? "Pool") === "Pool") {
      return held(input.candidates, back, poolWait(input, view, url));
    }
    return nodeDecision(input.candidates, rest, view, url);
  },
};

/** Admits `back` (of `all`) and holds the rest with `wait`. */
function held(
  all: readonly Candidate[],
  back: readonly Candidate[],
  wait: GateWait,
): GateDecision {
  const keep = new Set(back.map((c) => c.name));
  return { admit: all.filter((c) => keep.has(c.name)), wait };
}

/** The wait of a revision without a verdict (annotation, or the pool-wide webhook ask). */
function poolWait(input: GateInput, view: ApprovalView, url: string): GateWait {
  const r = view.record;
  const pool = input.pool.metadata.name ?? "";
  if (input.pool.spec.rollout?.approval?.mode !== "Webhook") {
    return {
      reason: AWAITING_APPROVAL,
      message: `revision ${r.revision}: ${approveHint(pool, r.revision)}` +
        (r.message ? `; ${r.message}` : ""),
    };
  }
  const last = view.pending?.get(POOL_ASK);
  return {
    reason: AWAITING_APPROVAL,
    message: `revision ${r.revision}: webhook ${url} pending${last ? `: ${last}` : ""}`,
  };
}

/** Scope Node: each candidate proceeds on its own verdict. */
function nodeDecision(
  all: readonly Candidate[],
  rest: readonly Candidate[],
  view: ApprovalView,
  url: string,
): GateDecision {
  const verdicts = new Map((view.record.nodes ?? []).map((n) => [n.node, n]));
  const refused = rest.filter((c) => verdicts.get(c.name)?.verdict === "Refused");
  const waiting = rest.filter((c) => verdicts.get(c.name) === undefined);
  const out = new Set([...refused, ...waiting].map((c) => c.name));
  const admit = all.filter((c) => !out.has(c.name));
  const r = view.record;
  if (refused.length > 0) {
    const named = refused.slice(0, 3).map((c) =>
      `${c.name} (${verdicts.get(c.name)?.message ?? "no message"})`
    );
    return {
      admit,
      wait: {
        reason: APPROVAL_REFUSED,
        message: `revision ${r.revision}: ${url} refused ${named.join(", ")}` +
          (refused.length > 3 ? ` and ${refused.length - 3} more` : ""),
      },
    };
  }
  if (waiting.length === 0) return { admit };
  const named = waiting.slice(0, 3).map((c) => {
    const last = view.pending?.get(c.name);
    return last ? `${c.name} (${last})` : c.name;
  });
  return {
    admit,
    wait: {
      reason: AWAITING_APPROVAL,
      message: `revision ${r.revision}: webhook ${url} pending for ${named.join(", ")}` +
        (waiting.length > 3 ? ` and ${waiting.length - 3} more` : ""),
    },
  };
}
