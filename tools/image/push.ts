/**
 * Pushes an image from an OCI layout to a registry with the OCI distribution API, without a
 * container engine: each blob the registry lacks (`HEAD` first) is uploaded in one request
 * (`POST …/blobs/uploads/`, then `PUT <location>?digest=…`), then the manifest is `PUT` under the
 * tag (or its digest), and the registry's `Docker-Content-Digest` must equal the layout's. A
 * multi-arch image (an OCI index, as `deno task build` writes) goes the same way: every
 * platform's blobs, then each platform's manifest by its digest, then the index under the tag.
 *
 * Auth: anonymous first; on a 401 challenge, Basic with the credentials the docker config names
 * for the registry, or a Bearer token for `repository:<name>:pull,push` from the challenge's
 * realm (Basic credentials sent to it when there are any).
 *
 * Usage: `deno run -A tools/image/push.ts dist/images/controller quay.io/you/controller:v1
 * [--insecure] [--authfile FILE]`. Without `--authfile`: `$REGISTRY_AUTH_FILE`,
 * `$XDG_RUNTIME_DIR/containers/auth.json` or `~/.docker/config.json`, the first that exists.
 *
 * @module
 */
import { parseWwwAuthenticate } from "../../lib/registry/challenge.ts";
import {
  type DockerConfig,
  findCredentials,
  parseDockerConfig,
  type RegistryCredentials,
} from "../../lib/registry/docker_config.ts";
import { parseImageReference } from "../../lib/registry/reference.ts";
import { type Descriptor, type LayoutImage, readBlob, readLayout, REF_NAME } from "./oci.ts";

