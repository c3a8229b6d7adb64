/**
 * Re-pins the images' inputs: writes `tools/image/packages.lock.json` from the versions Debian
 * serves now for every platform of spec.ts's `PLATFORMS` (apt's candidates: the machine's
 * bookworm, bookworm-updates and bookworm-security lists, for amd64 and arm64) and from the Deno
 * npm packages (`@deno/linux-x64-glibc`, `@deno/linux-arm64-glibc`) of the running Deno's
 * version. The architectures share one package set (a version that differs is reported).
 *
 * Usage: `deno run -A tools/image/lock.ts` (after
 * `apt-get -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 update`). Then rebuild
 * (`deno task build`) and commit the lock: the image digests change with it.
 *
 * @module
 */
import { ALL_PACKAGES, PLATFORMS } from "./spec.ts";
import {
  APT_ARCHITECTURES,
  type ImageLock,
  LOCK_PATH,
  type LockedDeno,
  type LockedPackage,
  readLock,
  sha256Hex,
} from "./inputs.ts";

/** Parses `apt-cache show --no-all-versions` output for one package. */
export function parseAptShow(text: string): Omit<LockedPackage, "name"> & { name: string } {
  const field = (name: string) => {
    const m = new RegExp(`^${name}: (.*)$`, "m").exec(text);
    if (!m) throw new Error(`apt-cache show: no ${name} field`);
    return m[1].trim();
  };
  return {
    name: field("Package"),
    version: field("Version"),
    architecture: field("Architecture"),
    filename: field("Filename"),
    size: Number(field("Size")),
    sha256: field("SHA256"),
  };
}

async function output(command: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(command, {
    args,
    ...(cwd ? { cwd } : {}),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`${command} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Pins the runtime of `npmPackage` at `version` (npm's integrity, the binary's sha256). */
async function pinDeno(
  architecture: string,
  npmPackage: string,
  version: string,
): Promise<LockedDeno> {
  const work = await Deno.makeTempDir({ prefix: "bootc-image-lock-" });
  try {
    const packed = JSON.parse(
      await output("npm", ["pack", `${npmPackage}@${version}`, "--json"], work),
    )[0] as { filename: string; integrity: string };
    await output("tar", ["-xzf", packed.filename, "package/deno"], work);
    const binary = await Deno.readFile(`${work}/package/deno`);
    return {
      architecture,
      version,
      npmPackage,
      integrity: packed.integrity,
      binarySha256: await sha256Hex(binary),
      binarySize: binary.length,
    };
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

if (import.meta.main) {
  const packages: LockedPackage[] = [];
  for (const platform of PLATFORMS) {
    for (const name of ALL_PACKAGES) {
      // An `all` package is one file for every architecture (apt shows it for the native one).
      if (packages.some((p) => p.name === name && p.architecture === "all")) continue;
      const shown = parseAptShow(
        await output("apt-cache", [
          ...APT_ARCHITECTURES,
          "show",
          "--no-all-versions",
          `${name}:${platform.architecture}`,
        ]),
      );
      if (shown.name !== name) throw new Error(`apt-cache show ${name} answered ${shown.name}`);
      const first = packages.find((p) => p.name === name);
      if (first && first.version !== shown.version) {
        // Possible when the archive builds lag on one architecture; the lock records both.
        console.error(`note: ${name} is ${first.version} on amd64, ${shown.version} here`);
      }
      packages.push(shown);
    }
  }
  // The same runtime version everywhere: the one the project runs with.
  const deno: LockedDeno[] = [];
  for (const platform of PLATFORMS) {
    deno.push(await pinDeno(platform.architecture, platform.denoNpmPackage, Deno.version.deno));
  }
  let epoch = 0;
  try {
    epoch = (await readLock()).epoch;
  } catch {
    // no lock yet
  }
  const lock: ImageLock = {
    comment: "Inputs of the controller and daemon images (tools/image/). Written by " +
      "`deno run -A tools/image/lock.ts`; every file is checked against these sums before use.",
    debian: { suite: "bookworm", architectures: PLATFORMS.map((p) => p.architecture) },
    epoch,
    packages,
    deno,
  };
  await Deno.writeTextFile(LOCK_PATH, JSON.stringify(lock, null, 2) + "\n");
  for (const p of packages) console.log(`${p.name}:${p.architecture}=${p.version}`);
  for (const d of deno) console.log(`deno ${d.version} (${d.npmPackage})`);
}
