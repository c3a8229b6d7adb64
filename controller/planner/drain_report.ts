/**
 * What a running drain tells: the BootcNode's `Cordoned` (True: cordoned in its
 * slot) and `Drained` (False: draining, or blocked naming the
 * PodDisruptionBudget) conditions, written by the controller while it drains the
 * node — the daemon reads the Node only before a reboot, so without these the
 * node's conditions would still say it waits for a slot — and a note in the
 * pool's message when a PodDisruptionBudget, or the pool's drain policy (a pod
 * with emptyDir data, named with the field to set), blocks it. Written on the first
 * drain pass after the cordon is visible once the drain has run a poll interval
 * (`drainPollMs`), or at once when it is blocked, not only at the drain timeout: a
 * drain that ends sooner costs no report (the daemon's Rebooting status tells it).
 *
 * @module
 */
import {
  type BootcNode,
  type Condition,
  cordonedMessage,
  DrainConditionReason,
  drainingMessage,
  findCondition,
  NodeConditionType,
  setCondition,
} from "../../lib/api/mod.ts";
import { nodeObjectEvent, type StepOutput, stepOutput } from "./plan.ts";
import { parseTime } from "../model/slots.ts";

/** The facts of a drain in progress. */
export interface DrainFacts {
  /** The image the node is drained for (its desired image). */
  image: string;
  /** The Node's slot annotation, as recorded. */
  slotAt?: string;
  /** What blocks the drain (`drainBlockedBy`), if anything. */
  blockedBy?: string;
  /** What the drain waits for once its pods are gone (volumes to detach), if anything. */
  waitingFor?: string;
}

/**
 * The BootcNode's conditions with Cordoned True and Drained False as `facts`
 * say, or undefined when they already say so.
 */
export function drainConditions(
  conditions: readonly Condition[] | undefined,
  facts: DrainFacts,
  now: Date,
): Condition[] | undefined {
  const wanted = [
    {
      type: NodeConditionType.Cordoned,
      status: "True" as const,
      reason: DrainConditionReason.Cordoned,
      message: cordonedMessage(facts.image, facts.slotAt),
      at: parseTime(facts.slotAt) ?? now,
    },
    {
      type: NodeConditionType.Drained,
      status: "False" as const,
      reason: facts.blockedBy ? DrainConditionReason.DrainBlocked : DrainConditionReason.Draining,
      message: drainingMessage(facts.image, facts.blockedBy, facts.waitingFor),
      at: now,
    },
  ];
  let out: Condition[] | undefined;
  for (const { at, ...c } of wanted) {
    const current = findCondition(out ?? conditions, c.type);
    if (
      current?.status === c.status && current.reason === c.reason && current.message === c.message
    ) {
      continue;
    }
    out = setCondition(out ?? conditions, c, at);
  }
  return out;
}

/**
 * Step 3's report on a node it is draining (its cordon visible): the conditions
 * when they changed, and the pool's note naming a blocking PodDisruptionBudget.
 */
export function reportDrain(bn: BootcNode, facts: DrainFacts, now: Date): StepOutput {
  const name = bn.metadata.name ?? "";
  const notes = facts.blockedBy
    ? [`drain of ${name} blocked by ${facts.blockedBy}`]
    : facts.waitingFor
    ? [`drain of ${name} waiting for ${facts.waitingFor}`]
    : [];
  const conditions = drainConditions(bn.status?.conditions, facts, now);
  if (!conditions) return stepOutput({ notes });
  const drained = findCondition(bn.status?.conditions, NodeConditionType.Drained);
  // The Node's story: a drain that starts waiting on a PodDisruptionBudget (once per slot
  // and blocker; the timeout has an event of its own).
  const blocked = facts.blockedBy && drained?.reason !== DrainConditionReason.DrainBlocked
    ? [nodeObjectEvent(
      name,
      "Warning",
      "DrainBlocked",
      `drain of node ${name} blocked by ${facts.blockedBy}`,
      `drain-blocked/${name}/${facts.slotAt}/${facts.blockedBy}`,
    )]
    : [];
  return stepOutput({
    notes,
    events: blocked,
    actions: [{
      kind: "patchBootcNodeStatus",
      node: name,
      patch: { metadata: { resourceVersion: bn.metadata.resourceVersion }, status: { conditions } },
      why: facts.blockedBy ? "drain blocked" : "draining",
    }],
  });
}
