/**
 * The real cosign, for tests: builds it once (tests/cosign/build.sh, cached), makes key
 * pairs and signs images in a test registry with cosign's own tag scheme, offline (no
 * transparency log).
 *
 * @module
 */
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
let built: Promise<string> | undefined;

/** The cosign binary's path (built on first use). */
export function cosignBinary(): Promise<string> {
  built ??= (async () => {
    const out = await new Deno.Command("bash", { args: [`${here}build.sh`], stderr: "inherit" })
      .output();
    if (!out.success) throw new Error("building cosign failed (see the output above)");
    return new TextDecoder().decode(out.stdout).trim().split("\n").at(-1) ?? "";
  })();
  return built;
}

async function cosign(args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(await cosignBinary(), {
    args,
    cwd,
    env: { COSIGN_PASSWORD: "", COSIGN_YES: "true" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`cosign ${args.join(" ")} failed:\n${text}`);
  return text;
}

/** A key pair in `dir/<name>.key` and `.pub`; returns the private key's path and the PEM. */
export async function keyPair(dir: string, name: string): Promise<{ key: string; pem: string }> {
  const sub = `${dir}/${name}`;
  await Deno.mkdir(sub, { recursive: true });
  await cosign(["generate-key-pair"], sub);
  return { key: `${sub}/cosign.key`, pem: await Deno.readTextFile(`${sub}/cosign.pub`) };
}

/**
 * Signs `image` (digest-pinned, in the plain-HTTP registry `host`) with `key`;
 * `recursive` also signs each platform manifest of an index.
 */
export async function sign(
  image: string,
  key: string,
  options: { recursive?: boolean } = {},
): Promise<void> {
  await cosign([
    "sign",
    "--key",
    key,
    "--tlog-upload=false",
    "--allow-http-registry",
    "--allow-insecure-registry",
    ...(options.recursive ? ["--recursive"] : []),
    image,
  ], Deno.cwd());
}
