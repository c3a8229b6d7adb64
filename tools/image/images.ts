/**
 * Builds the controller and daemon images without a container engine: each an OCI image
 * layout under `dist/images/<name>/`, assembled from the pinned Debian packages and Deno
 * runtime (`packages.lock.json`, checked by sha256) and the bundle `deno task build` wrote.
 * See spec.ts for what goes in, and manifests/README.md for pushing.
 *
 * Reproducible: layer tars are written by tar.ts (sorted, fixed mtime and owners, normalized
 * modes), gzipped by the pinned Deno, and every JSON document has a fixed key order and the
 * lock's epoch as its time, so the same bundles and lock give the same digests on any machine.
 *
 * Usage: `deno run -A tools/image/images.ts [--dist=dist]` (after `deno task build`, which
 * also calls it).
 *
 * @module
 */
import { OCI_CONFIG, OCI_MANIFEST } from "../../lib/registry/media_types.ts";
import {
  ensureDeb,
  ensureDeno,
  type ImageLock,
  listTree,
  readLock,
  unpackDeb,
  type UnpackedPackage,
} from "./inputs.ts";
import {
  type Blob,
  blobOf,
  type BuiltLayer,
  imageConfig,
  imageManifest,
  layerOf,
  REF_NAME,
  writeLayout,
} from "./oci.ts";
import {
  ALL_PACKAGES,
  APP_DIR,
  BASE_PACKAGES,
  caBundle,
  DENO_PATH,
  entrypoint,
  GROUP,
  IMAGE_ENV,
  IMAGE_TAG,
  type ImageSpec,
  imageSpecs,
  type ImageTarget,
  NONROOT_UID,
  NSENTER_PACKAGES,
  NSSWITCH,
  type PackageSelection,
  PASSWD,
  selected,
  statusRecord,
} from "./spec.ts";
import { Layer } from "./tar.ts";

/** Options of {@linkcode buildImages}. */
export interface BuildImagesOptions {
  /** The build's output folder holding the bundles (e.g. `dist`). */
  distDir: string;
  /** Where the layouts go (default `<distDir>/images`). */
  outDir?: string;
  /** The build targets (tools/build.ts's `TARGETS`): bundle names, permissions, V8 flags. */
  targets: readonly ImageTarget[];
  /** The lock (default: tools/image/packages.lock.json). */
  lock?: ImageLock;
  /** The input cache folder (default: see inputs.ts). */
  cache?: string;
  /** Progress lines (default stderr). */
  log?: (line: string) => void;
}

/** One layer of a built image. */
export interface LayerSummary {
  digest: string;
  /** Compressed size. */
  size: number;
  /** Uncompressed tar size. */
  tarBytes: number;
  createdBy: string;
}

/** One built image. */
export interface BuiltImage {
  name: ImageSpec["name"];
  /** `repository:tag`, the layout's ref name. */
  reference: string;
  /** The manifest digest. */
  digest: string;
  /** The OCI layout folder. */
  layout: string;
  configDigest: string;
  layers: LayerSummary[];
  /** Manifest + config + compressed layers: what a registry stores and a node pulls. */
  compressedBytes: number;
  /** The uncompressed layer tars: about what the image takes on a node's disk. */
  unpackedBytes: number;
}

/** What {@linkcode buildImages} wrote; also `<outDir>/images.json`. */
export interface ImagesResult {
  images: BuiltImage[];
  inputs: { packages: string[]; deno: string };
}

