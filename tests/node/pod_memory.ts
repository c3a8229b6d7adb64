/**
 * The operator's pods' memory as the kubelet reports it (`/stats/summary`, through the API
 * server's node proxy): the working set the kubelet evicts by and `kubectl top` shows, sampled
 * during a rollout on a real node.
 *
 * @module
 */
import { Resources } from "../../lib/kube/mod.ts";
import type { ControlPlane, Node } from "../harness/control_plane.ts";

/** The part of the kubelet's `/stats/summary` read here. */
export interface StatsSummary {
  pods?: {
    podRef: { name: string; namespace: string };
    memory?: { workingSetBytes?: number; rssBytes?: number };
  }[];
}

/** Each pod's working set in `namespace`, by pod name (pods the kubelet has no figure for left out). */
export function podWorkingSets(summary: StatsSummary, namespace: string): Map<string, number> {
  const sets = new Map<string, number>();
  for (const pod of summary.pods ?? []) {
    const bytes = pod.memory?.workingSetBytes;
    if (pod.podRef.namespace === namespace && bytes !== undefined) sets.set(pod.podRef.name, bytes);
  }
  return sets;
}

/** The highest working set seen of each pod, merged into `into`. */
export function mergePeaks(into: Map<string, number>, sample: Map<string, number>): void {
  for (const [name, bytes] of sample) into.set(name, Math.max(into.get(name) ?? 0, bytes));
}

/** "controller-abc 41.2 MiB, daemon-xyz 17.0 MiB" (sorted by name). */
export function formatPeaks(peaks: Map<string, number>): string {
  return [...peaks].sort(([a], [b]) => a.localeCompare(b))
    .map(([name, bytes]) => `${name} ${(bytes / (1 << 20)).toFixed(1)} MiB`).join(", ");
}

/**
 * The kubelet's summary of `node`, read from the kubelet's own port (the API server's node proxy
 * refuses the test node's loopback address), trusting the certificate the kubelet made for
 * itself in `nodeDir` (tests/node/real_node_config.ts: `kubelet-pki`).
 */
export async function statsSummary(
  cp: ControlPlane,
  node: string,
  nodeDir: string,
): Promise<StatsSummary> {
  const n = await cp.client.resource<Node>(Resources.nodes).get(node);
  const port = n.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  if (!port) throw new Error(`node ${node} reports no kubelet port`);
  const client = Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(`${nodeDir}/kubelet-pki/kubelet.crt`)],
  });
  try {
    const res = await fetch(`https://${node}:${port}/stats/summary`, { client });
    if (!res.ok) throw new Error(`stats/summary: ${res.status} ${await res.text()}`);
    return await res.json();
  } finally {
    client.close();
  }
}

/**
 * Samples the working set of `namespace`'s pods on `node` every `everyMs` until stopped, and
 * keeps each pod's peak. A failed read is counted and its error kept, not thrown: the kubelet
 * restarts during a node's reboot.
 */
export function samplePodMemory(
  cp: ControlPlane,
  node: { name: string; dir: string },
  namespace: string,
  everyMs = 1000,
) {
  const peaks = new Map<string, number>();
  let failures = 0;
  let samples = 0;
  let lastError = "";
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      try {
        const summary = await statsSummary(cp, node.name, node.dir);
        mergePeaks(peaks, podWorkingSets(summary, namespace));
        samples++;
      } catch (error) {
        failures++;
        lastError = String(error);
      }
    });
  }, everyMs);
  return {
    peaks,
    /** Stops sampling once the read under way is done; returns how many reads succeeded. */
    stop: async (): Promise<{ samples: number; failures: number; lastError: string }> => {
      clearInterval(timer);
      await running;
      return { samples, failures, lastError };
    },
  };
}
