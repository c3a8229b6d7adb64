/**
 * OCI image documents and the OCI image layout on disk (`oci-layout`, `index.json`,
 * `blobs/sha256/…`), as the image spec v1.1 defines them. The JSON builders are pure; the
 * layout functions do the I/O. JSON is written without whitespace and with keys in a fixed
 * order, so equal inputs give equal digests.
 *
 * @module
 */
import { computeDigest } from "../../lib/registry/digest.ts";
import {
  OCI_CONFIG,
  OCI_INDEX,
  OCI_LAYER_GZIP,
  OCI_MANIFEST,
} from "../../lib/registry/media_types.ts";

/** A content descriptor. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { architecture: string; os: string };
}

/** A blob and its descriptor. */
export interface Blob {
  descriptor: Descriptor;
  bytes: Uint8Array<ArrayBuffer>;
}

/** A built layer: the compressed blob and the digest of the uncompressed tar (the diff id). */
export interface BuiltLayer {
  blob: Blob;
  diffId: string;
  /** Size of the uncompressed tar. */
  tarBytes: number;
  /** What the layer holds, for the config's history. */
  createdBy: string;
}

/** The ref-name annotation of an image in a layout's index. */
export const REF_NAME = "org.opencontainers.image.ref.name";

const encoder = new TextEncoder();

/** Gzips with Deno's compressor (no file name, mtime 0: the same bytes every time). */
export async function gzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A blob of `bytes` with `mediaType`. */
export async function blobOf(
  mediaType: string,
  bytes: Uint8Array<ArrayBuffer>,
): Promise<Blob> {
  return {
    descriptor: { mediaType, digest: await computeDigest(bytes), size: bytes.length },
    bytes,
  };
}

/** Compresses a layer tar into a layer blob. */
export async function layerOf(
  tar: Uint8Array<ArrayBuffer>,
  createdBy: string,
): Promise<BuiltLayer> {
  return {
    blob: await blobOf(OCI_LAYER_GZIP, await gzip(tar)),
    diffId: await computeDigest(tar),
    tarBytes: tar.length,
    createdBy,
  };
}

/** What goes into an image config. */
export interface ConfigInput {
  /** RFC 3339; also every history entry's time. */
  created: string;
  architecture: string;
  user: string;
  env: readonly string[];
  entrypoint: string[];
  cmd: string[];
  workingDir: string;
  labels: Record<string, string>;
  layers: readonly BuiltLayer[];
}

/** The image config JSON (`application/vnd.oci.image.config.v1+json`). */
export function imageConfig(c: ConfigInput): Uint8Array<ArrayBuffer> {
  const config: Record<string, unknown> = {
    User: c.user,
    Env: [...c.env],
    Entrypoint: c.entrypoint,
    ...(c.cmd.length ? { Cmd: c.cmd } : {}),
    WorkingDir: c.workingDir,
    Labels: sortKeys(c.labels),
  };
  return encoder.encode(JSON.stringify({
    created: c.created,
    architecture: c.architecture,
    os: "linux",
    config,
    rootfs: { type: "layers", diff_ids: c.layers.map((l) => l.diffId) },
    history: c.layers.map((l) => ({ created: c.created, created_by: l.createdBy })),
  }));
}

/** The image manifest JSON (`application/vnd.oci.image.manifest.v1+json`). */
export function imageManifest(
  config: Descriptor,
  layers: readonly Descriptor[],
  annotations: Record<string, string> = {},
): Uint8Array<ArrayBuffer> {
  return encoder.encode(JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: OCI_CONFIG, digest: config.digest, size: config.size },
    layers: layers.map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size })),
    ...(Object.keys(annotations).length ? { annotations: sortKeys(annotations) } : {}),
  }));
}

/**
 * An image index (`application/vnd.oci.image.index.v1+json`) of per-platform `manifests`: the
 * multi-arch image a registry serves under one digest.
 */
export function imageIndex(manifests: readonly Descriptor[]): Uint8Array<ArrayBuffer> {
  return layoutIndex(manifests);
}

