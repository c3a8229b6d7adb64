import assert from "node:assert/strict";
import {
  checkPullSecret,
  DOCKER_CONFIG_SECRET_TYPE,
  dockerConfigJsonProblem,
} from "./pull_secret.ts";
import { dockerConfigJson } from "./docker_config.ts";

const b64 = (s: string) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));
const good = dockerConfigJson("registry.example:5000", { username: "alice", password: "pw" });
const secret = (content: string, type: string | undefined = DOCKER_CONFIG_SECRET_TYPE) => ({
  type,
  data: { ".dockerconfigjson": b64(content) },
});

Deno.test("checkPullSecret accepts a dockerconfigjson Secret and returns its text", () => {
  assert.deepEqual(checkPullSecret(secret(good)), { ok: true, dockerConfigJson: good });
  // No credentials at all is a valid (if useless) config.
  assert.equal(checkPullSecret(secret('{"auths":{}}')).ok, true);
  // username/password instead of auth, and entries without credentials, are fine.
  assert.equal(
    checkPullSecret(secret('{"auths":{"a":{"username":"u","password":"p"},"b":{}}}')).ok,
    true,
  );
});

Deno.test("checkPullSecret refuses other Secret types, naming the type", () => {
  for (const type of ["Opaque", undefined, "kubernetes.io/dockercfg"]) {
    const r = checkPullSecret({ type, data: secret(good).data });
    assert.equal(r.ok, false);
    if (r.ok) continue;
    assert.equal(r.problem, "type");
    assert.equal(
      r.message,
      `has type ${type ?? "Opaque"}; only kubernetes.io/dockerconfigjson Secrets are supported`,
    );
  }
});

Deno.test("checkPullSecret refuses a Secret without the .dockerconfigjson key", () => {
  assert.deepEqual(checkPullSecret({ type: DOCKER_CONFIG_SECRET_TYPE, data: { other: "eA==" } }), {
    ok: false,
    problem: "key",
    message: "has no .dockerconfigjson key",
  });
  assert.equal(checkPullSecret({ type: DOCKER_CONFIG_SECRET_TYPE }).ok, false);
});

Deno.test("checkPullSecret names what is wrong with malformed content", () => {
  const cases: [string, RegExp][] = [
    ["not json", /is not a valid \.dockerconfigjson: it is not JSON/],
    ["[1]", /it is not a JSON object$/],
    ['"auths"', /it is not a JSON object$/],
    ['{"registry.example":{"auth":"YTpi"}}', /it has no "auths" object$/],
    ['{"auths":[]}', /it has no "auths" object$/],
    ['{"auths":{"r":"x"}}', /the entry for "r" is not an object$/],
    ['{"auths":{"r":{"auth":"!!!"}}}', /the "auth" of "r" is not base64 of "username:password"$/],
    [`{"auths":{"r":{"auth":"${btoa("nocolon")}"}}}`, /the "auth" of "r" is not base64/],
  ];
  for (const [content, want] of cases) {
    const r = checkPullSecret(secret(content));
    assert.equal(r.ok, false, content);
    if (r.ok) continue;
    assert.equal(r.problem, "content", content);
    assert.match(r.message, want, content);
  }
  const notBase64 = checkPullSecret({
    type: DOCKER_CONFIG_SECRET_TYPE,
    data: { ".dockerconfigjson": "%%%" },
  });
  assert.equal(notBase64.ok, false);
  if (!notBase64.ok) assert.match(notBase64.message, /not base64/);
});

Deno.test("dockerConfigJsonProblem is undefined for what the registry client can use", () => {
  assert.equal(dockerConfigJsonProblem(good), undefined);
  assert.match(dockerConfigJsonProblem("{")!, /^it is not JSON/);
});
