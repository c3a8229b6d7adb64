import assert from "node:assert/strict";
import { FakeClock } from "../../lib/clock.ts";
import type { SignatureVerdict, TrustedKey } from "../../lib/registry/signatures.ts";
import type { ImageResolver } from "./resolver.ts";
import { SignatureChecks } from "./signature_checks.ts";

const IMAGE = `reg.example:5000/os@sha256:${"a".repeat(64)}`;
const KEY_A: TrustedKey[] = [{ name: "keys[0]", pem: "A" }];
const KEY_B: TrustedKey[] = [{ name: "keys[0]", pem: "B" }];

/** A resolver whose verifier answers with `answer(keys)` and counts its calls. */
function verifier(answer: (keys: readonly TrustedKey[]) => SignatureVerdict) {
  const calls: { image: string; keys: readonly TrustedKey[] }[] = [];
  const resolver: ImageResolver = {
    resolve: () => Promise.reject(new Error("not used")),
    verifySignatures: (image, keys) => {
      calls.push({ image, keys });
      return Promise.resolve(answer(keys));
    },
  };
  return { calls, resolver };
}

async function settle() {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

Deno.test("signature checks: one check per image and keys, shared by pools, rechecked hourly", async () => {
  const clock = new FakeClock();
  const { calls, resolver } = verifier(() => ({ verified: true, by: "keys[0]" }));
  const woken: string[] = [];
  const checks = new SignatureChecks({ resolver, clock, onResult: (s) => woken.push(...s) });
  try {
    assert.equal(
      await checks.want("a/candidate", { image: IMAGE, keys: KEY_A, retryMs: 5_000 }),
      undefined,
    );
    await checks.want("b/candidate", { image: IMAGE, keys: KEY_A, retryMs: 5_000 });
    await settle();
    assert.equal(calls.length, 1);
    assert.ok(woken.includes("a/candidate"), String(woken));
    const latest = await checks.want("a/candidate", { image: IMAGE, keys: KEY_A, retryMs: 5_000 });
    assert.deepEqual(latest?.result, { ok: true, verdict: { verified: true, by: "keys[0]" } });
    // Other keys are another check, with those keys.
    await checks.want("c/candidate", { image: IMAGE, keys: KEY_B, retryMs: 5_000 });
    await settle();
    assert.deepEqual(calls.map((c) => c.keys[0].pem), ["A", "B"]);
    clock.advance(59 * 60_000);
    await settle();
    assert.equal(calls.length, 2);
    clock.advance(2 * 60_000);
    await settle();
    assert.equal(calls.length, 4, "both verified images checked again after an hour");
  } finally {
    await checks.forgetAll();
  }
});

Deno.test("signature checks: an image that did not verify is checked again at the poll interval", async () => {
  const clock = new FakeClock();
  let signed = false;
  const { calls, resolver } = verifier(() =>
    signed ? { verified: true, by: "keys[0]" } : { verified: false, message: "no signature" }
  );
  const checks = new SignatureChecks({ resolver, clock });
  try {
    await checks.want("a/candidate", { image: IMAGE, keys: KEY_A, retryMs: 5_000 });
    await settle();
    const first = await checks.want("a/candidate", { image: IMAGE, keys: KEY_A, retryMs: 5_000 });
    assert.deepEqual(first?.result, {
      ok: true,
      verdict: { verified: false, message: "no signature" },
    });
    signed = true;
    clock.advance(4_000);
    await settle();
    assert.equal(calls.length, 1);
    clock.advance(1_000);
    await settle();
    const second = await checks.want("a/candidate", { image: IMAGE, keys: KEY_A, retryMs: 5_000 });
    assert.deepEqual(second?.result, { ok: true, verdict: { verified: true, by: "keys[0]" } });
    // A pool that forgets its image drops the check: nothing more is asked.
    checks.forget("a/candidate");
    clock.advance(2 * 60 * 60_000);
    await settle();
    assert.equal(calls.length, 2);
  } finally {
    await checks.forgetAll();
  }
});

Deno.test("signature checks: a registry failure on a recheck keeps the verdict for a day", async () => {
  const clock = new FakeClock();
  let down = false;
  const resolver: ImageResolver = {
    resolve: () => Promise.reject(new Error("not used")),
    verifySignatures: () =>
      down
        ? Promise.reject(new Error("registry unreachable"))
        : Promise.resolve({ verified: true, by: "keys[0]" }),
  };
  const checks = new SignatureChecks({ resolver, clock, initialBackoffMs: 60_000, jitter: 0 });
  const want = () => checks.want("a/candidate", { image: IMAGE, keys: KEY_A, retryMs: 5_000 });
  try {
    await want();
    await settle();
    down = true;
    clock.advance(61 * 60_000);
    await settle();
    const kept = await want();
    assert.deepEqual(kept?.result, { ok: true, verdict: { verified: true, by: "keys[0]" } });
    // Past a day without an answer the failure is what is known.
    for (let h = 0; h < 25; h++) {
      clock.advance(60 * 60_000);
      await settle();
    }
    const stale = await want();
    assert.equal(stale?.result.ok, false);
  } finally {
    await checks.forgetAll();
  }
});
