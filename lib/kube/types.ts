/**
 * The contract of the thin Kubernetes client: what the controller, the daemon
 * and the test harness code against. Implementations live beside this file.
 *
 * @module
 */

/** Identifies a REST resource. */
export interface ResourceDescriptor {
  /** API group; "" for the core group. */
  group: string;
  version: string;
  /** Lowercase plural used in URLs, e.g. "pods". */
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** A Kubernetes object with metadata (the client is generic over these). */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: {
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller?: boolean;
      blockOwnerDeletion?: boolean;
    }[];
    creationTimestamp?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    managedFields?: unknown[];
  };
}

/** A list response. */
export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

/** One raw HTTP request to the API server, relative to the server URL. */
export interface TransportRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD";
  /** Absolute path, e.g. "/api/v1/namespaces/default/pods". */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  /** Serialized body (JSON or YAML text). */
  body?: string;
  signal?: AbortSignal;
}

/**
 * The API transport seam: performs one request and returns the raw response.
 * The default implementation uses `fetch` with `Deno.createHttpClient` (CA,
 * client certificates) and adds the bearer token (re-read on rotation).
 */
export interface Transport {
  request(req: TransportRequest): Promise<Response>;
  /** Releases connections. */
  close(): void;
  /**
   * Drops pooled connections, which a request found dead (no answer within its deadline);
   * the next request opens a new one. Requests still on them fail.
   */
  reset?(): void;
}

/** List options. */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size; `list` follows `continue` tokens until done unless `singlePage` is true. */
  limit?: number;
  continue?: string;
  singlePage?: boolean;
  resourceVersion?: string;
  signal?: AbortSignal;
}

/** Options for writes. */
export interface WriteOptions {
  fieldManager?: string;
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** Patch flavours. */
export type PatchType = "merge" | "json" | "strategic" | "apply";

/** Options for patch. */
export interface PatchOptions extends WriteOptions {
  type: PatchType;
  /** Server-side apply: take ownership of conflicting fields. */
  force?: boolean;
  /** Patch a subresource, e.g. "status". */
  subresource?: string;
}

/** Options for delete. */
export interface DeleteOptions {
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  preconditions?: { uid?: string; resourceVersion?: string };
  gracePeriodSeconds?: number;
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** Watch options. */
export interface WatchOptions {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Defaults to true. */
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

/** One watch event. ERROR events are thrown as errors (410 → GoneError), not yielded. */
export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  object: T;
}

/** Typed access to one resource (in one namespace when namespaced). */
export interface ResourceClient<T extends KubeObject> {
  get(name: string, options?: { signal?: AbortSignal }): Promise<T>;
  list(options?: ListOptions): Promise<KubeList<T>>;
  create(object: T, options?: WriteOptions): Promise<T>;
  update(object: T, options?: WriteOptions): Promise<T>;
  /** PUT to the status subresource. */
  updateStatus(object: T, options?: WriteOptions): Promise<T>;
  /** `patch` is an object (merge/strategic/apply) or a JSON-patch operation array. */
  patch(name: string, patch: unknown, options: PatchOptions): Promise<T>;
  delete(name: string, options?: DeleteOptions): Promise<void>;
  /** Streams events until the server closes the watch or the signal aborts. */
  watch(options?: WatchOptions): AsyncIterable<WatchEvent<T>>;
}
