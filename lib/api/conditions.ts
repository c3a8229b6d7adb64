/**
 * Pure helpers for metav1.Condition lists.
 *
 * @module
 */
import { formatTime } from "../clock.ts";
import type { Condition } from "./schema.ts";

/** Returns the condition of `type`, if present. */
export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** True when the condition of `type` exists with status "True". */
export function isConditionTrue(
  conditions: readonly Condition[] | undefined,
  type: string,
): boolean {
  return findCondition(conditions, type)?.status === "True";
}

/** A condition to set: `lastTransitionTime` is filled in by {@linkcode setCondition}. */
export type ConditionInput = Omit<Condition, "lastTransitionTime">;

/**
 * Returns a new list with `input` set. `lastTransitionTime` changes only when the
 * status changes, so rewriting an unchanged condition yields an equal list.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === input.type);
  const previous = index >= 0 ? list[index] : undefined;
  const lastTransitionTime = previous && previous.status === input.status
    ? previous.lastTransitionTime
    : formatTime(now);
  const next: Condition = { ...input, lastTransitionTime };
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

/** True when two condition lists are equal ignoring order. */
export function conditionsEqual(
  a: readonly Condition[] | undefined,
  b: readonly Condition[] | undefined,
): boolean {
  const left = a ?? [];
  const right = b ?? [];
  if (left.length !== right.length) return false;
  return left.every((c) => {
    const o = findCondition(right, c.type);
    return o !== undefined && o.status === c.status && o.reason === c.reason &&
      o.message === c.message && o.lastTransitionTime === c.lastTransitionTime &&
      o.observedGeneration === c.observedGeneration;
  });
}
