import assert from "node:assert/strict";
import { findCondition } from "./conditions.ts";
import {
  failedChecksOn,
  verifiedCondition,
  verifiedOn,
  verifiedRelease,
  verifiedReleasePatch,
  verifiedSince,
  withVerified,
  withVerifiedRelease,
} from "./verified.ts";

const IMAGE = "registry.example/os@sha256:" + "b".repeat(64);
const AT = new Date("2026-05-01T10:00:00Z");

/** A BootcNode as the release write leaves it (generation 4). */
function released(extra: Record<string, string> = {}) {
  return {
    metadata: {
      generation: 4,
      annotations: {
        ...verifiedReleasePatch(IMAGE, AT),
        "bootc.dev/spec-generation": "4",
        ...extra,
      },
    },
    spec: { desiredImage: IMAGE, desiredImageState: "Staged" },
  };
}

Deno.test("verifiedRelease: the release's verdict, only while it is the controller's last word", () => {
  assert.deepEqual(verifiedRelease(released()), { image: IMAGE, at: AT });
  const stale = released();
  stale.metadata.generation = 5; // someone changed the spec after the release
  assert.equal(verifiedRelease(stale), undefined);
  const booted = released();
  booted.spec.desiredImageState = "Booted";
  assert.equal(verifiedRelease(booted), undefined);
  const other = released();
  other.spec.desiredImage = IMAGE.replace(/b+$/, "c".repeat(64));
  assert.equal(verifiedRelease(other), undefined);
  assert.equal(verifiedRelease(released({ "bootc.dev/verified-at": "later" })), undefined);
  assert.equal(verifiedRelease(released({ "bootc.dev/spec-generation": "x" })), undefined);
  assert.equal(verifiedRelease({ metadata: { generation: 4 }, spec: released().spec }), undefined);
});

Deno.test("verifiedRelease: a verdict naming its generation holds only at it, whoever stamped the spec since (review 17 L3)", () => {
  const own = released({ "bootc.dev/verified-generation": "4" });
  assert.deepEqual(verifiedRelease(own), { image: IMAGE, at: AT });
  // An older controller went A→B→A: its stamp matches the generation, the verdict's does not.
  const revived = released({
    "bootc.dev/verified-generation": "4",
    "bootc.dev/spec-generation": "6",
  });
  revived.metadata.generation = 6;
  assert.equal(verifiedRelease(revived), undefined);
  // A verdict of a controller that names no generation is judged by the spec's stamp.
  assert.deepEqual(verifiedRelease(released()), { image: IMAGE, at: AT });
});

Deno.test("withVerified keeps an earlier Verified time; the release sets Updated at its time", () => {
  const soaked = withVerified(undefined, IMAGE, false, new Date("2026-05-01T09:00:00Z"));
  assert.equal(findCondition(soaked.conditions, "Updated"), undefined);
  assert.deepEqual(soaked.verification, { image: IMAGE });
  const out = withVerifiedRelease(soaked, { image: IMAGE, at: AT }, true).conditions;
  assert.equal(findCondition(out, "Verified")?.lastTransitionTime, "2026-05-01T09:00:00Z");
  assert.equal(findCondition(out, "Verified")?.message, verifiedCondition(IMAGE).message);
  assert.equal(findCondition(out, "Updated")?.status, "True");
  assert.equal(findCondition(out, "Updated")?.lastTransitionTime, "2026-05-01T10:00:00Z");
  // Not booted on it: nothing recorded.
  assert.equal(withVerifiedRelease(soaked, { image: IMAGE, at: AT }, false), soaked);
});

Deno.test("verifiedOn and failedChecksOn read status.verification, never the message", () => {
  const OTHER = IMAGE.replace(/b+$/, "c".repeat(64));
  const verified = withVerified(undefined, IMAGE, false, AT);
  assert.equal(verifiedOn(verified, IMAGE), true);
  assert.equal(verifiedOn(verified, OTHER), false);
  // Written by a daemon that does not keep the field: about an unknown image, its time tells.
  assert.equal(verifiedOn({ conditions: verified.conditions }, IMAGE), true);
  assert.deepEqual(verifiedSince({ conditions: verified.conditions }, IMAGE, { from: AT }), AT);
  const later = new Date(AT.getTime() + 1);
  assert.equal(
    verifiedSince({ conditions: verified.conditions }, IMAGE, { from: later }),
    undefined,
  );
  // Verified about another image, whatever its message says.
  assert.equal(verifiedOn({ ...verified, verification: { image: OTHER } }, IMAGE), false);
  const failed = {
    conditions: [{
      type: "Verified",
      status: "False" as const,
      reason: "CheckFailed",
      message: "node n1 failed health checks: Prometheus (query)",
      lastTransitionTime: "2026-05-01T10:00:00Z",
    }],
    verification: { image: IMAGE, failedChecks: ["NodeReady", "Pods"] },
  };
  assert.equal(verifiedOn(failed, IMAGE), false);
  assert.deepEqual(failedChecksOn(failed, IMAGE), ["NodeReady", "Pods"]);
  assert.equal(failedChecksOn(failed, OTHER), undefined);
  assert.equal(failedChecksOn({ conditions: failed.conditions }, IMAGE), undefined);
  assert.equal(
    failedChecksOn({ verification: { image: IMAGE, failedChecks: [] } }, IMAGE),
    undefined,
  );
});
