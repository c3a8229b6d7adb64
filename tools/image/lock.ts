/**
 * Re-pins the images' inputs: writes `tools/image/packages.lock.json` from the versions Debian
 * serves now (apt's candidates: the machine's bookworm, bookworm-updates and bookworm-security
 * lists) and from the Deno npm package of the running Deno's version.
 *
 * Usage: `deno run -A tools/image/lock.ts` (after `apt-get update`). Then rebuild
 * (`deno task build`) and commit the lock: the image digests change with it.
 *
 * @module
 */
import { ALL_PACKAGES } from "./spec.ts";
import { type ImageLock, LOCK_PATH, type LockedPackage, readLock, sha256Hex } from "./inputs.ts";

const DENO_NPM_PACKAGE = "@deno/linux-x64-glibc";

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

if (import.meta.main) {
  const packages: LockedPackage[] = [];
  for (const name of ALL_PACKAGES) {
    const shown = parseAptShow(await output("apt-cache", ["show", "--no-all-versions", name]));
    if (shown.name !== name) throw new Error(`apt-cache show ${name} answered ${shown.name}`);
    packages.push(shown);
  }
  const version = Deno.version.deno;
  const work = await Deno.makeTempDir({ prefix: "bootc-image-lock-" });
  let deno: ImageLock["deno"];
  try {
    const packed = JSON.parse(
      await output("npm", ["pack", `${DENO_NPM_PACKAGE}@${version}`, "--json"], work),
    )[0] as { filename: string; integrity: string };
    await output("tar", ["-xzf", packed.filename, "package/deno"], work);
    const binary = await Deno.readFile(`${work}/package/deno`);
    deno = {
      version,
      npmPackage: DENO_NPM_PACKAGE,
      integrity: packed.integrity,
      binarySha256: await sha256Hex(binary),
      binarySize: binary.length,
    };
  } finally {
    await Deno.remove(work, { recursive: true });
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
    debian: { suite: "bookworm", architecture: "amd64" },
    epoch,
    packages,
    deno,
  };
  await Deno.writeTextFile(LOCK_PATH, JSON.stringify(lock, null, 2) + "\n");
  for (const p of packages) console.log(`${p.name}=${p.version}`);
  console.log(`deno ${deno.version} (${deno.npmPackage})`);
}
