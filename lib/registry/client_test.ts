// Unit tests of the client's decisions through the `fetch` seam; the real
// registry is exercised in registry_integration_test.ts.
import assert from "node:assert/strict";
import { FakeClock } from "../clock.ts";
import { RegistryClient } from "./client.ts";
import { computeDigest } from "./digest.ts";
import { RegistryError } from "./errors.ts";
import { OCI_INDEX, OCI_MANIFEST } from "./media_types.ts";

type Handler = (request: Request) => Response | Promise<Response>;

/** A fetch seam that records requests and answers with `handler`. */
function seam(handler: Handler) {
  const requests: Request[] = [];
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    requests.push(request);
    return Promise.resolve(handler(request));
  }) as typeof fetch;
  return { fetchFn, requests };
}

const json = (body: unknown, init: ResponseInit = {}) =>
  new Response(JSON.stringify(body), {
    ...init,
    headers: { "content-type": "application/json", ...init.headers },
  });

async function expectRegistryError(p: Promise<unknown>, kind: string, message: RegExp) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof RegistryError, String(e));
    assert.equal(e.kind, kind, e.message);
    assert.match(e.message, message);
    return true;
  });
}

Deno.test("listTags follows relative Link pages and asks for the page size", async () => {
  const pages: Record<string, { tags: string[]; next?: string }> = {
    "": { tags: ["a", "b"], next: "/v2/org/os/tags/list?last=b&n=2" },
    "b": { tags: ["c", "d"], next: "/v2/org/os/tags/list?last=d&n=2" },
    "d": { tags: ["e"] },
  };
  const { fetchFn, requests } = seam((r) => {
    const url = new URL(r.url);
    assert.equal(url.searchParams.get("n"), "2");
    const page = pages[url.searchParams.get("last") ?? ""];
    return json(
      { name: "org/os", tags: page.tags },
      page.next ? { headers: { link: `<${page.next}>; rel="next"` } } : {},
    );
  });
  const client = new RegistryClient({ fetch: fetchFn });
  assert.deepEqual(await client.listTags("r.example/org/os", { pageSize: 2 }), [
    "a",
    "b",
    "c",
    "d",
    "e",
  ]);
  assert.equal(requests.length, 3);
  assert.ok(requests.every((r) => r.url.startsWith("https://r.example/v2/org/os/tags/list")));
});

Deno.test("listTags rejects pagination loops and links to other hosts; null tags is empty", async () => {
  const loop = seam(() =>
    json({ tags: ["a"] }, { headers: { link: '</v2/os/tags/list?n=1>; rel="next"' } })
  );
  await expectRegistryError(
    new RegistryClient({ fetch: loop.fetchFn }).listTags("r.example/os", { pageSize: 1 }),
    "Protocol",
    /pagination loop/,
  );
  const away = seam(() =>
    json({ tags: ["a"] }, { headers: { link: '<https://evil.example/x>; rel="next"' } })
  );
  await expectRegistryError(
    new RegistryClient({ fetch: away.fetchFn }).listTags("r.example/os"),
    "Protocol",
    /another host \(evil.example\)/,
  );
  const empty = seam(() => json({ name: "os", tags: null }));
  assert.deepEqual(await new RegistryClient({ fetch: empty.fetchFn }).listTags("r.example/os"), []);
});

Deno.test("Bearer tokens are cached per scope until expires_in, then fetched again", async () => {
  const clock = new FakeClock("2026-01-01T00:00:00Z");
  let tokenRequests = 0;
  const manifest = new TextEncoder().encode(
    JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST }),
  );
  const digest = await computeDigest(manifest);
  const { fetchFn, requests } = seam((r) => {
    const url = new URL(r.url);
    if (url.host === "auth.example") {
      tokenRequests++;
      assert.equal(url.searchParams.get("service"), "reg");
      assert.equal(url.searchParams.get("scope"), "repository:os:pull");
      assert.equal(r.headers.get("authorization"), `Basic ${btoa("u:p")}`);
      return json({
        token: `t${tokenRequests}`,
        expires_in: 300,
        issued_at: "2026-01-01T00:00:00Z",
      });
    }
    if (!r.headers.get("authorization")?.startsWith("Bearer t")) {
      return json({ errors: [{ code: "UNAUTHORIZED", message: "authentication required" }] }, {
        status: 401,
        headers: {
          "www-authenticate":
            'Bearer realm="https://auth.example/token",service="reg",scope="repository:os:pull"',
        },
      });
    }
    return new Response(r.method === "HEAD" ? null : manifest, {
      headers: { "content-type": OCI_MANIFEST, "docker-content-digest": digest },
    });
  });
  const client = new RegistryClient({
    fetch: fetchFn,
    clock,
    dockerConfigJson: { auths: { "r.example": { username: "u", password: "p" } } },
  });
  assert.equal((await client.resolve("r.example/os:v1")).digest, digest);
  assert.equal(tokenRequests, 1);
  await client.resolve("r.example/os:v1");
  assert.equal(tokenRequests, 1, "a cached token is reused");
  assert.equal(requests.filter((r) => new URL(r.url).host === "r.example").length, 3);
  clock.advance(296_000); // within the 5 s safety margin of the 300 s lifetime
  await client.resolve("r.example/os:v1");
  assert.equal(tokenRequests, 2, "an expiring token is replaced");
  assert.equal(requests.at(-1)?.headers.get("authorization"), "Bearer t2");
});

