/**
 * `status.hooks`: per hook of the spec, its last finished delivery — this
 * process's when it has one, else the one already stored (a new leader keeps
 * what the last one recorded). Pure; the shell folds it into the status write
 * the pool makes anyway (it is a progress field: coalesced).
 *
 * @module
 */
import type { BootcNodePoolStatus, HookDeliveryStatus, HookSpec } from "../../lib/api/mod.ts";

/** What {@linkcode withHookStatus} merges. */
export interface HookStatusInput {
  /** `spec.hooks`. */
  hooks: readonly HookSpec[] | undefined;
  /** The stored `status.hooks`. */
  stored: readonly HookDeliveryStatus[] | undefined;
  /** This process's last finished delivery per hook. */
  fresh: ReadonlyMap<string, HookDeliveryStatus> | undefined;
}

/** The hooks' deliveries in spec order (a hook removed from the spec drops out). */
export function hookStatus(input: HookStatusInput): HookDeliveryStatus[] {
  const out: HookDeliveryStatus[] = [];
  for (const hook of input.hooks ?? []) {
    const last = input.fresh?.get(hook.name) ?? input.stored?.find((s) => s.name === hook.name);
    if (last) out.push(last);
  }
  return out;
}

/** `status` with `status.hooks` from {@linkcode hookStatus} (left out when empty). */
export function withHookStatus(
  status: BootcNodePoolStatus,
  input: HookStatusInput,
): BootcNodePoolStatus {
  const hooks = hookStatus(input);
  const { hooks: _old, ...rest } = status;
  return hooks.length > 0 ? { ...rest, hooks } : rest;
}
