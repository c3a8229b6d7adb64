/**
 * The pinned inputs of the images (imperative shell): Debian packages fetched with
 * `apt-get download <name>:<arch>=<version>` and the Deno runtime from the npm packages
 * `@deno/linux-x64-glibc` and `@deno/linux-arm64-glibc`, each checked against the sha256
 * recorded in `packages.lock.json` before anything is taken from it, and kept in a cache folder
 * so later builds are offline. apt is asked for both architectures with `APT::Architectures`
 * options (no `dpkg --add-architecture`: the machine's own package set is left alone).
 *
 * The cache is `$BOOTC_IMAGE_CACHE`, else `~/.cache/bootc-operator/image-inputs`.
 *
 * @module
 */
import { PLATFORMS } from "./spec.ts";

/** One pinned Debian package. */
export interface LockedPackage {
  name: string;
  version: string;
  architecture: string;
  /** Its path in the Debian archive (for the record; `apt-get` finds it by name and version). */
  filename: string;
  size: number;
  /** sha256 of the `.deb`, as the archive's signed index lists it. */
  sha256: string;
}

/** The pinned Deno runtime of one architecture. */
export interface LockedDeno {
  /** OCI/Debian architecture name (`amd64`, `arm64`). */
  architecture: string;
  version: string;
  /** The npm package that ships the Linux binary. */
  npmPackage: string;
  /** npm's integrity (sha512) of that package's tarball. */
  integrity: string;
  /** sha256 of the `deno` executable inside it. */
  binarySha256: string;
  binarySize: number;
}

/** `packages.lock.json`. */
export interface ImageLock {
  comment: string;
  debian: { suite: string; architectures: string[] };
  /** mtime of every file in every layer and the images' `created` (seconds since 1970). */
  epoch: number;
  /** One entry per package and architecture (`all` packages once). */
  packages: LockedPackage[];
  /** One runtime per architecture, all of the same version. */
  deno: LockedDeno[];
}

/** The apt options that make both architectures' package lists known. */
export const APT_ARCHITECTURES = PLATFORMS.flatMap((p) => [
  "-o",
  `APT::Architectures::=${p.architecture}`,
]);

/** The lock's entry for package `name` on `architecture` (an `all` package fits every one). */
export function lockedPackage(lock: ImageLock, name: string, architecture: string): LockedPackage {
  const p = lock.packages.find((x) =>
    x.name === name && (x.architecture === architecture || x.architecture === "all")
  );
  if (!p) throw new Error(`packages.lock.json does not pin ${name} for ${architecture}`);
  return p;
}

/** The lock's Deno runtime for `architecture`. */
export function lockedDeno(lock: ImageLock, architecture: string): LockedDeno {
  const d = lock.deno.find((x) => x.architecture === architecture);
  if (!d) throw new Error(`packages.lock.json does not pin deno for ${architecture}`);
  return d;
}

/** The lock file beside this module. */
export const LOCK_PATH = new URL("./packages.lock.json", import.meta.url).pathname;

/** Reads and checks the shape of the lock file. */
export async function readLock(path = LOCK_PATH): Promise<ImageLock> {
  const lock = JSON.parse(await Deno.readTextFile(path)) as ImageLock;
  for (const p of lock.packages ?? []) {
    if (!p.name || !p.version || !/^[0-9a-f]{64}$/.test(p.sha256 ?? "")) {
      throw new Error(`${path}: package entry ${JSON.stringify(p)} lacks name, version or sha256`);
    }
  }
  if (!Array.isArray(lock.deno) || lock.deno.length === 0) {
    throw new Error(`${path}: no deno entries (one per architecture)`);
  }
  for (const d of lock.deno) {
    if (!d.architecture || !/^[0-9a-f]{64}$/.test(d.binarySha256 ?? "")) {
      throw new Error(`${path}: a deno entry lacks architecture or binarySha256`);
    }
  }
  return lock;
}

/** The cache folder for fetched inputs. */
export function cacheDir(): string {
  const explicit = Deno.env.get("BOOTC_IMAGE_CACHE");
  if (explicit) return explicit;
  const base = Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  return `${base}/bootc-operator/image-inputs`;
}

/** Hex sha256 of bytes. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function fileSha256(path: string): Promise<string | undefined> {
  try {
    return await sha256Hex(await Deno.readFile(path));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** The cache file name of a package (apt's spelling: an epoch's colon becomes %3a). */
export function debFileName(p: Pick<LockedPackage, "name" | "version" | "architecture">): string {
  return `${p.name}_${p.version.replace(/:/g, "%3a")}_${p.architecture}.deb`;
}

let aptUpdated = false;

/**
 * The path of the package's `.deb` in the cache, downloading it first when missing. Throws when
 * the download fails or the file's sha256 differs from the lock.
 */
