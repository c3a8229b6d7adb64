/**
 * The controller's spec check and the CRD agree: every value of the admission
 * table (`tests/admission/cases.ts`, which `tests/admission/refusal_test.ts`
 * applies to the real API server) gets the verdict the table gives, through the
 * checks the planner runs (`policyErrors`, and `channelError` for the channel's
 * schedule), and through the per-field checks with the same words.
 */
import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import {
  cronSyntaxError,
  parseApiDuration,
  parseApiInstant,
} from "../../lib/api/time_validation.ts";
import {
  fieldOf,
  kindOf,
  poolSpecWith,
  TIME_CASES,
  type TimeCase,
} from "../../tests/admission/cases.ts";
import { channelError } from "../planner/channel.ts";
import { durationError, instantError, scheduleError, timeZoneError } from "./schedule.ts";
import { policyErrors } from "./validate.ts";

function specErrors(c: TimeCase): string[] {
  const pool = {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    metadata: { name: "p" },
    spec: poolSpecWith(c.at, c.value),
  } as unknown as BootcNodePool;
  const errors = policyErrors({ pool, pools: [pool] });
  const channel = channelError(pool.spec.image.channel);
  return channel === undefined ? errors : [...errors, channel];
}

function fieldError(c: TimeCase): string | undefined {
  const field = fieldOf(c.at);
  switch (kindOf(c.at)) {
    case "schedule":
      return scheduleError(c.value, field);
    case "duration":
      return durationError(c.value, field);
    case "timeZone":
      return timeZoneError(c.value, field);
    case "instant":
      return instantError(c.value, field);
  }
}

Deno.test("the controller refuses exactly what the admission table says, naming the field", () => {
  for (const c of TIME_CASES) {
    const label = `${c.at} = ${JSON.stringify(c.value)}`;
    const want = c.refused ?? c.onlyController;
    const errors = specErrors(c);
    const direct = fieldError(c);
    if (want === undefined) {
      assert.deepEqual(errors, [], `${label}: the controller refuses what admission accepts`);
      assert.equal(direct, undefined, label);
      continue;
    }
    assert.equal(errors.length, 1, `${label}: ${errors.join(" | ") || "accepted"}`);
    for (const error of [errors[0], direct ?? ""]) {
      assert.ok(error.startsWith(`${fieldOf(c.at)}: `), `${label}: ${error}`);
      assert.ok(error.includes(JSON.stringify(c.value)), `${label}: ${error}`);
      assert.match(error, want, label);
    }
  }
});

Deno.test("the CRD's ECMAScript twins: refused at admission iff the table says so", () => {
  // What the CEL rules decide, without croner or the zone database: the CRD's own verdict.
  for (const c of TIME_CASES) {
    const label = `${c.at} = ${JSON.stringify(c.value)}`;
    const refused = c.refused !== undefined;
    switch (kindOf(c.at)) {
      case "schedule":
        assert.equal(cronSyntaxError(c.value) !== undefined, refused, label);
        break;
      case "duration":
        assert.equal(parseApiDuration(c.value) === undefined, refused, label);
        break;
      case "instant":
        assert.equal(parseApiInstant(c.value) === undefined, refused, label);
        break;
      case "timeZone":
        break; // looked up in a zone database (the API server's, the runtime's): see above
    }
  }
});
