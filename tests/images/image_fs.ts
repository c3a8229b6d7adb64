/**
 * Test helpers for built images: pull one from a registry by digest (every blob checked against
 * its digest, every layer against the config's diff id), unpack its layers into a folder, and
 * run a command from that folder the way a container runtime would run a pod's container: in a
 * new mount namespace, chrooted into the image's filesystem, `/proc` mounted, a fresh `/tmp`,
 * optional read-only binds (a service account), optionally a read-only root, as the given user.
 * The tests run as root; `unshare`, `mount` and `chroot` come from util-linux and coreutils.
 *
 * @module
 */
import { RegistryClient } from "../../lib/registry/client.ts";
import { computeDigest } from "../../lib/registry/digest.ts";

/** The parts of an image config the tests read. */
export interface PulledConfig {
  architecture: string;
  os: string;
  config: {
    User?: string;
    Env?: string[];
    Entrypoint?: string[];
    Cmd?: string[];
    WorkingDir?: string;
    Labels?: Record<string, string>;
  };
  rootfs: { diff_ids: string[] };
}

/** What {@linkcode pullAndUnpack} found. */
export interface PulledImage {
  config: PulledConfig;
  /** The compressed layer sizes, in order. */
  layerSizes: number[];
}

/**
 * Pulls `repositoryRef@digest` with `client` and unpacks its layers, in order, into `root`
 * (created), keeping owners and modes (`tar --numeric-owner -p`, as root).
 */
