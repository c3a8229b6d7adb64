/**
 * A real OCI registry for tests: Debian's `docker-registry` (the CNCF
 * distribution registry 2.8) on a free loopback port, with its storage in a
 * temporary folder, optional TLS from a test CA, and no auth, htpasswd (bcrypt)
 * or token auth (with {@linkcode startTokenIssuer}). One call starts it, one
 * call stops it and removes everything.
 *
 * Images are pushed through the registry HTTP API (monolithic blob upload,
 * manifest PUT): tiny OCI images whose config carries the labels a bootc image
 * has (`containers.bootc`, `org.opencontainers.image.version`).
 *
 * @module
 */
import { stringify as toYaml } from "yaml";
import { computeDigest } from "../../lib/registry/digest.ts";
import {
  DOCKER_MANIFEST,
  DOCKER_MANIFEST_LIST,
  MANIFEST_ACCEPT,
  OCI_CONFIG,
  OCI_INDEX,
  OCI_LAYER_GZIP,
  OCI_MANIFEST,
} from "../../lib/registry/media_types.ts";
import { issueCa, issueLeaf } from "./pki.ts";
import { freePort, type ManagedProcess, startProcess, tailFile } from "./process.ts";
import { startTokenIssuer, type TokenIssuer } from "./token_issuer.ts";
import { waitFor } from "./wait.ts";

/** Options of {@linkcode startRegistry}. */
export interface StartRegistryOptions {
  /** "none" (default), "htpasswd" (Basic, bcrypt) or "token" (Bearer via a test token service). */
  auth?: "none" | "htpasswd" | "token";
  /** username → password of the users allowed to pull (and push). */
  users?: Record<string, string>;
  /** Serve HTTPS with a certificate from a fresh test CA (see {@linkcode TestRegistry.caCertPem}). */
  tls?: boolean;
  /** Token lifetime for `auth: "token"` (default 300 s). */
  tokenLifetimeSeconds?: number;
}

/** Options of {@linkcode TestRegistry.pushImage}. */
export interface PushImageOptions {
  repository: string;
  /** Tag to push; without one the manifest is pushed by digest only. */
  tag?: string;
  /** GOARCH spelling (default "amd64"). */
  architecture?: string;
  /** e.g. "v8" for arm64. */
  variant?: string;
  /** Goes into the `org.opencontainers.image.version` label and the layer's os-release. */
  version: string;
  /** Extra config labels. */
  labels?: Record<string, string>;
  /** The config's `created` (default 2026-01-01T00:00:00Z, so equal inputs give equal digests). */
  created?: string;
}

/** What {@linkcode TestRegistry.pushImage} pushed. */
export interface PushedImage {
  /** Digest of the image manifest. */
  digest: string;
  /** Digest of the config blob. */
  configDigest: string;
  /** Digest of the (gzip) layer blob. */
  layerDigest: string;
}

/** One image of a multi-arch index. */
export interface IndexImage {
  architecture: string;
  variant?: string;
  version: string;
  labels?: Record<string, string>;
}

/** What {@linkcode TestRegistry.pushIndex} pushed. */
export interface PushedIndex {
  /** Digest of the index. */
  digest: string;
  /** The per-platform manifest digests, in the order given. */
  platforms: { os: string; architecture: string; variant?: string; digest: string }[];
}

