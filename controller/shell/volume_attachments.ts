/**
 * Reads the VolumeAttachments of the nodes a plan drains, for a pool whose drain
 * waits for volumes to detach (`spec.rollout.drain.waitForVolumeDetach`). One list
 * of the cluster's VolumeAttachments per plan (the API has no field selector on
 * `spec.nodeName`), and one read per attached PersistentVolume for the claim it is
 * bound to, so the drain can tell the volumes of pods it leaves alone.
 *
 * @module
 */
import { isNotFound, type KubeClient, Resources } from "../../lib/kube/mod.ts";
import {
  type PersistentVolumeLike,
  summarizeAttachment,
  type VolumeAttachmentLike,
} from "../model/drain.ts";
import type { VolumeAttachmentSummary } from "../model/types.ts";
import type { FailedEviction } from "./action_writer.ts";

/**
 * The VolumeAttachments of `nodes`, by node (a node without any maps to `[]`). A
 * failed read makes every node's attachments unknown (absent from the map), each
 * named in `failed`, so those drains wait rather than finish on a guess.
 */
export async function listNodeAttachments(
  client: KubeClient,
  nodes: readonly string[],
): Promise<{ attachments: Map<string, VolumeAttachmentSummary[]>; failed: FailedEviction[] }> {
  const attachments = new Map<string, VolumeAttachmentSummary[]>();
  const wanted = new Set(nodes);
  try {
    const list = await client.resource<VolumeAttachmentLike>(Resources.volumeattachments).list();
    const pvs = client.resource<PersistentVolumeLike>(Resources.persistentvolumes);
    for (const n of nodes) attachments.set(n, []);
    const mine = list.items.filter((va) => wanted.has(va.spec?.nodeName ?? ""));
    const summaries = await Promise.all(mine.map(async (va) => {
      const pvName = va.spec?.source?.persistentVolumeName;
      const pv = pvName ? await pvs.get(pvName).catch(notFoundAsUndefined) : undefined;
      return { node: va.spec?.nodeName ?? "", summary: summarizeAttachment(va, pv) };
    }));
    for (const { node, summary } of summaries) attachments.get(node)?.push(summary);
    return { attachments, failed: [] };
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    const failed = nodes.map((node) => ({
      node,
      error: new Error(`reading the VolumeAttachments of node ${node} failed: ${why}`),
      read: true,
    }));
    return { attachments: new Map(), failed };
  }
}

/** A PersistentVolume already gone has no claim to tell; any other error fails the read. */
function notFoundAsUndefined(e: unknown): undefined {
  if (isNotFound(e)) return undefined;
  throw e;
}
