/**
 * The Kubernetes client: typed resource access ({@linkcode ResourceClient}) on
 * top of one {@linkcode Transport} seam, plus eviction, token requests and raw
 * requests.
 *
 * @module
 */

import { type KubeConfig, loadKubeConfig, type LoadKubeConfigOptions } from "./config.ts";
import { errorFromResponse, errorFromStatus, KubeError, type Status } from "./errors.ts";
import { apiVersionOf, resourcePath } from "./resources.ts";
import { createTransport } from "./transport.ts";
import { type RequestDeadline, startDeadline } from "./deadline.ts";
import type {
  DeleteOptions,
  KubeList,
  KubeObject,
  ListOptions,
  PatchOptions,
  PatchType,
  ResourceClient,
  ResourceDescriptor,
  Transport,
  TransportRequest,
  WatchEvent,
  WatchOptions,
  WriteOptions,
} from "./types.ts";

/** Content type of each patch flavour. */
export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
};

/** Options of {@linkcode KubeClient}. */
export interface KubeClientOptions {
  transport: Transport;
  /** Namespace used by callers that ask for the default (e.g. the pod's namespace). */
  defaultNamespace?: string;
  /** Deadline of a request, its body read included (default 60 s; lib/kube/deadline.ts). */
  requestTimeoutMs?: number;
  /** How long a watch may outlast its `timeoutSeconds` before it is ended (default 60 s). */
  watchGraceMs?: number;
}

/** Default of {@linkcode KubeClientOptions.requestTimeoutMs}. */
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Default of {@linkcode KubeClientOptions.watchGraceMs}. */
const DEFAULT_WATCH_GRACE_MS = 60_000;

/** Options of {@linkcode KubeClient.evict}. */
export interface EvictOptions {
  dryRun?: boolean;
  gracePeriodSeconds?: number;
  signal?: AbortSignal;
}

/** Options of {@linkcode KubeClient.createTokenRequest}. */
export interface TokenRequestOptions {
  audiences?: string[];
  expirationSeconds?: number;
  /** Binds the token to an object (Pod, Secret or Node); its lifetime ends with the object. */
  boundObjectRef?: { apiVersion?: string; kind: string; name: string; uid?: string };
  signal?: AbortSignal;
}

/** The status of a TokenRequest. */
export interface TokenRequestStatus {
  token: string;
  expirationTimestamp: string;
}

/**
 * Reads newline-delimited JSON objects from a byte stream. When `signal` aborts,
 * the reader is cancelled, which ends a pending read at once, whether or not the
 * stream's source heeds the signal (a watch body may not), and the rest is dropped.
 */
export async function* readJsonLines(
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): AsyncGenerator<unknown, void, undefined> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let done = false;
  // Cancelling closes the stream first (pending reads end as done), then tells the
  // source; that second part is not waited for, so a stuck source cannot hold us.
  const onAbort = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();
  try {
    while (true) {
      if (signal?.aborted) return;
      const chunk = await reader.read();
      if (signal?.aborted) return;
      if (chunk.done) {
        done = true;
        break;
      }
      buffer += chunk.value;
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line) yield JSON.parse(line);
      }
    }
    const rest = buffer.trim();
    if (rest) yield JSON.parse(rest);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    // Stop the underlying response body when the consumer leaves early (on abort it
    // was cancelled already, without waiting for the source).
    if (!done && !signal?.aborted) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function dryRunQuery(dryRun?: boolean): "All" | undefined {
  return dryRun ? "All" : undefined;
}

function isAbort(e: unknown, signal?: AbortSignal): boolean {
  return !!signal?.aborted ||
    (e instanceof DOMException && e.name === "AbortError");
}

class TypedResourceClient<T extends KubeObject> implements ResourceClient<T> {
  #client: KubeClient;
  #desc: ResourceDescriptor;
  #namespace?: string;

