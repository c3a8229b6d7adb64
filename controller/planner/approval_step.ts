/**
 * The approval gate's facts (`gates/approval.ts`), part of step 5: the current
 * revision (numbered as `status.history` numbers it), the pool's approval
 * record after this plan (`status.approval`: verdicts already recorded, the
 * annotation, the webhook's new answers), what the webhook must still be
 * asked, and the events of new verdicts and of an annotation that approves
 * nothing. Pure.
 *
 * A verdict, once recorded for a revision, stays until the revision changes:
 * a controller restart neither asks again nor loses an approval.
 *
 * @module
 */
import {
  ANNOTATION_APPROVE_REVISION,
  type ApprovalStatus,
  type BootcNodePool,
  MAX_APPROVAL_NODES,
  PoolDegradedReason,
} from "../../lib/api/mod.ts";
import {
  APPROVAL_REFUSED,
  type ApprovalView,
  approveHint,
  AWAITING_APPROVAL,
  POOL_ASK,
} from "../gates/mod.ts";
import type { ApprovalAnswer, ApprovalAsks } from "../model/approval.ts";
import type { Target } from "../model/types.ts";
import { stallDeadlines } from "./deadlines.ts";
import { currentRevision } from "./history.ts";
import { NO_OUTPUT, type PlannedEvent, poolEvent, type StepOutput, stepOutput } from "./plan.ts";

/** What {@linkcode approvalFacts} reads. */
export interface ApprovalFactsInput {
  pool: BootcNodePool;
  target: Target;
  /** The target is the pool's automatic rollback: no approval needed. */
  rollback: boolean;
  /** What the webhook poller knows (any revision; others are ignored). */
  answers?: readonly ApprovalAnswer[];
  /** The pool's members now (per-node verdicts of others are dropped). */
  members: readonly string[];
  /**
   * Members already on the target: their verdicts are the only ones dropped to
   * keep the record within {@linkcode MAX_APPROVAL_NODES}.
   */
  done?: readonly string[];
}

/** The record with its longest message cut to what the status takes. */
function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * What the annotation says about `revision`: `approved`, or why it approves
 * nothing (garbled, another revision), or nothing when it is absent.
 */
export function annotationVerdict(
  raw: string | undefined,
  revision: number,
): { approved: true } | { approved: false; why?: string } {
  if (raw === undefined) return { approved: false };
  const value = raw.trim();
  if (!/^\d+$/.test(value)) {
    return {
      approved: false,
      why: `${ANNOTATION_APPROVE_REVISION}=${JSON.stringify(clip(raw, 64))} is not a ` +
        "revision number: ignored",
    };
  }
  if (Number(value) === revision) return { approved: true };
  return {
    approved: false,
    why: `${ANNOTATION_APPROVE_REVISION}=${value} names revision ${value}, not the current ` +
      `revision ${revision}: ignored`,
  };
}

/** The gate's view, and what this plan learnt. */
export interface ApprovalFacts extends ApprovalView {
  /**
   * The asks ("" the pool, else nodes) whose webhook verdict this plan records
   * first: still wanted until the stored status shows them, so a failed status
   * write does not make the controller ask again.
   */
  recordedNow: ReadonlySet<string>;
  /**
   * How many more nodes the webhook may be asked about (scope Node): the
   * record's room once verdicts of nodes on the target may go, so that no
   * verdict a node still needs is ever dropped.
   */
  room: number;
  /** The pending ask failing the longest: since when, what it last said, for which node. */
  failing?: { since: string; message: string; node?: string };
}

/**
 * The gate's view and the pool's approval record after this plan, or
 * undefined when the pool asks for no approval.
 */
