import assert from "node:assert/strict";
import { ImageReferenceError, parseImageReference } from "./reference.ts";

const DIGEST = "sha256:" + "a".repeat(64);

function fields(input: string) {
  const r = parseImageReference(input);
  return {
    registry: r.registry,
    domain: r.domain,
    repository: r.repository,
    tag: r.tag,
    digest: r.digest,
  };
}

Deno.test("a bare Docker Hub name gets docker.io, library/ and :latest", () => {
  assert.deepEqual(fields("fedora"), {
    registry: "registry-1.docker.io",
    domain: "docker.io",
    repository: "library/fedora",
    tag: "latest",
    digest: undefined,
  });
  assert.equal(parseImageReference("fedora").toString(), "docker.io/library/fedora:latest");
});

Deno.test("Docker Hub user repositories and spellings of the Hub", () => {
  assert.equal(fields("user/os:1").repository, "user/os");
  assert.equal(fields("user/os:1").registry, "registry-1.docker.io");
  const index = parseImageReference("index.docker.io/fedora:40");
  assert.equal(index.registry, "registry-1.docker.io");
  assert.equal(index.repository, "library/fedora");
  assert.equal(index.pinned(DIGEST), `index.docker.io/library/fedora@${DIGEST}`);
});

Deno.test("registries with ports, localhost and IPs; tags after the port", () => {
  assert.deepEqual(fields("127.0.0.1:5000/os:v2"), {
    registry: "127.0.0.1:5000",
    domain: "127.0.0.1:5000",
    repository: "os",
    tag: "v2",
    digest: undefined,
  });
  assert.equal(fields("127.0.0.1:5000/os").tag, "latest");
  assert.equal(fields("localhost/os").registry, "localhost");
  assert.equal(fields("localhost:5000/a/b/c:t").repository, "a/b/c");
  assert.equal(fields("quay.io/org/os").registry, "quay.io");
  assert.equal(fields("[::1]:5000/os:v1").registry, "[::1]:5000");
});

Deno.test("digest, and tag plus digest", () => {
  assert.deepEqual(fields(`quay.io/org/os@${DIGEST}`), {
    registry: "quay.io",
    domain: "quay.io",
    repository: "org/os",
    tag: undefined,
    digest: DIGEST,
  });
  const both = parseImageReference(`quay.io/org/os:v2@${DIGEST}`);
  assert.equal(both.tag, "v2");
  assert.equal(both.digest, DIGEST);
  assert.equal(both.toString(), `quay.io/org/os:v2@${DIGEST}`);
  assert.equal(both.pinned("sha256:" + "b".repeat(64)), "quay.io/org/os@sha256:" + "b".repeat(64));
});

Deno.test("pinned keeps the user's registry spelling and rejects a bad digest", () => {
  const ref = parseImageReference("Registry.Example.com:443/org/os:v1");
  assert.equal(ref.registry, "registry.example.com:443");
  assert.equal(ref.pinned(DIGEST), `Registry.Example.com:443/org/os@${DIGEST}`);
  assert.throws(() => ref.pinned("sha256:abc"), ImageReferenceError);
});

Deno.test("separators allowed by the grammar", () => {
  for (const ok of ["a/b_c", "a/b__c", "a/b.c", "a/b---c", "registry.io/a-b/c.d_e"]) {
    assert.doesNotThrow(() => parseImageReference(ok), ok);
  }
});

Deno.test("invalid references are rejected with a message naming the problem", () => {
  const cases: [string, RegExp][] = [
    ["", /empty/],
    ["Fedora", /lowercase/],
    ["quay.io/Org/os", /lowercase/],
    ["quay.io/org/os:", /nothing follows ':'/],
    ["quay.io/org/os:-bad", /tag "-bad" is invalid/],
    ["quay.io/org/os:" + "a".repeat(129), /tag .* is invalid/],
    ["quay.io/org/os@", /nothing follows '@'/],
    ["quay.io/org/os@sha256:abc", /64 hex characters, got 3/],
    ["quay.io/org/os@sha256:" + "A".repeat(64), /lower-case/],
    ["quay.io/org/os@md5", /algorithm:hex/],
    ["https://quay.io/org/os", /scheme/],
    ["quay.io//os", /empty segment/],
    ["quay.io/os/", /empty segment/],
    ["quay.io/a_-b", /path segment "a_-b" is invalid/],
    ["quay.io/-a", /path segment "-a"/],
    ["quay.io:99999/os", /port 99999 is out of range/],
    ["bad_host.io/os", /registry host "bad_host.io" is invalid/],
    [" fedora", /whitespace/],
    ["fe dora", /whitespace/],
    ["quay.io/" + "a".repeat(250), /longer than 255/],
  ];
  for (const [input, message] of cases) {
    assert.throws(() => parseImageReference(input), (e: unknown) => {
      assert.ok(e instanceof ImageReferenceError, `${input}: ${e}`);
      assert.match(e.message, message, input);
      assert.ok(e.message.startsWith(`invalid image reference ${JSON.stringify(input)}`));
      return true;
    });
  }
});
