import assert from "node:assert/strict";
import { StaticTokenSource, TokenFileSource } from "./config.ts";
import { buildUrl, createTransport } from "./transport.ts";

Deno.test("buildUrl joins server prefix, path and defined query values", () => {
  assert.equal(
    buildUrl("https://h:6443/prefix/", {
      path: "/api/v1/pods",
      query: { watch: true, limit: 5, continue: undefined, labelSelector: "a=b,c" },
    }),
    "https://h:6443/prefix/api/v1/pods?watch=true&limit=5&labelSelector=a%3Db%2Cc",
  );
});

Deno.test("transport sends the bearer token and retries once with a re-read token after 401", async () => {
  const dir = await Deno.makeTempDir();
  const seen: string[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      seen.push(`${req.method} ${new URL(req.url).pathname} ${req.headers.get("authorization")}`);
      if (req.headers.get("authorization") !== "Bearer new") {
        return new Response(JSON.stringify({ kind: "Status", code: 401, reason: "Unauthorized" }), {
          status: 401,
        });
      }
      return Response.json({ body: await req.text(), ct: req.headers.get("content-type") });
    },
  );
  try {
    await Deno.writeTextFile(`${dir}/token`, "old");
    const source = new TokenFileSource(`${dir}/token`);
    const transport = createTransport({
      server: `http://127.0.0.1:${server.addr.port}`,
      credentials: source,
      namespace: "default",
      source: "kubeconfig",
    });
    assert.equal((await source.get()).token, "old"); // cache the old token
    await Deno.writeTextFile(`${dir}/token`, "new"); // rotation
    const res = await transport.request({
      method: "POST",
      path: "/api/v1/namespaces",
      body: '{"a":1}',
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { body: '{"a":1}', ct: "application/json" });
    assert.deepEqual(seen, [
      "POST /api/v1/namespaces Bearer old",
      "POST /api/v1/namespaces Bearer new",
    ]);
    // A static token that stays wrong: the 401 is returned after one retry.
    const bad = createTransport({
      server: `http://127.0.0.1:${server.addr.port}`,
      credentials: new StaticTokenSource("wrong"),
      namespace: "default",
      source: "kubeconfig",
    });
    const r2 = await bad.request({ method: "GET", path: "/x" });
    assert.equal(r2.status, 401);
    await r2.body?.cancel();
    bad.close();
    transport.close();
    await assert.rejects(() => transport.request({ method: "GET", path: "/" }), /closed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function openssl(args: string[], cwd: string) {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "null", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

Deno.test("transport trusts the configured CA and presents the client certificate", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // A v3 CA and server certificate (Deno rejects v1 certificates).
    await openssl([
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "1",
      "-subj",
      "/CN=test-ca",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ], dir);
    await Deno.writeTextFile(
      `${dir}/ext`,
      "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n",
    );
    for (const name of ["server", "client"]) {
      await openssl([
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.csr`,
        "-subj",
        `/CN=${name}`,
      ], dir);
      await openssl([
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        `${name}.crt`,
        "-days",
        "1",
        "-extfile",
        "ext",
      ], dir);
    }
    const read = (f: string) => Deno.readTextFileSync(`${dir}/${f}`);
    await using server = Deno.serve(
      {
        hostname: "127.0.0.1",
        port: 0,
        cert: read("server.crt"),
        key: read("server.key"),
        onListen: () => {},
      },
      () => Response.json({ ok: true }),
    );
    const url = `https://127.0.0.1:${server.addr.port}`;
    const trusted = createTransport({
      server: url,
      caCerts: [read("ca.crt")],
      clientCert: read("client.crt"),
      clientKey: read("client.key"),
      namespace: "default",
      source: "kubeconfig",
    });
    const res = await trusted.request({ method: "GET", path: "/version" });
    assert.deepEqual(await res.json(), { ok: true });
    trusted.close();

    const untrusted = createTransport({ server: url, namespace: "default", source: "kubeconfig" });
    await assert.rejects(() => untrusted.request({ method: "GET", path: "/version" }));
    untrusted.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
