/**
 * Builds the controller and daemon images without a container engine: each an OCI image
 * layout under `dist/images/<name>/` whose `index.json` names one OCI image index
 * (`application/vnd.oci.image.index.v1+json`) with a manifest per platform (linux/amd64,
 * linux/arm64; spec.ts's `PLATFORMS`), assembled from that architecture's pinned Debian
 * packages and Deno runtime (`packages.lock.json`, checked by sha256) and the bundle
 * `deno task build` wrote (JavaScript: the same bundle on every platform). See spec.ts for what
 * goes in, and manifests/README.md for pushing.
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
import { OCI_CONFIG, OCI_INDEX, OCI_MANIFEST } from "../../lib/registry/media_types.ts";
import {
  ensureDeb,
  ensureDeno,
  type ImageLock,
  listTree,
  lockedDeno,
  lockedPackage,
  readLock,
  unpackDeb,
  type UnpackedPackage,
} from "./inputs.ts";
import {
  type Blob,
  blobOf,
  type BuiltLayer,
  imageConfig,
  imageIndex,
  imageManifest,
  layerOf,
  REF_NAME,
  writeLayout,
} from "./oci.ts";
import {
  ALL_PACKAGES,
  APP_DIR,
  basePackages,
  caBundle,
  DENO_PATH,
  entrypoint,
  GROUP,
  IMAGE_ENV,
  IMAGE_TAG,
  type ImagePlatform,
  type ImageSpec,
  imageSpecs,
  type ImageTarget,
  NONROOT_UID,
  nsenterPackages,
  NSSWITCH,
  type PackageSelection,
  PASSWD,
  PLATFORMS,
  selected,
  statusRecord,
} from "./spec.ts";
import { DEP_CACHE_FILE, depAnalysisCache } from "./dep_cache.ts";
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

/** One platform's image manifest of a built image. */
export interface PlatformImage {
  platform: { architecture: string; os: string };
  /** The manifest digest. */
  digest: string;
  configDigest: string;
  layers: LayerSummary[];
  /** Manifest + config + compressed layers: what a node of this platform pulls. */
  compressedBytes: number;
  /** The uncompressed layer tars: about what the image takes on a node's disk. */
  unpackedBytes: number;
}

/** One built image: an OCI index of one manifest per platform. */
export interface BuiltImage {
  name: ImageSpec["name"];
  /** `repository:tag`, the layout's ref name. */
  reference: string;
  /** The index digest (what the manifests pin). */
  digest: string;
  /** The OCI layout folder. */
  layout: string;
  /** In {@linkcode PLATFORMS} order: amd64, then arm64. */
  platforms: PlatformImage[];
}

/** What {@linkcode buildImages} wrote; also `<outDir>/images.json`. */
export interface ImagesResult {
  images: BuiltImage[];
  inputs: { packages: string[]; deno: string[] };
}

/** One platform's manifest of one image, with the blobs it needs. */
interface PlatformBuild {
  summary: PlatformImage;
  manifest: Blob;
  blobs: Blob[];
}

