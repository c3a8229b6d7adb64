/**
 * The informer's in-memory cache: objects keyed by "namespace/name" (or "name"
 * for cluster-scoped objects) with secondary indexes.
 *
 * @module
 */

import type { KubeObject } from "./types.ts";

/** Maps an object to the index values it is filed under. */
export type IndexFunc<T> = (object: T) => string[];

/** Name of the built-in owner-UID index (see {@linkcode ownerUidIndex}). */
export const OWNER_UID_INDEX = "ownerUid";

/** The store key of an object: "namespace/name", or "name" when it has no namespace. */
export function objectKey(object: KubeObject): string {
  const name = object.metadata?.name ?? "";
  const ns = object.metadata?.namespace;
  return ns ? `${ns}/${name}` : name;
}

/** Indexes objects by the value of `label` (objects without it are not indexed). */
export function labelIndex<T extends KubeObject>(label: string): IndexFunc<T> {
  return (o) => {
    const v = o.metadata?.labels?.[label];
    return v === undefined ? [] : [v];
  };
}

/** Indexes objects by the UIDs of their ownerReferences. */
export function ownerUidIndex<T extends KubeObject>(object: T): string[] {
  return (object.metadata?.ownerReferences ?? []).map((r) => r.uid);
}

/** What {@linkcode Store.replace} changed. */
export interface ReplaceResult<T> {
  added: T[];
  /** Objects whose resourceVersion changed: [old, new]. */
  updated: [T, T][];
  /** Objects that vanished (last known state). */
  deleted: T[];
}

/** Options of {@linkcode Store}. */
export interface StoreOptions<T> {
  /** Named index functions; query with {@linkcode Store.byIndex}. */
  indexers?: Record<string, IndexFunc<T>>;
}

/** A keyed, indexed object cache. */
export class Store<T extends KubeObject> {
  #items = new Map<string, T>();
  #indexers: Record<string, IndexFunc<T>>;
  /** index name → value → keys */
  #indices = new Map<string, Map<string, Set<string>>>();

  /** Creates an empty store. */
  constructor(options: StoreOptions<T> = {}) {
    this.#indexers = { ...options.indexers };
    for (const name of Object.keys(this.#indexers)) this.#indices.set(name, new Map());
  }

  /** Number of objects. */
  get size(): number {
    return this.#items.size;
  }

  /** The object at `key` ("namespace/name" or "name"). */
  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  /** The object with `name` (in `namespace` for namespaced objects). */
  getByName(name: string, namespace?: string): T | undefined {
    return this.#items.get(namespace ? `${namespace}/${name}` : name);
  }

  /** All objects. */
  list(): T[] {
    return [...this.#items.values()];
  }

  /** All keys. */
  keys(): string[] {
    return [...this.#items.keys()];
  }

  /** Objects filed under `value` in index `indexName`. Throws for an unknown index. */
  byIndex(indexName: string, value: string): T[] {
    const index = this.#indices.get(indexName);
    if (!index) throw new Error(`unknown index "${indexName}"`);
    const keys = index.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.#items.get(k)!).filter((o) => o !== undefined);
  }

  /** Adds an index after construction, filing existing objects. */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (this.#indexers[name]) throw new Error(`index "${name}" exists`);
    this.#indexers[name] = fn;
    this.#indices.set(name, new Map());
    for (const [key, obj] of this.#items) this.#file(name, fn, key, obj);
  }

  #file(name: string, fn: IndexFunc<T>, key: string, obj: T) {
    const index = this.#indices.get(name)!;
    for (const v of new Set(fn(obj))) {
      let set = index.get(v);
      if (!set) index.set(v, set = new Set());
      set.add(key);
    }
  }

  #unfile(key: string, obj: T) {
    for (const [name, fn] of Object.entries(this.#indexers)) {
      const index = this.#indices.get(name)!;
      for (const v of fn(obj)) {
        const set = index.get(v);
        set?.delete(key);
        if (set?.size === 0) index.delete(v);
      }
    }
  }

  /** Inserts or replaces an object; returns the previous one. */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.#items.get(key);
    if (old) this.#unfile(key, old);
    this.#items.set(key, obj);
    for (const [name, fn] of Object.entries(this.#indexers)) this.#file(name, fn, key, obj);
    return old;
  }

  /** Removes the object at `key`; returns it. */
  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    if (!old) return undefined;
    this.#unfile(key, old);
    this.#items.delete(key);
    return old;
  }

  /**
   * Replaces the whole content (after a list) and reports the difference:
   * objects that appeared, changed (by resourceVersion) or vanished.
   */
  replace(objects: T[]): ReplaceResult<T> {
    const result: ReplaceResult<T> = { added: [], updated: [], deleted: [] };
    const seen = new Set<string>();
    for (const obj of objects) {
      const key = objectKey(obj);
      seen.add(key);
      const old = this.upsert(obj);
      if (!old) result.added.push(obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) {
        result.updated.push([old, obj]);
      }
    }
    for (const key of this.keys()) {
      if (!seen.has(key)) result.deleted.push(this.delete(key)!);
    }
    return result;
  }
}
