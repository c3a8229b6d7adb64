import assert from "node:assert/strict";
import { OCI_CONFIG, OCI_INDEX, OCI_MANIFEST } from "../../lib/registry/media_types.ts";
import { RegistryClient } from "../../lib/registry/client.ts";
import { startRegistry } from "../../tests/harness/registry.ts";
import {
  type Blob,
  blobOf,
  imageConfig,
  imageIndex,
  imageManifest,
  layerOf,
  REF_NAME,
  writeLayout,
} from "./oci.ts";
import { pushLayout } from "./push.ts";
import { Layer } from "./tar.ts";

/** A one-layer image manifest for `architecture`, with its blobs. */
async function tinyImage(architecture = "amd64"): Promise<{ manifest: Blob; blobs: Blob[] }> {
  const tar = new Layer();
  tar.addFile("hello.txt", new TextEncoder().encode(`hello ${architecture}\n`));
  const layer = await layerOf(tar.toTar(), "hello");
  const config = await blobOf(
    OCI_CONFIG,
    imageConfig({
      created: "1970-01-01T00:00:00Z",
      architecture,
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
  return { manifest, blobs: [config, layer.blob] };
}

/** A one-layer image in an OCI layout under `dir`; returns its manifest digest. */
async function tinyLayout(dir: string): Promise<string> {
  const { manifest, blobs } = await tinyImage();
  await writeLayout(dir, [...blobs, manifest], [{
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
      manifests: [],
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

Deno.test("pushLayout: an index goes with both platforms' manifests; the registry serves each", async () => {
  const dir = await Deno.makeTempDir();
  await using registry = await startRegistry({});
  const client = new RegistryClient(registry.clientOptions());
  try {
    const images = [await tinyImage("amd64"), await tinyImage("arm64")];
    const index = await blobOf(
      OCI_INDEX,
      imageIndex(images.map((i, n) => ({
        ...i.manifest.descriptor,
        platform: { architecture: n === 0 ? "amd64" : "arm64", os: "linux" },
      }))),
    );
    await writeLayout(
      `${dir}/layout`,
      [index, ...images.flatMap((i) => [i.manifest, ...i.blobs])],
      [{ ...index.descriptor, annotations: { [REF_NAME]: "example/hello:latest" } }],
    );
    const reference = `${registry.host}/example/hello:multi`;
    const pushed = await pushLayout({
      layout: `${dir}/layout`,
      reference,
      insecureRegistries: [registry.host],
    });
    const manifests = images.map((i) => i.manifest.descriptor.digest);
    assert.deepEqual(pushed.digest, index.descriptor.digest);
    assert.deepEqual(pushed.manifests, manifests);
    assert.deepEqual(pushed.uploaded, 4);
    const resolved = await client.resolve(reference);
    assert.deepEqual(resolved.digest, index.descriptor.digest);
    assert.deepEqual(resolved.platforms, [
      { os: "linux", architecture: "amd64", digest: manifests[0] },
      { os: "linux", architecture: "arm64", digest: manifests[1] },
    ]);
    for (const digest of manifests) {
      const fetched = await client.fetchManifest(`${registry.host}/example/hello@${digest}`);
      assert.deepEqual(fetched.digest, digest);
    }
  } finally {
    client.close();
    await Deno.remove(dir, { recursive: true });
  }
});