  constructor(client: KubeClient, desc: ResourceDescriptor, namespace?: string) {
    this.#client = client;
    this.#desc = desc;
    this.#namespace = desc.namespaced ? namespace : undefined;
  }

  #path(name?: string, subresource?: string, namespace = this.#namespace): string {
    if (this.#desc.namespaced && name !== undefined && !namespace) {
      throw new Error(`${this.#desc.kind} ${name}: a namespace is required`);
    }
    return resourcePath(this.#desc, { namespace, name, subresource });
  }

  #objectNamespace(object: T): string | undefined {
    return this.#desc.namespaced ? this.#namespace ?? object.metadata?.namespace : undefined;
  }

  #withTypeMeta(object: T): T {
    return {
      ...object,
      apiVersion: object.apiVersion ?? apiVersionOf(this.#desc),
      kind: object.kind ?? this.#desc.kind,
    };
  }

  async get(name: string, options: { signal?: AbortSignal } = {}): Promise<T> {
    return await this.#client.request({
      method: "GET",
      path: this.#path(name),
      signal: options.signal,
    }) as T;
  }

  async list(options: ListOptions = {}): Promise<KubeList<T>> {
    let cont = options.continue;
    let items: T[] = [];
    while (true) {
      const page = await this.#client.request({
        method: "GET",
        path: this.#path(),
        query: {
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          limit: options.limit,
          continue: cont,
          // resourceVersion only applies to the first page; continue tokens carry it.
          resourceVersion: cont ? undefined : options.resourceVersion,
        },
        signal: options.signal,
      }) as KubeList<T>;
      page.items ??= [];
      page.metadata ??= {};
      if (options.singlePage) return page;
      items = items.concat(page.items);
      cont = page.metadata.continue || undefined;
      if (!cont) {
        return { ...page, metadata: { resourceVersion: page.metadata.resourceVersion }, items };
      }
    }
  }

  async create(object: T, options: WriteOptions = {}): Promise<T> {
    return await this.#client.request({
      method: "POST",
      path: this.#path(undefined, undefined, this.#objectNamespace(object)),
      query: { fieldManager: options.fieldManager, dryRun: dryRunQuery(options.dryRun) },
      body: JSON.stringify(this.#withTypeMeta(object)),
      signal: options.signal,
    }) as T;
  }

  async #put(object: T, subresource: string | undefined, options: WriteOptions): Promise<T> {
    const name = object.metadata?.name;
    if (!name) throw new Error(`${this.#desc.kind}: update needs metadata.name`);
    return await this.#client.request({
      method: "PUT",
      path: this.#path(name, subresource, this.#objectNamespace(object)),
      query: { fieldManager: options.fieldManager, dryRun: dryRunQuery(options.dryRun) },
      body: JSON.stringify(this.#withTypeMeta(object)),
      signal: options.signal,
    }) as T;
  }

  update(object: T, options: WriteOptions = {}): Promise<T> {
    return this.#put(object, undefined, options);
  }

  updateStatus(object: T, options: WriteOptions = {}): Promise<T> {
    return this.#put(object, "status", options);
  }

  async patch(name: string, patch: unknown, options: PatchOptions): Promise<T> {
    const contentType = PATCH_CONTENT_TYPES[options.type];
    if (!contentType) throw new Error(`unknown patch type ${options.type}`);
    if (options.type === "apply" && !options.fieldManager) {
      throw new Error("server-side apply needs a fieldManager");
    }
    if (options.type === "json" && !Array.isArray(patch)) {
      throw new Error("a JSON patch must be an array of operations");
    }
    let body = patch;
    if (options.type === "apply" && patch && typeof patch === "object" && !Array.isArray(patch)) {
      // Apply bodies must be complete objects with type metadata.
      body = this.#withTypeMeta(patch as T);
    }
    return await this.#client.request({
      method: "PATCH",
      path: this.#path(name, options.subresource),
      query: {
        fieldManager: options.fieldManager,
        dryRun: dryRunQuery(options.dryRun),
        force: options.type === "apply" && options.force ? true : undefined,
      },
      headers: { "Content-Type": contentType },
      // JSON is valid YAML, so apply patches are sent as JSON text too.
      body: JSON.stringify(body),
      signal: options.signal,
    }) as T;
  }

  async delete(name: string, options: DeleteOptions = {}): Promise<void> {
    const body: Record<string, unknown> = { apiVersion: "v1", kind: "DeleteOptions" };
    if (options.propagationPolicy) body.propagationPolicy = options.propagationPolicy;
    if (options.preconditions) body.preconditions = options.preconditions;
    if (options.gracePeriodSeconds !== undefined) {
      body.gracePeriodSeconds = options.gracePeriodSeconds;
    }
    if (options.dryRun) body.dryRun = ["All"];
    await this.#client.request({
      method: "DELETE",
      path: this.#path(name),
      body: JSON.stringify(body),
      signal: options.signal,
    });
  }

  async *watch(options: WatchOptions = {}): AsyncIterable<WatchEvent<T>> {
    // Without timeoutSeconds the caller watches for as long as it likes: no deadline.
    const deadline = options.timeoutSeconds === undefined
      ? undefined
      : this.#client.deadline(`watch ${this.#path()}`, options.signal, options.timeoutSeconds);
    try {
      yield* this.#watch(options, deadline?.signal ?? options.signal);
    } finally {
      deadline?.clear();
    }
  }

  /** {@linkcode watch} under `signal` (the caller's, or its deadline linked to it). */
  async *#watch(options: WatchOptions, signal?: AbortSignal): AsyncIterable<WatchEvent<T>> {
    let res: Response;
    try {
      res = await this.#client.transport.request({
        method: "GET",
        path: this.#path(),
        query: {
          watch: true,
          allowWatchBookmarks: options.allowWatchBookmarks ?? true,
          resourceVersion: options.resourceVersion,
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          timeoutSeconds: options.timeoutSeconds,
        },
        signal,
      });
    } catch (e) {
      if (isAbort(e, options.signal)) return;
      throw e;
    }
    if (!res.ok) throw await errorFromResponse(res);
    if (!res.body) return;
    try {
      for await (const raw of readJsonLines(res.body, signal)) {
        const ev = raw as { type?: string; object?: unknown };
        if (ev.type === "ERROR") {
          const obj = ev.object as Status | undefined;
          if (obj && typeof obj === "object" && obj.kind === "Status") throw errorFromStatus(obj);
          throw new KubeError({
            status: 500,
            reason: "WatchError",
            message: `watch ERROR event: ${JSON.stringify(ev.object)}`,
            body: ev.object,
          });
        }
        if (
          ev.type === "ADDED" || ev.type === "MODIFIED" || ev.type === "DELETED" ||
          ev.type === "BOOKMARK"
        ) {
          yield { type: ev.type, object: ev.object as T };
        }
        // Unknown event types are skipped: newer servers may add some.
      }
    } catch (e) {
      if (isAbort(e, options.signal) && !(e instanceof KubeError)) return;
      throw e;
    }
    // Ended by its deadline (readJsonLines stops quietly on abort): the connection is dead.
    if (signal?.aborted && !options.signal?.aborted) throw signal.reason;
  }
}

