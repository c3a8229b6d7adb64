import assert from "node:assert/strict";
import { issueCa, issueLeaf } from "../../tests/harness/pki.ts";
import {
  credentialsFromSecret,
  MAX_REPLY_BYTES,
  postJson,
  webhookSecretProblem,
} from "./client.ts";

/** The error `call` rejects with (fails when it resolves). */
async function rejection(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

interface Seen {
  method: string;
  headers: Headers;
  body: string;
}

/** A local server answering with `respond`; records each request. */
function serve(
  respond: (req: Request) => Response | Promise<Response>,
  tls?: { cert: string; key: string },
) {
  const seen: Seen[] = [];
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    ...(tls ?? {}),
  }, async (req) => {
    // A copy: a request's headers are gone once it closes (HTTP/2 over TLS).
    seen.push({ method: req.method, headers: new Headers(req.headers), body: await req.text() });
    return respond(req);
  });
  const scheme = tls ? "https" : "http";
  return {
    seen,
    url: `${scheme}://127.0.0.1:${server.addr.port}/hook`,
    close: () => server.shutdown(),
  };
}

async function testPki() {
  const dir = await Deno.makeTempDir();
  const ca = await issueCa({ dir, name: "ca", days: 1, profile: { commonName: "hooks-ca" } });
  const leaf = await issueLeaf({
    dir,
    name: "server",
    days: 1,
    ca,
    profile: { commonName: "hooks", extendedKeyUsage: ["serverAuth"], ips: ["127.0.0.1"] },
  });
  const client = await issueLeaf({
    dir,
    name: "client",
    days: 1,
    ca,
    profile: { commonName: "controller", extendedKeyUsage: ["clientAuth"] },
  });
  const read = (path: string) => Deno.readTextFile(path);
  const result = {
    caCert: await read(ca.cert),
    serverCert: await read(leaf.cert),
    serverKey: await read(leaf.key),
    clientCert: await read(client.cert),
    clientKey: await read(client.key),
  };
  await Deno.remove(dir, { recursive: true });
  return result;
}

Deno.test("postJson sends JSON with the bearer token and extra headers, returns status and body", async () => {
  const pki = await testPki();
  const server = serve(() => new Response("accepted", { status: 202 }), {
    cert: pki.serverCert,
    key: pki.serverKey,
  });
  try {
    const reply = await postJson(
      { url: server.url, timeoutSeconds: 5, bearerToken: "s3cret", caBundle: pki.caCert },
      { hello: "world" },
      { headers: { "content-type": "application/cloudevents+json", "x-extra": "1" } },
    );
    assert.deepEqual(reply, { status: 202, body: "accepted" });
    assert.deepEqual(server.seen.length, 1);
    const [call] = server.seen;
    assert.deepEqual(call.method, "POST");
    assert.deepEqual(JSON.parse(call.body), { hello: "world" });
    assert.deepEqual(call.headers.get("content-type"), "application/cloudevents+json");
    assert.deepEqual(call.headers.get("x-extra"), "1");
    assert.deepEqual(call.headers.get("authorization"), "Bearer s3cret");
  } finally {
    await server.close();
  }
});

Deno.test("postJson never sends credentials over plain http", async () => {
  const server = serve(() => new Response("ok"));
  try {
    for (const creds of [{ bearerToken: "s3cret" }, { clientCert: { cert: "c", key: "k" } }]) {
      const err = await rejection(() =>
        postJson({ url: server.url, timeoutSeconds: 5, ...creds }, {})
      );
      assert.match(String(err), /need https/);
    }
    assert.equal(server.seen.length, 0, "nothing reached the server");
  } finally {
    await server.close();
  }
});

Deno.test("postJson resolves with error statuses and without a token sends no Authorization", async () => {
  const server = serve(() => new Response("nope", { status: 503 }));
  try {
    const reply = await postJson({ url: server.url, timeoutSeconds: 5 }, {});
    assert.deepEqual(reply, { status: 503, body: "nope" });
    assert.deepEqual(server.seen[0].headers.get("authorization"), null);
    assert.deepEqual(server.seen[0].headers.get("content-type"), "application/json");
  } finally {
    await server.close();
  }
});