export function approvalFacts(input: ApprovalFactsInput): ApprovalFacts | undefined {
  const { pool, target } = input;
  const spec = pool.spec.rollout?.approval;
  if (!spec) return undefined;
  const revision = currentRevision(pool.status?.history, target);
  const prior = pool.status?.approval;
  const same = prior?.revision === revision && prior.image === target.image;
  const raw = pool.metadata.annotations?.[ANNOTATION_APPROVE_REVISION];
  let record: ApprovalStatus = same ? { ...prior } : { revision, image: target.image };
  record = raw === undefined ? withoutKey(record, "annotation") : {
    ...record,
    annotation: clip(raw, 256),
  };
  if (input.rollback) {
    const message = "automatic rollback: no approval needed";
    return {
      revision,
      rollback: true,
      record: { ...record, verdict: "NotRequired", message },
      recordedNow: new Set(),
      room: 0,
    };
  }
  const byAnnotation = annotationVerdict(raw, revision);
  // A person's annotation approves in every mode, a webhook's refusal included.
  if (record.verdict !== "Approved" && byAnnotation.approved) {
    record = withoutKey({
      ...record,
      verdict: "Approved",
      message: `approved by ${ANNOTATION_APPROVE_REVISION}=${revision}`,
    }, "nodes");
  }
  const answers = (input.answers ?? []).filter((a) =>
    a.revision === revision && a.image === target.image
  );
  const pending = new Map<string, string>();
  let failing: ApprovalFacts["failing"];
  for (const a of answers) {
    if (a.verdict || !a.message) continue;
    pending.set(a.node ?? POOL_ASK, a.message);
    if (a.failingSince && (!failing || a.failingSince < failing.since)) {
      failing = { since: a.failingSince, message: a.message, node: a.node };
    }
  }
  const done = new Set(input.done);
  if (record.verdict === undefined) {
    record = spec.mode === "Webhook"
      ? withAnswers(record, answers, { members: input.members, done }, spec.scope ?? "Pool")
      : withNote(record, byAnnotation);
  }
  record = withFailure(record, {
    webhook: spec.mode === "Webhook",
    failing,
    answered: answers.length,
  });
  const needed = (record.nodes ?? []).filter((n) => !done.has(n.node)).length;
  const since = record.webhookFailingSince;
  return {
    revision,
    record,
    pending,
    recordedNow: recordedNow(prior, record),
    room: Math.max(0, MAX_APPROVAL_NODES - needed),
    ...(since
      ? { failing: { since, message: record.webhookError ?? "", node: failing?.node } }
      : {}),
  };
}

/**
 * The webhook's failure streak in the record, so that a restarted controller (whose poller
 * knows nothing yet) neither forgets it nor starts its bound again: the earlier of the stored
 * and the live start, the live error; kept while the poller has no answer (`answered` 0);
 * cleared by a verdict, once no pending ask fails, or when the mode is not Webhook.
 */
function withFailure(
  record: ApprovalStatus,
  o: { webhook: boolean; failing?: { since: string; message: string }; answered: number },
): ApprovalStatus {
  const clear = () => withoutKey(withoutKey(record, "webhookFailingSince"), "webhookError");
  const { failing } = o;
  if (!o.webhook || record.verdict !== undefined) return clear();
  if (!failing) return o.answered === 0 && record.webhookFailingSince ? record : clear();
  const stored = record.webhookFailingSince;
  const since = stored && Date.parse(stored) < Date.parse(failing.since) ? stored : failing.since;
  return { ...record, webhookFailingSince: since, webhookError: clip(failing.message, 256) };
}

/**
 * The webhook's failure past its bound: while the pool waits on its approval
 * (`awaiting`) and the webhook has failed every attempt for longer than the
 * pool's `progressTimeoutSeconds` (counted from `status.approval`, so a
 * restart does not start it again), the pool is Degraded with
 * `ApprovalWebhookFailing` naming the endpoint, the last error and how to
 * approve by hand (the Degraded transition records the Warning event); before
 * that, a wake-up at the bound. Nothing waits on an unreachable webhook silently.
 */
