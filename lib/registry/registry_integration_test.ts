// The registry client against a real CNCF distribution registry (Debian's
// docker-registry 2.8) started on loopback by tests/harness/registry.ts.
import assert from "node:assert/strict";
import { FakeClock } from "../clock.ts";
import { freePort } from "../../tests/harness/process.ts";
import { startRegistry, type TestRegistry } from "../../tests/harness/registry.ts";
import { OCI_INDEX, OCI_MANIFEST } from "./media_types.ts";
import {
  parseImageReference,
  RegistryClient,
  type RegistryClientOptions,
  RegistryError,
} from "./mod.ts";

async function expectRegistryError(
  p: Promise<unknown>,
  kind: RegistryError["kind"],
  message: string | RegExp,
) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof RegistryError, String(e));
    assert.equal(e.kind, kind, e.message);
    if (typeof message === "string") assert.equal(e.message, message);
    else assert.match(e.message, message);
    return true;
  });
}

/** Runs `body` with a client for `registry`, closing it afterwards. */
async function withClient<T>(
  registry: TestRegistry,
  options: Partial<RegistryClientOptions>,
  body: (client: RegistryClient) => Promise<T>,
): Promise<T> {
  const client = new RegistryClient({ ...registry.clientOptions(), timeoutMs: 10_000, ...options });
  try {
    return await body(client);
  } finally {
    client.close();
  }
}

/** A fetch seam that forwards to the real fetch and records the URLs. */
function recordingFetch() {
  const urls: URL[] = [];
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => {
    urls.push(new URL(input instanceof Request ? input.url : input));
    return fetch(input, init);
  }) as typeof fetch;
  return { fetchFn, urls };
}

