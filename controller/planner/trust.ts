/**
 * Planning step 1b, trust: under `spec.image.verification`, which of the
 * resolved candidate and the current target the pool may roll out.
 *
 * - Enforce: the candidate becomes the target only once its signature verdict
 *   says verified; until then the pool stays on its current target, and a failure
 *   makes the pool Degraded with `SignatureInvalid` naming the image and why. Then
 *   the one gate ({@linkcode trustGate}) decides for every image the planner writes
 *   to a node: the target ({@linkcode admitTarget}), rollback images, and the image
 *   of each node in flight (`in_flight.ts`, `memberMode`).
 * - Audit: the candidate rolls out; a verdict that failed is reported in
 *   `status.verification` and by one Warning event per image.
 *
 * The verdicts come from the signature poller (`pollers/signature_checks.ts`),
 * keyed by image; {@linkcode trustCandidates} names the images this step reads.
 *
 * @module
 */
import {
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  owningPool,
  PoolDegradedReason,
  RevisionOutcome,
} from "../../lib/api/mod.ts";
import { shortReference } from "../../lib/api/display.ts";
import type { SignatureVerdict } from "../../lib/registry/signatures.ts";
import { formatTime } from "../model/slots.ts";
import type { Target } from "../model/types.ts";
import { mergeOutputs, poolEvent, type StepOutput, stepOutput } from "./plan.ts";
import { priorTarget, type Resolution } from "./resolution.ts";

/** The latest signature check of one image: a verdict, or why none could be had. */
export interface SignatureMemo {
  at: Date;
  result: { ok: true; verdict: SignatureVerdict } | { ok: false; message: string };
}

/** The pool's `status.verification`. */
export type VerificationStatus = NonNullable<BootcNodePoolStatus["verification"]>;

/** What the trust step settled: the resolution it lets through, and the verdict shown. */
export interface Trusted extends Resolution {
  verification?: VerificationStatus;
  /** The current target's own verdict failed: it is no fallback either. */
  priorUntrusted?: boolean;
  /** Enforce, and the candidate's signature checked and did not verify (a channel passes it over). */
  candidateRefused?: boolean;
}

/** At most this many images are verified for one pool (the rest cannot be checked). */
export const MAX_TRUST_CANDIDATES = 16;

/**
 * Every image the planner may write to one of the pool's BootcNodes, as a desired
 * image or a reboot request: the resolved candidate, the current target, the
 * images a rollback may go back to (succeeded revisions) and what its BootcNodes
 * are bound for now. The trust gate reads their verdicts; none without a policy,
 * and only the candidate in Audit (nothing is gated there).
 */
export function trustCandidates(
  pool: BootcNodePool,
  resolved: Pick<Resolution, "target">,
  bootcNodes: Iterable<BootcNode> = [],
): string[] {
  const policy = pool.spec.image.verification;
  if (!policy) return [];
  const images = [resolved.target?.image];
  if (policy.mode !== "Audit") {
    images.push(priorTarget(pool)?.image);
    const succeeded = (pool.status?.history ?? []).filter((r) =>
      r.outcome === RevisionOutcome.Succeeded
    );
    images.push(...succeeded.reverse().slice(0, 4).map((r) => r.image));
    for (const bn of bootcNodes) {
      if (owningPool(bn) === pool.metadata.name) images.push(bn.spec.desiredImage);
    }
  }
  return [...new Set(images.filter((i): i is string => i !== undefined))];
}

/**
 * What the pool's trust policy says of writing an image to a node: `verified`
 * (go; always so without a policy or in Audit), `refused` (its signature does not
 * verify), `uncheckable` (the check fails: a registry or key Secret that cannot be
 * read; reported, and nothing waits on it), `unknown` (its first check is under way,
 * bounded by the check's timeout: hold).
 */
export type TrustState = "verified" | "refused" | "uncheckable" | "unknown";

/** The one rule every image the planner writes to a node passes (see {@linkcode TrustState}). */
export type TrustGate = (image: string | undefined) => TrustState;

/** The pool's trust gate over the verdicts the signature poller has. */
export function trustGate(
  pool: BootcNodePool,
  signatures: ReadonlyMap<string, SignatureMemo> | undefined,
): TrustGate {
  const policy = pool.spec.image.verification;
  if (!policy || policy.mode === "Audit") return () => "verified";
  return (image) => {
    if (image === undefined) return "unknown";
    const v = verdictOf(signatures?.get(image));
    if (v.kind === "untrusted") return v.uncheckable ? "uncheckable" : "refused";
    return v.kind === "verified" ? "verified" : "unknown";
  };
}

/** Why `image` is not trusted, for messages (`refused` images only). */
export function refusedBecause(
  image: string,
  signatures: ReadonlyMap<string, SignatureMemo> | undefined,
): string {
  const v = verdictOf(signatures?.get(image));
  return v.kind === "untrusted" ? v.why : "no verdict yet";
}

type Verdict =
  | { kind: "verified"; by: string; at: Date }
  | { kind: "untrusted"; why: string; at: Date; uncheckable?: boolean }
  | { kind: "pending" };

