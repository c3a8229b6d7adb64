/**
 * Label selectors (metav1.LabelSelector): validation (the CRD's admission rules
 * again, as Kubernetes applies them to built-in selectors) and matching against a
 * label map.
 *
 * @module
 */
import { labelKeyError, labelValueError } from "../../lib/api/validation.ts";

/** One `matchExpressions` entry. */
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

/** A metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/**
 * Returns why `selector` is invalid, or undefined when it is valid: the same
 * rules the CRD enforces at admission (label keys and values, operators and their
 * values), checked again because a pool stored before those rules existed, or
 * written past them, must surface as InvalidSpec rather than silently match nothing.
 */
export function selectorError(selector: LabelSelector | undefined): string | undefined {
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    const keyErr = labelKeyError(key);
    if (keyErr) return `nodeSelector.matchLabels: key ${JSON.stringify(key)} ${keyErr}`;
    const valueErr = labelValueError(value);
    if (valueErr) {
      return `nodeSelector.matchLabels[${key}]: value ${JSON.stringify(value)} ${valueErr}`;
    }
  }
  for (const [i, req] of (selector?.matchExpressions ?? []).entries()) {
    const at = `nodeSelector.matchExpressions[${i}]`;
    const keyErr = labelKeyError(req.key ?? "");
    if (keyErr) return `${at}.key: ${JSON.stringify(req.key)} ${keyErr}`;
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) {
          return `${at} (key ${req.key}): operator ${req.operator} requires at least one value`;
        }
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0) {
          return `${at} (key ${req.key}): operator ${req.operator} must not have values`;
        }
        break;
      default:
        return `${at} (key ${req.key}): unknown operator ${JSON.stringify(req.operator)} ` +
          "(one of In, NotIn, Exists, DoesNotExist)";
    }
    for (const [j, value] of values.entries()) {
      const valueErr = labelValueError(value);
      if (valueErr) return `${at}.values[${j}]: ${JSON.stringify(value)} ${valueErr}`;
    }
  }
  return undefined;
}

/** A compiled selector: true when the labels match. */
export type LabelMatcher = (labels: Record<string, string> | undefined) => boolean;

const compiled = new WeakMap<LabelSelector, LabelMatcher>();

/**
 * Compiles `selector` once (cached per selector object): planning a large pool
 * matches the same few selectors against thousands of label maps.
 */
export function selectorMatcher(selector: LabelSelector | undefined): LabelMatcher {
  if (!selector) return () => true;
  const cached = compiled.get(selector);
  if (cached) return cached;
  const pairs = Object.entries(selector.matchLabels ?? {});
  const exprs = (selector.matchExpressions ?? []).map((r) => ({
    key: r.key,
    operator: r.operator,
    values: new Set(r.values ?? []),
  }));
  const matcher: LabelMatcher = (labels) => {
    const l = labels ?? {};
    for (let i = 0; i < pairs.length; i++) {
      if (l[pairs[i][0]] !== pairs[i][1]) return false;
    }
    for (const req of exprs) {
      const has = Object.hasOwn(l, req.key);
      switch (req.operator) {
        case "In":
          if (!has || !req.values.has(l[req.key])) return false;
          break;
        case "NotIn":
          if (has && req.values.has(l[req.key])) return false;
          break;
        case "Exists":
          if (!has) return false;
          break;
        case "DoesNotExist":
          if (has) return false;
          break;
        default:
          return false;
      }
    }
    return true;
  };
  compiled.set(selector, matcher);
  return matcher;
}

/** True when `labels` satisfy `selector`. An empty selector matches everything. */
export function matchesSelector(
  selector: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  return selectorMatcher(selector)(labels);
}

/**
 * False only when no node can match both selectors: one requires a label value the other
 * rules out (`matchLabels` against `matchLabels`, `In`, `NotIn`, `DoesNotExist`).
 * Anything else may overlap (`Exists` and the like are not compared).
 */
export function selectorsCanOverlap(
  a: LabelSelector | undefined,
  b: LabelSelector | undefined,
): boolean {
  return !excludes(a, b) && !excludes(b, a);
}

/** True when a node matching `fixed`'s `matchLabels` can never match `other`. */
function excludes(fixed: LabelSelector | undefined, other: LabelSelector | undefined): boolean {
  const labels = fixed?.matchLabels ?? {};
  for (const [key, value] of Object.entries(other?.matchLabels ?? {})) {
    if (labels[key] !== undefined && labels[key] !== value) return true;
  }
  for (const e of other?.matchExpressions ?? []) {
    const have = labels[e.key];
    if (have === undefined) continue;
    const values = e.values ?? [];
    if (e.operator === "In" && !values.includes(have)) return true;
    if (e.operator === "NotIn" && values.includes(have)) return true;
    if (e.operator === "DoesNotExist") return true;
  }
  return false;
}