Deno.test("anonymous registry over plain HTTP", async (t) => {
  await using registry = await startRegistry();
  const host = registry.host;

  await t.step("single-arch tag resolves to the pushed manifest digest", async () => {
    const pushed = await registry.pushImage({ repository: "os", tag: "v1", version: "1.0" });
    await withClient(registry, {}, async (client) => {
      assert.deepEqual(await client.resolve(`${host}/os:v1`), {
        digest: pushed.digest,
        mediaType: OCI_MANIFEST,
      });
      const ref = parseImageReference(`${host}/os:v1`);
      assert.equal(ref.pinned(pushed.digest), `${host}/os@${pushed.digest}`);
      assert.equal((await client.resolve(ref.pinned(pushed.digest))).digest, pushed.digest);
    });
  });

  await t.step("multi-arch index resolves to the index and per-platform digests", async () => {
    const pushed = await registry.pushIndex({
      repository: "os",
      tag: "multi",
      images: [
        { architecture: "amd64", version: "2.0" },
        { architecture: "arm64", variant: "v8", version: "2.0" },
      ],
    });
    await withClient(registry, {}, async (client) => {
      const resolved = await client.resolve(`${host}/os:multi`);
      assert.equal(resolved.digest, pushed.digest);
      assert.equal(resolved.mediaType, OCI_INDEX);
      assert.deepEqual(resolved.platforms, [
        { os: "linux", architecture: "amd64", digest: pushed.platforms[0].digest },
        { os: "linux", architecture: "arm64", variant: "v8", digest: pushed.platforms[1].digest },
      ]);
      assert.notEqual(pushed.platforms[0].digest, pushed.digest);
      assert.notEqual(pushed.platforms[0].digest, pushed.platforms[1].digest);

      // Pulling like a bootc host: pick the platform, then read the config's labels.
      const arm = await client.fetchManifest(`${host}/os:multi`, {
        platform: { architecture: "arm64" },
      });
      assert.equal(arm.digest, pushed.platforms[1].digest);
      const configDigest = (arm.manifest.config as { digest: string }).digest;
      const config = JSON.parse(
        new TextDecoder().decode(await client.fetchBlob(`${host}/os:multi`, configDigest)),
      );
      assert.equal(config.architecture, "arm64");
      assert.equal(config.config.Labels["org.opencontainers.image.version"], "2.0");
      assert.equal(config.config.Labels["containers.bootc"], "1");
      await expectRegistryError(
        client.fetchManifest(`${host}/os:multi`, { platform: { architecture: "s390x" } }),
        "NotFound",
        /no manifest for platform linux\/s390x .*available: linux\/amd64, linux\/arm64\/v8/,
      );
    });
  });

  await t.step("a moved tag is seen on the next resolve", async () => {
    const first = await registry.pushImage({ repository: "os", tag: "stable", version: "3.0" });
    const second = await registry.pushImage({ repository: "os", tag: "v3.1", version: "3.1" });
    await withClient(registry, {}, async (client) => {
      assert.equal((await client.resolve(`${host}/os:stable`)).digest, first.digest);
      assert.equal(await registry.tagExisting("os", "v3.1", "stable"), second.digest);
      assert.equal((await client.resolve(`${host}/os:stable`)).digest, second.digest);
      assert.notEqual(first.digest, second.digest);
    });
  });

  await t.step("fetchManifest and fetchBlob return verified bytes", async () => {
    const pushed = await registry.pushImage({
      repository: "os",
      tag: "labels",
      version: "4.2",
      labels: { "org.example.channel": "beta" },
    });
    await withClient(registry, {}, async (client) => {
      const manifest = await client.fetchManifest(`${host}/os:labels`);
      assert.equal(manifest.digest, pushed.digest);
      assert.equal(manifest.mediaType, OCI_MANIFEST);
      assert.equal((manifest.manifest.config as { digest: string }).digest, pushed.configDigest);
      const config = JSON.parse(
        new TextDecoder().decode(await client.fetchBlob(`${host}/os:labels`, pushed.configDigest)),
      );
      assert.deepEqual(config.config.Labels, {
        "containers.bootc": "1",
        "org.opencontainers.image.version": "4.2",
        "org.example.channel": "beta",
      });
      const layer = await client.fetchBlob(`${host}/os:labels`, pushed.layerDigest);
      assert.deepEqual([...layer.subarray(0, 2)], [0x1f, 0x8b]); // gzip magic
    });
  });

  await t.step("a missing tag, digest, repository or blob is NotFound", async () => {
    await withClient(registry, {}, async (client) => {
      await expectRegistryError(
        client.resolve(`${host}/os:v9`),
        "NotFound",
        `manifest unknown: tag "v9" not found in ${host}/os (HTTP 404)`,
      );
      const missing = "sha256:" + "0".repeat(64);
      await expectRegistryError(
        client.resolve(`${host}/os@${missing}`),
        "NotFound",
        `manifest unknown: digest ${missing} not found in ${host}/os (HTTP 404)`,
      );
      await expectRegistryError(
        client.listTags(`${host}/nothing-here`),
        "NotFound",
        `repository unknown: repository "nothing-here" not found in ${host} (HTTP 404)`,
      );
      await expectRegistryError(
        client.fetchBlob(`${host}/os`, missing),
        "NotFound",
        `blob unknown: blob ${missing} not found in ${host}/os (HTTP 404)`,
      );
    });
  });

  await t.step("listTags returns every tag; the catalog pages through Link headers", async () => {
    const tags = ["t1", "t2", "t3", "t4", "t5", "t6", "t7"];
    const pushed = await registry.pushImage({ repository: "paged", tag: "t0", version: "0" });
    for (const tag of tags) await registry.tagExisting("paged", pushed.digest, tag);
    for (const repo of ["r1", "r2", "r3", "r4"]) {
      await registry.pushImage({ repository: repo, tag: "v1", version: "1" });
    }
    const { fetchFn, urls } = recordingFetch();
    await withClient(registry, { fetch: fetchFn }, async (client) => {
      // registry 2.8 ignores n= on tags/list (it pages only the catalog), so this is one page here;
      // tag paging itself is covered by client_test.ts.
      assert.deepEqual((await client.listTags(`${host}/paged`, { pageSize: 3 })).sort(), [
        "t0",
        ...tags,
      ]);
      assert.equal(urls.at(-1)?.searchParams.get("n"), "3");

      urls.length = 0;
      const repositories = await client.listRepositories(host, { pageSize: 2 });
      assert.deepEqual(repositories.sort(), ["os", "paged", "r1", "r2", "r3", "r4"]);
      assert.equal(urls.length, 3, `pages fetched: ${urls.map((u) => u.search).join(" ")}`);
      assert.deepEqual(urls.map((u) => u.searchParams.get("last")), [null, "paged", "r2"]);
    });
  });

  await t.step("HTTPS to a plain-HTTP registry fails with a hint", async () => {
    const client = new RegistryClient({ timeoutMs: 10_000 });
    try {
      await expectRegistryError(
        client.resolve(`${host}/os:v1`),
        "Unreachable",
        new RegExp(`^cannot reach registry ${host}: .*list it as an insecure registry`),
      );
    } finally {
      client.close();
    }
  });
});

Deno.test("unreachable registries: connection refused and no answer", async () => {
  const closed = `127.0.0.1:${freePort()}`;
  const refused = new RegistryClient({ insecureRegistries: [closed], timeoutMs: 5_000 });
  try {
    await expectRegistryError(
      refused.resolve(`${closed}/os:v1`),
      "Unreachable",
      `cannot reach registry ${closed}: connection refused`,
    );
  } finally {
    refused.close();
  }

  // A socket that accepts and never answers.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const silent = `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
  const accepted: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) accepted.push(conn);
  })();
  const client = new RegistryClient({ insecureRegistries: [silent], timeoutMs: 300 });
  try {
    await expectRegistryError(
      client.resolve(`${silent}/os:v1`),
      "Unreachable",
      `cannot reach registry ${silent}: no answer within 0.3s`,
    );
  } finally {
    client.close();
    listener.close();
    await accepting;
    for (const conn of accepted) conn.close();
  }
});