/** A running registry. */
export interface TestRegistry {
  /** `127.0.0.1:PORT`, the registry part of image references. */
  readonly host: string;
  /** `http(s)://127.0.0.1:PORT`. */
  readonly url: string;
  /** The temp folder (storage, config, log); removed by {@linkcode stop}. */
  readonly dir: string;
  /** True when served over plain HTTP (clients must list {@linkcode host} as insecure). */
  readonly insecure: boolean;
  /** The test CA (PEM) when `tls` is on. */
  readonly caCertPem?: string;
  /** The token service when `auth` is "token". */
  readonly tokenIssuer?: TokenIssuer;
  /** Options for a `RegistryClient` to reach this registry (insecure host or CA). */
  clientOptions(): { insecureRegistries?: string[]; caCertPem?: string };
  /** A `.dockerconfigjson` with `username`'s credentials (password from `users` unless given). */
  dockerConfigJson(username: string, password?: string): string;
  /** Pushes a tiny single-platform OCI image. */
  pushImage(options: PushImageOptions): Promise<PushedImage>;
  /** Pushes one image per entry and an OCI index over them under `tag`. */
  pushIndex(
    options: { repository: string; tag: string; images: IndexImage[] },
  ): Promise<PushedIndex>;
  /** Points `toTag` at the manifest `fromTagOrDigest` names; returns its digest. */
  tagExisting(repository: string, fromTagOrDigest: string, toTag: string): Promise<string>;
  /** The registry's log (last lines), for failure messages. */
  logTail(lines?: number): Promise<string>;
  /** Kills the registry (and token service) and removes the temp folder. */
  stop(): Promise<void>;
  /** Same as {@linkcode stop}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

const encoder = new TextEncoder();
const ADMIN_USER = "harness-admin";

/** Starts a registry; see {@linkcode StartRegistryOptions}. */
export async function startRegistry(options: StartRegistryOptions = {}): Promise<TestRegistry> {
  const auth = options.auth ?? "none";
  const users = { ...options.users };
  const adminPassword = crypto.randomUUID();
  const dir = await Deno.makeTempDir({ prefix: "bootc-registry-" });
  let tokenIssuer: TokenIssuer | undefined;
  let httpClient: Deno.HttpClient | undefined;
  let proc: ManagedProcess | undefined;
  try {
    let caCertPem: string | undefined;
    let tlsConfig: { certificate: string; key: string } | undefined;
    if (options.tls) {
      const ca = await issueCa({
        dir,
        name: "ca",
        days: 2,
        profile: { commonName: "bootc-operator test registry CA" },
      });
      const leaf = await issueLeaf({
        dir,
        name: "registry",
        days: 2,
        ca,
        profile: {
          commonName: "127.0.0.1",
          extendedKeyUsage: ["serverAuth"],
          ips: ["127.0.0.1"],
          dnsNames: ["localhost"],
        },
      });
      caCertPem = await Deno.readTextFile(ca.cert);
      tlsConfig = { certificate: leaf.cert, key: leaf.key };
      httpClient = Deno.createHttpClient({ caCerts: [caCertPem] });
    }

    let authConfig: Record<string, unknown> | undefined;
    if (auth === "htpasswd") {
      const lines: string[] = [];
      for (const [user, password] of Object.entries({ ...users, [ADMIN_USER]: adminPassword })) {
        lines.push((await run("htpasswd", ["-Bbn", user, password])).trim());
      }
      await Deno.writeTextFile(`${dir}/htpasswd`, lines.join("\n") + "\n");
      authConfig = { htpasswd: { realm: "bootc-operator-test", path: `${dir}/htpasswd` } };
    } else if (auth === "token") {
      tokenIssuer = await startTokenIssuer({
        dir,
        users: { ...users, [ADMIN_USER]: adminPassword },
        service: "bootc-operator-test-registry",
        lifetimeSeconds: options.tokenLifetimeSeconds,
      });
      authConfig = {
        token: {
          realm: tokenIssuer.realm,
          service: tokenIssuer.service,
          issuer: tokenIssuer.issuer,
          rootcertbundle: tokenIssuer.certPath,
        },
      };
    }

    const scheme = options.tls ? "https" : "http";
    let port = 0;
    // A port picked by freePort can be taken before the registry binds it: retry with another.
    for (let attempt = 1;; attempt++) {
      port = freePort();
      const config = {
        version: 0.1,
        log: { level: "info", formatter: "text", accesslog: { disabled: true } },
        storage: {
          filesystem: { rootdirectory: `${dir}/data` },
          delete: { enabled: true },
          maintenance: { uploadpurging: { enabled: false } },
        },
        http: {
          addr: `127.0.0.1:${port}`,
          secret: crypto.randomUUID(),
          ...(tlsConfig ? { tls: tlsConfig } : {}),
        },
        ...(authConfig ? { auth: authConfig } : {}),
      };
      await Deno.writeTextFile(`${dir}/config.yml`, toYaml(config));
      const logPath = `${dir}/registry.log`;
      proc = startProcess({
        name: "docker-registry",
        command: "docker-registry",
        args: ["serve", `${dir}/config.yml`],
        logPath,
      });
      const started = proc;
      const url = `${scheme}://127.0.0.1:${port}/v2/`;
      try {
        await waitFor(async () => {
          if (!started.running) throw new Error("exited");
          const response = await fetch(url, httpClient ? { client: httpClient } : {});
          await response.body?.cancel();
          return response.status === 200 || response.status === 401;
        }, {
          timeoutMs: 15_000,
          intervalMs: 50,
          message: `docker-registry answering on ${url}`,
        });
        break;
      } catch (error) {
        await started.stop();
        const log = await tailFile(logPath);
        if (attempt < 3 && /address already in use/i.test(log)) continue;
        throw new Error(`docker-registry did not start: ${error}\n${log}`);
      }
    }

    const host = `127.0.0.1:${port}`;
    const base = `${scheme}://${host}`;
    const tokens = new Map<string, string>();
    const authorization = async (repository: string): Promise<string | undefined> => {
      if (auth === "htpasswd") return `Basic ${btoa(`${ADMIN_USER}:${adminPassword}`)}`;
      if (auth === "token" && tokenIssuer) {
        let token = tokens.get(repository);
        if (!token) {
          token = await tokenIssuer.mint(ADMIN_USER, [
            { type: "repository", name: repository, actions: ["pull", "push"] },
          ]);
          tokens.set(repository, token);
        }
        return `Bearer ${token}`;
      }
      return undefined;
    };
    const call = async (
      repository: string,
      method: string,
      path: string,
      init: { headers?: Record<string, string>; body?: Uint8Array<ArrayBuffer> } = {},
    ): Promise<{ status: number; headers: Headers; body: Uint8Array<ArrayBuffer> }> => {
      const headers = new Headers(init.headers);
      const authValue = await authorization(repository);
      if (authValue) headers.set("authorization", authValue);
      const target = new URL(path, base);
      const response = await fetch(target, {
        method,
        headers,
        ...(init.body ? { body: init.body } : {}),
        ...(httpClient ? { client: httpClient } : {}),
      });
      const body = new Uint8Array(await response.arrayBuffer());
      return { status: response.status, headers: response.headers, body };
    };
    const expect = (
      what: string,
      response: { status: number; body: Uint8Array },
      ...statuses: number[]
    ) => {
      if (!statuses.includes(response.status)) {
        throw new Error(
          `registry harness: ${what} answered HTTP ${response.status}: ${
            new TextDecoder().decode(response.body)
          }`,
        );
      }
    };

    const pushBlob = async (repository: string, bytes: Uint8Array<ArrayBuffer>) => {
      const digest = await computeDigest(bytes);
      const exists = await call(repository, "HEAD", `/v2/${repository}/blobs/${digest}`);
      if (exists.status === 200) return { digest, size: bytes.length };
      const start = await call(repository, "POST", `/v2/${repository}/blobs/uploads/`);
      expect(`blob upload start in ${repository}`, start, 202);
      const location = new URL(start.headers.get("location") ?? "", base);
      location.searchParams.set("digest", digest);
      const put = await call(repository, "PUT", location.pathname + location.search, {
        headers: { "content-type": "application/octet-stream" },
        body: bytes,
      });
      expect(`blob upload of ${digest} to ${repository}`, put, 201);
      return { digest, size: bytes.length };
    };
    const pushManifest = async (
      repository: string,
      reference: string | undefined,
      mediaType: string,
      bytes: Uint8Array<ArrayBuffer>,
    ): Promise<string> => {
      const digest = await computeDigest(bytes);
      const put = await call(
        repository,
        "PUT",
        `/v2/${repository}/manifests/${reference ?? digest}`,
        {
          headers: { "content-type": mediaType },
          body: bytes,
        },
      );
      expect(`manifest PUT ${repository}:${reference ?? digest}`, put, 201);
      const served = put.headers.get("docker-content-digest");
      if (served !== digest) {
        throw new Error(`registry harness: registry stored ${served}, expected ${digest}`);
      }
      return digest;
    };

    const pushImage = async (o: PushImageOptions): Promise<PushedImage> => {
      const architecture = o.architecture ?? "amd64";
      const created = o.created ?? "2026-01-01T00:00:00Z";
      const tar = tarFile(
        "usr/lib/os-release",
        `NAME="bootc test image"\nID=bootc-test\nVERSION_ID=${o.version}\n`,
      );
      const gzipped = await gzip(tar);
      const layer = await pushBlob(o.repository, gzipped);
      const config = encoder.encode(JSON.stringify({
        created,
        architecture,
        ...(o.variant ? { variant: o.variant } : {}),
        os: "linux",
        config: {
          Labels: {
            "containers.bootc": "1",
            "org.opencontainers.image.version": o.version,
            ...o.labels,
          },
        },
        rootfs: { type: "layers", diff_ids: [await computeDigest(tar)] },
        history: [{ created, created_by: "bootc-operator test registry harness" }],
      }));
      const configBlob = await pushBlob(o.repository, config);
      const manifest = encoder.encode(JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: { mediaType: OCI_CONFIG, digest: configBlob.digest, size: configBlob.size },
        layers: [{ mediaType: OCI_LAYER_GZIP, digest: layer.digest, size: layer.size }],
      }));
      const digest = await pushManifest(o.repository, o.tag, OCI_MANIFEST, manifest);
      return { digest, configDigest: configBlob.digest, layerDigest: layer.digest };
    };

