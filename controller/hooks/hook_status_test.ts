import assert from "node:assert/strict";
import type { BootcNodePoolStatus, HookDeliveryStatus } from "../../lib/api/mod.ts";
import { classifyStatusChange } from "../shell/status_coalesce.ts";
import { hookStatus, withHookStatus } from "./hook_status.ts";

function delivery(name: string, result: "Delivered" | "Failed", time: string): HookDeliveryStatus {
  return { name, phase: "NodePreDrain", node: "n1", revision: 1, result, attempts: 1, time };
}

Deno.test("hookStatus: fresh results win, stored ones stay, spec order, removed hooks drop out", () => {
  const hooks = [{ name: "b", url: "http://b" }, { name: "a", url: "http://a" }];
  const stored = [delivery("a", "Failed", "t1"), delivery("gone", "Delivered", "t1")];
  const fresh = new Map([["b", delivery("b", "Delivered", "t2")]]);
  assert.deepEqual(hookStatus({ hooks, stored, fresh }).map((s) => [s.name, s.time]), [
    ["b", "t2"],
    ["a", "t1"],
  ]);
  const newer = new Map([["a", delivery("a", "Delivered", "t3")]]);
  assert.deepEqual(hookStatus({ hooks, stored, fresh: newer }).map((s) => s.time), ["t3"]);
});

Deno.test("withHookStatus: sets status.hooks, and leaves it out when there is nothing", () => {
  const base = {
    state: "RollingOut",
    hooks: [delivery("x", "Failed", "t")],
  } as BootcNodePoolStatus;
  assert.equal(
    "hooks" in withHookStatus(base, { hooks: [], stored: base.hooks, fresh: undefined }),
    false,
  );
  const out = withHookStatus(base, {
    hooks: [{ name: "x", url: "http://x" }],
    stored: base.hooks,
    fresh: undefined,
  });
  assert.deepEqual(out, base);
});

Deno.test("a change of status.hooks alone is progress: coalesced into the pool's writes", () => {
  const stored = { state: "RollingOut" } as BootcNodePoolStatus;
  const next = withHookStatus(stored, {
    hooks: [{ name: "x", url: "http://x" }],
    stored: undefined,
    fresh: new Map([["x", delivery("x", "Delivered", "t")]]),
  });
  assert.equal(classifyStatusChange(stored, next), "progress");
});
