/**
 * The plugin's reads and writes on the API server (the imperative shell around
 * the pure views): one list per resource per refresh, nothing cached, nothing
 * watched, so a `--watch` costs a few GETs every interval and nothing else.
 *
 * @module
 */
import { LABEL_MANAGED, LABEL_POOL } from "../lib/api/constants.ts";
import { KubeClient } from "../lib/kube/client.ts";
import { loadKubeConfig } from "../lib/kube/config.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { Resources } from "../lib/kube/resources.ts";
import type { GlobalFlags } from "./cli.ts";
import { NotFoundError } from "./errors.ts";
import type { BootcNode, BootcNodePool, EventLike, NodeLike, Snapshot } from "./model.ts";
import type { WhyInput } from "./why.ts";
import type { KubeObject } from "../lib/kube/types.ts";
import { errorText } from "./format.ts";
import { CONTROLLER_DEPLOYMENT, type ControllerRead, type DeploymentLike } from "./version.ts";

/** Namespace of Events about cluster-scoped objects (the API server puts them there). */
export const EVENTS_NAMESPACE = "default";

/** A client from the kubeconfig the way kubectl finds it (see `lib/kube/config.ts`). */
export async function connect(flags: GlobalFlags): Promise<KubeClient> {
  return await KubeClient.fromConfig(
    await loadKubeConfig({ path: flags.kubeconfig, context: flags.context }),
  );
}

/** The typed resource clients the plugin uses. */
export function resources(client: KubeClient) {
  return {
    pools: client.resource<BootcNodePool>(Resources.bootcNodePools),
    bootcNodes: client.resource<BootcNode>(Resources.bootcNodes),
    nodes: client.resource<NodeLike & { metadata: { name?: string } }>(Resources.nodes),
    events: client.resource<EventLike & { metadata: { name?: string } }>(
      Resources.events,
      EVENTS_NAMESPACE,
    ),
  };
}

/**
 * Reads what `status` shows: the pools (or the one named), their BootcNodes and
 * the Nodes pools manage (the disruption record lives on them).
 */
export async function readSnapshot(client: KubeClient, pool?: string): Promise<Snapshot> {
  const r = resources(client);
  const [pools, bootcNodes, nodes] = await Promise.all([
    pool === undefined
      ? r.pools.list().then((l) => l.items)
      : r.pools.get(pool).then((p) => [p], (e) => {
        if (isNotFound(e)) return [];
        throw e;
      }),
    r.bootcNodes.list(pool === undefined ? {} : { labelSelector: `${LABEL_POOL}=${pool}` })
      .then((l) => l.items),
    r.nodes.list({ labelSelector: LABEL_MANAGED }).then((l) => l.items),
  ]);
  return { pools, bootcNodes, nodes, now: new Date() };
}

/**
 * Reads the controller Deployment for `version`: the Deployment, `{ missing: true }` when
 * there is none, or the error's text (the version command still prints the plugin's).
 */
export async function readControllerDeployment(
  client: KubeClient,
  namespace: string,
): Promise<ControllerRead> {
  try {
    const deployments = client.resource<DeploymentLike & KubeObject>(
      Resources.deployments,
      namespace,
    );
    return { deployment: await deployments.get(CONTROLLER_DEPLOYMENT) };
  } catch (e) {
    if (isNotFound(e)) return { missing: true };
    return { error: errorText(e) };
  }
}

/** Reads one pool; a pool that is not there is a {@linkcode NotFoundError}. */
export async function getPool(client: KubeClient, name: string): Promise<BootcNodePool> {
  try {
    return await resources(client).pools.get(name);
  } catch (e) {
    if (isNotFound(e)) throw new NotFoundError("BootcNodePool", name);
    throw e;
  }
}

/** Reads what `why NODE` looks at. */
export async function readWhyInput(client: KubeClient, name: string): Promise<WhyInput> {
  const r = resources(client);
  const orMissing = <T>(p: Promise<T>) =>
    p.then((v): T | undefined => v, (e) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
  const [bootcNode, node, pools, bootcNodes, managed, events] = await Promise.all([
    orMissing(r.bootcNodes.get(name)),
    orMissing(r.nodes.get(name)),
    r.pools.list().then((l) => l.items),
    r.bootcNodes.list().then((l) => l.items),
    r.nodes.list({ labelSelector: LABEL_MANAGED }).then((l) => l.items),
    r.events.list({ fieldSelector: `involvedObject.name=${name}` }).then((l) => l.items),
  ]);
  const nodes = new Map<string, NodeLike>(managed.map((n) => [n.metadata?.name ?? "", n]));
  if (node) nodes.set(name, node);
  return { name, bootcNode, node, pools, bootcNodes, nodes, events, now: new Date() };
}
