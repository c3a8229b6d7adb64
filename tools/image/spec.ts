/**
 * What goes into the controller and daemon images (pure data and decisions, no I/O).
 *
 * Both images are distroless-like: glibc and libgcc_s (which the Deno runtime links), Debian's CA
 * certificate bundle, `/etc/passwd` and `/etc/group` naming root and the `nonroot` user
 * (65532), `/etc/os-release`, the Deno runtime and the bundle the build produced; the daemon's
 * image adds `nsenter` and the two libraries it links. No shell, no package manager, no
 * coreutils. Every file comes from a Debian package or a Deno npm package pinned in
 * `packages.lock.json`, or is written here.
 *
 * Layers, in order: `base` (glibc, certificates, users), `deno` (the runtime), `nsenter` (daemon
 * only) and `app` (the bundle). Each image is built for every platform of {@linkcode PLATFORMS}
 * from that architecture's packages and runtime. Per platform the first two layers are
 * byte-identical in both images, and the `app` layer is the same on every platform, so a registry
 * stores them once and a node pulls them once.
 *
 * @module
 */
import { YAML_PARSER_BUNDLE } from "../../lib/kube/config.ts";

/** The user the images run as by default (distroless's `nonroot`). */
export const NONROOT_UID = 65532;

/** Where the bundle lives in the image. */
export const APP_DIR = "/app";

/** Where the Deno runtime lives in the image. */
export const DENO_PATH = "/usr/bin/deno";

/** Flags of `deno run` shared by every image (the build's launcher passes the same ones). */
export const RUN_FLAGS = ["--cached-only", "--no-config", "--no-lock", "--no-prompt"] as const;

/**
 * The image names `deno task build` produces, as the manifests reference them. Push elsewhere
 * and point the manifests there with a kustomize `images:` override (manifests/README.md).
 */
export const IMAGE_NAMES = {
  controller: "quay.io/bootc-operator/controller",
  daemon: "quay.io/bootc-operator/daemon",
} as const;

/** The tag the build gives both images (the manifests use it too). */
export const IMAGE_TAG = "latest";

/** Which files a package contributes: exact paths or directory prefixes (ending in `/`). */
export interface PackageSelection {
  /** Debian package name. */
  name: string;
  /** Paths inside the package's data, without a leading slash. */
  include: string[];
  /** Also copy `usr/share/doc/<name>/copyright` (default true). */
  copyright?: boolean;
}

/** A platform the images are built for: its Debian architecture and where its libraries live. */
export interface ImagePlatform {
  /** OCI and Debian architecture name. */
  architecture: "amd64" | "arm64";
  /** The multiarch triplet of its library folders. */
  triplet: string;
  /** Where its dynamic loader is found (what the executables name as their interpreter). */
  loader: string[];
  /** The npm package shipping the Deno runtime for it. */
  denoNpmPackage: string;
}

/** The platforms of every image, in the order the index lists them. */
export const PLATFORMS: readonly ImagePlatform[] = [
  {
    architecture: "amd64",
    triplet: "x86_64-linux-gnu",
    loader: ["lib64/"],
    denoNpmPackage: "@deno/linux-x64-glibc",
  },
  {
    architecture: "arm64",
    triplet: "aarch64-linux-gnu",
    loader: ["lib/ld-linux-aarch64.so.1"],
    denoNpmPackage: "@deno/linux-arm64-glibc",
  },
];

/** The packages of the `base` layer for `platform`. */
export function basePackages(platform: ImagePlatform): PackageSelection[] {
  const t = platform.triplet;
  return [
    // glibc: the loader and the shared libraries, nothing from /usr (no ldd, iconv, locales).
    { name: "libc6", include: [`lib/${t}/`, ...platform.loader] },
    { name: "libgcc-s1", include: [`lib/${t}/libgcc_s.so.1`], copyright: false },
    // libgcc-s1's copyright lives in gcc-12-base (its doc folder is a link there).
    { name: "gcc-12-base", include: [] },
    // The certificates only; the bundle is assembled below as update-ca-certificates would.
    { name: "ca-certificates", include: [] },
    {
      name: "base-files",
      include: ["etc/os-release", "usr/lib/os-release", "etc/debian_version"],
    },
  ];
}

/** The packages of the daemon's `nsenter` layer for `platform`. */
export function nsenterPackages(platform: ImagePlatform): PackageSelection[] {
  const t = platform.triplet;
  return [
    { name: "util-linux", include: ["usr/bin/nsenter"] },
    { name: "libselinux1", include: [`lib/${t}/libselinux.so.1`] },
    {
      name: "libpcre2-8-0",
      include: [`usr/lib/${t}/libpcre2-8.so.0`, `usr/lib/${t}/libpcre2-8.so.0.11.2`],
    },
  ];
}

/** Every package the images use (the lock pins exactly these, per architecture). */
export const ALL_PACKAGES: readonly string[] = [
  ...basePackages(PLATFORMS[0]),
  ...nsenterPackages(PLATFORMS[0]),
].map((p) => p.name);

/** One image to build. */
export interface ImageSpec {
  /** "controller" or "daemon" (the build target it packages). */
  name: "controller" | "daemon";
  /** Repository name, e.g. `quay.io/bootc-operator/controller`. */
  repository: string;
  /** The bundle file in the build's output folder. */
  bundle: string;
  /** Files the bundle loads from beside it (the daemon's YAML parser), also in `/app`. */
  beside: string[];
  /** Deno permission flags (the build's, so the image runs what the launcher runs). */
  permissions: readonly string[];
  /** V8 flags (the build's; the daemon runs with `--lite-mode`, as its launcher does). */
  v8Flags: readonly string[];
  /** Whether the image carries nsenter. */
  nsenter: boolean;
  /** Default arguments (`Cmd`). */
  cmd: string[];
  /** One line for the `org.opencontainers.image.description` label. */
  description: string;
  /**
   * The runtime's `DENO_DIR` where the image carries a pre-filled dependency-analysis cache
   * for its bundle (tools/image/dep_cache.ts), or none.
   */
  depCacheDir?: string;
}