    const pushIndex = async (
      o: { repository: string; tag: string; images: IndexImage[] },
    ): Promise<PushedIndex> => {
      const entries = [];
      const platforms: PushedIndex["platforms"] = [];
      for (const image of o.images) {
        const pushed = await pushImage({ repository: o.repository, ...image });
        const manifest = await call(
          o.repository,
          "GET",
          `/v2/${o.repository}/manifests/${pushed.digest}`,
          {
            headers: { accept: OCI_MANIFEST },
          },
        );
        expect(`manifest GET ${pushed.digest}`, manifest, 200);
        const platform = {
          os: "linux",
          architecture: image.architecture,
          ...(image.variant ? { variant: image.variant } : {}),
        };
        entries.push({
          mediaType: OCI_MANIFEST,
          digest: pushed.digest,
          size: manifest.body.length,
          platform,
        });
        platforms.push({ ...platform, digest: pushed.digest });
      }
      const index = encoder.encode(JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: entries,
      }));
      const digest = await pushManifest(o.repository, o.tag, OCI_INDEX, index);
      return { digest, platforms };
    };

    const tagExisting = async (
      repository: string,
      fromTagOrDigest: string,
      toTag: string,
    ): Promise<string> => {
      const got = await call(repository, "GET", `/v2/${repository}/manifests/${fromTagOrDigest}`, {
        headers: { accept: MANIFEST_ACCEPT },
      });
      expect(`manifest GET ${repository}:${fromTagOrDigest}`, got, 200);
      const mediaType = (got.headers.get("content-type") ?? "").split(";")[0];
      if (![OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST].includes(mediaType)) {
        throw new Error(`registry harness: unexpected manifest type ${mediaType}`);
      }
      return await pushManifest(repository, toTag, mediaType, got.body);
    };

    const running = proc;
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        await running.stop();
        await tokenIssuer?.stop();
        httpClient?.close();
        await Deno.remove(dir, { recursive: true });
      })();
      return stopping;
    };
    return {
      host,
      url: base,
      dir,
      insecure: !options.tls,
      ...(caCertPem ? { caCertPem } : {}),
      ...(tokenIssuer ? { tokenIssuer } : {}),
      clientOptions: () => options.tls ? { caCertPem } : { insecureRegistries: [host] },
      dockerConfigJson: (username, password) => {
        const secret = password ?? users[username];
        if (secret === undefined) throw new Error(`registry harness: no user ${username}`);
        return JSON.stringify({ auths: { [host]: { auth: btoa(`${username}:${secret}`) } } });
      },
      pushImage,
      pushIndex,
      tagExisting,
      logTail: (lines) => tailFile(`${dir}/registry.log`, lines),
      stop,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await proc?.stop();
    await tokenIssuer?.stop();
    httpClient?.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}

