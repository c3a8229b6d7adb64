/**
 * The controller's verdict on an updated node, told to the daemon.
 *
 * After a node rebooted into its target and passed its health checks, the
 * controller releases its slot: the BootcNode's reboot request is revoked
 * (`desiredImageState: Staged`), which the daemon acknowledges with a status
 * write of its own. The controller's `Verified` and `Updated` conditions ride
 * in that acknowledgement instead of costing a status write of the controller's
 * (one API write fewer per node): the release write carries the verdict as two
 * annotations ({@linkcode verifiedReleasePatch}), and the daemon records the
 * conditions from them once ({@linkcode withVerifiedRelease}), only while they are
 * the controller's last word on that spec ({@linkcode verifiedRelease}) and never
 * over a verdict the controller revised since ({@linkcode verdictDue}).
 *
 * Both writers build the conditions here, so their texts cannot drift.
 *
 * @module
 */
import {
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_VERIFIED_AT,
  ANNOTATION_VERIFIED_FOR,
  ANNOTATION_VERIFIED_GENERATION,
  NodeConditionType,
  VerifiedReason,
} from "./constants.ts";
import { formatTime } from "../clock.ts";
import { type ConditionInput, findCondition, setCondition } from "./conditions.ts";
import { shortReference } from "./display.ts";
import type { BootcNodeStatus, Condition } from "./schema.ts";

/** A verdict or Verified time later than this past now is a hand edit, not the controller's. */
const FUTURE_SLACK_MS = 60_000;

/** Verified=True on `image`: every health check passed after the reboot. */
export function verifiedCondition(image: string): ConditionInput {
  return {
    type: NodeConditionType.Verified,
    status: "True",
    reason: VerifiedReason.ChecksPassed,
    message: `verified ${shortReference(image)}: running it, Ready and healthy after the reboot`,
  };
}

/** Updated=True on `image`: verified, and its reboot slot released. */
export function updatedCondition(image: string): ConditionInput {
  return {
    type: NodeConditionType.Updated,
    status: "True",
    reason: "UpdateComplete",
    message: `runs ${shortReference(image)}; slot released`,
  };
}

/** The part of a BootcNode's status that holds the verdict: Verified and what it is about. */
export type VerifiedStatus = Pick<BootcNodeStatus, "conditions" | "verification">;

/**
 * True when `status` says the node was verified on `image`: Verified=True about it
 * (`status.verification`), or about an image it does not record (written by a daemon
 * that does not keep the field: then only its time, {@linkcode verifiedSince}, tells).
 */
export function verifiedOn(status: VerifiedStatus | undefined, image: string): boolean {
  const cond = findCondition(status?.conditions, NodeConditionType.Verified);
  const about = status?.verification?.image;
  return cond?.status === "True" && (about === undefined || about === image);
}

/** The failed-check names the daemon's host report decides: its failed units explain them. */
export const HostCheckName = {
  HostHealthy: "HostHealthy",
  BootAssessment: "BootAssessment",
} as const;

/** True when `checks` name a check the host report decided. */
export function namesHostCheck(checks: readonly string[] | undefined): boolean {
  return (checks ?? []).some((c) =>
    c === HostCheckName.HostHealthy || c === HostCheckName.BootAssessment
  );
}

/**
 * The checks a Verified=False on `image` names (`status.verification.failedChecks`);
 * undefined when it names none, or is about another image.
 */
export function failedChecksOn(
  status: VerifiedStatus | undefined,
  image: string,
): readonly string[] | undefined {
  const v = status?.verification;
  return v?.image === image && v.failedChecks?.length ? v.failedChecks : undefined;
}

/** When a Verified condition may date from to count for a node's soak in its slot. */
export interface VerifiedWindow {
  /** The slot's time: a verification before it was of an earlier update. */
  from?: Date;
  /** Later than this (and a minute) is a hand edit; unset: not checked. */
  now?: Date;
}

/**
 * When the node was verified on `image` within `window` (the Verified condition, if
 * it says so and dates from then: an older or forged time never shortens, or holds
 * forever, the soak of `minReadySeconds`). The planner's soak and the node's
 * classification (Soaking) both read it.
 */
export function verifiedSince(
  status: VerifiedStatus | undefined,
  image: string,
  window: VerifiedWindow,
): Date | undefined {
  if (!verifiedOn(status, image)) return undefined;
  const verified = findCondition(status?.conditions, NodeConditionType.Verified)!;
  const at = Date.parse(verified.lastTransitionTime);
  if (!Number.isFinite(at) || (window.from && at < window.from.getTime())) return undefined;
  return window.now && at > window.now.getTime() + FUTURE_SLACK_MS ? undefined : new Date(at);
}