/** What an image needs to know of a build target (tools/build.ts's `Target`). */
export interface ImageTarget {
  name: string;
  bundle: string;
  /** The YAML parser is bundled apart, beside the bundle (tools/build.ts). */
  yamlBeside?: boolean;
  permissions: readonly string[];
  v8Flags: readonly string[];
}

/** The two images, given the build's targets (for their bundle names and permissions). */
export function imageSpecs(
  targets: readonly ImageTarget[],
): ImageSpec[] {
  const target = (name: string) => {
    const t = targets.find((x) => x.name === name);
    if (!t) throw new Error(`image: no build target ${name}`);
    return t;
  };
  const controller = target("controller");
  const daemon = target("daemon");
  return [
    {
      name: "controller",
      repository: IMAGE_NAMES.controller,
      bundle: controller.bundle,
      beside: besideFiles(controller),
      permissions: controller.permissions,
      v8Flags: controller.v8Flags,
      nsenter: false,
      cmd: [],
      description: "bootc-operator controller: rolls bootc OS images out across node pools",
    },
    {
      name: "daemon",
      repository: IMAGE_NAMES.daemon,
      bundle: daemon.bundle,
      beside: besideFiles(daemon),
      permissions: daemon.permissions,
      v8Flags: daemon.v8Flags,
      nsenter: true,
      cmd: ["run"],
      description: "bootc-operator daemon: drives bootc on one node (runs privileged, hostPID)",
      // The DaemonSet runs it as root, on a writable root filesystem: Deno's default DENO_DIR
      // is then $HOME/.cache/deno. Saves the parse of the bundle at every start (~4-5 MiB
      // of the start-up peak, tools/measure_daemon_idle.ts).
      depCacheDir: "/root/.cache/deno",
    },
  ];
}

/** What a target's bundle loads from beside it (lib/kube/config.ts `YAML_PARSER_BUNDLE`). */
function besideFiles(target: ImageTarget): string[] {
  return target.yamlBeside ? [YAML_PARSER_BUNDLE] : [];
}

/** The entrypoint: the runtime running the bundle with the build's flags. */
export function entrypoint(spec: ImageSpec): string[] {
  const v8 = spec.v8Flags.length ? [`--v8-flags=${spec.v8Flags.join(",")}`] : [];
  return [DENO_PATH, "run", ...RUN_FLAGS, ...v8, ...spec.permissions, `${APP_DIR}/${spec.bundle}`];
}

/**
 * The environment of both images. `DENO_TLS_CA_STORE=system` makes Deno trust the image's
 * `/etc/ssl/certs/ca-certificates.crt` (Debian's Mozilla set) instead of its built-in copy, so a
 * private CA is added by mounting a bundle over that file. No update checks.
 */
export const IMAGE_ENV: readonly string[] = [
  "PATH=/usr/bin:/bin",
  "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
  "DENO_TLS_CA_STORE=system",
  "DENO_NO_UPDATE_CHECK=1",
];

/** `/etc/passwd`: root and nonroot, no login shell (there is none). */
export const PASSWD = "root:x:0:0:root:/root:/sbin/nologin\n" +
  `nonroot:x:${NONROOT_UID}:${NONROOT_UID}:nonroot:/home/nonroot:/sbin/nologin\n`;

/** `/etc/group`. */
export const GROUP = `root:x:0:\nnonroot:x:${NONROOT_UID}:\n`;

/** `/etc/nsswitch.conf`: files then DNS (both built into glibc 2.36's libc.so.6). */
export const NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n";

/**
 * Does `path` (inside a package, no leading slash) belong to the selection? Exact paths match
 * themselves; entries ending in `/` match everything below.
 */
export function selected(selection: PackageSelection, path: string): boolean {
  if (selection.copyright !== false && path === `usr/share/doc/${selection.name}/copyright`) {
    return true;
  }
  return selection.include.some((inc) =>
    inc.endsWith("/") ? path.startsWith(inc) && path !== inc : path === inc
  );
}

/**
 * The CA bundle as `update-ca-certificates` writes it: every certificate under
 * `usr/share/ca-certificates/` in sorted order, each ending in a newline.
 */
export function caBundle(certs: { path: string; text: string }[]): string {
  return [...certs]
    .filter((c) => c.path.endsWith(".crt"))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .map((c) => (c.text.endsWith("\n") ? c.text : `${c.text}\n`))
    .join("");
}

/**
 * The `/var/lib/dpkg/status.d/<name>` record that vulnerability scanners read in distroless
 * images: the identifying fields of the package's control file.
 */
export function statusRecord(control: string): string {
  const keep = ["Package", "Source", "Version", "Architecture", "Maintainer", "Homepage"];
  const fields = new Map<string, string>();
  for (const line of control.split("\n")) {
    const m = /^([A-Za-z0-9-]+): (.*)$/.exec(line);
    if (m && keep.includes(m[1])) fields.set(m[1], m[2]);
  }
  if (!fields.has("Package") || !fields.has("Version")) {
    throw new Error("image: a package control file without Package or Version");
  }
  const lines = keep.filter((k) => fields.has(k)).map((k) => `${k}: ${fields.get(k)}`);
  return [...lines.slice(0, 1), "Status: install ok installed", ...lines.slice(1)].join("\n") +
    "\n";
}