export function approvalFailing(
  pool: BootcNodePool,
  facts: ApprovalFacts | undefined,
  options: { now: Date; awaiting: boolean },
): StepOutput {
  const failing = facts?.failing;
  if (!failing || !options.awaiting) return NO_OUTPUT;
  const bound = stallDeadlines(pool.spec.rollout).progressMs;
  const since = Date.parse(failing.since);
  if (Number.isNaN(since)) return NO_OUTPUT;
  const left = since + bound - options.now.getTime();
  if (left > 0) return stepOutput({ wake: left });
  const name = pool.metadata.name ?? "";
  const url = pool.spec.rollout?.approval?.webhook?.url ?? "";
  const r = facts!.record;
  const message = `approval webhook ${url} has failed since ${failing.since}` +
    `${failing.node ? ` (asking for ${failing.node})` : ""}: ${failing.message}; ` +
    `revision ${r.revision} waits; fix the endpoint or ${approveHint(name, r.revision)}`;
  return stepOutput({ issues: [{ reason: PoolDegradedReason.ApprovalWebhookFailing, message }] });
}

/** The asks whose webhook verdict `record` has and `prior` (the stored record) lacks. */
function recordedNow(prior: ApprovalStatus | undefined, record: ApprovalStatus): Set<string> {
  const same = prior?.revision === record.revision && prior.image === record.image;
  const out = new Set<string>();
  if (record.verdict !== undefined && (!same || prior?.verdict === undefined)) out.add(POOL_ASK);
  const before = new Set(same ? (prior?.nodes ?? []).map((n) => n.node) : []);
  for (const n of record.nodes ?? []) if (!before.has(n.node)) out.add(n.node);
  return out;
}

/** The annotation mode's record: the reason a present annotation approves nothing. */
function withNote(
  record: ApprovalStatus,
  byAnnotation: ReturnType<typeof annotationVerdict>,
): ApprovalStatus {
  const why = byAnnotation.approved ? undefined : byAnnotation.why;
  return why ? { ...record, message: clip(why, 1024) } : withoutKey(record, "message");
}

/**
 * The webhook's new verdicts folded into `record` (pool-wide or per node). Per
 * node the record keeps members only and stays within
 * {@linkcode MAX_APPROVAL_NODES}: when full, verdicts of nodes already on the
 * target go first (oldest first); a new verdict that still finds no room is
 * not recorded yet (its node stays undecided), and no verdict a node still
 * needs is ever dropped (it would be asked again, and might flip).
 */
function withAnswers(
  record: ApprovalStatus,
  answers: readonly ApprovalAnswer[],
  nodesNow: { members: readonly string[]; done: ReadonlySet<string> },
  scope: "Pool" | "Node",
): ApprovalStatus {
  if (scope === "Pool") {
    const a = answers.find((x) => x.node === undefined && x.verdict !== undefined);
    return a?.verdict
      ? { ...record, verdict: a.verdict, message: clip(a.message ?? "", 1024) }
      : record;
  }
  const { done } = nodesNow;
  const isMember = new Set(nodesNow.members);
  const nodes = (record.nodes ?? []).filter((n) => isMember.has(n.node));
  const known = new Set(nodes.map((n) => n.node));
  const fresh: typeof nodes = [];
  for (const a of answers) {
    if (a.node === undefined || !a.verdict || known.has(a.node) || !isMember.has(a.node)) continue;
    known.add(a.node);
    fresh.push({
      node: a.node,
      verdict: a.verdict,
      ...(a.message ? { message: clip(a.message, 256) } : {}),
    });
  }
  let excess = nodes.length + fresh.length - MAX_APPROVAL_NODES;
  const kept = nodes.filter((n) => {
    if (excess <= 0 || !done.has(n.node)) return true;
    excess--;
    return false;
  });
  const all = [...kept, ...fresh].slice(0, MAX_APPROVAL_NODES);
  return all.length > 0 ? { ...record, nodes: all } : withoutKey(record, "nodes");
}

