import assert from "node:assert/strict";
import { PoolDegradedReason } from "../../lib/api/mod.ts";
import { needsLookup, pullSecretVerdict } from "./pull_secret.ts";

const NS = "bootc-operator";
const ref = { name: "regcred", namespace: NS };
const b64 = (s: string) => btoa(s);
const GOOD = JSON.stringify({ auths: { "r.example": { auth: btoa("u:p") } } });
const dockerSecret = (content: string) => ({
  type: "kubernetes.io/dockerconfigjson",
  data: { ".dockerconfigjson": b64(content) },
});

Deno.test("pullSecretVerdict: no reference, nothing to say", () => {
  assert.deepEqual(pullSecretVerdict(undefined, NS, { found: false }), { grant: false });
  assert.equal(needsLookup(undefined, NS), false);
});

Deno.test("pullSecretVerdict: a good dockerconfigjson Secret is granted and used", () => {
  assert.deepEqual(pullSecretVerdict(ref, NS, { found: true, secret: dockerSecret(GOOD) }), {
    grant: true,
    dockerConfigJson: GOOD,
  });
});

Deno.test("pullSecretVerdict: another namespace is an InvalidSpec without a lookup", () => {
  const other = { name: "regcred", namespace: "default" };
  assert.equal(needsLookup(other, NS), false);
  // Even a perfectly good Secret there is refused: the daemons cannot read it.
  const v = pullSecretVerdict(other, NS, { found: true, secret: dockerSecret(GOOD) });
  assert.equal(v.grant, false);
  assert.equal(v.dockerConfigJson, undefined);
  assert.deepEqual(v.issue, {
    reason: PoolDegradedReason.InvalidSpec,
    message: "pull secret default/regcred: pull secrets must be in the operator's namespace " +
      "bootc-operator, the only one whose Secrets the daemons may read",
  });
});

Deno.test("pullSecretVerdict: missing Secret, other type, missing key are InvalidSpec naming it", () => {
  assert.equal(needsLookup(ref, NS), true);
  const cases: [Parameters<typeof pullSecretVerdict>[2], string][] = [
    [{ found: false }, "pull secret bootc-operator/regcred: Secret not found"],
    [
      { found: true, secret: { type: "Opaque", data: { ".dockerconfigjson": b64(GOOD) } } },
      "pull secret bootc-operator/regcred has type Opaque; only kubernetes.io/dockerconfigjson " +
      "Secrets are supported",
    ],
    [
      { found: true, secret: { data: { ".dockerconfigjson": b64(GOOD) } } },
      "pull secret bootc-operator/regcred has type Opaque; only kubernetes.io/dockerconfigjson " +
      "Secrets are supported",
    ],
    [
      { found: true, secret: { type: "kubernetes.io/dockerconfigjson", data: {} } },
      "pull secret bootc-operator/regcred has no .dockerconfigjson key",
    ],
  ];
  for (const [lookup, message] of cases) {
    const v = pullSecretVerdict(ref, NS, lookup);
    assert.deepEqual(v, {
      grant: false,
      issue: { reason: PoolDegradedReason.InvalidSpec, message },
    });
  }
});

Deno.test("pullSecretVerdict: malformed content is PullSecretInvalid, granted, not used", () => {
  const cases: [string, RegExp][] = [
    ['{"auths":"nope"}', /it has no "auths" object/],
    ['{"auths":{"r":{"auth":"###"}}}', /the "auth" of "r" is not base64 of "username:password"/],
  ];
  for (const [content, problem] of cases) {
    const v = pullSecretVerdict(ref, NS, { found: true, secret: dockerSecret(content) });
    assert.equal(v.grant, true, "the daemons must read it to refuse it with a clear message");
    assert.equal(v.dockerConfigJson, undefined, "malformed content is not used for resolution");
    assert.equal(v.issue?.reason, PoolDegradedReason.PullSecretInvalid);
    assert.match(
      v.issue!.message,
      /^pull secret bootc-operator\/regcred is not a valid \.dockerconfigjson: /,
    );
    assert.match(v.issue!.message, problem);
  }
});