Deno.test("postJson does not follow redirects (the token stays with the endpoint)", async () => {
  const pki = await testPki();
  const tls = { cert: pki.serverCert, key: pki.serverKey };
  const target = serve(() => new Response("moved here"), tls);
  const server = serve(() => Response.redirect(target.url, 307), tls);
  try {
    const reply = await postJson(
      { url: server.url, timeoutSeconds: 5, bearerToken: "t", caBundle: pki.caCert },
      {},
    );
    assert.deepEqual(reply.status, 307);
    assert.deepEqual(target.seen.length, 0);
  } finally {
    await server.close();
    await target.close();
  }
});

Deno.test("postJson caps the reply body", async () => {
  const server = serve(() => new Response("x".repeat(MAX_REPLY_BYTES * 3)));
  try {
    const reply = await postJson({ url: server.url, timeoutSeconds: 5 }, {});
    assert.deepEqual(reply.body.length, MAX_REPLY_BYTES);
  } finally {
    await server.close();
  }
});

Deno.test("postJson rejects with a TimeoutError when the endpoint is too slow", async () => {
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  const server = serve(async () => {
    await released;
    return new Response("late");
  });
  try {
    const started = Date.now();
    const err = await rejection(() => postJson({ url: server.url, timeoutSeconds: 1 }, {}));
    assert(err instanceof DOMException && err.name === "TimeoutError", String(err));
    assert(Date.now() - started < 4000);
  } finally {
    release();
    await server.close();
  }
});

Deno.test("postJson honours the caller's abort signal", async () => {
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  const server = serve(async () => {
    await released;
    return new Response("late");
  });
  try {
    const controller = new AbortController();
    const call = postJson({ url: server.url, timeoutSeconds: 30 }, {}, {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    const err = await rejection(() => call);
    assert(err instanceof DOMException && err.name === "AbortError", String(err));
  } finally {
    release();
    await server.close();
  }
});

Deno.test("postJson rejects non-HTTP URLs and refused connections", async () => {
  await assert.rejects(
    () => postJson({ url: "file:///etc/passwd", timeoutSeconds: 1 }, {}),
    TypeError,
  );
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  await assert.rejects(() => postJson({ url: `http://127.0.0.1:${port}/`, timeoutSeconds: 2 }, {}));
});

Deno.test("postJson verifies TLS: trusted with the CA bundle, refused without it", async () => {
  const pki = await testPki();
  const server = serve(() => new Response("ok"), { cert: pki.serverCert, key: pki.serverKey });
  try {
    await assert.rejects(() => postJson({ url: server.url, timeoutSeconds: 5 }, {}));
    const reply = await postJson({ url: server.url, timeoutSeconds: 5, caBundle: pki.caCert }, {});
    assert.deepEqual(reply, { status: 200, body: "ok" });
    // A client certificate goes with the same verified client.
    const mtls = await postJson({
      url: server.url,
      timeoutSeconds: 5,
      caBundle: pki.caCert,
      clientCert: { cert: pki.clientCert, key: pki.clientKey },
    }, {});
    assert.deepEqual(mtls.status, 200);
    assert.deepEqual(server.seen.length, 2);
  } finally {
    await server.close();
  }
});

Deno.test("credentialsFromSecret reads token, client certificate and CA", () => {
  const b64 = (s: string) => btoa(s);
  assert.deepEqual(
    credentialsFromSecret({
      token: b64("abc\n"),
      "tls.crt": b64("CERT"),
      "tls.key": b64("KEY"),
      "ca.crt": b64("CA"),
    }),
    { bearerToken: "abc", clientCert: { cert: "CERT", key: "KEY" }, caBundle: "CA" },
  );
  assert.deepEqual(credentialsFromSecret({ token: b64("t") }), { bearerToken: "t" });
  assert.deepEqual(credentialsFromSecret({}), {});
  assert.throws(() => credentialsFromSecret({ "tls.crt": b64("CERT") }), /tls.key/);
});

Deno.test("webhookSecretProblem: only Secrets opted in by label, never a service-account token", () => {
  const labels = { "bootc.dev/webhook-credentials": "true" };
  assert.equal(
    webhookSecretProblem({ type: "Opaque", metadata: { name: "s", labels } }),
    undefined,
  );
  assert.match(
    webhookSecretProblem({ type: "Opaque", metadata: { name: "s" } }) ?? "",
    /Secret s lacks the label bootc.dev\/webhook-credentials/,
  );
  assert.match(
    webhookSecretProblem({
      type: "kubernetes.io/service-account-token",
      metadata: { name: "t", labels },
    }) ?? "",
    /service-account token/,
  );
});
