/**
 * What the daemons may read of Secrets: exactly the pull Secrets pools name.
 *
 * The daemon's Role `bootc-operator-daemon-pull-secrets` (in the operator's
 * namespace) grants `get` on Secrets restricted by `resourceNames` to the
 * Secrets that pools reference and that are usable (in the operator's
 * namespace, of type `kubernetes.io/dockerconfigjson`). The controller keeps
 * the Role's rules equal to {@linkcode daemonSecretRules}; this module is the
 * pure part of that.
 *
 * An empty `resourceNames` list means every name in RBAC, so with no Secret to
 * grant the rule is left out altogether: the Role then grants nothing.
 *
 * @module
 */

/** Name of the daemon's pull-secret Role (manifests/daemon-rbac.yaml). */
export const DAEMON_PULL_SECRETS_ROLE = "bootc-operator-daemon-pull-secrets";

/** An RBAC policy rule. */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** A pool as far as daemon access is concerned. */
export interface PoolSecretUse {
  /** The pool's `spec.pullSecretRef`. */
  pullSecretRef?: { name: string; namespace: string };
}

/**
 * The names of the Secrets daemons may read: referenced by some pool, in
 * `namespace`, and usable (`usable(name)`, e.g. present in the type-filtered
 * cache). Sorted and without duplicates, so the result compares stably.
 */
export function daemonSecretNames(
  pools: Iterable<PoolSecretUse>,
  namespace: string,
  usable: (name: string) => boolean,
): string[] {
  const names = new Set<string>();
  for (const pool of pools) {
    const ref = pool.pullSecretRef;
    if (ref && ref.namespace === namespace && usable(ref.name)) names.add(ref.name);
  }
  return [...names].sort();
}

/** The Role's rules for `names`: one `get` rule naming them, or none at all. */
export function daemonSecretRules(names: readonly string[]): PolicyRule[] {
  if (names.length === 0) return [];
  return [{
    apiGroups: [""],
    resources: ["secrets"],
    verbs: ["get"],
    resourceNames: [...names].sort(),
  }];
}

function normalizeRule(rule: PolicyRule): string {
  const sorted = (v: string[] | undefined) => [...(v ?? [])].sort();
  return JSON.stringify([
    sorted(rule.apiGroups),
    sorted(rule.resources),
    sorted(rule.verbs),
    sorted(rule.resourceNames),
    sorted(rule.nonResourceURLs),
  ]);
}

/** True when two rule lists grant the same (order of rules and of list items ignored). */
export function rulesEqual(
  a: readonly PolicyRule[] | undefined,
  b: readonly PolicyRule[] | undefined,
): boolean {
  const na = (a ?? []).map(normalizeRule).sort();
  const nb = (b ?? []).map(normalizeRule).sort();
  return na.length === nb.length && na.every((r, i) => r === nb[i]);
}