async function run(command: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(command, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  if (!out.success) {
    throw new Error(`${command} failed (${out.code}): ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** A one-file ustar archive (mode 0644, mtime 0). */
export function tarFile(name: string, content: string): Uint8Array<ArrayBuffer> {
  const data = encoder.encode(content);
  const header = new Uint8Array(512);
  const put = (offset: number, length: number, value: string) => {
    header.set(encoder.encode(value).subarray(0, length), offset);
  };
  const octal = (value: number, length: number) =>
    value.toString(8).padStart(length - 1, "0") + "\0";
  put(0, 100, name);
  put(100, 8, octal(0o644, 8));
  put(108, 8, octal(0, 8));
  put(116, 8, octal(0, 8));
  put(124, 12, octal(data.length, 12));
  put(136, 12, octal(0, 12));
  put(148, 8, "        "); // checksum counts as spaces while it is computed
  put(156, 1, "0");
  put(257, 6, "ustar\0");
  put(263, 2, "00");
  const checksum = header.reduce((sum, b) => sum + b, 0);
  put(148, 8, checksum.toString(8).padStart(6, "0") + "\0 ");
  const padded = Math.ceil(data.length / 512) * 512;
  const archive = new Uint8Array(512 + padded + 1024);
  archive.set(header, 0);
  archive.set(data, 512);
  return archive;
}

async function gzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
