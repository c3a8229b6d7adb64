/**
 * Comparing rendered manifests object by object: parsed, keyed by apiVersion, kind, namespace
 * and name, so document order and formatting do not matter and content does.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { parseAllDocuments } from "yaml";

/** A Kubernetes object as rendered. */
// deno-lint-ignore no-explicit-any
export type Obj = Record<string, any>;

/** The identity of an object: `apiVersion kind namespace/name`. */
export function objectKey(o: Obj): string {
  const ns = o.metadata?.namespace ? `${o.metadata.namespace}/` : "";
  return `${o.apiVersion} ${o.kind} ${ns}${o.metadata?.name}`;
}

/** Parses a multi-document YAML stream (empty documents dropped) into objects by key. */
export function objectsByKey(text: string): Map<string, Obj> {
  const out = new Map<string, Obj>();
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML: ${doc.errors[0].message}`);
    const o = doc.toJS() as Obj | null;
    if (o === null) continue;
    const key = objectKey(o);
    if (out.has(key)) throw new Error(`${key} appears twice`);
    out.set(key, o);
  }
  return out;
}

/**
 * How two sets of objects differ: objects only on one side, and objects whose content differs
 * (with the first differing path). Empty when they are the same.
 */
export function diffObjects(actual: Map<string, Obj>, expected: Map<string, Obj>): string[] {
  const out: string[] = [];
  for (const key of expected.keys()) if (!actual.has(key)) out.push(`missing: ${key}`);
  for (const [key, a] of actual) {
    const e = expected.get(key);
    if (e === undefined) out.push(`unexpected: ${key}`);
    else if (!isDeepStrictEqual(a, e)) out.push(`differs: ${key} at ${firstDifference(a, e)}`);
  }
  return out;
}

/** The path of the first difference between two values ("" when equal at the top). */
export function firstDifference(a: unknown, b: unknown, path = ""): string {
  if (isDeepStrictEqual(a, b)) return "";
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") {
    return `${path || "."}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const [x, y] = [(a as Obj)[k], (b as Obj)[k]];
    if (!isDeepStrictEqual(x, y)) return firstDifference(x, y, `${path}.${k}`);
  }
  return `${path || "."}: differ`;
}
