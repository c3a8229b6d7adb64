/**
 * Planning step 1b, trust: under `spec.image.verification`, which of the
 * resolved candidate and the current target the pool may roll out.
 *
 * - Enforce: the candidate becomes the target only once its signature verdict
 *   says verified. Until then (no verdict yet, a failed verdict, or a registry
 *   error) the pool stays on its current target, and a failure makes the pool
 *   Degraded with `SignatureInvalid` naming the image and why. A current target
 *   whose own verdict failed is not rolled out either: the pool then has none.
 * - Audit: the candidate rolls out; a verdict that failed is reported in
 *   `status.verification` and by one Warning event per image.
 *
 * The verdicts come from the signature poller (`pollers/signature_checks.ts`),
 * keyed by image; {@linkcode trustCandidates} names the images this step reads.
 *
 * @module
 */
import {
  type BootcNodePool,
  type BootcNodePoolStatus,
  PoolDegradedReason,
} from "../../lib/api/mod.ts";
import { shortReference } from "../../lib/api/display.ts";
import type { SignatureVerdict } from "../../lib/registry/signatures.ts";
import { formatTime } from "../model/slots.ts";
import type { Target } from "../model/types.ts";
import { mergeOutputs, poolEvent, stepOutput } from "./plan.ts";
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
}

/** The images whose verdicts {@linkcode trustedTarget} reads (none without a policy). */
export function trustCandidates(pool: BootcNodePool, resolved: Resolution): string[] {
  if (!pool.spec.image.verification) return [];
  const images = [resolved.target?.image, priorTarget(pool)?.image];
  return [...new Set(images.filter((i): i is string => i !== undefined))];
}

type Verdict =
  | { kind: "verified"; by: string; at: Date }
  | { kind: "untrusted"; why: string; at: Date }
  | { kind: "pending" };

function verdictOf(memo: SignatureMemo | undefined): Verdict {
  if (!memo) return { kind: "pending" };
  if (!memo.result.ok) {
    return { kind: "untrusted", why: `cannot be checked: ${memo.result.message}`, at: memo.at };
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
    fromSpec: false,
    lastResolvedTime: resolved.lastResolvedTime,
    ...(verification ? { verification } : {}),
    out: mergeOutputs([resolved.out, out]),
  };
}

/**
 * The current target, when the candidate cannot be trusted yet: kept unless its
 * own verdict failed (one not checked yet, e.g. after a restart, was accepted as
 * the target before).
 */
function trustedPrior(
  pool: BootcNodePool,
  signatures: ReadonlyMap<string, SignatureMemo> | undefined,
): Target | undefined {
  const prior = priorTarget(pool);
  if (!prior) return undefined;
  return verdictOf(signatures?.get(prior.image)).kind === "untrusted" ? undefined : prior;
}
