/**
 * The CEL checks of `spec.rollout.preconditions.objects`, pure: compiling an expression (the
 * pool's spec check names the field of one that does not compile) and judging the objects a
 * check selects. The expression sees each object as `object`, its JSON integers as CEL `int`
 * (as the API server's own CEL does), and must return a bool; every object must pass.
 *
 * CEL is evaluated by `@marcbachmann/cel-js` (see `controller/README.md`, "Dependencies").
 *
 * @module
 */
import { Environment } from "@marcbachmann/cel-js";
import type { ObjectPrecondition } from "../../lib/api/mod.ts";

/** The verdict of one check. */
export type ObjectVerdict =
  | { state: "passed" }
  /** The expression is false for an object, or no object is selected: reboots wait. */
  | { state: "failed"; message: string }
  /** It cannot be evaluated (an error on an object, an unknown kind, no permission). */
  | { state: "error"; message: string };

/** A compiled expression: true, false, or throws on an object. */
export type CompiledCheck = (object: unknown) => boolean;

/** Objects named in a verdict's message. */
const MAX_NAMED = 3;

const env = new Environment({ limits: { maxAstNodes: 2000, maxDepth: 64 } })
  .registerVariable("object", "map");

/** The first line of a CEL error (the library adds a source excerpt below it). */
function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0].trim();
}

/** Compiles `expression`, or says why it does not compile. */
export function compileCheck(expression: string): CompiledCheck | string {
  let program: (context: Record<string, unknown>) => unknown;
  try {
    program = env.parse(expression);
  } catch (e) {
    return firstLine(e);
  }
  return (object) => {
    const result = program({ object: withIntegers(object) });
    if (typeof result !== "boolean") {
      throw new Error(`the expression returned ${typeof result}, not a bool`);
    }
    return result;
  };
}

/** JSON integers as CEL ints (bigint), as Kubernetes' CEL reads them. */
function withIntegers(value: unknown): unknown {
  if (typeof value === "number") return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(withIntegers);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withIntegers(v)]));
  }
  return value;
}

/** What a check selects, for messages: `CephCluster rook-ceph/rook`. */
export function checkSubject(check: ObjectPrecondition): string {
  const where = check.namespace ? `${check.namespace}/` : "";
  const what = check.name ??
    (check.matchLabels ? `{${labelSelector(check.matchLabels)}}` : "*");
  return `${check.kind} ${where}${what}`;
}

/** `a=b,c=d`, the API's label selector for `labels`. */
export function labelSelector(labels: Record<string, string>): string {
  return Object.entries(labels).sort(([a], [b]) => a < b ? -1 : 1).map(([k, v]) => `${k}=${v}`)
    .join(",");
}

interface Named {
  metadata?: { name?: string; namespace?: string };
}

function objectName(o: Named): string {
  const m = o.metadata ?? {};
  return m.namespace ? `${m.namespace}/${m.name ?? ""}` : m.name ?? "";
}

/** Judges the objects `check` selected. */
export function judgeObjects(check: ObjectPrecondition, objects: readonly Named[]): ObjectVerdict {
  const subject = checkSubject(check);
  const compiled = compileCheck(check.expression);
  if (typeof compiled === "string") {
    return { state: "error", message: `${subject}: the expression does not compile: ${compiled}` };
  }
  if (objects.length === 0) return { state: "failed", message: `${subject}: no such object` };
  const failed: string[] = [];
  for (const o of objects) {
    try {
      if (!compiled(o)) failed.push(objectName(o));
    } catch (e) {
      return {
        state: "error",
        message: `${subject}: ${JSON.stringify(check.expression)} on ${objectName(o)}: ${
          firstLine(e)
        }`,
      };
    }
  }
  if (failed.length === 0) return { state: "passed" };
  const more = failed.length > MAX_NAMED ? ` and ${failed.length - MAX_NAMED} more` : "";
  return {
    state: "failed",
    message: `${subject}: ${JSON.stringify(check.expression)} is false for ${
      failed.slice(0, MAX_NAMED).join(", ")
    }${more}`,
  };
}