export async function pullAndUnpack(
  client: RegistryClient,
  repositoryRef: string,
  digest: string,
  root: string,
): Promise<PulledImage> {
  const pinned = `${repositoryRef}@${digest}`;
  const fetched = await client.fetchManifest(pinned);
  if (fetched.digest !== digest) throw new Error(`pulled ${fetched.digest}, asked ${digest}`);
  const manifest = fetched.manifest as {
    config: { digest: string };
    layers: { digest: string; mediaType: string; size: number }[];
  };
  const config = JSON.parse(
    new TextDecoder().decode(await client.fetchBlob(pinned, manifest.config.digest)),
  ) as PulledConfig;
  if (config.rootfs.diff_ids.length !== manifest.layers.length) {
    throw new Error("config and manifest disagree on the number of layers");
  }
  await Deno.mkdir(root, { recursive: true });
  const blobDir = await Deno.makeTempDir({ prefix: "bootc-image-pull-" });
  try {
    for (const [i, layer] of manifest.layers.entries()) {
      const gz = await client.fetchBlob(pinned, layer.digest);
      const tar = new Uint8Array(
        await new Response(new Blob([gz]).stream().pipeThrough(new DecompressionStream("gzip")))
          .arrayBuffer(),
      );
      const diffId = await computeDigest(tar);
      if (diffId !== config.rootfs.diff_ids[i]) {
        throw new Error(`layer ${i}: diff id ${diffId}, config says ${config.rootfs.diff_ids[i]}`);
      }
      const file = `${blobDir}/layer-${i}.tar`;
      await Deno.writeFile(file, tar);
      const out = await new Deno.Command("tar", {
        args: ["-xpf", file, "--numeric-owner", "-C", root],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!out.success) {
        throw new Error(`tar -x layer ${i}: ${new TextDecoder().decode(out.stderr)}`);
      }
    }
  } finally {
    await Deno.remove(blobDir, { recursive: true });
  }
  return { config, layerSizes: manifest.layers.map((l) => l.size) };
}

/** A read-only bind mount into the image's filesystem. */
export interface Bind {
  /** A folder outside. */
  source: string;
  /** Its place inside the image (absolute; created before the root turns read-only). */
  target: string;
}

/** Options of {@linkcode podArgv}. */
export interface PodOptions {
  /** The unpacked image. */
  root: string;
  /** `uid:gid` to run as. */
  user: string;
  /** Mount the image read-only (`readOnlyRootFilesystem`). */
  readOnlyRoot?: boolean;
  binds?: Bind[];
  /** What to run inside (absolute paths inside the image). */
  command: string[];
}

/**
 * The mount-namespace script: the image's root becomes a bind mount of itself so it can be
 * remounted read-only; `/proc`, a tmpfs `/tmp` and a tmpfs `/dev` with the usual device nodes
 * (bound from the host's) go on top, then the binds; then `chroot`.
 */
const SCRIPT = `set -eu
mount=$1; chroot=$2; root=$3; user=$4; ro=$5; shift 5
"$mount" --bind "$root" "$root"
"$mount" -t proc proc "$root/proc"
"$mount" -t tmpfs -o mode=1777,size=64m tmpfs "$root/tmp"
"$mount" -t tmpfs -o mode=755,size=64k tmpfs "$root/dev"
for d in null zero full random urandom tty; do
  : >"$root/dev/$d"
  "$mount" --bind "/dev/$d" "$root/dev/$d"
done
while [ "$1" != "--" ]; do
  "$mount" --bind "$1" "$root$2"
  "$mount" -o remount,bind,ro "$root$2"
  shift 2
done
shift
if [ "$ro" = ro ]; then "$mount" -o remount,bind,ro "$root"; fi
exec "$chroot" --userspec="$user" "$root" "$@"
`;

/** The first of `candidates` that exists. */
async function locate(name: string, candidates: string[]): Promise<string> {
  for (const path of candidates) {
    try {
      await Deno.stat(path);
      return path;
    } catch {
      // next
    }
  }
  throw new Error(`${name} not found in ${candidates.join(", ")}`);
}

/**
 * Prepares the mount points in `options.root` and returns the argv that runs the command there
 * (`unshare --mount --propagation private sh -c …`); run it with a cleared environment plus the
 * image's `Env`, as a runtime does.
 */
export async function podArgv(options: PodOptions): Promise<string[]> {
  await Deno.mkdir(`${options.root}/proc`, { recursive: true });
  await Deno.mkdir(`${options.root}/tmp`, { recursive: true });
  await Deno.mkdir(`${options.root}/dev`, { recursive: true });
  const binds: string[] = [];
  for (const b of options.binds ?? []) {
    await Deno.mkdir(`${options.root}${b.target}`, { recursive: true });
    binds.push(b.source, b.target);
  }
  // Absolute paths: the command runs with the image's environment, whose PATH is the image's.
  return [
    await locate("unshare", ["/usr/bin/unshare", "/bin/unshare"]),
    "--mount",
    "--propagation",
    "private",
    "/bin/sh",
    "-c",
    SCRIPT,
    "sh",
    await locate("mount", ["/usr/bin/mount", "/bin/mount"]),
    await locate("chroot", ["/usr/sbin/chroot", "/usr/bin/chroot", "/sbin/chroot"]),
    options.root,
    options.user,
    options.readOnlyRoot ? "ro" : "rw",
    ...binds,
    "--",
    ...options.command,
  ];
}

/** `KEY=VALUE` lines as an object. */
export function envObject(lines: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

/** Every path below `dir` (relative), with its kind. */
export async function walk(
  dir: string,
): Promise<{ path: string; kind: "file" | "dir" | "symlink"; mode: number; size: number }[]> {
  const out: { path: string; kind: "file" | "dir" | "symlink"; mode: number; size: number }[] = [];
  const visit = async (rel: string) => {
    for await (const e of Deno.readDir(rel ? `${dir}/${rel}` : dir)) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      const info = await Deno.lstat(`${dir}/${path}`);
      const kind = info.isSymlink ? "symlink" : info.isDirectory ? "dir" : "file";
      out.push({ path, kind, mode: (info.mode ?? 0) & 0o7777, size: info.size });
      if (kind === "dir") await visit(path);
    }
  };
  await visit("");
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}
