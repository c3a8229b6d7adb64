/**
 * The approval webhook's asks and answers as plain data: the planner says what
 * it wants asked (`planner/approval_step.ts`), the poller beside the work queue
 * asks (`pollers/approval_requests.ts`) and hands back what it learnt.
 *
 * @module
 */
import type { ApprovalScope, WebhookEndpointSpec } from "../../lib/api/mod.ts";

/** One question: may `node` (absent: the pool) reboot into revision `revision`? */
export interface ApprovalAsk {
  revision: number;
  /** The revision's image (digest-pinned). */
  image: string;
  /** The node asked for (scope Node); absent for the pool-wide ask. */
  node?: string;
}

/** What a pool wants asked now, and where. */
export interface ApprovalAsks {
  webhook: WebhookEndpointSpec;
  scope: ApprovalScope;
  asks: ApprovalAsk[];
}

/** What the poller knows of one ask. */
export interface ApprovalAnswer extends ApprovalAsk {
  /** The webhook's verdict; absent while pending (errors are retried). */
  verdict?: "Approved" | "Refused";
  /** The refuser's message, or what the last failed attempt said ("attempt 2 failed: …"). */
  message?: string;
  /**
   * While pending: when the first of its failed attempts ended (RFC 3339). The
   * planner reports the webhook as failing once this is older than the pool's
   * `progressTimeoutSeconds`.
   */
  failingSince?: string;
}
