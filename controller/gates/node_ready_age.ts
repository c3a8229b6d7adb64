/**
 * `spec.rollout.minNodeReadySeconds`: a node gets a reboot slot only once its Node has
 * been Ready that long, so a node that keeps flapping is not taken down while it is
 * barely back. The node waits; the pool's other nodes go ahead. Reason
 * `NodeNotReadyLongEnough`, until the earliest time a held node has been Ready long
 * enough (a node not Ready at all waits for its Node to change).
 *
 * @module
 */
import { formatTime } from "../../lib/clock.ts";
import type { Candidate, Gate, GateDecision, GateInput } from "./gate.ts";

/** The wait reason of this gate. */
export const NODE_NOT_READY_LONG_ENOUGH = "NodeNotReadyLongEnough";

/** Holds back the candidates whose Node has not been Ready for `minNodeReadySeconds`. */
export const nodeReadyAgeGate: Gate = {
  name: "nodeReadyAge",
  reasons: [{ reason: NODE_NOT_READY_LONG_ENOUGH, blocksPool: false }],
  decide(input: GateInput): GateDecision {
    const min = input.pool.spec.rollout?.minNodeReadySeconds ?? 0;
    if (!(min > 0) || input.candidates.length === 0) return { admit: input.candidates };
    const admit: Candidate[] = [];
    const notReady: string[] = [];
    const recent: { node: string; at: number }[] = [];
    for (const cand of input.candidates) {
      const node = input.cluster.nodes.get(cand.name);
      const since = node?.ready ? Date.parse(node.readySince ?? "") : NaN;
      if (!Number.isFinite(since)) notReady.push(cand.name);
      else if (input.now.getTime() - since >= min * 1000) admit.push(cand);
      else recent.push({ node: cand.name, at: since + min * 1000 });
    }
    if (notReady.length === 0 && recent.length === 0) return { admit };
    const parts: string[] = [];
    if (recent.length > 0) {
      parts.push(`${names(recent.map((r) => r.node))} Ready for less than ${min}s`);
    }
    if (notReady.length > 0) parts.push(`${names(notReady)} not Ready`);
    const until = recent.length > 0 ? new Date(Math.min(...recent.map((r) => r.at))) : undefined;
    return {
      admit,
      wait: {
        reason: NODE_NOT_READY_LONG_ENOUGH,
        message: `minNodeReadySeconds ${min}: ${parts.join("; ")}` +
          (until ? ` (the first may go at ${formatTime(until)})` : ""),
        ...(until ? { until } : {}),
      },
    };
  },
};

/** "a, b, c and 2 more". */
function names(list: readonly string[]): string {
  return list.length > 3
    ? `${list.slice(0, 3).join(", ")} and ${list.length - 3} more`
    : list.join(", ");
}