/** A Kubernetes API client. */
export class KubeClient {
  /** The transport every request goes through. */
  readonly transport: Transport;
  /** The configuration's default namespace ("default" when unknown). */
  readonly defaultNamespace: string;

  #requestTimeoutMs: number;
  #watchGraceMs: number;

  /** Wraps a transport. */
  constructor(options: KubeClientOptions) {
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#watchGraceMs = options.watchGraceMs ?? DEFAULT_WATCH_GRACE_MS;
    this.transport = options.transport;
    this.defaultNamespace = options.defaultNamespace ?? "default";
  }

  /** A client for `config` over the default fetch transport. */
  static fromConfig(config: KubeConfig): Promise<KubeClient> {
    return Promise.resolve(
      new KubeClient({ transport: createTransport(config), defaultNamespace: config.namespace }),
    );
  }

  /** Loads the configuration (see {@linkcode loadKubeConfig}) and builds a client. */
  static async fromEnvironment(options?: LoadKubeConfigOptions): Promise<KubeClient> {
    return await KubeClient.fromConfig(await loadKubeConfig(options));
  }

  /** Typed access to a resource; `namespace` scopes namespaced resources (omit for all namespaces). */
  resource<T extends KubeObject = KubeObject>(
    desc: ResourceDescriptor,
    namespace?: string,
  ): ResourceClient<T> {
    return new TypedResourceClient<T>(this, desc, namespace);
  }