function verdictOf(memo: SignatureMemo | undefined): Verdict {
  if (!memo) return { kind: "pending" };
  if (!memo.result.ok) {
    return {
      kind: "untrusted",
      why: `cannot be checked: ${memo.result.message}`,
      at: memo.at,
      uncheckable: true,
    };
  }
  const v = memo.result.verdict;
  return v.verified
    ? { kind: "verified", by: v.by, at: memo.at }
    : { kind: "untrusted", why: v.message, at: memo.at };
}

function statusOf(image: string, v: Verdict): VerificationStatus | undefined {
  if (v.kind === "pending") return undefined;
  return v.kind === "verified"
    ? { image, verified: true, by: v.by, checkedTime: formatTime(v.at) }
    : { image, verified: false, message: v.why.slice(0, 1024), checkedTime: formatTime(v.at) };
}

/**
 * The verdict to show: the new one, unless it says what `kept` says (then `kept`,
 * so a recheck that changes nothing writes nothing); `kept` while none is in.
 */
function sameVerdict(
  image: string,
  next: VerificationStatus | undefined,
  kept: VerificationStatus | undefined,
): VerificationStatus | undefined {
  if (!next) return kept?.image === image ? kept : undefined;
  const same = kept !== undefined && kept.image === next.image && kept.verified === next.verified &&
    kept.by === next.by && kept.message === next.message;
  return same ? kept : next;
}

/** Step 1b: see the module documentation. Pure. */
export function trustedTarget(
  pool: BootcNodePool,
  resolved: Resolution,
  signatures: ReadonlyMap<string, SignatureMemo> | undefined,
): Trusted {
  const policy = pool.spec.image.verification;
  const candidate = resolved.target;
  if (!policy || !candidate) return resolved;
  const verdict = verdictOf(signatures?.get(candidate.image));
  const kept = pool.status?.verification;
  const verification = sameVerdict(candidate.image, statusOf(candidate.image, verdict), kept);
  const name = shortReference(candidate.image);
  if (policy.mode === "Audit" || verdict.kind === "verified") {
    const newlyFailed = verdict.kind === "untrusted" &&
      (kept?.image !== candidate.image || kept.verified);
    const warn = newlyFailed
      ? [poolEvent(
        pool.metadata.name ?? "",
        "Warning",
        "SignatureUnverified",
        `${name} does not verify (${verdict.why}); rolling it out (verification mode Audit)`,
      )]
      : [];
    return {
      ...resolved,
      ...(verification ? { verification } : {}),
      out: mergeOutputs([resolved.out, stepOutput({ events: warn })]),
    };
  }
  const fallback = trustedPrior(pool, signatures);
  const stays = fallback ? `stays on ${shortReference(fallback.image)}` : "rolls out no image";
  const out = verdict.kind === "pending"
    ? stepOutput({ notes: [`verifying the signature of ${name}`] })
    : stepOutput({
      issues: [{
        reason: PoolDegradedReason.SignatureInvalid,
        message: `signature of ${name} does not verify: ${verdict.why}; the pool ${stays}`,
      }],
    });
  return {
    target: fallback,
    priorUntrusted: fallback === undefined,
    candidateRefused: verdict.kind === "untrusted" &&
      signatures?.get(candidate.image)?.result.ok === true,
    fromSpec: false,
    lastResolvedTime: resolved.lastResolvedTime,
    ...(verification ? { verification } : {}),
    out: mergeOutputs([resolved.out, out]),
  };
}

/**
 * The current target, when the candidate cannot be trusted yet: kept (shown) unless
 * its own signature does not verify; whether nodes may be given it is the gate's
 * call (`admitTarget`).
 */
function trustedPrior(
  pool: BootcNodePool,
  signatures: ReadonlyMap<string, SignatureMemo> | undefined,
): Target | undefined {
  const prior = priorTarget(pool);
  if (!prior) return undefined;
  const v = verdictOf(signatures?.get(prior.image));
  return v.kind === "untrusted" && !v.uncheckable ? undefined : prior;
}

/**
 * The target through the gate: shown and given to nodes (verified); shown but
 * given to no node while its first check runs (unknown) or while it cannot be
 * checked (`SignatureInvalid`, "cannot be checked"); dropped with
 * `SignatureInvalid` when it does not verify (the pool then rolls out no image).
 */
export function admitTarget(
  target: Target | undefined,
  gate: TrustGate,
  signatures: ReadonlyMap<string, SignatureMemo> | undefined,
): { target?: Target; admitted?: Target; out: StepOutput } {
  if (!target) return { out: stepOutput() };
  const state = gate(target.image);
  if (state === "verified") return { target, admitted: target, out: stepOutput() };
  const name = shortReference(target.image);
  if (state === "unknown") {
    return {
      target,
      out: stepOutput({ notes: [`verifying the signature of ${name} before any node gets it`] }),
    };
  }
  const issue = {
    reason: PoolDegradedReason.SignatureInvalid,
    message: `signature of ${name} does not verify: ${
      refusedBecause(target.image, signatures)
    }; no node is updated to it`,
  };
  return state === "uncheckable"
    ? { target, out: stepOutput({ issues: [issue] }) }
    : { out: stepOutput({ issues: [issue] }) };
}