Deno.test("a HEAD without digest falls back to GET and computes the digest", async () => {
  const body = new TextEncoder().encode(
    JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST }),
  );
  const { fetchFn, requests } = seam((r) =>
    new Response(r.method === "HEAD" ? null : body, {
      headers: { "content-type": "application/json" },
    })
  );
  const resolved = await new RegistryClient({ fetch: fetchFn }).resolve("r.example/os:v1");
  assert.deepEqual(resolved, { digest: await computeDigest(body), mediaType: OCI_MANIFEST });
  assert.deepEqual(requests.map((r) => r.method), ["HEAD", "GET"]);
  assert.match(
    requests[0].headers.get("accept") ?? "",
    /oci\.image\.index.*manifest\.list.*oci\.image\.manifest.*manifest\.v2/,
  );
});

Deno.test("an index body whose digest differs from Docker-Content-Digest is a Protocol error", async () => {
  const body = new TextEncoder().encode(
    JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [] }),
  );
  const { fetchFn } = seam(() =>
    new Response(body, {
      headers: { "content-type": OCI_INDEX, "docker-content-digest": "sha256:" + "0".repeat(64) },
    })
  );
  await expectRegistryError(
    new RegistryClient({ fetch: fetchFn }).resolve("r.example/os:v1"),
    "Protocol",
    /content has digest sha256:[0-9a-f]{64}, not sha256:0{64}/,
  );
});

Deno.test("index platforms skip attestations and unknown platforms", async () => {
  const index = {
    schemaVersion: 2,
    mediaType: OCI_INDEX,
    manifests: [
      { digest: "sha256:" + "1".repeat(64), platform: { os: "linux", architecture: "amd64" } },
      {
        digest: "sha256:" + "2".repeat(64),
        platform: { os: "linux", architecture: "arm64", variant: "v8" },
      },
      {
        digest: "sha256:" + "3".repeat(64),
        platform: { os: "unknown", architecture: "unknown" },
        annotations: { "vnd.docker.reference.type": "attestation-manifest" },
      },
    ],
  };
  const body = new TextEncoder().encode(JSON.stringify(index));
  const digest = await computeDigest(body);
  const { fetchFn } = seam(() =>
    new Response(body, { headers: { "content-type": OCI_INDEX, "docker-content-digest": digest } })
  );
  assert.deepEqual(await new RegistryClient({ fetch: fetchFn }).resolve(`r.example/os@${digest}`), {
    digest,
    mediaType: OCI_INDEX,
    platforms: [
      { os: "linux", architecture: "amd64", digest: "sha256:" + "1".repeat(64) },
      { os: "linux", architecture: "arm64", variant: "v8", digest: "sha256:" + "2".repeat(64) },
    ],
  });
});

Deno.test("fetchBlob rejects content that does not match its digest", async () => {
  const { fetchFn } = seam(() => new Response("tampered"));
  await expectRegistryError(
    new RegistryClient({ fetch: fetchFn }).fetchBlob("r.example/os:v1", "sha256:" + "a".repeat(64)),
    "Protocol",
    /blob sha256:a{64} whose content has digest/,
  );
});

Deno.test("a registry that never answers times out as Unreachable", async () => {
  const fetchFn =
    ((_input: RequestInfo | URL, init?: RequestInit) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason));
      })) as typeof fetch;
  await expectRegistryError(
    new RegistryClient({ fetch: fetchFn, timeoutMs: 50 }).resolve("r.example/os:v1"),
    "Unreachable",
    /^cannot reach registry r.example: no answer within 0.05s$/,
  );
});

Deno.test("plain HTTP only for insecure registries; invalid references are InvalidReference", async () => {
  const { fetchFn, requests } = seam(() => json({ tags: [] }));
  const client = new RegistryClient({ fetch: fetchFn, insecureRegistries: ["127.0.0.1:5000"] });
  await client.listTags("127.0.0.1:5000/os");
  await client.listTags("127.0.0.1:5001/os");
  assert.deepEqual(requests.map((r) => new URL(r.url).origin), [
    "http://127.0.0.1:5000",
    "https://127.0.0.1:5001",
  ]);
  await expectRegistryError(
    client.resolve("127.0.0.1:5000/OS:v1"),
    "InvalidReference",
    /lowercase/,
  );
});

Deno.test("an http token realm of a TLS registry is refused (credentials would leak)", async () => {
  const { fetchFn } = seam(() =>
    new Response(null, {
      status: 401,
      headers: { "www-authenticate": 'Bearer realm="http://auth.example/token",service="s"' },
    })
  );
  const client = new RegistryClient({
    fetch: fetchFn,
    dockerConfigJson: { auths: { "r.example": { username: "u", password: "p" } } },
  });
  await expectRegistryError(
    client.resolve("r.example/os:v1"),
    "Protocol",
    /plain-HTTP token service auth.example/,
  );
});