/** A layout's `index.json` listing `manifests` (the same document as an image index). */
export function layoutIndex(manifests: readonly Descriptor[]): Uint8Array<ArrayBuffer> {
  return encoder.encode(JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_INDEX,
    manifests: manifests.map((m) => ({
      mediaType: m.mediaType,
      digest: m.digest,
      size: m.size,
      ...(m.platform ? { platform: m.platform } : {}),
      ...(m.annotations ? { annotations: sortKeys(m.annotations) } : {}),
    })),
  }));
}

/**
 * Writes an OCI image layout at `dir` (replacing one that is there): the blobs, then
 * `index.json` naming `manifests`, then `oci-layout`.
 */
export async function writeLayout(
  dir: string,
  blobs: readonly Blob[],
  manifests: readonly Descriptor[],
): Promise<void> {
  const parent = dir.replace(/\/[^/]+\/?$/, "") || ".";
  await Deno.mkdir(parent, { recursive: true });
  // Written beside the target and renamed into place: a reader never sees half a layout.
  const work = await Deno.makeTempDir({ dir: parent, prefix: ".layout-" });
  try {
    await Deno.chmod(work, 0o755);
    await Deno.mkdir(`${work}/blobs/sha256`, { recursive: true });
    for (const b of blobs) {
      const path = `${work}/blobs/sha256/${b.descriptor.digest.slice("sha256:".length)}`;
      await Deno.writeFile(path, b.bytes, { mode: 0o644 });
    }
    await Deno.writeFile(`${work}/index.json`, layoutIndex(manifests));
    await Deno.writeTextFile(`${work}/oci-layout`, JSON.stringify({ imageLayoutVersion: "1.0.0" }));
    await Deno.remove(dir, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    await Deno.rename(work, dir);
  } catch (e) {
    await Deno.remove(work, { recursive: true }).catch(() => {});
    throw e;
  }
}

/** One image read back from a layout: a manifest, or an index and its manifests. */
export interface LayoutImage {
  /** The manifest's (or index's) descriptor in `index.json` or in its index. */
  descriptor: Descriptor;
  manifestBytes: Uint8Array<ArrayBuffer>;
  /** An image manifest's config and layers (empty lists for an index). */
  manifest: {
    config?: Descriptor;
    layers: Descriptor[];
    annotations?: Record<string, string>;
  };
  /** For an index: its manifests, in its order. */
  children?: LayoutImage[];
}

/** Reads the images `index.json` lists (checking every blob it reads against its digest). */
export async function readLayout(dir: string): Promise<LayoutImage[]> {
  const index = JSON.parse(await Deno.readTextFile(`${dir}/index.json`)) as {
    manifests: Descriptor[];
  };
  return await Promise.all(index.manifests.map((d) => readImage(dir, d, 0)));
}

async function readImage(dir: string, descriptor: Descriptor, depth: number): Promise<LayoutImage> {
  const manifestBytes = await readBlob(dir, descriptor.digest);
  const parsed = JSON.parse(decode(manifestBytes));
  if (descriptor.mediaType !== OCI_INDEX) {
    return { descriptor, manifestBytes, manifest: parsed };
  }
  if (depth > 0) throw new Error(`layout: index ${descriptor.digest} nests another index`);
  const children = await Promise.all(
    (parsed.manifests as Descriptor[]).map((d) => readImage(dir, d, depth + 1)),
  );
  return { descriptor, manifestBytes, manifest: { layers: [] }, children };
}

/** A blob of a layout, checked against its digest. */
export async function readBlob(dir: string, digest: string): Promise<Uint8Array<ArrayBuffer>> {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`layout: bad digest ${digest}`);
  const bytes = await Deno.readFile(`${dir}/blobs/sha256/${digest.slice(7)}`);
  const actual = await computeDigest(bytes);
  if (actual !== digest) throw new Error(`layout: blob ${digest} has digest ${actual}`);
  return bytes;
}

function decode(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

function sortKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)));
}
