import assert from "node:assert/strict";
import { slotUnhealthyReason } from "./slots.ts";

Deno.test("slotUnhealthyReason: NotReady only counts before the reboot request or after its deadline", () => {
  const base = {
    degraded: false,
    ready: true,
    drainTimedOut: false,
    rebootRequested: false,
    rebootTimedOut: false,
  };
  assert.equal(slotUnhealthyReason(base), undefined);
  assert.match(slotUnhealthyReason({ ...base, ready: false }) ?? "", /not Ready/);
  assert.equal(slotUnhealthyReason({ ...base, ready: false, rebootRequested: true }), undefined);
  assert.match(
    slotUnhealthyReason({ ...base, ready: false, rebootRequested: true, rebootTimedOut: true }) ??
      "",
    /did not come back/,
  );
  assert.match(slotUnhealthyReason({ ...base, degraded: true }) ?? "", /Degraded/);
  assert.match(slotUnhealthyReason({ ...base, drainTimedOut: true }) ?? "", /drain timed out/);
});
