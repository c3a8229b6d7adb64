import assert from "node:assert/strict";
import { resolveMaxUnavailable, slotUnhealthyReason } from "./slots.ts";

Deno.test("resolveMaxUnavailable: integers, percentages rounded up, at least 1", () => {
  const cases: [number | string | undefined, number, number][] = [
    [undefined, 10, 1],
    [3, 10, 3],
    ["25%", 10, 3],
    ["10%", 10, 1],
    ["1%", 10, 1],
    ["1%", 0, 1],
    ["100%", 7, 7],
    ["50%", 5, 3],
    ["2", 10, 2],
  ];
  for (const [value, count, want] of cases) {
    assert.equal(resolveMaxUnavailable(value, count), want, `${value} of ${count}`);
  }
  assert.throws(() => resolveMaxUnavailable("abc", 3), /percentage/);
  assert.throws(() => resolveMaxUnavailable(0, 3), />= 1/);
  assert.throws(() => resolveMaxUnavailable("0%", 3), /between/);
});

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
