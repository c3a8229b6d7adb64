import assert from "node:assert/strict";
import { type BootcNodePool, findCondition, PoolConditionType } from "../../lib/api/mod.ts";
import { planPool } from "./planner.ts";
import type { SignatureMemo } from "./trust.ts";
import { bootcNode, digest, image, input, node, pool, REPO } from "../testing/fixtures.ts";

const NOW = "2026-01-01T01:00:00Z";
const KEY = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEfIbSmxnNNiu4OeJmnUL/FS5cLH5x
O+9IXQ2Tl3ioBTYWr7uevhDH/ijuUU53x8ykMs+Kb6Bt/GrECzGDsNvr7w==
-----END PUBLIC KEY-----
`;
const NOT_A_KEY = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n";
const AT = new Date("2026-01-01T00:59:00Z");

/** A tag pool resolved to `image("c")`, on `image("b")` before, verifying in `mode`. */
function tagPool(mode: "Enforce" | "Audit"): BootcNodePool {
  const p = pool({
    ref: `${REPO}:stable`,
    status: { targetDigest: digest("b"), targetImage: image("b"), observedGeneration: 1 },
  });
  p.spec.image.verification = { mode, keys: [{ pem: KEY }] };
  return p;
}

function plan(p: BootcNodePool, signatures: Map<string, SignatureMemo>) {
  return planPool({
    ...input(p, {
      nodes: [node("a")],
      bootcNodes: [bootcNode("a", { desired: image("b"), booted: image("b") })],
      now: NOW,
      resolution: { generation: 1, at: AT, result: { ok: true, digest: digest("c") } },
    }),
    signatures,
  });
}

const verified = (): SignatureMemo => ({
  at: AT,
  result: { ok: true, verdict: { verified: true, by: "keys[0]" } },
});
const unsigned = (): SignatureMemo => ({
  at: AT,
  result: { ok: true, verdict: { verified: false, message: "no signature" } },
});

Deno.test("trust: Enforce rolls out a candidate only once its signature verifies", () => {
  const p = tagPool("Enforce");
  const ok = plan(p, new Map([[image("c"), verified()], [image("b"), verified()]]));
  assert.equal(ok.status?.targetImage, image("c"));
  assert.deepEqual(ok.status?.verification, {
    image: image("c"),
    verified: true,
    by: "keys[0]",
    checkedTime: "2026-01-01T00:59:00Z",
  });
  assert.equal(ok.status?.history?.at(-1)?.signature, "verified by keys[0]");

  // No verdict yet: the pool stays on its target and is not Degraded.
  const pending = plan(p, new Map([[image("b"), verified()]]));
  assert.equal(pending.status?.targetImage, image("b"));
  assert.ok(!JSON.stringify(pending.actions).includes(digest("c")));
  const degraded = findCondition(pending.status?.conditions, PoolConditionType.Degraded);
  assert.notEqual(degraded?.status, "True");
});

Deno.test("trust: Enforce keeps the pool on its image and says SignatureInvalid", () => {
  const p = tagPool("Enforce");
  const bad = plan(p, new Map([[image("c"), unsigned()], [image("b"), verified()]]));
  assert.equal(bad.status?.targetImage, image("b"));
  assert.equal(bad.status?.state, "SignatureInvalid");
  const degraded = findCondition(bad.status?.conditions, PoolConditionType.Degraded);
  assert.equal(degraded?.reason, "SignatureInvalid");
  assert.match(
    degraded?.message ?? "",
    /cccccccccccc.*no signature; the pool stays on .*bbbbbbbbbbbb/,
  );
  assert.equal(bad.status?.verification?.verified, false);
  // No BootcNode is pointed at the untrusted image.
  const specs = JSON.stringify(bad.actions);
  assert.ok(!specs.includes(digest("c")), specs);

  // The current target's own verdict failed too (keys rotated): no image is rolled out.
  const none = plan(p, new Map([[image("c"), unsigned()], [image("b"), unsigned()]]));
  assert.equal(none.status?.targetImage, undefined);
  assert.ok(!JSON.stringify(none.actions).includes(digest("c")));
  assert.match(
    findCondition(none.status?.conditions, PoolConditionType.Degraded)?.message ?? "",
    /rolls out no image/,
  );

  // A registry error is no verdict to trust either.
  const down = plan(
    p,
    new Map([[image("c"), { at: AT, result: { ok: false, message: "timed out" } }]]),
  );
  assert.equal(down.status?.targetImage, image("b"));
  assert.match(
    findCondition(down.status?.conditions, PoolConditionType.Degraded)?.message ?? "",
    /cannot be checked: timed out/,
  );
});

Deno.test("trust: Audit rolls out, records the verdict and warns once", () => {
  const p = tagPool("Audit");
  const first = plan(p, new Map([[image("c"), unsigned()]]));
  assert.equal(first.status?.targetImage, image("c"));
  assert.equal(first.status?.verification?.verified, false);
  assert.equal(first.status?.history?.at(-1)?.signature, "not verified: no signature");
  assert.deepEqual(
    first.events.filter((e) => e.reason === "SignatureUnverified").map((e) => e.type),
    ["Warning"],
  );
  assert.notEqual(
    findCondition(first.status?.conditions, PoolConditionType.Degraded)?.status,
    "True",
  );
  // A recheck that says the same keeps the recorded verdict (no status write for it).
  const later = { ...unsigned(), at: new Date("2026-01-01T01:05:00Z") };
  const again = plan({ ...p, status: first.status }, new Map([[image("c"), later]]));
  assert.equal(again.events.filter((e) => e.reason === "SignatureUnverified").length, 0);
  assert.deepEqual(again.status?.verification, first.status?.verification);
});

Deno.test("trust: a pool without verification ignores verdicts", () => {
  const p = tagPool("Enforce");
  delete p.spec.image.verification;
  const out = plan(p, new Map([[image("c"), unsigned()]]));
  assert.equal(out.status?.targetImage, image("c"));
  assert.equal(out.status?.verification, undefined);
});

Deno.test("trust: a key that is no public key is an invalid spec naming the field", () => {
  const p = tagPool("Enforce");
  p.spec.image.verification!.keys.unshift({ pem: NOT_A_KEY });
  const out = plan(p, new Map([[image("c"), verified()]]));
  const degraded = findCondition(out.status?.conditions, PoolConditionType.Degraded);
  assert.equal(degraded?.reason, "InvalidSpec");
  assert.match(
    degraded?.message ?? "",
    /spec\.image\.verification\.keys\[0\]\.pem: not a PEM public key/,
  );
  assert.ok(!JSON.stringify(out.actions).includes(digest("c")));
});
