/**
 * `spec.maintenance.blackouts`: absolute ranges (RFC 3339 `start` inclusive,
 * `end` exclusive) during which no new reboot starts, whatever the windows say.
 * Nodes already in flight finish. Reason `Blackout`, until the end of the
 * blackout, or of the last one in a chain of overlapping or back-to-back ones.
 *
 * @module
 */
import type { Gate, GateDecision, GateInput, SpecCheckInput } from "./gate.ts";
import { type BlackoutSpec, poolPolicy, poolTimeZone } from "./policy.ts";
import { formatInZone, instantError, parseInstant } from "./schedule.ts";

/** The wait reason of this gate. */
export const BLACKOUT = "Blackout";

/** Why `blackout` is not valid at `field` (e.g. `spec.maintenance.blackouts[0]`), or undefined. */
export function blackoutError(blackout: BlackoutSpec, field: string): string | undefined {
  const errors = [
    instantError(blackout.start, `${field}.start`),
    instantError(blackout.end, `${field}.end`),
  ].filter((e) => e !== undefined);
  if (errors.length > 0) return errors.join("; ");
  if (parseInstant(blackout.end)! <= parseInstant(blackout.start)!) {
    return `${field}.end: ${blackout.end} must be after start ${blackout.start}`;
  }
  return undefined;
}

/** Whether a blackout holds at an instant. */
export interface BlackoutState {
  active: boolean;
  /** When active: the end of the chain of overlapping or back-to-back blackouts. */
  until?: Date;
  /** When active: the reasons of the blackouts in that chain, in order, without repeats. */
  reasons: string[];
}

/**
 * Whether `now` falls inside any of `blackouts` (`start <= now < end`). Throws
 * on an invalid blackout (the gate fails closed then).
 */
export function blackoutState(blackouts: readonly BlackoutSpec[], now: Date): BlackoutState {
  const ranges = blackouts.map((b, i) => {
    const err = blackoutError(b, `blackouts[${i}]`);
    if (err) throw new Error(err);
    return { start: parseInstant(b.start)!, end: parseInstant(b.end)!, reason: b.reason };
  }).sort((a, b) => a.start.getTime() - b.start.getTime());
  let until: Date | undefined;
  const reasons: string[] = [];
  // Sorted by start: the first range around `now` opens the chain, and every later range that
  // starts before (or as) the chain ends extends it. Ranges already over are not part of it.
  for (const r of ranges) {
    if (r.end <= now || r.start > (until ?? now)) continue;
    if (!until || r.end > until) until = r.end;
    if (r.reason && !reasons.includes(r.reason)) reasons.push(r.reason);
  }
  return until ? { active: true, until, reasons } : { active: false, reasons };
}

/** Holds every candidate back during a blackout. */
export const blackoutGate: Gate = {
  name: "blackout",
  reasons: [{ reason: BLACKOUT, blocksPool: true }],
  validate({ pool }: SpecCheckInput): string[] {
    const blackouts = poolPolicy(pool).maintenance?.blackouts ?? [];
    return blackouts.map((b, i) => blackoutError(b, `spec.maintenance.blackouts[${i}]`))
      .filter((e) => e !== undefined);
  },
  decide(input: GateInput): GateDecision {
    const blackouts = poolPolicy(input.pool).maintenance?.blackouts ?? [];
    if (blackouts.length === 0) return { admit: input.candidates };
    let state: BlackoutState;
    try {
      state = blackoutState(blackouts, input.now);
    } catch (e) {
      // The planner refuses such a spec first (InvalidSpec); never reboot on a spec we cannot read.
      return {
        admit: [],
        wait: {
          reason: BLACKOUT,
          message: `no new reboots: cannot read spec.maintenance.${(e as Error).message}`,
        },
      };
    }
    if (!state.active) return { admit: input.candidates };
    const why = state.reasons.length > 0 ? ` (${state.reasons.join("; ")})` : "";
    return {
      admit: [],
      wait: {
        reason: BLACKOUT,
        message: `blackout${why}: no new reboots until ${
          formatInZone(state.until!, poolTimeZone(input.pool))
        }`,
        until: state.until,
      },
    };
  },
};
