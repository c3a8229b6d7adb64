/**
 * Label selectors (metav1.LabelSelector): validation of what the CRD schema
 * cannot express and matching against a label map.
 *
 * @module
 */

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
 * Returns why `selector` is invalid, or undefined when it is valid. The API
 * server rejects these combinations for built-in kinds, but a CRD schema cannot.
 */
export function selectorError(selector: LabelSelector | undefined): string | undefined {
  for (const [i, req] of (selector?.matchExpressions ?? []).entries()) {
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) {
          return `nodeSelector.matchExpressions[${i}] (key ${req.key}): operator ${req.operator} ` +
            "requires at least one value";
        }
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0) {
          return `nodeSelector.matchExpressions[${i}] (key ${req.key}): operator ${req.operator} ` +
            "must not have values";
        }
        break;
      default:
        return `nodeSelector.matchExpressions[${i}] (key ${req.key}): unknown operator ` +
          `${JSON.stringify(req.operator)}`;
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
