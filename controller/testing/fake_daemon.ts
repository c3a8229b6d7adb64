/**
 * A fake daemon for controller integration tests: it plays the daemon's side
 * of the BootcNode contract (design "Daemon state machine") without a host.
 * Each tick it moves every BootcNode one step: no status → booted the initial
 * image, Idle; desired != booted → Staging → Staged; Staged with
 * desiredImageState Booted → Rebooting → booted = desired, Idle. Per-node
 * behaviours inject failures.
 *
 * @module
 */
import { formatTime } from "../../lib/clock.ts";
import {
  type BootcNode,
  type BootcNodeStatus,
  type Condition,
  findCondition,
  IdleReason,
  NodeConditionType,
  verdictDue,
  verifiedRelease,
  type VerifiedStatus,
  withVerifiedRelease,
} from "../../lib/api/mod.ts";
import { Informer, type KubeClient, Resources } from "../../lib/kube/mod.ts";
import { digestOfPullspec } from "../model/image_ref.ts";

/** How a fake node behaves. */
export interface FakeNodeBehaviour {
  /** Reports Degraded=True instead of coming back from its reboot. */
  failOnBoot?: boolean;
  /** Stays Rebooting forever. */
  neverReturns?: boolean;
}

function condition(
  type: string,
  status: "True" | "False",
  reason: string,
  message = "",
): Condition {
  return {
    type,
    status,
    reason,
    message,
    lastTransitionTime: formatTime(new Date()),
  };
}

function withIdle(
  status: BootcNodeStatus,
  idle: "True" | "False",
  reason: string,
  degraded?: string,
) {
  return {
    ...status,
    conditions: [
      condition(NodeConditionType.Idle, idle, reason),
      degraded
        ? condition(NodeConditionType.Degraded, "True", "Error", degraded)
        : condition(NodeConditionType.Degraded, "False", "Healthy"),
    ],
  };
}

function entry(image: string) {
  return { image, imageDigest: digestOfPullspec(image), architecture: "amd64" };
}

/** The host check a healthy host reports for its booted entry. */
function healthy(booted: { imageDigest?: string }) {
  return {
    bootedDigest: booted.imageDigest,
    checkedAt: "2026-01-01T00:00:00Z",
    state: "Healthy" as const,
  };
}

/** `status` with `bn`'s verdict recorded as the real daemon does. */
export function recordVerdict(status: VerifiedStatus, bn: BootcNode): VerifiedStatus {
  return withVerifiedRelease(status, verifiedRelease(bn), true);
}

/**
 * The next status of `bn` (undefined: nothing to do). Pure, so the contract it
 * plays can be read in one place.
 */
export function nextStatus(
  bn: BootcNode,
  initialImage: string,
  behaviour: FakeNodeBehaviour = {},
): BootcNodeStatus | undefined {
  const status = bn.status;
  const desired = bn.spec.desiredImage;
  if (!status?.booted) {
    const booted = entry(initialImage);
    return withIdle({ booted, hostHealth: healthy(booted) }, "True", IdleReason.Idle);
  }
  const degraded = findCondition(status.conditions, NodeConditionType.Degraded)?.status === "True";
  if (degraded) return undefined;
  const idle = findCondition(status.conditions, NodeConditionType.Idle);
  const onDesired = digestOfPullspec(status.booted.image) === digestOfPullspec(desired);
  if (onDesired) {
    // A verdict riding in the release not recorded yet (lib/api/verified.ts).
    const due = verdictDue(status.conditions, verifiedRelease(bn));
    if (idle?.status === "True" && !due) return undefined;
    const next = withIdle(
      { booted: status.booted, rollback: status.rollback, hostHealth: healthy(status.booted) },
      "True",
      IdleReason.Idle,
    );
    const kept = status.conditions?.filter((c) =>
      c.type === NodeConditionType.Verified || c.type === NodeConditionType.Updated
    ) ?? [];
    const verdict = recordVerdict({
      conditions: [...next.conditions, ...kept],
      verification: status.verification,
    }, bn);
    return { ...next, ...verdict };
  }
  switch (idle?.status === "False" ? idle.reason : IdleReason.Idle) {
    case IdleReason.Staging:
      return withIdle({ ...status, staged: entry(desired) }, "False", IdleReason.Staged);
    case IdleReason.Staged:
      if (digestOfPullspec(status.staged?.image) !== digestOfPullspec(desired)) {
        return withIdle({ ...status, staged: undefined }, "False", IdleReason.Staging);
      }
      if (bn.spec.desiredImageState !== "Booted") return undefined;
      return withIdle(status, "False", IdleReason.Rebooting);
    case IdleReason.Rebooting:
      if (behaviour.neverReturns) return undefined;
      if (behaviour.failOnBoot) {
        return withIdle(status, "False", IdleReason.Rebooting, "error: boot check failed");
      }
      {
        const booted = status.staged ?? entry(desired);
        return withIdle(
          { booted, rollback: status.booted, hostHealth: healthy(booted) },
          "True",
          IdleReason.Idle,
        );
      }
    default:
      return withIdle({ ...status, staged: undefined }, "False", IdleReason.Staging);
  }
}

/** Options of {@linkcode startFakeDaemon}. */
export interface FakeDaemonOptions {
  client: KubeClient;
  /** The image every node boots before any update. */
  initialImage: string;
  /** Per-node behaviour, looked up on every tick (mutable). */
  behaviours?: Map<string, FakeNodeBehaviour>;
  /** Pause between steps (default 150 ms). */
  tickMs?: number;
}

/** A running fake daemon. */
export interface FakeDaemon {
  /** Status writes made. */
  readonly writes: number;
  stop(): Promise<void>;
}

/** Starts the fake daemon for every BootcNode in the cluster. */
export function startFakeDaemon(options: FakeDaemonOptions): FakeDaemon {
  const ac = new AbortController();
  const resource = options.client.resource<BootcNode>(Resources.bootcNodes);
  const informer = new Informer<BootcNode>({ resource });
  const informerDone = informer.start(ac.signal);
  let writes = 0;
  const loop = (async () => {
    await informer.waitForSync(ac.signal).catch(() => {});
    while (!ac.signal.aborted) {
      for (const bn of informer.store.list()) {
        if (bn.metadata.deletionTimestamp) continue;
        const next = nextStatus(
          bn,
          options.initialImage,
          options.behaviours?.get(bn.metadata.name ?? ""),
        );
        if (!next) continue;
        try {
          // PUT replaces the whole status, so fields dropped by a step go away.
          await resource.updateStatus({ ...bn, status: JSON.parse(JSON.stringify(next)) }, {
            fieldManager: "fake-daemon",
          });
          writes++;
        } catch {
          // Gone or conflicting: the next tick sees the current object.
        }
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, options.tickMs ?? 150);
        ac.signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve();
        }, { once: true });
      });
    }
  })();
  return {
    get writes() {
      return writes;
    },
    async stop() {
      ac.abort();
      await loop;
      await informerDone;
    },
  };
}
