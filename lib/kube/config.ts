/**
 * Where the client connects and how it authenticates: in-cluster service
 * account or a kubeconfig file (certificates, tokens, token files, exec
 * credential plugins).
 *
 * Resolution order (as controller-runtime does): `options.path`, then
 * `KUBECONFIG`, then the in-cluster service account (when
 * `KUBERNETES_SERVICE_HOST`/`_PORT` are set and the account directory exists),
 * then `~/.kube/config`. A `KUBECONFIG` colon list is merged the way kubectl
 * merges it (see {@linkcode loadKubeConfigFiles}).
 *
 * `insecure-skip-tls-verify`: `Deno.createHttpClient` has no option to skip
 * certificate verification; only the process-wide flag
 * `--unsafely-ignore-certificate-errors[=host]` does. A kubeconfig asking for it
 * is therefore rejected with a {@linkcode KubeConfigError} unless the caller
 * passes `allowInsecure: true` to say the process runs with that flag.
 *
 * The YAML parser is loaded lazily, only when a YAML kubeconfig is parsed, so the
 * in-cluster path stays light (see {@linkcode YAML_PARSER_BUNDLE}).
 *
 * @module
 */

/** Default service-account directory mounted into pods. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Re-read a token file when the cached copy is older than this (tokens rotate). */
export const TOKEN_FILE_MAX_AGE_MS = 60_000;

/** A configuration problem (missing file, unknown context, unsupported option). */
export class KubeConfigError extends Error {
  /** Builds the error. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "KubeConfigError";
  }
}

/** Credentials as a source hands them out. */
export interface Credentials {
  /** Bearer token. */
  token?: string;
  /** PEM client certificate (exec plugins may return one). */
  clientCert?: string;
  /** PEM client key. */
  clientKey?: string;
}

/** A source of (possibly rotating) credentials. */
export interface CredentialSource {
  /**
   * Current credentials; `refresh: true` (after a 401) drops any cache and
   * fetches anew.
   */
  get(options?: { refresh?: boolean }): Promise<Credentials>;
}

/** Resolved connection settings. */
export interface KubeConfig {
  /** API server URL, e.g. "https://10.0.0.1:443" (may carry a path prefix). */
  server: string;
  /** Extra PEM root certificates to trust. */
  caCerts?: string[];
  /** Static PEM client certificate. */
  clientCert?: string;
  /** Static PEM client key. */
  clientKey?: string;
  /** Token / exec credentials, consulted per request. */
  credentials?: CredentialSource;
  /** True when the kubeconfig asked to skip TLS verification (see module docs). */
  insecureSkipTlsVerify?: boolean;
  /** Default namespace (context namespace, the pod's namespace, or "default"). */
  namespace: string;
  /** Where the settings came from. */
  source: "in-cluster" | "kubeconfig";
  /** The kubeconfig context used, if any. */
  context?: string;
}

/** Options of {@linkcode loadKubeConfig}. */
export interface LoadKubeConfigOptions {
  /** Kubeconfig file; wins over everything else. */
  path?: string;
  /** Context to use instead of `current-context`. */
  context?: string;
  /** Accept `insecure-skip-tls-verify` (the process must run with `--unsafely-ignore-certificate-errors`). */
  allowInsecure?: boolean;
  /** Environment lookup (default `Deno.env.get`); a test seam. */
  env?: (name: string) => string | undefined;
  /** Service-account directory (default {@linkcode SERVICE_ACCOUNT_DIR}); a test seam. */
  serviceAccountDir?: string;
}

function defaultEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Loads the configuration following the module's resolution order. */
export async function loadKubeConfig(options: LoadKubeConfigOptions = {}): Promise<KubeConfig> {
  const env = options.env ?? defaultEnv;
  if (options.path) return await loadKubeConfigFile(options.path, options);
  const fromEnv = env("KUBECONFIG")?.split(":").filter((p) => p !== "") ?? [];
  if (fromEnv.length === 1) return await loadKubeConfigFile(fromEnv[0], options);
  if (fromEnv.length > 1) return await loadKubeConfigFiles(fromEnv, options);
  const host = env("KUBERNETES_SERVICE_HOST");
  const port = env("KUBERNETES_SERVICE_PORT");
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (host && port && await exists(saDir)) {
    return await loadInClusterConfig({ host, port, serviceAccountDir: saDir });
  }
  const home = env("HOME") ?? env("USERPROFILE");
  const fallback = home ? `${home}/.kube/config` : undefined;
  if (fallback && await exists(fallback)) return await loadKubeConfigFile(fallback, options);
  throw new KubeConfigError(
    "no Kubernetes configuration: not in a cluster (KUBERNETES_SERVICE_HOST/PORT and " +
      `${saDir}) and no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config)`,
  );
}

/** Options of {@linkcode loadInClusterConfig}. */
export interface InClusterOptions {
  host: string;
  port: string;
  /** Default {@linkcode SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
}

/** Builds the in-cluster configuration from the pod's service account. */
export async function loadInClusterConfig(options: InClusterOptions): Promise<KubeConfig> {
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const host = options.host.includes(":") && !options.host.startsWith("[")
    ? `[${options.host}]`
    : options.host;
  let caCerts: string[] | undefined;
  try {
    caCerts = [await Deno.readTextFile(`${dir}/ca.crt`)];
  } catch {
    caCerts = undefined;
  }
  let namespace = "default";
  try {
    namespace = (await Deno.readTextFile(`${dir}/namespace`)).trim() || "default";
  } catch {
    // No namespace file: keep "default".
  }
  return {
    server: `https://${host}:${options.port}`,
    caCerts,
    credentials: new TokenFileSource(`${dir}/token`),
    namespace,
    source: "in-cluster",
  };
}

/** A token read from a file and re-read when older than `maxAgeMs` or on refresh (rotation). */
export class TokenFileSource implements CredentialSource {
  #path: string;
  #maxAgeMs: number;
  #now: () => number;
  #cached?: { token: string; readAt: number };

