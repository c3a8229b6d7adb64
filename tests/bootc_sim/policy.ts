/**
 * The host's signature policy as containers-image applies it on a pull: the requirements of
 * the most specific `transports.docker` scope of `<root>/etc/containers/policy.json` (else
 * `transports.docker[""]`, else `default`), each of which must accept the image. Cosign
 * signatures are read from the `sha256-<digest>.sig` tag only where a
 * `<root>/etc/containers/registries.d/*.yaml` sets `use-sigstore-attachments: true` for the
 * scope (or `default-docker`). Supported requirement types: `insecureAcceptAnything`,
 * `reject`, `sigstoreSigned` with `keyPath`, `keyPaths`, `keyData` or `keyDatas`. A host
 * without policy.json accepts anything (simulated hosts are made with the Fedora default).
 *
 * @module
 */
import { parse as parseYaml } from "yaml";
import type { ImageReference, RegistryClient } from "../../lib/registry/mod.ts";
import { verifyImageSignatures } from "../../lib/registry/signatures.ts";

type Requirement = Record<string, unknown>;

/** policy.json or a key it names cannot be read: every pull fails, as in containers-image. */
export class PolicyFileError extends Error {
  /** Creates the error with containers-image's words. */
  constructor(message: string) {
    super(message);
    this.name = "PolicyFileError";
  }
}

/** The docker-transport scopes that may apply to `ref`, most specific first. */
export function candidateScopes(ref: ImageReference): string[] {
  const repo = `${ref.domain}/${ref.repository}`;
  const out = [
    ...(ref.digest ? [`${repo}@${ref.digest}`] : []),
    ...(ref.tag ? [`${repo}:${ref.tag}`] : []),
  ];
  const parts = repo.split("/");
  for (let n = parts.length; n >= 1; n--) out.push(parts.slice(0, n).join("/"));
  const host = ref.domain.split(":")[0].split(".");
  for (let i = 1; i < host.length; i++) out.push(`*.${host.slice(i).join(".")}`);
  return out;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** The requirements policy.json sets for `ref`, with the scope they came from. */
async function requirementsFor(root: string, ref: ImageReference): Promise<Requirement[]> {
  const text = await readText(`${root}/etc/containers/policy.json`);
  if (text === undefined) return [{ type: "insecureAcceptAnything" }];
  let policy: { default?: Requirement[]; transports?: Record<string, Record<string, unknown>> };
  try {
    policy = JSON.parse(text);
  } catch (e) {
    throw new PolicyFileError(
      `invalid policy in "/etc/containers/policy.json": ${(e as Error).message}`,
    );
  }
  const docker = policy.transports?.docker ?? {};
  for (const scope of [...candidateScopes(ref), ""]) {
    if (Array.isArray(docker[scope])) return docker[scope] as Requirement[];
  }
  return policy.default ?? [];
}

/** True when a registries.d file turns on sigstore attachments for `ref`'s scope. */
async function usesAttachments(root: string, ref: ImageReference): Promise<boolean> {
  const dir = `${root}/etc/containers/registries.d`;
  const scopes = candidateScopes(ref);
  let best: { rank: number; on: boolean } | undefined;
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.endsWith(".yaml")) continue;
      const doc = parseYaml(await Deno.readTextFile(`${dir}/${entry.name}`)) ?? {};
      const docker = (doc.docker ?? {}) as Record<string, { "use-sigstore-attachments"?: boolean }>;
      for (const [scope, conf] of Object.entries(docker)) {
        const rank = scopes.indexOf(scope);
        if (rank >= 0 && (!best || rank < best.rank)) {
          best = { rank, on: conf?.["use-sigstore-attachments"] === true };
        }
      }
      const fallback = doc["default-docker"]?.["use-sigstore-attachments"] === true;
      if (!best && fallback) best = { rank: scopes.length, on: true };
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return best?.on ?? false;
}

async function keysOf(root: string, req: Requirement): Promise<string[]> {
  const paths = [
    ...(typeof req.keyPath === "string" ? [req.keyPath] : []),
    ...(Array.isArray(req.keyPaths) ? req.keyPaths as string[] : []),
  ];
  const datas = [
    ...(typeof req.keyData === "string" ? [req.keyData] : []),
    ...(Array.isArray(req.keyDatas) ? req.keyDatas as string[] : []),
  ];
  const keys = datas.map((d) => atob(d));
  for (const path of paths) {
    const text = await readText(`${root}${path}`);
    if (text === undefined) throw new PolicyFileError(`open ${path}: no such file or directory`);
    keys.push(text);
  }
  return keys;
}

/**
 * Applies the host's policy to the manifest `digest` that `ref` names: why the image is
 * rejected, worded as containers-image does, or undefined when it is accepted.
 */
export async function checkPolicy(
  root: string,
  client: RegistryClient,
  ref: ImageReference,
  pullspec: string,
  digest: string,
): Promise<string | undefined> {
  const requirements = await requirementsFor(root, ref);
  if (requirements.length === 0) {
    return `Source image rejected: Policy for image docker://${pullspec} is empty`;
  }
  for (const req of requirements) {
    if (req.type === "insecureAcceptAnything") continue;
    if (req.type === "reject") {
      return `Source image rejected: Running image docker://${pullspec} is rejected by policy.`;
    }
    if (req.type !== "sigstoreSigned") {
      return `invalid policy in "/etc/containers/policy.json": Unknown policy requirement type "${req.type}"`;
    }
    if (!(await usesAttachments(root, ref))) {
      return "Source image rejected: A signature was required, but no signature exists";
    }
    const keys = (await keysOf(root, req)).map((pem, i) => ({ name: `key ${i}`, pem }));
    const image = `${ref.domain}/${ref.repository}@${digest}`;
    const verdict = await verifyImageSignatures(client, image, keys, { platforms: false });
    if (verdict.verified) continue;
    return verdict.unsigned
      ? "Source image rejected: A signature was required, but no signature exists"
      : `Source image rejected: Signature verification failed: ${verdict.message}`;
  }
  return undefined;
}
