import assert from "node:assert/strict";
import { OCI_CONFIG, OCI_LAYER_GZIP, OCI_MANIFEST } from "../../lib/registry/media_types.ts";
import {
  blobOf,
  gzip,
  imageConfig,
  imageManifest,
  layerOf,
  readBlob,
  readLayout,
  REF_NAME,
  writeLayout,
} from "./oci.ts";
import { Layer } from "./tar.ts";

const text = (s: string) => new TextEncoder().encode(s);

async function sample() {
  const tar = new Layer();
  tar.addFile("app/main.js", text("console.log(1)\n"));
  const layer = await layerOf(tar.toTar(), "bundle");
  const config = await blobOf(
    OCI_CONFIG,
    imageConfig({
      created: "1970-01-01T00:00:00Z",
      architecture: "amd64",
      user: "65532:65532",
      env: ["PATH=/usr/bin"],
      entrypoint: ["/usr/bin/deno", "run", "/app/main.js"],
      cmd: [],
      workingDir: "/",
      labels: { "z.label": "z", "a.label": "a" },
      layers: [layer],
    }),
  );
  const manifest = await blobOf(
    OCI_MANIFEST,
    imageManifest(config.descriptor, [layer.blob.descriptor]),
  );
  return { layer, config, manifest };
}

Deno.test("gzip: no timestamp or name in the header, same bytes every time", async () => {
  const a = await gzip(text("hello"));
  const b = await gzip(text("hello"));
  assert.deepEqual(a, b);
  assert.deepEqual([...a.subarray(0, 4)], [0x1f, 0x8b, 8, 0]); // no FNAME flag
  assert.deepEqual([...a.subarray(4, 8)], [0, 0, 0, 0]); // MTIME 0
});

Deno.test("imageConfig and imageManifest: fixed key order, diff ids, no Cmd when empty", async () => {
  const { layer, config, manifest } = await sample();
  const parsed = JSON.parse(new TextDecoder().decode(config.bytes));
  assert.deepEqual(Object.keys(parsed), [
    "created",
    "architecture",
    "os",
    "config",
    "rootfs",
    "history",
  ]);
  assert.deepEqual(Object.keys(parsed.config.Labels), ["a.label", "z.label"]);
  assert.equal("Cmd" in parsed.config, false);
  assert.deepEqual(parsed.rootfs.diff_ids, [layer.diffId]);
  assert.notEqual(layer.diffId, layer.blob.descriptor.digest);
  const m = JSON.parse(new TextDecoder().decode(manifest.bytes));
  assert.equal(m.mediaType, OCI_MANIFEST);
  assert.equal(m.config.digest, config.descriptor.digest);
  assert.deepEqual(m.layers, [{
    mediaType: OCI_LAYER_GZIP,
    digest: layer.blob.descriptor.digest,
    size: layer.blob.descriptor.size,
  }]);
  // Equal inputs, equal digests.
  assert.equal((await sample()).manifest.descriptor.digest, manifest.descriptor.digest);
});

Deno.test("writeLayout and readLayout: a layout round-trips and blobs are verified", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { layer, config, manifest } = await sample();
    const layout = `${dir}/image`;
    await writeLayout(layout, [config, manifest, layer.blob], [{
      ...manifest.descriptor,
      annotations: { [REF_NAME]: "example/app:latest" },
    }]);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${layout}/oci-layout`)), {
      imageLayoutVersion: "1.0.0",
    });
    const [image] = await readLayout(layout);
    assert.equal(image.descriptor.digest, manifest.descriptor.digest);
    assert.equal(image.descriptor.annotations?.[REF_NAME], "example/app:latest");
    assert.deepEqual(image.manifest.layers[0].digest, layer.blob.descriptor.digest);
    // A corrupted blob is refused.
    const path = `${layout}/blobs/sha256/${layer.blob.descriptor.digest.slice(7)}`;
    await Deno.writeFile(path, text("tampered"));
    await assert.rejects(() => readBlob(layout, layer.blob.descriptor.digest), /has digest/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