/**
 * `status` with the node verified on `image` (kept if it already was, with its
 * time) and, when `updated`, its update complete, both transitioning at `at`.
 */
export function withVerified(
  status: VerifiedStatus | undefined,
  image: string,
  updated: boolean,
  at: Date,
): VerifiedStatus {
  let out = status?.conditions as Condition[] | undefined;
  if (!verifiedOn(status, image)) out = setCondition(out, verifiedCondition(image), at);
  if (updated) out = setCondition(out, updatedCondition(image), at);
  return { conditions: out, verification: { image } };
}

/** The annotations of the release write that tell the daemon the verdict on `image`. */
export function verifiedReleasePatch(image: string, at: Date): Record<string, string> {
  return {
    [ANNOTATION_VERIFIED_FOR]: image,
    [ANNOTATION_VERIFIED_AT]: formatTime(at),
  };
}

/** What {@linkcode verifiedRelease} reads of a BootcNode. */
export interface VerifiedReleaseSource {
  metadata?: { generation?: number; annotations?: Readonly<Record<string, string>> };
  spec?: { desiredImage?: string; desiredImageState?: string };
}

/**
 * The controller's verdict a BootcNode carries: the image and release time, only
 * while the release is the last spec change (its write stamped the generation it
 * produced, `bootc.dev/verified-generation`, and any later spec change, a hand edit
 * or another controller's, moves the generation past it; the controller also removes
 * the verdict in its own other spec changes, `controller/planner/spec_since.ts`), for the spec's image, with no
 * reboot requested. Undefined otherwise, or when garbled or later than `now`
 * (and a minute).
 */
export function verifiedRelease(
  bn: VerifiedReleaseSource,
  now?: Date,
): { image: string; at: Date } | undefined {
  const annotations = bn.metadata?.annotations;
  const image = annotations?.[ANNOTATION_VERIFIED_FOR];
  const at = Date.parse(annotations?.[ANNOTATION_VERIFIED_AT] ?? "");
  if (!image || !Number.isFinite(at) || image !== bn.spec?.desiredImage) return undefined;
  if (now && at > now.getTime() + FUTURE_SLACK_MS) return undefined;
  if (bn.spec?.desiredImageState === "Booted") return undefined;
  // The release's own generation; a controller that wrote none stamped it as the spec's.
  const written = annotations?.[ANNOTATION_VERIFIED_GENERATION] ??
    annotations?.[ANNOTATION_SPEC_GENERATION];
  if (written === undefined || written !== String(bn.metadata?.generation)) return undefined;
  return { image, at: new Date(at) };
}

/**
 * True when the verdict of `release` is not recorded in `conditions` yet (Updated
 * True at its time) and the controller has not revised it since (a Verified
 * written after the release, e.g. False on a node whose Node release failed and that
 * then turned unhealthy, stands: a verdict is never written back over it).
 */
export function verdictDue(
  conditions: readonly Condition[] | undefined,
  release: { image: string; at: Date } | undefined,
): boolean {
  if (!release) return false;
  const verified = findCondition(conditions, NodeConditionType.Verified);
  const revised = Date.parse(verified?.lastTransitionTime ?? "");
  if (Number.isFinite(revised) && revised > release.at.getTime()) return false;
  const updated = findCondition(conditions, NodeConditionType.Updated);
  return updated?.status !== "True" || updated.lastTransitionTime !== formatTime(release.at);
}

/**
 * The daemon's part: `status` with the verdict of `release` recorded when it is
 * due ({@linkcode verdictDue}) and the host boots that image (`bootsImage`); else
 * unchanged. Recorded once, in whichever write first can (the acknowledgement of the
 * release, or a later one when that one could not: an unreadable host, a daemon
 * upgraded after the release).
 */
export function withVerifiedRelease(
  status: VerifiedStatus,
  release: { image: string; at: Date } | undefined,
  bootsImage: boolean,
): VerifiedStatus {
  if (!release || !bootsImage || !verdictDue(status.conditions, release)) return status;
  // A stale Updated (another time) is replaced, so the record is at the release's time.
  const fresh = status.conditions?.filter((c) => c.type !== NodeConditionType.Updated);
  return withVerified({ ...status, conditions: fresh }, release.image, true, release.at);
}
