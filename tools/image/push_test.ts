import assert from "node:assert/strict";
import { OCI_CONFIG, OCI_MANIFEST } from "../../lib/registry/media_types.ts";
import { RegistryClient } from "../../lib/registry/client.ts";
import { startRegistry } from "../../tests/harness/registry.ts";
import { blobOf, imageConfig, imageManifest, layerOf, REF_NAME, writeLayout } from "./oci.ts";
import { pushLayout } from "./push.ts";
import { Layer } from "./tar.ts";

/** A one-layer image in an OCI layout under `dir`; returns its manifest digest. */
async function tinyLayout(dir: string): Promise<string> {
  const tar = new Layer();
  tar.addFile("hello.txt", new TextEncoder().encode("hello\n"));
  const layer = await layerOf(tar.toTar(), "hello");
  const config = await blobOf(
    OCI_CONFIG,
    imageConfig({
      created: "1970-01-01T00:00:00Z",
      architecture: "amd64",
      user: "65532:65532",
      env: [],
      entrypoint: ["/hello"],
      cmd: [],
      workingDir: "/",
      labels: {},
      layers: [layer],
    }),
  );
  const manifest = await blobOf(
    OCI_MANIFEST,
    imageManifest(config.descriptor, [layer.blob.descriptor]),
  );
  await writeLayout(dir, [config, manifest, layer.blob], [{
    ...manifest.descriptor,
    annotations: { [REF_NAME]: "example/hello:latest" },
  }]);
  return manifest.descriptor.digest;
}

Deno.test("pushLayout: Basic auth from a docker config; refused without credentials", async () => {
  const dir = await Deno.makeTempDir();
  await using registry = await startRegistry({ auth: "htpasswd", users: { ci: "pw" } });
  try {
    const digest = await tinyLayout(`${dir}/layout`);
    const reference = `${registry.host}/example/hello:v1`;
    await assert.rejects(
      () =>
        pushLayout({
          layout: `${dir}/layout`,
          reference,
          insecureRegistries: [registry.host],
        }),
      /HTTP 401/,
    );
    const pushed = await pushLayout({
      layout: `${dir}/layout`,
      reference,
      insecureRegistries: [registry.host],
      dockerConfigJson: registry.dockerConfigJson("ci"),
    });
    assert.deepEqual(pushed, {
      digest,
      pinned: `${registry.host}/example/hello@${digest}`,
      uploaded: 2,
      existing: 0,
    });
    const client = new RegistryClient({
      ...registry.clientOptions(),
      dockerConfigJson: registry.dockerConfigJson("ci"),
    });
    try {
      assert.equal((await client.resolve(reference)).digest, digest);
    } finally {
      client.close();
    }
    // A layout with several images needs a ref name; an unknown one is an error.
    await assert.rejects(
      () =>
        pushLayout({
          layout: `${dir}/layout`,
          reference,
          refName: "other:latest",
          insecureRegistries: [registry.host],
        }),
      /holds 0 images named other:latest/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
