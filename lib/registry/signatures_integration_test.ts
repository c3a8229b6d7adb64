// Cosign signatures made by the real cosign (built from the Go module proxy) in a real
// CNCF distribution registry, verified by lib/registry/signatures.ts.
import assert from "node:assert/strict";
import { startRegistry } from "../../tests/harness/registry.ts";
import { keyPair, sign } from "../../tests/cosign/cosign.ts";
import { RegistryClient } from "./mod.ts";
import { signatureTag, verifyImageSignatures } from "./signatures.ts";

Deno.test("signatures: real cosign signatures verify, and every forgery is refused", async () => {
  await using registry = await startRegistry();
  const dir = await Deno.makeTempDir({ prefix: "cosign-test-" });
  const client = new RegistryClient(registry.clientOptions());
  try {
    const [good, wrong] = await Promise.all([keyPair(dir, "good"), keyPair(dir, "wrong")]);
    const trusted = [{ name: "keys[0]", pem: good.pem }];
    const at = (digest: string) => `${registry.host}/os@${digest}`;
    const signed = await registry.pushImage({ repository: "os", tag: "v1", version: "1" });
    const unsigned = await registry.pushImage({ repository: "os", tag: "v2", version: "2" });
    const wrongly = await registry.pushImage({ repository: "os", tag: "v3", version: "3" });
    const copied = await registry.pushImage({ repository: "os", tag: "v4", version: "4" });
    await sign(at(signed.digest), good.key);
    await sign(at(wrongly.digest), wrong.key);

    assert.deepEqual(await verifyImageSignatures(client, at(signed.digest), trusted), {
      verified: true,
      by: "keys[0]",
    });
    // Any trusted key will do: the second one verifies here.
    assert.deepEqual(
      await verifyImageSignatures(client, at(signed.digest), [
        { name: "keys[0]", pem: wrong.pem },
        { name: "keys[1]", pem: good.pem },
      ]),
      { verified: true, by: "keys[1]" },
    );
    assert.deepEqual(await verifyImageSignatures(client, at(unsigned.digest), trusted), {
      verified: false,
      message: "no signature (no cosign signature tag)",
      unsigned: true,
    });
    assert.deepEqual(await verifyImageSignatures(client, at(wrongly.digest), trusted), {
      verified: false,
      message: "none of 1 signature(s) verifies with the trusted key(s)",
    });
    // A genuine signature copied onto another image's signature tag names the wrong digest.
    await registry.tagExisting("os", signatureTag(signed.digest), signatureTag(copied.digest));
    assert.deepEqual(await verifyImageSignatures(client, at(copied.digest), trusted), {
      verified: false,
      message: "the signed payload names another image digest",
    });

    // An index signed alone does not vouch for its platform manifests; signed recursively it does.
    const index = await registry.pushIndex({
      repository: "os",
      tag: "multi",
      images: [{ architecture: "amd64", version: "5" }, { architecture: "arm64", version: "5" }],
    });
    await sign(at(index.digest), good.key);
    const top = await verifyImageSignatures(client, at(index.digest), trusted);
    assert.equal(top.verified, false);
    assert.match(
      top.verified ? "" : top.message,
      /^no signature \(no cosign signature tag\) \(platform linux\/amd64 sha256:/,
    );
    // The host's rule (containers-image): only the manifest the reference names.
    assert.deepEqual(
      await verifyImageSignatures(client, at(index.digest), trusted, { platforms: false }),
      { verified: true, by: "keys[0]" },
    );
    await sign(at(index.digest), good.key, { recursive: true });
    assert.deepEqual(await verifyImageSignatures(client, at(index.digest), trusted), {
      verified: true,
      by: "keys[0]",
    });
  } finally {
    client.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("signatures: a key that is no public key verifies nothing", async () => {
  await using registry = await startRegistry();
  const client = new RegistryClient(registry.clientOptions());
  try {
    const img = await registry.pushImage({ repository: "os", tag: "v1", version: "1" });
    const verdict = await verifyImageSignatures(client, `${registry.host}/os@${img.digest}`, [
      { name: "keys[0]", pem: "-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----" },
    ]);
    assert.deepEqual(verdict, { verified: false, message: "no usable public key" });
  } finally {
    client.close();
  }
});
