/**
 * The workload measured by tools/measure_client_rss.ts: one client and one
 * informer watching one object (the "default" Namespace), idling.
 *
 * Usage: deno run --allow-all lib/kube/bench/idle_client.ts KUBECONFIG
 * Prints "synced" on stdout once the informer has synced; stops on SIGTERM/SIGINT.
 *
 * @module
 */

import { Informer, KubeClient, type KubeObject, Resources } from "../mod.ts";

if (import.meta.main) {
  const path = Deno.args[0];
  if (!path) {
    console.error("usage: idle_client.ts KUBECONFIG");
    Deno.exit(2);
  }
  const client = await KubeClient.fromEnvironment({ path });
  const informer = new Informer<KubeObject>({
    resource: client.resource(Resources.namespaces),
    fieldSelector: "metadata.name=default",
  });
  const stop = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    Deno.addSignalListener(sig, () => stop.abort());
  }
  const running = informer.start(stop.signal);
  await informer.waitForSync(stop.signal);
  console.log(`synced ${informer.store.size}`);
  await running;
  client.close();
}