/** Options of {@linkcode pushLayout}. */
export interface PushOptions {
  /** The OCI layout folder. */
  layout: string;
  /** Where to: `host[:port]/repository[:tag]` (no tag: pushed by digest only). */
  reference: string;
  /** The layout's ref name to push when its index lists several images. */
  refName?: string;
  /** `host[:port]` of registries reached over plain HTTP. */
  insecureRegistries?: string[];
  /** An extra CA (PEM) to trust. */
  caCertPem?: string;
  /** A docker config (`{"auths": …}`) with credentials. */
  dockerConfigJson?: string | object;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** What {@linkcode pushLayout} did. */
export interface PushResult {
  /** The manifest (or index) digest (equal to the layout's). */
  digest: string;
  /** For an index: the digests of the platform manifests pushed with it. */
  manifests: string[];
  /** `host/repository@digest`. */
  pinned: string;
  /** Distinct blobs uploaded, and distinct blobs the registry already had. */
  uploaded: number;
  existing: number;
}

/** Pushes one image of `options.layout`; see the module doc. */
export async function pushLayout(options: PushOptions): Promise<PushResult> {
  const ref = parseImageReference(options.reference);
  if (ref.digest) throw new Error(`push: give a tag or no tag, not a digest: ${options.reference}`);
  const tag = /:[^/]+$/.test(options.reference) ? ref.tag : undefined;
  const images = await readLayout(options.layout);
  const chosen = options.refName
    ? images.filter((i) => i.descriptor.annotations?.[REF_NAME] === options.refName)
    : images;
  if (chosen.length !== 1) {
    throw new Error(
      `push: ${options.layout} holds ${chosen.length} images${
        options.refName ? ` named ${options.refName}` : ""
      }; name one with refName`,
    );
  }
  const image = chosen[0];
  const http = new RegistryHttp({
    registry: ref.registry,
    repository: ref.repository,
    insecure: (options.insecureRegistries ?? []).includes(ref.registry),
    caCertPem: options.caCertPem,
    config: options.dockerConfigJson !== undefined
      ? parseDockerConfig(options.dockerConfigJson)
      : { entries: [] },
  });
  try {
    let uploaded = 0;
    let existing = 0;
    const children = image.children ?? [];
    // Platforms share blobs (the bundle layer): each goes once.
    const seen = new Set<string>();
    for (const manifest of [...children, ...(children.length ? [] : [image])]) {
      const { config, layers } = manifest.manifest;
      if (!config) throw new Error(`push: ${manifest.descriptor.digest} is not an image manifest`);
      const blobs = [config, ...layers].filter((d) => !seen.has(d.digest));
      for (const d of blobs) seen.add(d.digest);
      const sent = await pushBlobs(http, ref.repository, options, blobs);
      uploaded += sent.uploaded;
      existing += sent.existing;
      // Platform manifests go by digest; the index (or a lone manifest) then takes the tag.
      if (children.length) await putManifest(http, ref.repository, manifest);
    }
    const digest = await putManifest(http, ref.repository, image, tag);
    return {
      digest,
      manifests: children.map((c) => c.descriptor.digest),
      pinned: `${ref.registry}/${ref.repository}@${digest}`,
      uploaded,
      existing,
    };
  } finally {
    http.close();
  }
}

/** Uploads the blobs the registry lacks. */
async function pushBlobs(
  http: RegistryHttp,
  repository: string,
  options: PushOptions,
  descriptors: readonly Descriptor[],
): Promise<{ uploaded: number; existing: number }> {
  let uploaded = 0;
  let existing = 0;
  for (const descriptor of descriptors) {
    const head = await http.send("HEAD", `/v2/${repository}/blobs/${descriptor.digest}`);
    if (head.status === 200) {
      existing++;
      continue;
    }
    const bytes = await readBlob(options.layout, descriptor.digest);
    const start = await http.send("POST", `/v2/${repository}/blobs/uploads/`);
    expect(start, [202], `starting the upload of ${descriptor.digest}`);
    const location = new URL(start.headers.get("location") ?? "", http.base);
    location.searchParams.set("digest", descriptor.digest);
    const put = await http.send("PUT", location.pathname + location.search, {
      body: bytes,
      headers: { "content-type": "application/octet-stream" },
    }, location.origin);
    expect(put, [201], `uploading ${descriptor.digest}`);
    uploaded++;
    options.log?.(`[push] ${descriptor.digest} (${bytes.length} bytes)`);
  }
  return { uploaded, existing };
}

/** PUTs a manifest or index under `tag` (default: its digest); returns the digest. */
async function putManifest(
  http: RegistryHttp,
  repository: string,
  image: LayoutImage,
  tag?: string,
): Promise<string> {
  const digest = image.descriptor.digest;
  const put = await http.send("PUT", `/v2/${repository}/manifests/${tag ?? digest}`, {
    body: image.manifestBytes,
    headers: { "content-type": image.descriptor.mediaType },
  });
  expect(put, [201], `putting the manifest ${digest}`);
  const served = put.headers.get("docker-content-digest");
  if (served !== null && served !== digest) {
    throw new Error(`push: the registry stored the manifest as ${served}, not ${digest}`);
  }
  return digest;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

function expect(answer: Answer, statuses: number[], what: string): void {
  if (!statuses.includes(answer.status)) {
    throw new Error(`push: ${what}: HTTP ${answer.status} ${answer.text.slice(0, 500)}`);
  }
}

/** HTTP to one repository of one registry, answering auth challenges. */
class RegistryHttp {
  readonly base: string;
  #client?: Deno.HttpClient;
  #authorization?: string;
  #credentials?: RegistryCredentials;
  #repository: string;

  constructor(o: {
    registry: string;
    repository: string;
    insecure: boolean;
    caCertPem?: string;
    config: DockerConfig;
  }) {
    this.base = `${o.insecure ? "http" : "https"}://${o.registry}`;
    this.#repository = o.repository;
    this.#credentials = findCredentials(o.config, o.registry, o.repository);
    if (o.caCertPem) this.#client = Deno.createHttpClient({ caCerts: [o.caCertPem] });
  }

  close(): void {
    this.#client?.close();
  }

  /** Sends a request; after a 401 it authenticates as challenged and sends it once more. */
  async send(
    method: string,
    path: string,
    init: { body?: Uint8Array<ArrayBuffer>; headers?: Record<string, string> } = {},
    origin = this.base,
  ): Promise<Answer> {
    let answer = await this.#once(method, `${origin}${path}`, init);
    if (answer.status === 401 && await this.#authenticate(answer.headers)) {
      answer = await this.#once(method, `${origin}${path}`, init);
    }
    return answer;
  }

  async #once(
    method: string,
    url: string,
    init: { body?: Uint8Array<ArrayBuffer>; headers?: Record<string, string> },
  ): Promise<Answer> {
    const headers = new Headers(init.headers);
    if (this.#authorization) headers.set("authorization", this.#authorization);
    const response = await fetch(url, {
      method,
      headers,
      ...(init.body ? { body: init.body } : {}),
      ...(this.#client ? { client: this.#client } : {}),
      redirect: "follow",
    });
    const text = method === "HEAD" ? "" : await response.text();
    if (method === "HEAD") await response.body?.cancel();
    return { status: response.status, headers: response.headers, text };
  }

  /** Sets the Authorization header a challenge asks for; false when it cannot be met. */
  async #authenticate(headers: Headers): Promise<boolean> {
    const challenges = parseWwwAuthenticate(headers.get("www-authenticate"));
    const bearer = challenges.find((c) => c.scheme === "bearer" && c.params.realm);
    const basicHeader = this.#credentials
      ? `Basic ${
        btoa(String.fromCharCode(
          ...new TextEncoder().encode(
            `${this.#credentials.username}:${this.#credentials.password}`,
          ),
        ))
      }`
      : undefined;
    if (bearer) {
      const url = new URL(bearer.params.realm);
      if (bearer.params.service) url.searchParams.set("service", bearer.params.service);
      url.searchParams.set("scope", `repository:${this.#repository}:pull,push`);
      const response = await fetch(url, {
        headers: basicHeader ? { authorization: basicHeader } : {},
        ...(this.#client ? { client: this.#client } : {}),
      });
      const body = await response.text();
      if (!response.ok) {
        throw new Error(`push: token service ${url.origin} answered HTTP ${response.status}`);
      }
      const parsed = JSON.parse(body) as { token?: string; access_token?: string };
      const token = parsed.token || parsed.access_token;
      if (!token) throw new Error(`push: token service ${url.origin} sent no token`);
      this.#authorization = `Bearer ${token}`;
      return true;
    }
    if (challenges.some((c) => c.scheme === "basic") && basicHeader) {
      if (this.#authorization === basicHeader) return false;
      this.#authorization = basicHeader;
      return true;
    }
    return false;
  }
}

/** The first existing auth file of the usual places, or undefined. */
async function defaultAuthFile(): Promise<string | undefined> {
  const candidates = [
    Deno.env.get("REGISTRY_AUTH_FILE"),
    Deno.env.get("XDG_RUNTIME_DIR") && `${Deno.env.get("XDG_RUNTIME_DIR")}/containers/auth.json`,
    Deno.env.get("HOME") && `${Deno.env.get("HOME")}/.docker/config.json`,
  ];
  for (const path of candidates) {
    if (!path) continue;
    try {
      await Deno.stat(path);
      return path;
    } catch {
      // next
    }
  }
  return undefined;
}

if (import.meta.main) {
  const positional = Deno.args.filter((a) => !a.startsWith("--"));
  if (positional.length !== 2) {
    console.error(
      "usage: push.ts LAYOUT HOST/REPOSITORY[:TAG] [--insecure] [--authfile=FILE]\n" +
        "  e.g. push.ts dist/images/controller quay.io/you/bootc-operator-controller:v0.1.0",
    );
    Deno.exit(2);
  }
  const [layout, reference] = positional;
  const authfile = Deno.args.find((a) => a.startsWith("--authfile="))?.slice(11) ??
    await defaultAuthFile();
  const registry = parseImageReference(reference).registry;
  const result = await pushLayout({
    layout,
    reference,
    insecureRegistries: Deno.args.includes("--insecure") ? [registry] : [],
    ...(authfile ? { dockerConfigJson: await Deno.readTextFile(authfile) } : {}),
    log: (line) => console.error(line),
  });
  console.log(result.pinned);
}