Deno.test("htpasswd (Basic) auth over TLS with a test CA", async (t) => {
  await using registry = await startRegistry({
    auth: "htpasswd",
    tls: true,
    users: { alice: "correct horse" },
  });
  const host = registry.host;
  const pushed = await registry.pushImage({ repository: "team/os", tag: "v1", version: "1.0" });
  assert.ok(registry.caCertPem?.includes("BEGIN CERTIFICATE"));

  await t.step("credentials from the .dockerconfigjson are used", async () => {
    await withClient(
      registry,
      { dockerConfigJson: registry.dockerConfigJson("alice") },
      async (client) => {
        assert.equal((await client.resolve(`${host}/team/os:v1`)).digest, pushed.digest);
        assert.deepEqual(await client.listTags(`${host}/team/os`), ["v1"]);
        const config = await client.fetchBlob(`${host}/team/os`, pushed.configDigest);
        assert.equal(JSON.parse(new TextDecoder().decode(config)).architecture, "amd64");
      },
    );
  });

  await t.step("username/password fields and an https:// key work too", async () => {
    const secret = {
      auths: { [`https://${host}/`]: { username: "alice", password: "correct horse" } },
    };
    await withClient(registry, { dockerConfigJson: secret }, async (client) => {
      assert.equal((await client.resolve(`${host}/team/os:v1`)).digest, pushed.digest);
    });
  });

  await t.step("wrong credentials are Unauthorized", async () => {
    await withClient(
      registry,
      { dockerConfigJson: registry.dockerConfigJson("alice", "wrong") },
      async (client) => {
        await expectRegistryError(
          client.resolve(`${host}/team/os:v1`),
          "Unauthorized",
          `unauthorized: registry ${host} rejected the credentials from pull secret (HTTP 401); check the Secret`,
        );
      },
    );
  });

  await t.step("no credentials, or none for this host, are Unauthorized", async () => {
    await withClient(registry, {}, async (client) => {
      await expectRegistryError(
        client.resolve(`${host}/team/os:v1`),
        "Unauthorized",
        new RegExp(
          `^unauthorized: registry ${host} requires credentials for ${host}/team/os and no pull secret is configured \\(HTTP 401\\)`,
        ),
      );
    });
    const otherHost = {
      auths: { "127.0.0.1:1": { username: "alice", password: "correct horse" } },
    };
    await withClient(registry, { dockerConfigJson: otherHost }, async (client) => {
      await expectRegistryError(
        client.resolve(`${host}/team/os:v1`),
        "Unauthorized",
        new RegExp(`the pull secret has no credentials for ${host}`),
      );
    });
  });

  await t.step("without the CA the certificate is not trusted", async () => {
    const client = new RegistryClient({ dockerConfigJson: registry.dockerConfigJson("alice") });
    try {
      await expectRegistryError(
        client.resolve(`${host}/team/os:v1`),
        "Unreachable",
        new RegExp(
          `^cannot reach registry ${host}: its TLS certificate is not trusted .*private CA`,
        ),
      );
    } finally {
      client.close();
    }
  });
});

Deno.test("token (Bearer) auth with a JWT issuer the registry trusts", async (t) => {
  await using registry = await startRegistry({ auth: "token", users: { bob: "hunter2" } });
  const host = registry.host;
  const issuer = registry.tokenIssuer!;
  const single = await registry.pushImage({ repository: "os", tag: "v1", version: "1.0" });
  const index = await registry.pushIndex({
    repository: "os",
    tag: "multi",
    images: [{ architecture: "amd64", version: "2" }, { architecture: "arm64", version: "2" }],
  });

  await t.step("challenge → token with Basic credentials → cached until it expires", async () => {
    const clock = new FakeClock(new Date());
    const before = issuer.requests.length;
    await withClient(
      registry,
      { dockerConfigJson: registry.dockerConfigJson("bob"), clock },
      async (client) => {
        assert.equal((await client.resolve(`${host}/os:v1`)).digest, single.digest);
        const resolved = await client.resolve(`${host}/os:multi`);
        assert.equal(resolved.digest, index.digest);
        assert.deepEqual(
          resolved.platforms?.map((p) => p.digest),
          index.platforms.map((p) => p.digest),
        );
        assert.deepEqual((await client.listTags(`${host}/os`)).sort(), ["multi", "v1"]);
        assert.deepEqual(issuer.requests.slice(before), [
          { user: "bob", scopes: ["repository:os:pull"], status: 200 },
        ]);
        clock.advance(301_000); // past the 300 s token lifetime
        assert.equal((await client.resolve(`${host}/os:v1`)).digest, single.digest);
        assert.equal(issuer.requests.length, before + 2);
      },
    );
  });

  await t.step("wrong credentials are rejected by the token service", async () => {
    const realmHost = new URL(issuer.realm).host;
    await withClient(
      registry,
      { dockerConfigJson: registry.dockerConfigJson("bob", "nope") },
      async (client) => {
        await expectRegistryError(
          client.resolve(`${host}/os:v1`),
          "Unauthorized",
          `unauthorized: registry ${host} rejected the credentials from pull secret via its token service ${realmHost} (HTTP 401); check the Secret`,
        );
      },
    );
  });

  await t.step("an anonymous token without access is Unauthorized", async () => {
    await withClient(registry, {}, async (client) => {
      await expectRegistryError(
        client.resolve(`${host}/os:v1`),
        "Unauthorized",
        /requires credentials for .*\/os and no pull secret is configured \(HTTP 401\)/,
      );
    });
  });
});