/** Builds both images; see the module doc. */
export async function buildImages(options: BuildImagesOptions): Promise<ImagesResult> {
  const log = options.log ?? ((line: string) => console.error(line));
  const outDir = options.outDir ?? `${options.distDir}/images`;
  const lock = options.lock ?? await readLock();
  const specs = imageSpecs(options.targets);
  const work = await Deno.makeTempDir({ prefix: "bootc-image-" });
  try {
    const packages = new Map<string, UnpackedPackage>();
    for (const name of ALL_PACKAGES) {
      const pinned = lock.packages.find((p) => p.name === name);
      if (!pinned) throw new Error(`packages.lock.json does not pin ${name}`);
      const deb = await ensureDeb(pinned, { cache: options.cache, log });
      packages.set(name, await unpackDeb(deb, name, `${work}/${name}`));
    }
    const denoPath = await ensureDeno(lock.deno, { cache: options.cache, log });
    const mtime = lock.epoch;
    const created = new Date(mtime * 1000).toISOString().replace(/\.000Z$/, "Z");

    const base = await layerOf(
      (await baseLayer(packages, mtime)).toTar(),
      `bootc-operator base: ${BASE_PACKAGES.map((p) => pin(lock, p.name)).join(" ")}`,
    );
    const denoLayer = new Layer({ mtime });
    denoLayer.addFile(DENO_PATH, await Deno.readFile(denoPath), { mode: 0o755 });
    const deno = await layerOf(
      denoLayer.toTar(),
      `deno ${lock.deno.version} (npm ${lock.deno.npmPackage}, sha256 ${lock.deno.binarySha256})`,
    );
    let nsenter: BuiltLayer | undefined;

    const images: BuiltImage[] = [];
    for (const spec of specs) {
      const layers = [base, deno];
      if (spec.nsenter) {
        nsenter ??= await layerOf(
          (await packagesLayer(packages, NSENTER_PACKAGES, mtime)).toTar(),
          `nsenter: ${NSENTER_PACKAGES.map((p) => pin(lock, p.name)).join(" ")}`,
        );
        layers.push(nsenter);
      }
      const app = new Layer({ mtime });
      app.addFile(
        `${APP_DIR}/${spec.bundle}`,
        await Deno.readFile(`${options.distDir}/${spec.bundle}`),
      );
      layers.push(await layerOf(app.toTar(), `bundle ${spec.bundle} (deno task build)`));

      const used = [...BASE_PACKAGES, ...(spec.nsenter ? NSENTER_PACKAGES : [])];
      const config = await blobOf(
        OCI_CONFIG,
        imageConfig({
          created,
          architecture: "amd64",
          user: `${NONROOT_UID}:${NONROOT_UID}`,
          env: IMAGE_ENV,
          entrypoint: entrypoint(spec),
          cmd: spec.cmd,
          workingDir: "/",
          labels: {
            "org.opencontainers.image.title": `bootc-operator-${spec.name}`,
            "org.opencontainers.image.description": spec.description,
            "org.opencontainers.image.created": created,
            "dev.bootc-operator.deno.version": lock.deno.version,
            "dev.bootc-operator.debian.packages": used.map((p) => pin(lock, p.name)).join(" "),
          },
          layers,
        }),
      );
      const reference = `${spec.repository}:${IMAGE_TAG}`;
      const manifest = await blobOf(
        OCI_MANIFEST,
        imageManifest(config.descriptor, layers.map((l) => l.blob.descriptor)),
      );
      const blobs: Blob[] = [config, manifest, ...layers.map((l) => l.blob)];
      const layout = `${outDir}/${spec.name}`;
      await writeLayout(layout, blobs, [{
        ...manifest.descriptor,
        platform: { architecture: "amd64", os: "linux" },
        annotations: { [REF_NAME]: reference },
      }]);
      const image: BuiltImage = {
        name: spec.name,
        reference,
        digest: manifest.descriptor.digest,
        layout,
        configDigest: config.descriptor.digest,
        layers: layers.map((l) => ({
          digest: l.blob.descriptor.digest,
          size: l.blob.descriptor.size,
          tarBytes: l.tarBytes,
          createdBy: l.createdBy,
        })),
        compressedBytes: manifest.descriptor.size + config.descriptor.size +
          layers.reduce((sum, l) => sum + l.blob.descriptor.size, 0),
        unpackedBytes: layers.reduce((sum, l) => sum + l.tarBytes, 0),
      };
      images.push(image);
    }
    const result: ImagesResult = {
      images,
      inputs: {
        packages: ALL_PACKAGES.map((name) => pin(lock, name)),
        deno: `${lock.deno.version} ${lock.deno.binarySha256}`,
      },
    };
    await Deno.writeTextFile(`${outDir}/images.json`, JSON.stringify(result, null, 2) + "\n");
    return result;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/** glibc, libgcc_s, the CA bundle, os-release, users, home and temp folders, package records. */
async function baseLayer(packages: Map<string, UnpackedPackage>, mtime: number): Promise<Layer> {
  const layer = await packagesLayer(packages, BASE_PACKAGES, mtime);
  const ca = packages.get("ca-certificates")!;
  const certs = [];
  for (const path of await listTree(ca.dir)) {
    if (path.startsWith("usr/share/ca-certificates/") && path.endsWith(".crt")) {
      certs.push({ path, text: await Deno.readTextFile(`${ca.dir}/${path}`) });
    }
  }
  if (certs.length < 100) throw new Error(`ca-certificates: only ${certs.length} certificates`);
  const encode = (s: string) => new TextEncoder().encode(s);
  layer.addFile("etc/ssl/certs/ca-certificates.crt", encode(caBundle(certs)));
  layer.addFile("etc/passwd", encode(PASSWD));
  layer.addFile("etc/group", encode(GROUP));
  layer.addFile("etc/nsswitch.conf", encode(NSSWITCH));
  layer.addDir("tmp", { mode: 0o1777 });
  layer.addDir("root", { mode: 0o700 });
  layer.addDir("home/nonroot", { mode: 0o700, uid: NONROOT_UID, gid: NONROOT_UID });
  return layer;
}

/** The selected files of `selections`, plus each package's `status.d` record. */
async function packagesLayer(
  packages: Map<string, UnpackedPackage>,
  selections: readonly PackageSelection[],
  mtime: number,
): Promise<Layer> {
  const layer = new Layer({ mtime });
  for (const selection of selections) {
    const pkg = packages.get(selection.name)!;
    let count = 0;
    for (const path of await listTree(pkg.dir)) {
      if (!selected(selection, path)) continue;
      const full = `${pkg.dir}/${path}`;
      const info = await Deno.lstat(full);
      if (info.isSymlink) {
        layer.addSymlink(path, await Deno.readLink(full));
      } else if (info.isFile) {
        // Modes are normalized (dpkg-deb's extraction is subject to the umask).
        const mode = (info.mode ?? 0) & 0o111 ? 0o755 : 0o644;
        layer.addFile(path, await Deno.readFile(full), { mode });
      } else {
        continue; // directories come with their contents
      }
      count++;
    }
    const wanted = selection.include.length + (selection.copyright === false ? 0 : 1);
    if (count < wanted) {
      throw new Error(`${selection.name}: found ${count} of the ${wanted} selected paths`);
    }
    layer.addFile(
      `var/lib/dpkg/status.d/${selection.name}`,
      new TextEncoder().encode(statusRecord(pkg.control)),
    );
  }
  return layer;
}

function pin(lock: ImageLock, name: string): string {
  const p = lock.packages.find((x) => x.name === name);
  if (!p) throw new Error(`packages.lock.json does not pin ${name}`);
  return `${p.name}=${p.version}`;
}

/** Bytes as MiB with one decimal. */
export function formatMiB(bytes: number): string {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

if (import.meta.main) {
  const { TARGETS } = await import("../build.ts");
  const dist = Deno.args.find((a) => a.startsWith("--dist="))?.slice("--dist=".length) ??
    new URL("../../dist", import.meta.url).pathname;
  const result = await buildImages({ distDir: dist, targets: TARGETS });
  for (const image of result.images) {
    console.log(
      `${image.reference}@${image.digest}: ${formatMiB(image.compressedBytes)} compressed, ` +
        `${formatMiB(image.unpackedBytes)} unpacked (OCI layout ${image.layout})`,
    );
  }
}
