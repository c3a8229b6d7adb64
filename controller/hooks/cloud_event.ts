/**
 * A hook occurrence as a CloudEvents 1.0 event in structured mode: the whole
 * event is the JSON body, sent as `application/cloudevents+json`. Pure. The
 * body carries names, revisions and images only: never a Secret.
 *
 * @module
 */
import { API_VERSION, type HookPhase } from "../../lib/api/mod.ts";
import type { HookImage, HookOccurrence } from "./phases.ts";

/** The content type of a structured-mode CloudEvent. */
export const CLOUDEVENTS_CONTENT_TYPE = "application/cloudevents+json";

/** The CloudEvents `type` of each phase. */
export const CLOUD_EVENT_TYPES: Record<HookPhase, string> = {
  NodePreDrain: "dev.bootc.node.preDrain",
  NodePreReboot: "dev.bootc.node.preReboot",
  NodePostVerification: "dev.bootc.node.postVerification",
  RolloutStarted: "dev.bootc.pool.rolloutStarted",
  RolloutCompleted: "dev.bootc.pool.rolloutCompleted",
  RolloutHalted: "dev.bootc.pool.rolloutHalted",
  RolloutRolledBack: "dev.bootc.pool.rolledBack",
};

/** The `data` of a hook event. */
export interface HookEventData {
  pool: string;
  node?: string;
  phase: HookPhase;
  revision: number;
  images: { target: HookImage; booted?: HookImage };
}

/** A structured-mode CloudEvent. */
export interface CloudEvent {
  specversion: "1.0";
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: "application/json";
  data: HookEventData;
}

/** The CloudEvent of `o` (the same for every attempt, so receivers can de-duplicate on `id`). */
export function cloudEvent(o: HookOccurrence): CloudEvent {
  return {
    specversion: "1.0",
    id: o.id,
    source: `/apis/${API_VERSION}/bootcnodepools/${o.pool}`,
    type: CLOUD_EVENT_TYPES[o.phase],
    subject: o.node ? `nodes/${o.node}` : `bootcnodepools/${o.pool}`,
    time: o.time,
    datacontenttype: "application/json",
    data: {
      pool: o.pool,
      ...(o.node ? { node: o.node } : {}),
      phase: o.phase,
      revision: o.revision,
      images: { target: o.target, ...(o.booted ? { booted: o.booted } : {}) },
    },
  };
}
