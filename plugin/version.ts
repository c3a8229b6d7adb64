/**
 * `kubectl bootc version`: the plugin's own build and the controller's version (pure; the
 * read is in `kube.ts`). The controller's version comes from the `bootc.dev/version`
 * annotation its manifests put on the controller Deployment ({@linkcode VERSION_ANNOTATION}):
 * reading a Deployment needs no access beyond what looking at an installation takes, where
 * the controller's build-info metric would need a proxy to its pods. The annotation says
 * what the manifests deploy; the commit a replica runs is on its `/metrics`
 * (`bootc_operator_build_info`) and in its first log line.
 *
 * @module
 */
import { type BuildInfo, VERSION_ANNOTATION } from "../lib/version.ts";

/** The controller Deployment's name (manifests/controller.yaml). */
export const CONTROLLER_DEPLOYMENT = "bootc-operator-controller";

/** The operator's namespace unless `-n` names another. */
export const OPERATOR_NAMESPACE = "bootc-operator";

/** The fields of a Deployment `version` reads. */
export interface DeploymentLike {
  metadata?: { annotations?: Record<string, string> };
  spec?: { template?: { spec?: { containers?: { name?: string; image?: string }[] } } };
}

/** What was read about the controller: its Deployment, none (not installed), or an error. */
export type ControllerRead =
  | { deployment: DeploymentLike }
  | { missing: true }
  | { error: string };

/**
 * The `-o json` shape: every key always present, `null` where unknown. `controller.error`
 * says why the version is unknown (not installed, no annotation, the API failed).
 */
export interface VersionReport {
  plugin: BuildInfo;
  controller: {
    namespace: string;
    deployment: string;
    version: string | null;
    image: string | null;
    error: string | null;
  };
}

/** The report for the plugin's build `plugin` and what was read in `namespace`. */
export function versionReport(
  plugin: BuildInfo,
  namespace: string,
  read: ControllerRead,
): VersionReport {
  const where = `Deployment ${namespace}/${CONTROLLER_DEPLOYMENT}`;
  const controller = {
    namespace,
    deployment: CONTROLLER_DEPLOYMENT,
    version: null as string | null,
    image: null as string | null,
    error: null as string | null,
  };
  if ("error" in read) {
    controller.error = `cannot read ${where}: ${read.error}`;
  } else if ("missing" in read) {
    controller.error = `${where} not found (not installed there? -n names the namespace)`;
  } else {
    const containers = read.deployment.spec?.template?.spec?.containers ?? [];
    const container = containers.find((c) => c.name === "controller") ?? containers[0];
    controller.image = container?.image ?? null;
    controller.version = read.deployment.metadata?.annotations?.[VERSION_ANNOTATION] ?? null;
    if (controller.version === null) {
      controller.error = `${where} has no ${VERSION_ANNOTATION} annotation`;
    }
  }
  return { plugin: { version: plugin.version, commit: plugin.commit }, controller };
}

/** The text form: one line for the plugin, one for the controller. */
export function renderVersion(r: VersionReport): string {
  const c = r.controller;
  const controller = c.version === null
    ? `unknown: ${c.error}`
    : `${c.version} (${c.namespace}/${c.deployment}${c.image ? `, image ${c.image}` : ""})`;
  return `plugin      ${r.plugin.version} (commit ${r.plugin.commit})\n` +
    `controller  ${controller}\n`;
}
