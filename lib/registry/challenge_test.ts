import assert from "node:assert/strict";
import { parseWwwAuthenticate } from "./challenge.ts";

Deno.test("Bearer challenge with realm, service and scope", () => {
  assert.deepEqual(
    parseWwwAuthenticate(
      'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",' +
        'scope="repository:library/fedora:pull"',
    ),
    [{
      scheme: "bearer",
      params: {
        realm: "https://auth.docker.io/token",
        service: "registry.docker.io",
        scope: "repository:library/fedora:pull",
      },
    }],
  );
});

Deno.test("scopes with commas inside quotes, error params, spaces", () => {
  const [c] = parseWwwAuthenticate(
    'Bearer realm="http://127.0.0.1:9/token", service="svc", ' +
      'scope="repository:os:pull,push", error="insufficient_scope"',
  );
  assert.equal(c.params.scope, "repository:os:pull,push");
  assert.equal(c.params.error, "insufficient_scope");
  assert.equal(c.params.service, "svc");
});

Deno.test("Basic, unquoted values, escapes and case", () => {
  assert.deepEqual(parseWwwAuthenticate('Basic realm="test"'), [
    { scheme: "basic", params: { realm: "test" } },
  ]);
  assert.deepEqual(parseWwwAuthenticate("BEARER Realm=https://x/token,Service=reg"), [
    { scheme: "bearer", params: { realm: "https://x/token", service: "reg" } },
  ]);
  assert.equal(parseWwwAuthenticate('Basic realm="a \\"b\\""')[0].params.realm, 'a "b"');
});

Deno.test("several challenges in one header (joined headers)", () => {
  const challenges = parseWwwAuthenticate(
    'Basic realm="r1", Bearer realm="https://t/token",service="s"',
  );
  assert.deepEqual(challenges.map((c) => c.scheme), ["basic", "bearer"]);
  assert.equal(challenges[1].params.service, "s");
});

Deno.test("empty or missing header gives no challenges", () => {
  assert.deepEqual(parseWwwAuthenticate(null), []);
  assert.deepEqual(parseWwwAuthenticate(""), []);
});