  /** `now` is a test seam (default `Date.now`). */
  constructor(path: string, options: { maxAgeMs?: number; now?: () => number } = {}) {
    this.#path = path;
    this.#maxAgeMs = options.maxAgeMs ?? TOKEN_FILE_MAX_AGE_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The token, from cache unless stale or `refresh`. */
  async get(options: { refresh?: boolean } = {}): Promise<Credentials> {
    const now = this.#now();
    if (!options.refresh && this.#cached && now - this.#cached.readAt < this.#maxAgeMs) {
      return { token: this.#cached.token };
    }
    const token = (await Deno.readTextFile(this.#path)).trim();
    this.#cached = { token, readAt: now };
    return { token };
  }
}

/** A fixed token. */
export class StaticTokenSource implements CredentialSource {
  #token: string;
  /** Wraps `token`. */
  constructor(token: string) {
    this.#token = token;
  }
  /** The token. */
  get(): Promise<Credentials> {
    return Promise.resolve({ token: this.#token });
  }
}

/** The `exec` stanza of a kubeconfig user. */
export interface ExecConfig {
  apiVersion?: string;
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  provideClusterInfo?: boolean;
  installHint?: string;
}

/**
 * Runs a client-go credential plugin (ExecCredential v1 / v1beta1) and caches
 * its result until `expirationTimestamp` (forever when it has none, until a 401).
 */
export class ExecCredentialSource implements CredentialSource {
  #exec: ExecConfig;
  #cluster?: Record<string, unknown>;
  #baseDir?: string;
  #now: () => number;
  #cached?: { creds: Credentials; expiresAt?: number };
  #pending?: Promise<Credentials>;

  /**
   * `cluster` is passed as `spec.cluster` when `provideClusterInfo`; `baseDir`
   * resolves a relative command path (as kubectl does for paths with a slash).
   */
  constructor(
    exec: ExecConfig,
    options: { cluster?: Record<string, unknown>; baseDir?: string; now?: () => number } = {},
  ) {
    this.#exec = exec;
    this.#cluster = options.cluster;
    this.#baseDir = options.baseDir;
    this.#now = options.now ?? Date.now;
  }

  /** Cached credentials, or the plugin's fresh output. */
  get(options: { refresh?: boolean } = {}): Promise<Credentials> {
    const c = this.#cached;
    // Renew a little early so a request does not race the expiry.
    if (
      !options.refresh && c && (c.expiresAt === undefined || c.expiresAt - 10_000 > this.#now())
    ) {
      return Promise.resolve(c.creds);
    }
    this.#pending ??= this.#run().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  async #run(): Promise<Credentials> {
    const exec = this.#exec;
    const apiVersion = exec.apiVersion ?? "client.authentication.k8s.io/v1";
    let command = exec.command;
    if (command.includes("/") && !command.startsWith("/") && this.#baseDir) {
      command = `${this.#baseDir}/${command}`;
    }
    const spec: Record<string, unknown> = { interactive: false };
    if (exec.provideClusterInfo && this.#cluster) spec.cluster = this.#cluster;
    const env: Record<string, string> = {
      KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion, kind: "ExecCredential", spec }),
    };
    for (const e of exec.env ?? []) env[e.name] = e.value;
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(command, {
        args: exec.args ?? [],
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
    } catch (e) {
      const hint = exec.installHint ? `\n${exec.installHint}` : "";
      throw new KubeConfigError(`exec credential plugin ${command} failed to start: ${e}${hint}`, {
        cause: e,
      });
    }
    const decoder = new TextDecoder();
    if (!out.success) {
      throw new KubeConfigError(
        `exec credential plugin ${command} exited with ${out.code}: ${
          decoder.decode(out.stderr).trim()
        }`,
      );
    }
    let parsed: {
      apiVersion?: string;
      kind?: string;
      status?: {
        token?: string;
        clientCertificateData?: string;
        clientKeyData?: string;
        expirationTimestamp?: string;
      };
    };
    try {
      parsed = JSON.parse(decoder.decode(out.stdout));
    } catch (e) {
      throw new KubeConfigError(`exec credential plugin ${command} printed invalid JSON`, {
        cause: e,
      });
    }
    if (parsed.kind !== "ExecCredential" || !parsed.status) {
      throw new KubeConfigError(
        `exec credential plugin ${command} did not print an ExecCredential with a status`,
      );
    }
    if (parsed.apiVersion && parsed.apiVersion !== apiVersion) {
      throw new KubeConfigError(
        `exec credential plugin ${command} returned ${parsed.apiVersion}, expected ${apiVersion}`,
      );
    }
    const s = parsed.status;
    const creds: Credentials = {
      token: s.token,
      clientCert: s.clientCertificateData,
      clientKey: s.clientKeyData,
    };
    if (!creds.token && !(creds.clientCert && creds.clientKey)) {
      throw new KubeConfigError(
        `exec credential plugin ${command} returned neither a token nor a client certificate and key`,
      );
    }
    const expiresAt = s.expirationTimestamp ? Date.parse(s.expirationTimestamp) : undefined;
    this.#cached = { creds, expiresAt: Number.isNaN(expiresAt) ? undefined : expiresAt };
    return creds;
  }
}

interface NamedEntry<T> {
  name: string;
  [key: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}

interface RawCluster {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
}

interface RawUser {
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  token?: string;
  tokenFile?: string;
  exec?: ExecConfig;
  "auth-provider"?: unknown;
  username?: string;
}

interface RawContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

interface RawKubeConfig {
  "current-context"?: string;
  clusters?: NamedEntry<RawCluster>[];
  users?: NamedEntry<RawUser>[];
  contexts?: NamedEntry<RawContext>[];
}

function decodeBase64(data: string): string {
  const bin = atob(data.replace(/\s+/g, ""));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

function resolvePath(baseDir: string, p: string): string {
  return p.startsWith("/") ? p : `${baseDir}/${p}`;
}

async function readPem(
  baseDir: string,
  data: string | undefined,
  file: string | undefined,
  what: string,
): Promise<string | undefined> {
  if (data) return decodeBase64(data);
  if (!file) return undefined;
  const path = resolvePath(baseDir, file);
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    throw new KubeConfigError(`cannot read ${what} ${path}: ${e}`, { cause: e });
  }
}

/**
 * File name of the YAML parser's own bundle (lib/kube/yaml_parser.ts), beside a bundle built
 * without `yaml`: the daemon's (tools/build.ts).
 */
export const YAML_PARSER_BUNDLE = "yaml_parser.js";

/**
 * The `yaml` package: from the import map, or bundled in; else (a bundle built without it)
 * from {@linkcode YAML_PARSER_BUNDLE} beside the bundle. That specifier is computed, so that
 * neither the bundler nor Deno's module loader reads the parser ahead of its first use: the
 * daemon in a pod never parses YAML, and merely loading a module costs resident memory in
 * proportion to its size (~5 MiB for this one).
 */
async function loadYamlParser(): Promise<{ parse(text: string): unknown }> {
  try {
    return await import("yaml");
  } catch (error) {
    const beside = new URL(`./${YAML_PARSER_BUNDLE}`, import.meta.url).href;
    try {
      return await import(beside);
    } catch (besideError) {
      throw new KubeConfigError(
        `cannot load a YAML parser for the kubeconfig (yaml: ${error}; ${beside}: ` +
          `${besideError}); a JSON kubeconfig needs none`,
        { cause: besideError },
      );
    }
  }
}

/**
 * Parses kubeconfig text. JSON (also valid YAML) is parsed natively; only YAML loads the
 * YAML parser, lazily ({@linkcode loadYamlParser}): a daemon on every node should not pay
 * for it.
 */
async function parseYamlOrJson(text: string): Promise<unknown> {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{")) {
    try {
      return JSON.parse(trimmed);
    } catch {
      // Not JSON after all (YAML flow mapping): fall through.
    }
  }
  const { parse } = await loadYamlParser();
  return parse(text);
}

/** Loads a kubeconfig file (see {@linkcode parseKubeConfig}). */
export async function loadKubeConfigFile(
  path: string,
  options: Pick<LoadKubeConfigOptions, "context" | "allowInsecure"> = {},
): Promise<KubeConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: ${e}`, { cause: e });
  }
  return await parseKubeConfig(text, { ...options, baseDir: dirOf(path) });
}

/**
 * Loads a `KUBECONFIG`-style list of files merged as kubectl merges them: files
 * that do not exist are skipped, the first file that sets `current-context` wins,
 * and the first file that defines a cluster, user or context of a given name
 * wins. Relative file references (certificates, token files, exec commands with
 * a slash) resolve against the directory of the file that holds them.
 */
export async function loadKubeConfigFiles(
  paths: readonly string[],
  options: Pick<LoadKubeConfigOptions, "context" | "allowInsecure"> = {},
): Promise<KubeConfig> {
  const merged: Required<RawKubeConfig> = {
    "current-context": "",
    clusters: [],
    users: [],
    contexts: [],
  };
  let found = 0;
  for (const path of paths) {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) continue;
      throw new KubeConfigError(`cannot read kubeconfig ${path}: ${e}`, { cause: e });
    }
    found++;
    const raw = (await parseYamlOrJson(text) ?? {}) as RawKubeConfig;
    const baseDir = dirOf(path);
    if (!merged["current-context"] && raw["current-context"]) {
      merged["current-context"] = raw["current-context"];
    }
    const add = <T>(into: NamedEntry<T>[], from: NamedEntry<T>[] | undefined) => {
      for (const entry of from ?? []) {
        if (!into.some((e) => e.name === entry.name)) into.push(absolutize(entry, baseDir));
      }
    };
    add(merged.clusters, raw.clusters);
    add(merged.users, raw.users);
    add(merged.contexts, raw.contexts);
  }
  if (found === 0) {
    throw new KubeConfigError(`none of the kubeconfig files exist: ${paths.join(":")}`);
  }
  return await resolveKubeConfig(merged, { ...options, baseDir: "/" });
}

/** A copy of a cluster or user entry whose relative file references are made absolute. */
function absolutize<T>(entry: NamedEntry<T>, baseDir: string): NamedEntry<T> {
  const cluster = entry.cluster as RawCluster | undefined;
  const user = entry.user as RawUser | undefined;
  const abs = (p: string | undefined) => p === undefined ? undefined : resolvePath(baseDir, p);
  const out: NamedEntry<T> = { ...entry };
  if (cluster?.["certificate-authority"]) {
    out.cluster = {
      ...cluster,
      "certificate-authority": abs(cluster["certificate-authority"]),
    } as T;
  }
  if (user) {
    const u: RawUser = { ...user };
    if (u["client-certificate"]) u["client-certificate"] = abs(u["client-certificate"]);
    if (u["client-key"]) u["client-key"] = abs(u["client-key"]);
    if (u.tokenFile) u.tokenFile = abs(u.tokenFile);
    if (u.exec?.command?.includes("/")) u.exec = { ...u.exec, command: abs(u.exec.command)! };
    out.user = u as T;
  }
  return out;
}

function dirOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash > 0 ? path.slice(0, slash) : slash === 0 ? "/" : Deno.cwd();
}

/** Options of {@linkcode parseKubeConfig}. */
export interface ParseKubeConfigOptions {
  context?: string;
  allowInsecure?: boolean;
  /** Directory relative file references resolve against (the kubeconfig's directory). */
  baseDir?: string;
}

/** Parses kubeconfig YAML text and resolves the selected context. */
export async function parseKubeConfig(
  text: string,
  options: ParseKubeConfigOptions = {},
): Promise<KubeConfig> {
  const raw = (await parseYamlOrJson(text) ?? {}) as RawKubeConfig;
  return await resolveKubeConfig(raw, options);
}

/** Resolves the selected context of a parsed (or merged) kubeconfig. */
async function resolveKubeConfig(
  raw: RawKubeConfig,
  options: ParseKubeConfigOptions,
): Promise<KubeConfig> {
  const baseDir = options.baseDir ?? Deno.cwd();
  const contextName = options.context ?? raw["current-context"];
  if (!contextName) throw new KubeConfigError("kubeconfig has no current-context");
  const ctx = raw.contexts?.find((c) => c.name === contextName)?.context;
  if (!ctx) throw new KubeConfigError(`kubeconfig has no context named "${contextName}"`);
  const cluster = raw.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster?.server) {
    throw new KubeConfigError(
      `kubeconfig context "${contextName}": cluster "${ctx.cluster}" missing or has no server`,
    );
  }
  const user: RawUser = (ctx.user ? raw.users?.find((u) => u.name === ctx.user)?.user : {}) ?? {};
  const insecure = cluster["insecure-skip-tls-verify"] === true;
  if (insecure && !options.allowInsecure) {
    throw new KubeConfigError(
      `kubeconfig cluster "${ctx.cluster}" sets insecure-skip-tls-verify, which Deno.createHttpClient ` +
        "cannot honour per client: set certificate-authority(-data) instead, or run with " +
        "--unsafely-ignore-certificate-errors=<host> and pass allowInsecure: true",
    );
  }
  if (user["auth-provider"]) {
    throw new KubeConfigError(
      `kubeconfig user "${ctx.user}": auth-provider plugins are not supported; use exec`,
    );
  }
  const ca = await readPem(
    baseDir,
    cluster["certificate-authority-data"],
    cluster["certificate-authority"],
    "certificate-authority",
  );
  const clientCert = await readPem(
    baseDir,
    user["client-certificate-data"],
    user["client-certificate"],
    "client-certificate",
  );
  const clientKey = await readPem(
    baseDir,
    user["client-key-data"],
    user["client-key"],
    "client-key",
  );
  if (!!clientCert !== !!clientKey) {
    throw new KubeConfigError(
      `kubeconfig user "${ctx.user}": client certificate and key must both be set`,
    );
  }
  let credentials: CredentialSource | undefined;
  if (user.exec) {
    if (!user.exec.command) {
      throw new KubeConfigError(`kubeconfig user "${ctx.user}": exec has no command`);
    }
    const clusterInfo: Record<string, unknown> = { server: cluster.server };
    if (cluster["certificate-authority-data"]) {
      clusterInfo["certificate-authority-data"] = cluster["certificate-authority-data"];
    }
    if (insecure) clusterInfo["insecure-skip-tls-verify"] = true;
    credentials = new ExecCredentialSource(user.exec, { cluster: clusterInfo, baseDir });
  } else if (user.token) {
    credentials = new StaticTokenSource(user.token);
  } else if (user.tokenFile) {
    credentials = new TokenFileSource(resolvePath(baseDir, user.tokenFile));
  }
  return {
    server: cluster.server.replace(/\/+$/, ""),
    caCerts: ca ? [ca] : undefined,
    clientCert,
    clientKey,
    credentials,
    insecureSkipTlsVerify: insecure || undefined,
    namespace: ctx.namespace || "default",
    source: "kubeconfig",
    context: contextName,
  };
}
