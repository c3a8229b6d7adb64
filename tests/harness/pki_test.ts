import assert from "node:assert/strict";
import { generatePki, openssl, opensslConfig } from "./pki.ts";

Deno.test("opensslConfig renders subject, SANs and v3 extensions", () => {
  const text = opensslConfig({
    commonName: "admin",
    organizations: ["system:masters", "team"],
    extendedKeyUsage: ["clientAuth"],
    ips: ["127.0.0.1"],
    dnsNames: ["localhost"],
  });
  assert.match(text, /^CN = admin$/m);
  assert.match(text, /^0\.O = system:masters$/m);
  assert.match(text, /^1\.O = team$/m);
  assert.match(text, /^basicConstraints = critical, CA:FALSE$/m);
  assert.match(text, /^extendedKeyUsage = clientAuth$/m);
  assert.match(text, /^subjectAltName = IP:127\.0\.0\.1, DNS:localhost$/m);
  const ca = opensslConfig({ commonName: "ca", ca: true, extendedKeyUsage: ["serverAuth"] });
  assert.match(ca, /CA:TRUE/);
  assert.doesNotMatch(ca, /extendedKeyUsage/);
});

Deno.test("generatePki issues v3 certificates that chain to the CA", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-pki-" });
  try {
    const pki = await generatePki({ dir: `${dir}/pki` });
    for (const cert of [pki.serverCert, pki.adminCert]) {
      const verify = await openssl(["verify", "-CAfile", pki.caCert, cert]);
      assert.match(verify, /: OK/);
    }
    const server = await openssl(["x509", "-in", pki.serverCert, "-noout", "-text"]);
    assert.match(server, /Version: 3 \(0x2\)/);
    assert.match(server, /IP Address:127\.0\.0\.1/);
    assert.match(server, /DNS:kubernetes\.default\.svc/);
    assert.match(server, /TLS Web Server Authentication/);
    const admin = await openssl([
      "x509",
      "-in",
      pki.adminCert,
      "-noout",
      "-subject",
      "-ext",
      "extendedKeyUsage",
    ]);
    assert.match(admin, /O ?= ?system:masters/);
    assert.match(admin, /TLS Web Client Authentication/);
    const ca = await openssl(["x509", "-in", pki.caCert, "-noout", "-text"]);
    assert.match(ca, /Version: 3 \(0x2\)/);
    assert.match(ca, /CA:TRUE/);
    // The service-account public key is the public half of the signing key.
    const derived = await openssl(["pkey", "-in", pki.serviceAccountKey, "-pubout"]);
    assert.equal(derived, await Deno.readTextFile(pki.serviceAccountPub));
    assert.equal((await Deno.stat(pki.adminKey)).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Deno's TLS stack accepts the certificates (mTLS round trip)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-pki-" });
  try {
    const pki = await generatePki({ dir });
    const read = (p: string) => Deno.readTextFile(p);
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert: await read(pki.serverCert),
      key: await read(pki.serverKey),
      onListen: () => {},
    }, () => new Response("hello over tls"));
    const client = Deno.createHttpClient({
      caCerts: [await read(pki.caCert)],
      cert: await read(pki.adminCert),
      key: await read(pki.adminKey),
    });
    try {
      const res = await fetch(`https://127.0.0.1:${server.addr.port}/`, { client });
      assert.equal(await res.text(), "hello over tls");
    } finally {
      client.close();
      await server.shutdown();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
