/**
 * `spec.maintenance.windows`: new reboots start only while a window is open (a
 * cron schedule in the pool's `spec.timeZone` and a duration; several windows
 * add up). No windows means always open. A node whose reboot started inside a
 * window finishes after it closes: gates only decide who gets a new slot.
 * Reason `OutsideMaintenanceWindow`, until the next window opens.
 *
 * @module
 */
import type { Gate, GateDecision, GateInput, SpecCheckInput } from "./gate.ts";
import { poolPolicy, poolTimeZone } from "./policy.ts";
import {
  durationError,
  formatInZone,
  scheduleError,
  type WindowState,
  windowState,
} from "./schedule.ts";

/** The wait reason of this gate. */
export const OUTSIDE_MAINTENANCE_WINDOW = "OutsideMaintenanceWindow";

/** Holds every candidate back while no maintenance window is open. */
export const maintenanceWindowGate: Gate = {
  name: "maintenance-window",
  reasons: [{ reason: OUTSIDE_MAINTENANCE_WINDOW, blocksPool: true }],
  validate({ pool }: SpecCheckInput): string[] {
    return (poolPolicy(pool).maintenance?.windows ?? []).flatMap((w, i) => {
      const field = `spec.maintenance.windows[${i}]`;
      return [
        scheduleError(w.schedule, `${field}.schedule`),
        durationError(w.duration, `${field}.duration`),
      ].filter((e) => e !== undefined);
    });
  },
  decide(input: GateInput): GateDecision {
    const windows = poolPolicy(input.pool).maintenance?.windows ?? [];
    if (windows.length === 0) return { admit: input.candidates };
    const tz = poolTimeZone(input.pool);
    let state: WindowState;
    try {
      state = windowState(windows, tz, input.now);
    } catch (e) {
      // The planner refuses such a spec first (InvalidSpec); never reboot on a spec we cannot read.
      return {
        admit: [],
        wait: {
          reason: OUTSIDE_MAINTENANCE_WINDOW,
          message: `no new reboots: cannot read spec.maintenance.windows (time zone ${tz}): ${
            (e as Error).message
          }`,
        },
      };
    }
    if (state.active) return { admit: input.candidates };
    return {
      admit: [],
      wait: {
        reason: OUTSIDE_MAINTENANCE_WINDOW,
        message: state.nextStart
          ? `outside maintenance windows; next window opens ${formatInZone(state.nextStart, tz)}`
          : "outside maintenance windows; no window ever opens again",
        until: state.nextStart,
      },
    };
  },
};
