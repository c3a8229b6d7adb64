/**
 * Reading the install manifests for the security tests: the parsed documents of
 * `manifests/install.yaml` and RBAC rules flattened to comparable strings.
 *
 * @module
 */
import { parseAllDocuments } from "yaml";

/** The operator's namespace and service-account names, as the manifests spell them. */
export const OPERATOR_NAMESPACE = "bootc-operator";
/** The controller's service account. */
export const CONTROLLER_SA = "bootc-operator-controller";
/** The daemon's service account. */
export const DAEMON_SA = "bootc-operator-daemon";

/** Absolute path of a file in `manifests/`. */
export function manifestPath(name: string): string {
  return new URL(`../../manifests/${name}`, import.meta.url).pathname;
}

/** One Kubernetes object as found in a manifest. */
export interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

/** Parses a multi-document YAML text; throws on any syntax error or empty document. */
export function parseManifests(text: string): ManifestObject[] {
  const objects: ManifestObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML: ${doc.errors[0].message}`);
    const value = doc.toJS() as ManifestObject | null;
    if (value === null) throw new Error("empty YAML document");
    objects.push(value);
  }
  return objects;
}

/** Reads and parses `manifests/install.yaml`. */
export async function readInstall(): Promise<ManifestObject[]> {
  return parseManifests(await Deno.readTextFile(manifestPath("install.yaml")));
}

/** Finds the one object of `kind` named `name`; throws when it is missing. */
export function find(objects: ManifestObject[], kind: string, name: string): ManifestObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`${kind} ${name} not found`);
  return found;
}

/** An RBAC policy rule. */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}

/**
 * Flattens rules to sorted "group/resource:verb" strings ("" group written as "core"), so a
 * role's grants compare as a set. Rules with resourceNames are marked with them.
 */
export function flattenRules(rules: PolicyRule[]): string[] {
  const out = new Set<string>();
  for (const rule of rules) {
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        for (const verb of rule.verbs) {
          const names = rule.resourceNames?.length ? `[${rule.resourceNames.join(",")}]` : "";
          out.add(`${group || "core"}/${resource}:${verb}${names}`);
        }
      }
    }
  }
  return [...out].sort();
}
