/**
 * Checks of the time-based policy fields of a pool spec (`spec.timeZone`,
 * `spec.maintenance.windows`, `spec.maintenance.blackouts`,
 * `spec.rollout.budgets`), each error naming its field, for the pool's
 * `InvalidSpec` condition. The gates assume a spec that passed these and fail
 * closed when it did not.
 *
 * @module
 */
import { blackoutError } from "./blackout.ts";
import { budgetError } from "./budget.ts";
import type { PoolPolicy } from "./policy.ts";
import { durationError, scheduleError, timeZoneError } from "./schedule.ts";

/** Every problem of the time-based policy fields of `spec`, each naming its field; [] when none. */
export function policyErrors(spec: PoolPolicy): string[] {
  const errors: string[] = [];
  if (spec.timeZone !== undefined) {
    const err = timeZoneError(spec.timeZone, "spec.timeZone");
    if (err) errors.push(err);
  }
  (spec.maintenance?.windows ?? []).forEach((w, i) => {
    const field = `spec.maintenance.windows[${i}]`;
    const s = scheduleError(w.schedule, `${field}.schedule`);
    if (s) errors.push(s);
    const d = durationError(w.duration, `${field}.duration`);
    if (d) errors.push(d);
  });
  (spec.maintenance?.blackouts ?? []).forEach((b, i) => {
    const err = blackoutError(b, `spec.maintenance.blackouts[${i}]`);
    if (err) errors.push(err);
  });
  (spec.rollout?.budgets ?? []).forEach((b, i) => {
    const err = budgetError(b, `spec.rollout.budgets[${i}]`);
    if (err) errors.push(err);
  });
  return errors;
}
