/**
 * Descriptors of the resources the operator touches.
 *
 * @module
 */

import { BUDGET, GROUP, NODE, POOL, VERSION } from "../api/constants.ts";
import type { ResourceDescriptor } from "./types.ts";

function r(
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced: boolean,
): ResourceDescriptor {
  return { group, version, plural, kind, namespaced };
}

/** Resource descriptors by lowercase plural (plus camelCase names of the operator's CRDs). */
export const Resources = {
  nodes: r("", "v1", "nodes", "Node", false),
  pods: r("", "v1", "pods", "Pod", true),
  secrets: r("", "v1", "secrets", "Secret", true),
  configmaps: r("", "v1", "configmaps", "ConfigMap", true),
  events: r("", "v1", "events", "Event", true),
  namespaces: r("", "v1", "namespaces", "Namespace", false),
  serviceaccounts: r("", "v1", "serviceaccounts", "ServiceAccount", true),
  leases: r("coordination.k8s.io", "v1", "leases", "Lease", true),
  poddisruptionbudgets: r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true),
  persistentvolumes: r("", "v1", "persistentvolumes", "PersistentVolume", false),
  volumeattachments: r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", false),
  daemonsets: r("apps", "v1", "daemonsets", "DaemonSet", true),
  deployments: r("apps", "v1", "deployments", "Deployment", true),
  customresourcedefinitions: r(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    false,
  ),
  clusterroles: r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
  clusterrolebindings: r(
    "rbac.authorization.k8s.io",
    "v1",
    "clusterrolebindings",
    "ClusterRoleBinding",
    false,
  ),
  roles: r("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
  rolebindings: r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true),
  validatingadmissionpolicies: r(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicies",
    "ValidatingAdmissionPolicy",
    false,
  ),
  validatingadmissionpolicybindings: r(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    false,
  ),
  bootcNodePools: r(GROUP, VERSION, POOL.plural, POOL.kind, false),
  bootcNodes: r(GROUP, VERSION, NODE.plural, NODE.kind, false),
  bootcDisruptionBudgets: r(GROUP, VERSION, BUDGET.plural, BUDGET.kind, false),
} as const satisfies Record<string, ResourceDescriptor>;

/** `apiVersion` of a descriptor, e.g. "v1" or "apps/v1". */
export function apiVersionOf(desc: ResourceDescriptor): string {
  return desc.group ? `${desc.group}/${desc.version}` : desc.version;
}

/**
 * The URL path of a resource collection or object, e.g.
 * `/apis/apps/v1/namespaces/x/daemonsets/y/status`.
 */
export function resourcePath(
  desc: ResourceDescriptor,
  options: { namespace?: string; name?: string; subresource?: string } = {},
): string {
  let path = desc.group ? `/apis/${desc.group}/${desc.version}` : `/api/${desc.version}`;
  if (desc.namespaced && options.namespace) {
    path += `/namespaces/${encodeURIComponent(options.namespace)}`;
  }
  path += `/${desc.plural}`;
  if (options.name !== undefined) {
    if (options.name === "") throw new Error(`empty ${desc.kind} name`);
    path += `/${encodeURIComponent(options.name)}`;
    if (options.subresource) path += `/${options.subresource}`;
  }
  return path;
}