export async function ensureDeb(
  p: LockedPackage,
  options: { cache?: string; log?: (line: string) => void } = {},
): Promise<string> {
  const dir = `${options.cache ?? cacheDir()}/debs`;
  const path = `${dir}/${debFileName(p)}`;
  const have = await fileSha256(path);
  if (have === p.sha256) return path;
  if (have !== undefined) await Deno.remove(path);
  await Deno.mkdir(dir, { recursive: true });
  const work = await Deno.makeTempDir({ dir, prefix: ".download-" });
  try {
    const spec = `${p.name}${p.architecture === "all" ? "" : `:${p.architecture}`}=${p.version}`;
    options.log?.(`[image] apt-get download ${spec}`);
    let result = await aptDownload(spec, work);
    if (!result.ok && !aptUpdated && Deno.uid() === 0) {
      // A machine whose package lists are missing or stale: refresh them once and retry.
      aptUpdated = true;
      options.log?.("[image] apt-get update");
      await new Deno.Command("apt-get", {
        args: [...APT_ARCHITECTURES, "update", "-qq"],
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).output();
      result = await aptDownload(spec, work);
    }
    if (!result.ok) {
      throw new Error(
        `cannot download the pinned ${spec} (${result.error.trim()}). ` +
          "If Debian no longer serves that version, re-pin every package with " +
          "`deno run -A tools/image/lock.ts` and commit tools/image/packages.lock.json.",
      );
    }
    const got = `${work}/${debFileName(p)}`;
    const sum = await fileSha256(got);
    if (sum !== p.sha256) {
      throw new Error(
        `${p.name}=${p.version}: sha256 ${sum ?? "(no file)"} differs from the lock's ${p.sha256}`,
      );
    }
    await Deno.rename(got, path);
    return path;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

async function aptDownload(
  spec: string,
  cwd: string,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const out = await new Deno.Command("apt-get", {
    // As root, apt drops to _apt to download, which cannot write the temp folder.
    args: ["-q", "-o", "APT::Sandbox::User=root", ...APT_ARCHITECTURES, "download", spec],
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.success) return { ok: true };
  return { ok: false, error: new TextDecoder().decode(out.stderr) || `exit ${out.code}` };
}

/**
 * The path of the pinned Deno executable: the running one when it is the pinned binary (the
 * project runs Deno from that same npm package), else a cached copy, else one unpacked from
 * `npm pack <npmPackage>@<version>` after checking the tarball's integrity.
 */
export async function ensureDeno(
  d: LockedDeno,
  options: { cache?: string; log?: (line: string) => void } = {},
): Promise<string> {
  const running = Deno.execPath();
  if ((await fileSha256(running)) === d.binarySha256) return running;
  const dir = `${options.cache ?? cacheDir()}/deno/${d.version}/${d.architecture}`;
  const path = `${dir}/deno`;
  if ((await fileSha256(path)) === d.binarySha256) return path;
  await Deno.mkdir(dir, { recursive: true });
  const work = await Deno.makeTempDir({ dir, prefix: ".download-" });
  try {
    options.log?.(`[image] npm pack ${d.npmPackage}@${d.version}`);
    const packed = await new Deno.Command("npm", {
      args: ["pack", `${d.npmPackage}@${d.version}`, "--pack-destination", work, "--json"],
      cwd: work,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!packed.success) {
      throw new Error(
        `npm pack ${d.npmPackage}@${d.version} failed: ${new TextDecoder().decode(packed.stderr)}`,
      );
    }
    const info = JSON.parse(new TextDecoder().decode(packed.stdout))[0] as {
      filename: string;
    };
    const tgz = await Deno.readFile(`${work}/${info.filename}`);
    const integrity = `sha512-${
      btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-512", tgz))))
    }`;
    if (integrity !== d.integrity) {
      throw new Error(`${d.npmPackage}@${d.version}: integrity ${integrity} != ${d.integrity}`);
    }
    const untar = await new Deno.Command("tar", {
      args: ["-xzf", info.filename, "package/deno"],
      cwd: work,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!untar.success) {
      throw new Error(`unpacking ${info.filename}: ${new TextDecoder().decode(untar.stderr)}`);
    }
    const sum = await fileSha256(`${work}/package/deno`);
    if (sum !== d.binarySha256) {
      throw new Error(`deno ${d.version}: sha256 ${sum} differs from the lock's ${d.binarySha256}`);
    }
    await Deno.chmod(`${work}/package/deno`, 0o755);
    await Deno.rename(`${work}/package/deno`, path);
    return path;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/** A package's files, unpacked with `dpkg-deb -x`. */
export interface UnpackedPackage {
  name: string;
  /** The folder it was unpacked into. */
  dir: string;
  /** Its control file (`dpkg-deb -f`). */
  control: string;
}

/** Unpacks a `.deb` into `dir` (created) and reads its control file. */
export async function unpackDeb(
  debPath: string,
  name: string,
  dir: string,
): Promise<UnpackedPackage> {
  await Deno.mkdir(dir, { recursive: true });
  const x = await new Deno.Command("dpkg-deb", {
    args: ["-x", debPath, dir],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!x.success) {
    throw new Error(`dpkg-deb -x ${debPath}: ${new TextDecoder().decode(x.stderr)}`);
  }
  const f = await new Deno.Command("dpkg-deb", {
    args: ["-f", debPath],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!f.success) throw new Error(`dpkg-deb -f ${debPath}: ${new TextDecoder().decode(f.stderr)}`);
  return { name, dir, control: new TextDecoder().decode(f.stdout) };
}

/** Every path below `dir` (relative, no leading slash), sorted. */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (rel: string) => {
    for await (const e of Deno.readDir(rel ? `${dir}/${rel}` : dir)) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      out.push(path);
      if (e.isDirectory) await visit(path);
    }
  };
  await visit("");
  return out.sort();
}