/** Builds both images for every platform; see the module doc. */
export async function buildImages(options: BuildImagesOptions): Promise<ImagesResult> {
  const log = options.log ?? ((line: string) => console.error(line));
  const outDir = options.outDir ?? `${options.distDir}/images`;
  const lock = options.lock ?? await readLock();
  const specs = imageSpecs(options.targets);
  const work = await Deno.makeTempDir({ prefix: "bootc-image-" });
  try {
    const depCaches = await depCachesOf({ specs, lock, distDir: options.distDir, log });
    const perPlatform: Map<ImageSpec["name"], PlatformBuild>[] = [];
    for (const platform of PLATFORMS) {
      perPlatform.push(
        await buildPlatform({ ...options, log, lock, specs, platform, work, depCaches }),
      );
    }
    const images: BuiltImage[] = [];
    for (const spec of specs) {
      const builds = perPlatform.map((m) => m.get(spec.name)!);
      const index = await blobOf(
        OCI_INDEX,
        imageIndex(builds.map((b) => ({
          ...b.manifest.descriptor,
          platform: b.summary.platform,
        }))),
      );
      const reference = `${spec.repository}:${IMAGE_TAG}`;
      const layout = `${outDir}/${spec.name}`;
      const blobs = new Map<string, Blob>();
      for (const b of [index, ...builds.flatMap((x) => [x.manifest, ...x.blobs])]) {
        blobs.set(b.descriptor.digest, b);
      }
      await writeLayout(layout, [...blobs.values()], [{
        ...index.descriptor,
        annotations: { [REF_NAME]: reference },
      }]);
      images.push({
        name: spec.name,
        reference,
        digest: index.descriptor.digest,
        layout,
        platforms: builds.map((b) => b.summary),
      });
    }
    const result: ImagesResult = {
      images,
      inputs: {
        packages: lock.packages.map((p) => `${p.name}:${p.architecture}=${p.version}`),
        deno: lock.deno.map((d) => `${d.version} ${d.architecture} ${d.binarySha256}`),
      },
    };
    await Deno.writeTextFile(`${outDir}/images.json`, JSON.stringify(result, null, 2) + "\n");
    return result;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/**
 * The pre-filled dependency-analysis caches of the images that carry one, by image. Written
 * by this Deno, so only when it is the version the images run (the cache would not answer
 * another); the same for every platform (it holds a hash of the bundle, no code).
 */
async function depCachesOf(o: {
  specs: ImageSpec[];
  lock: ImageLock;
  distDir: string;
  log: (line: string) => void;
}): Promise<Map<ImageSpec["name"], Uint8Array>> {
  const out = new Map<ImageSpec["name"], Uint8Array>();
  const pinned = o.lock.deno.map((d) => d.version);
  for (const spec of o.specs) {
    if (!spec.depCacheDir) continue;
    if (pinned.some((v) => v !== Deno.version.deno)) {
      o.log(`[image] no dependency cache in ${spec.name}: built with deno ${Deno.version.deno}`);
      continue;
    }
    out.set(
      spec.name,
      await depAnalysisCache({
        bundle: `${o.distDir}/${spec.bundle}`,
        url: `file://${APP_DIR}/${spec.bundle}`,
      }),
    );
  }
  return out;
}

/** Builds one platform's manifest of every image (its base and runtime layers shared). */
async function buildPlatform(o: {
  platform: ImagePlatform;
  specs: ImageSpec[];
  lock: ImageLock;
  work: string;
  distDir: string;
  cache?: string;
  log: (line: string) => void;
  depCaches: Map<ImageSpec["name"], Uint8Array>;
}): Promise<Map<ImageSpec["name"], PlatformBuild>> {
  const { platform, lock } = o;
  const arch = platform.architecture;
  const packages = new Map<string, UnpackedPackage>();
  for (const name of ALL_PACKAGES) {
    const deb = await ensureDeb(lockedPackage(lock, name, arch), { cache: o.cache, log: o.log });
    packages.set(name, await unpackDeb(deb, name, `${o.work}/${arch}/${name}`));
  }
  const pinnedDeno = lockedDeno(lock, arch);
  const denoPath = await ensureDeno(pinnedDeno, { cache: o.cache, log: o.log });
  const mtime = lock.epoch;
  const created = new Date(mtime * 1000).toISOString().replace(/\.000Z$/, "Z");
  const pins = (list: readonly PackageSelection[]) =>
    list.map((p) => pin(lock, p.name, arch)).join(" ");

  const baseList = basePackages(platform);
  const nsenterList = nsenterPackages(platform);
  const base = await layerOf(
    (await baseLayer(packages, baseList, mtime)).toTar(),
    `bootc-operator base: ${pins(baseList)}`,
  );
  const denoLayer = new Layer({ mtime });
  denoLayer.addFile(DENO_PATH, await Deno.readFile(denoPath), { mode: 0o755 });
  const deno = await layerOf(
    denoLayer.toTar(),
    `deno ${pinnedDeno.version} (npm ${pinnedDeno.npmPackage}, sha256 ${pinnedDeno.binarySha256})`,
  );
  let nsenter: BuiltLayer | undefined;

  const out = new Map<ImageSpec["name"], PlatformBuild>();
  for (const spec of o.specs) {
    const layers = [base, deno];
    if (spec.nsenter) {
      nsenter ??= await layerOf(
        (await packagesLayer(packages, nsenterList, mtime)).toTar(),
        `nsenter: ${pins(nsenterList)}`,
      );
      layers.push(nsenter);
    }
    const app = new Layer({ mtime });
    app.addFile(`${APP_DIR}/${spec.bundle}`, await Deno.readFile(`${o.distDir}/${spec.bundle}`));
    for (const file of spec.beside) {
      app.addFile(`${APP_DIR}/${file}`, await Deno.readFile(`${o.distDir}/${file}`));
    }
    const depCache = o.depCaches.get(spec.name);
    if (depCache && spec.depCacheDir) {
      // The home folder keeps the base layer's mode (this layer's entry replaces it).
      if (spec.depCacheDir.startsWith("/root/")) app.addDir("root", { mode: 0o700 });
      app.addFile(`${spec.depCacheDir}/${DEP_CACHE_FILE}`, depCache);
    }
    layers.push(
      await layerOf(
        app.toTar(),
        `bundle ${spec.bundle} (deno task build)` +
          (depCache ? `, its dependency-analysis cache` : ""),
      ),
    );
    const used = [...baseList, ...(spec.nsenter ? nsenterList : [])];
    out.set(
      spec.name,
      await platformManifest({
        spec,
        architecture: arch,
        created,
        layers,
        labels: {
          "dev.bootc-operator.deno.version": pinnedDeno.version,
          "dev.bootc-operator.debian.packages": pins(used),
        },
      }),
    );
  }
  return out;
}

/** The config and manifest of one image on one platform, from its layers. */
async function platformManifest(o: {
  spec: ImageSpec;
  architecture: string;
  created: string;
  layers: BuiltLayer[];
  labels: Record<string, string>;
}): Promise<PlatformBuild> {
  const { spec, layers, created } = o;
  const config = await blobOf(
    OCI_CONFIG,
    imageConfig({
      created,
      architecture: o.architecture,
      user: `${NONROOT_UID}:${NONROOT_UID}`,
      env: IMAGE_ENV,
      entrypoint: entrypoint(spec),
      cmd: spec.cmd,
      workingDir: "/",
      labels: {
        "org.opencontainers.image.title": `bootc-operator-${spec.name}`,
        "org.opencontainers.image.description": spec.description,
        "org.opencontainers.image.created": created,
        ...o.labels,
      },
      layers,
    }),
  );
  const manifest = await blobOf(
    OCI_MANIFEST,
    imageManifest(config.descriptor, layers.map((l) => l.blob.descriptor)),
  );
  return {
    manifest,
    blobs: [config, ...layers.map((l) => l.blob)],
    summary: {
      platform: { architecture: o.architecture, os: "linux" },
      digest: manifest.descriptor.digest,
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
    },
  };
}

/** glibc, libgcc_s, the CA bundle, os-release, users, home and temp folders, package records. */
async function baseLayer(
  packages: Map<string, UnpackedPackage>,
  selections: readonly PackageSelection[],
  mtime: number,
): Promise<Layer> {
  const layer = await packagesLayer(packages, selections, mtime);
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

function pin(lock: ImageLock, name: string, architecture: string): string {
  const p = lockedPackage(lock, name, architecture);
  return `${p.name}=${p.version}`;
}

/** One line per image and platform: reference, digests and sizes (for the build's output). */
export function describeImages(result: ImagesResult): string[] {
  return result.images.flatMap((image) => [
    `${image.reference}@${image.digest} (OCI index, layout ${image.layout})`,
    ...image.platforms.map((p) =>
      `  ${p.platform.os}/${p.platform.architecture} ${p.digest}: ` +
      `${formatMiB(p.compressedBytes)} compressed, ${formatMiB(p.unpackedBytes)} unpacked`
    ),
  ]);
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
  for (const line of describeImages(result)) console.log(line);
}
