/**
 * A bare API server for tests of admission and of the daemon alone: no kwok,
 * controller manager or scheduler, the CRDs of `crds/` applied and served.
 *
 * @module
 */
import { Resources } from "../../lib/kube/mod.ts";
import { type ControlPlane, startControlPlane } from "./control_plane.ts";
import { waitFor } from "./wait.ts";

const CRDS = new URL("../../crds/", import.meta.url).pathname;

/** Starts the API server, applies every CRD and resolves once pools can be listed. */
export async function startCrdApiServer(): Promise<ControlPlane> {
  const cp = await startControlPlane({
    kwok: false,
    controllerManager: false,
    scheduler: false,
    quiet: true,
  });
  try {
    for await (const entry of Deno.readDir(CRDS)) await cp.applyYaml(`${CRDS}${entry.name}`);
    const pools = cp.client.resource(Resources.bootcNodePools);
    // A loaded machine can take a while to establish the CRDs.
    await waitFor(() => pools.list().then(() => true, () => undefined), {
      timeoutMs: 30_000,
      message: "the CRDs were not served",
    });
    return cp;
  } catch (e) {
    await cp.stop();
    throw e;
  }
}
