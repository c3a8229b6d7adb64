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

/** True when `labels` satisfy `selector`. An empty selector matches everything. */
export function matchesSelector(
  selector: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) {
    if (l[k] !== v) return false;
  }
  for (const req of selector?.matchExpressions ?? []) {
    const has = Object.hasOwn(l, req.key);
    switch (req.operator) {
      case "In":
        if (!has || !(req.values ?? []).includes(l[req.key])) return false;
        break;
      case "NotIn":
        if (has && (req.values ?? []).includes(l[req.key])) return false;
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
}