function withoutKey<K extends keyof ApprovalStatus>(r: ApprovalStatus, key: K): ApprovalStatus {
  const out = { ...r };
  delete out[key];
  return out;
}

/**
 * What the webhook must still be asked: the revision (scope Pool) while it has
 * no verdict, or the nodes the gate held for want of one (scope Node; `held`:
 * candidate → the reason that held it, in slot order), the first ones only, as
 * many as the record has room for (`facts.room`), so every answer can be kept.
 */
export function approvalAsks(
  pool: BootcNodePool,
  facts: ApprovalFacts | undefined,
  held: ReadonlyMap<string, string>,
): ApprovalAsks | undefined {
  const spec = pool.spec.rollout?.approval;
  if (!facts || !spec?.webhook || spec.mode !== "Webhook") return undefined;
  const r = facts.record;
  const scope = spec.scope ?? "Pool";
  const base = { webhook: spec.webhook, scope };
  const ask = (node?: string) => ({
    revision: r.revision,
    image: r.image,
    ...(node ? { node } : {}),
  });
  if (scope === "Pool" || r.verdict !== undefined) {
    const wanted = r.verdict === undefined || facts.recordedNow.has(POOL_ASK);
    return { ...base, asks: scope === "Pool" && wanted ? [ask()] : [] };
  }
  const decided = new Set((r.nodes ?? []).map((n) => n.node));
  const waiting = [...held]
    .filter(([node, why]) =>
      (why === AWAITING_APPROVAL || why === APPROVAL_REFUSED) && !decided.has(node)
    )
    .map(([node]) => node)
    .slice(0, facts.room);
  const asks = [...new Set([...waiting, ...facts.recordedNow])].map((n) => ask(n));
  return { ...base, asks };
}

/**
 * The events of this plan's approval news: a verdict newly recorded (Warning
 * when refused), and an annotation that approves nothing, once per value and
 * revision.
 */
export function approvalEvents(
  pool: BootcNodePool,
  view: ApprovalView | undefined,
): PlannedEvent[] {
  if (!view) return [];
  const name = pool.metadata.name ?? "";
  const prior = pool.status?.approval;
  const r = view.record;
  const same = prior?.revision === r.revision && prior.image === r.image;
  const out: PlannedEvent[] = [];
  const url = pool.spec.rollout?.approval?.webhook?.url ?? "";
  if (r.verdict && r.verdict !== "NotRequired" && (!same || prior?.verdict !== r.verdict)) {
    out.push(
      r.verdict === "Approved"
        ? poolEvent(name, "Normal", "RevisionApproved", `revision ${r.revision}: ${r.message}`)
        : poolEvent(
          name,
          "Warning",
          APPROVAL_REFUSED,
          `revision ${r.revision} refused by ${url}: ${r.message}`,
        ),
    );
  }
  const before = new Set(same ? (prior?.nodes ?? []).map((n) => n.node) : []);
  for (const n of r.nodes ?? []) {
    if (before.has(n.node)) continue;
    out.push(
      n.verdict === "Refused"
        ? poolEvent(
          name,
          "Warning",
          APPROVAL_REFUSED,
          `node ${n.node}, revision ${r.revision}: refused by ${url}: ${n.message ?? ""}`,
        )
        : poolEvent(name, "Normal", "NodeApproved", `node ${n.node}, revision ${r.revision}`),
    );
  }
  const news = r.annotation !== undefined &&
    (!same || prior?.annotation !== r.annotation);
  const why = annotationVerdict(r.annotation, r.revision);
  if (news && !why.approved && why.why && r.verdict === undefined) {
    // A garbled value is a mistake; one naming another revision is usually just old.
    const garbled = !/^\d+$/.test(r.annotation!.trim());
    out.push(
      poolEvent(
        name,
        garbled ? "Warning" : "Normal",
        "ApprovalAnnotationIgnored",
        `${why.why} (${approveHint(name, r.revision)})`,
      ),
    );
  }
  return out;
}
