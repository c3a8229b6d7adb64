import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { pool } from "../testing/fixtures.ts";
import { type KeySecret, keySecretNames, trustedKeys } from "./trusted_keys.ts";

const PEM = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEfIbSmxnNNiu4OeJmnUL/FS5cLH5x
O+9IXQ2Tl3ioBTYWr7uevhDH/ijuUU53x8ykMs+Kb6Bt/GrECzGDsNvr7w==
-----END PUBLIC KEY-----
`;

function withKeys(keys: NonNullable<BootcNodePool["spec"]["image"]["verification"]>["keys"]) {
  const p = pool();
  p.spec.image.verification = { mode: "Enforce", keys };
  return p;
}

Deno.test("trustedKeys: inline PEM and a Secret's key, each named by its place", () => {
  const p = withKeys([{ pem: PEM }, { secretRef: { name: "cosign" } }]);
  assert.deepEqual(keySecretNames(p), ["cosign"]);
  const found = trustedKeys(
    p,
    "bootc-operator",
    new Map([["cosign", { found: true, data: { "cosign.pub": btoa(PEM) } }]]),
  );
  assert.deepEqual(found, {
    keys: [{ name: "keys[0]", pem: PEM }, { name: "keys[1]", pem: PEM }],
    errors: [],
  });
});

Deno.test("trustedKeys: a missing Secret, key or a key that is no PEM names the field", () => {
  const p = withKeys([
    { secretRef: { name: "gone" } },
    { secretRef: { name: "other", key: "release.pub" } },
    { secretRef: { name: "junk" } },
  ]);
  const secrets = new Map<string, KeySecret>([
    ["gone", { found: false }],
    ["other", { found: true, data: { "cosign.pub": btoa(PEM) } }],
    ["junk", { found: true, data: { "cosign.pub": btoa("not a key") } }],
  ]);
  const { keys, errors } = trustedKeys(p, "bootc-operator", secrets);
  assert.deepEqual(keys, []);
  assert.deepEqual(errors, [
    "spec.image.verification.keys[0].secretRef: Secret bootc-operator/gone not found",
    'spec.image.verification.keys[1].secretRef: Secret bootc-operator/other has no key "release.pub"',
    'spec.image.verification.keys[2].secretRef: Secret bootc-operator/junk key "cosign.pub": ' +
    "not a PEM public key (expected -----BEGIN PUBLIC KEY-----)",
  ]);
});

Deno.test("trustedKeys: a Secret not read yet leaves the keys pending, not wrong", () => {
  const p = withKeys([{ pem: PEM }, { secretRef: { name: "cosign" } }]);
  const r = trustedKeys(
    p,
    "bootc-operator",
    new Map([["cosign", { found: "unknown", why: "503 Service Unavailable" }]]),
  );
  assert.equal(r.pending, "Secret bootc-operator/cosign cannot be read: 503 Service Unavailable");
  assert.deepEqual(r.errors, []);
});
