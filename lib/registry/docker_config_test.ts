import assert from "node:assert/strict";
import {
  dockerConfigJson,
  findCredentials,
  parseConfigKey,
  parseDockerConfig,
} from "./docker_config.ts";
import { RegistryError } from "./errors.ts";

const b64 = (s: string) => btoa(s);

Deno.test("auth (base64) and username/password entries", () => {
  const config = parseDockerConfig({
    auths: {
      "127.0.0.1:5000": { auth: b64("alice:s3cr:et") },
      "quay.io": { username: "bob", password: "pw" },
      "empty.io": {},
    },
  });
  assert.deepEqual(findCredentials(config, "127.0.0.1:5000", "os"), {
    username: "alice",
    password: "s3cr:et",
  });
  assert.deepEqual(findCredentials(config, "quay.io", "org/os"), {
    username: "bob",
    password: "pw",
  });
  assert.equal(findCredentials(config, "empty.io", "os"), undefined);
});

Deno.test("the host must match including the port", () => {
  const config = parseDockerConfig(JSON.stringify({
    auths: { "127.0.0.1:5000": { auth: b64("a:b") } },
  }));
  assert.equal(findCredentials(config, "127.0.0.1:5001", "os"), undefined);
  assert.equal(findCredentials(config, "127.0.0.1", "os"), undefined);
  assert.ok(findCredentials(config, "127.0.0.1:5000", "os"));
});

Deno.test("Docker Hub aliases match registry-1.docker.io", () => {
  for (
    const key of [
      "https://index.docker.io/v1/",
      "docker.io",
      "index.docker.io",
      "registry-1.docker.io",
    ]
  ) {
    const config = parseDockerConfig({ auths: { [key]: { auth: b64("hub:pw") } } });
    assert.deepEqual(findCredentials(config, "registry-1.docker.io", "library/fedora"), {
      username: "hub",
      password: "pw",
    }, key);
  }
});

Deno.test("scheme and paths in keys; the most specific path wins", () => {
  assert.deepEqual(parseConfigKey("https://Quay.io/org/"), { host: "quay.io", path: "org" });
  const config = parseDockerConfig({
    auths: {
      "quay.io": { auth: b64("all:1") },
      "quay.io/org": { auth: b64("org:2") },
      "quay.io/org/os": { auth: b64("os:3") },
    },
  });
  assert.equal(findCredentials(config, "quay.io", "org/os")?.username, "os");
  assert.equal(findCredentials(config, "quay.io", "org/other")?.username, "org");
  assert.equal(findCredentials(config, "quay.io", "organisation/x")?.username, "all");
});

Deno.test("wildcard hosts match one label; exact beats wildcard", () => {
  const config = parseDockerConfig({
    auths: {
      "*.example.com": { auth: b64("wild:1") },
      "r.example.com": { auth: b64("exact:2") },
    },
  });
  assert.equal(findCredentials(config, "a.example.com", "os")?.username, "wild");
  assert.equal(findCredentials(config, "r.example.com", "os")?.username, "exact");
  assert.equal(findCredentials(config, "a.b.example.com", "os"), undefined);
  assert.equal(findCredentials(config, "a.example.com:5000", "os"), undefined);
});

Deno.test("legacy .dockercfg shape (no auths wrapper)", () => {
  const config = parseDockerConfig({ "r.io": { auth: b64("x:y") } });
  assert.equal(findCredentials(config, "r.io", "os")?.password, "y");
});

Deno.test("malformed secrets are rejected with an actionable message", () => {
  const cases: [string | object, RegExp][] = [
    ["{not json", /not JSON/],
    ["[]", /not a JSON object/],
    [{ auths: [] }, /"auths" is not an object/],
    [{ auths: { "r.io": "x" } }, /entry for "r.io" is not an object/],
    [
      { auths: { "r.io": { auth: "bm9jb2xvbg==" } } },
      /"auth" of "r.io" is not base64 of "username:password"/,
    ],
  ];
  for (const [input, message] of cases) {
    assert.throws(() => parseDockerConfig(input), (e: unknown) => {
      assert.ok(e instanceof RegistryError);
      assert.equal(e.kind, "Unauthorized");
      assert.match(e.message, message);
      assert.match(e.message, /check the Secret/);
      return true;
    });
  }
});

Deno.test("dockerConfigJson round-trips through the parser", () => {
  const json = dockerConfigJson("127.0.0.1:5000", { username: "ü", password: "p:w" });
  assert.deepEqual(findCredentials(parseDockerConfig(json), "127.0.0.1:5000", "os"), {
    username: "ü",
    password: "p:w",
  });
});