  /**
   * Performs a request and returns the parsed JSON body (undefined when empty).
   * Failures throw the matching {@linkcode KubeError} subclass.
   */
  async request(req: TransportRequest): Promise<unknown> {
    const deadline = this.deadline(`${req.method} ${req.path}`, req.signal);
    try {
      const res = await this.transport.request({ ...req, signal: deadline.signal });
      if (!res.ok) throw await errorFromResponse(res);
      const text = await res.text();
      if (!text) return undefined;
      return JSON.parse(text);
    } catch (e) {
      // A deadline, not the caller, ended it: say so (fetch reports the abort reason).
      if (deadline.expired && !req.signal?.aborted) throw deadline.signal.reason;
      throw e;
    } finally {
      deadline.clear();
    }
  }

  /**
   * The deadline of a request (`watchSeconds`: of a watch with that `timeoutSeconds`); one
   * that passes drops the transport's connections (lib/kube/deadline.ts).
   */
  deadline(what: string, outer?: AbortSignal, watchSeconds?: number): RequestDeadline {
    return startDeadline({
      ms: watchSeconds === undefined
        ? this.#requestTimeoutMs
        : watchSeconds * 1000 + this.#watchGraceMs,
      what,
      outer,
      onExpire: () => this.transport.reset?.(),
    });
  }

  /**
   * Evicts a pod through the policy/v1 Eviction subresource, which honours
   * PodDisruptionBudgets: a refusal is a {@linkcode TooManyRequestsError} (429).
   */
  async evict(namespace: string, podName: string, options: EvictOptions = {}): Promise<void> {
    const deleteOptions: Record<string, unknown> = {};
    if (options.gracePeriodSeconds !== undefined) {
      deleteOptions.gracePeriodSeconds = options.gracePeriodSeconds;
    }
    if (options.dryRun) deleteOptions.dryRun = ["All"];
    await this.request({
      method: "POST",
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${
        encodeURIComponent(podName)
      }/eviction`,
      query: { dryRun: dryRunQuery(options.dryRun) },
      body: JSON.stringify({
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name: podName, namespace },
        deleteOptions,
      }),
      signal: options.signal,
    });
  }

  /** Requests a token for a service account (TokenRequest API). */
  async createTokenRequest(
    namespace: string,
    serviceAccount: string,
    options: TokenRequestOptions = {},
  ): Promise<TokenRequestStatus> {
    const spec: Record<string, unknown> = { audiences: options.audiences ?? [] };
    if (options.expirationSeconds !== undefined) {
      spec.expirationSeconds = options.expirationSeconds;
    }
    if (options.boundObjectRef) {
      spec.boundObjectRef = { apiVersion: "v1", ...options.boundObjectRef };
    }
    const out = await this.request({
      method: "POST",
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${
        encodeURIComponent(serviceAccount)
      }/token`,
      body: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec }),
      signal: options.signal,
    }) as { status?: TokenRequestStatus };
    if (!out?.status?.token) throw new Error("TokenRequest returned no token");
    return out.status;
  }

  /** Closes the transport. */
  close(): void {
    this.transport.close();
  }
}
