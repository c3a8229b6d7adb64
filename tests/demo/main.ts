/**
 * `deno task demo`: a live rollout on an embedded local control plane.
 *
 * Starts the whole operator on loopback (see tests/harness/stack.ts), creates a
 * pool on v1 and waits until it converges, then moves the tag to v2 and shows the
 * rollout live, ending with a summary and a teardown.
 *
 * With `--bad-image` the pool has a canary and `onFailure: RollbackPool`, and
 * after v2 the tag moves to an image whose boot fails a systemd unit: the demo
 * shows the canary catching it, the pool rolling back to v2 by itself, and the
 * pool's revision history.
 *
 * With `--channel` the pool follows the semver range `~1.0` of the repository
 * instead of the `:stable` tag: v1 is published as 1.0.0 (and v2 as 2.0.0,
 * outside the range); the update is v2 published as 1.0.1.
 *
 * Usage: deno task demo [--nodes N] [--max-unavailable N|P%] [--soft-reboot] [--bad-image]
 *   [--channel] [--keep]
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { INode } from "kubernetes-models/v1/Node";
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  intOrPercentError,
  isDisrupted,
  POOL_MAX_UNAVAILABLE,
  resolvePoolMaxUnavailable,
} from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import { formatBreakdown, writeBreakdown } from "../../tools/scale_report.ts";
import { LiveScreen } from "./screen.ts";
import {
  channelLine,
  clearRolledBackHint,
  imageName,
  type ImageNames,
  renderTable,
  type Snapshot,
} from "./view.ts";

const POOL_NAME = "workers";
const WORKER_LABEL = "node-role.kubernetes.io/worker";

/** Demo options. */
export interface DemoOptions {
  nodes: number;
  maxUnavailable: number | string;
  softReboot: boolean;
  /** After v2, roll out a bad image and show the canary and the automatic rollback. */
  badImage: boolean;
  /** The pool follows the channel ~1.0 instead of the :stable tag; v2 is published as 1.0.1. */
  channel: boolean;
  keep: boolean;
}

function parseOptions(args: string[]): DemoOptions {
  const { values } = parseArgs({
    args,
    options: {
      nodes: { type: "string", default: "6" },
      "max-unavailable": { type: "string", default: "1" },
      "soft-reboot": { type: "boolean", default: false },
      "bad-image": { type: "boolean", default: false },
      channel: { type: "boolean", default: false },
      keep: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log(
      "usage: deno task demo [--nodes N] [--max-unavailable N|P%] [--soft-reboot] [--bad-image] " +
        "[--channel] [--keep]",
    );
    Deno.exit(0);
  }
  const nodes = Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1) throw new Error("--nodes must be an integer >= 1");
  const mu = values["max-unavailable"]!;
  const maxUnavailable = /^\d+$/.test(mu) ? Number(mu) : mu;
  const err = intOrPercentError(maxUnavailable, {
    ...POOL_MAX_UNAVAILABLE,
    field: "--max-unavailable",
  });
  if (err) throw new Error(err);
  return {
    nodes,
    maxUnavailable,
    softReboot: values["soft-reboot"]!,
    badImage: values["bad-image"]!,
    channel: values.channel!,
    keep: values.keep!,
  };
}

const short = (digest?: string) => digest ? digest.replace("sha256:", "").slice(0, 12) : "-";

/** The channel the `--channel` pool follows, and the versions the demo publishes on it. */
const CHANNEL = { constraint: "~1.0", v1: "1.0.0", v2: "1.0.1", outside: "2.0.0", bad: "1.0.2" };

async function snapshot(stack: Stack): Promise<Snapshot> {
  const client = stack.cp.client;
  const [pools, bootcNodes, nodes] = await Promise.all([
    client.resource<BootcNodePool>(Resources.bootcNodePools).list(),
    client.resource<BootcNode>(Resources.bootcNodes).list(),
    client.resource<INode>(Resources.nodes).list(),
  ]);
  return {
    pool: pools.items.find((p) => p.metadata.name === POOL_NAME),
    bootcNodes: bootcNodes.items,
    nodes: nodes.items,
  };
}

/**
 * The names the table gives the images: v1, v2 and BAD; for a channel pool the
 * versions it knows them by (1.0.0, 1.0.1, 1.0.2).
 */
function imageNames(stack: Stack, options: DemoOptions, bad?: string): ImageNames {
  const names = new Map<string, string>([
    [stack.images.v1.digest, options.channel ? CHANNEL.v1 : "v1"],
    [stack.images.v2.digest, options.channel ? CHANNEL.v2 : "v2"],
  ]);
  if (bad) names.set(bad, options.channel ? CHANNEL.bad : "BAD");
  return names;
}

/** Every node runs `digest`, counted by the pool, and none is disrupted or cordoned. */
function settledOn(snap: Snapshot, digest: string, nodes: number): boolean {
  const pool = snap.pool;
  return pool?.status?.targetDigest === digest &&
    pool.status.nodeCount === nodes && pool.status.updatedCount === nodes &&
    snap.nodes.every((n) => !isDisrupted(n) && !n.spec?.unschedulable);
}

/** Settled on `digest` and UpToDate (a pool that rolled back is not: it cannot realise its spec). */
function converged(snap: Snapshot, digest: string, nodes: number): boolean {
  return settledOn(snap, digest, nodes) &&
    findCondition(snap.pool?.status?.conditions, "UpToDate")?.status === "True";
}

/** When the first node entered a slot after `since`. */
function firstSlotAt(stack: Stack, since: number): number | undefined {
  const starts = stack.tracker.intervals.map((i) => i.start).filter((t) => t >= since);
  return starts.length ? Math.min(...starts) : undefined;
}

/** Peak resident memory (VmHWM) of a process in MiB, or "-" when it is gone. */
function vmHwm(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
    return Number.isFinite(kb) ? Math.round(kb / 102.4) / 10 : undefined;
  } catch {
    return undefined;
  }
}

function peakRss(stack: Stack): { controller: string; daemon: string } {
  const daemons = [...stack.fleet.nodes.values()].map((m) => vmHwm(m.daemon?.pid))
    .filter((v): v is number => v !== undefined);
  return {
    controller: String(vmHwm(stack.controller?.pid) ?? "-"),
    daemon: daemons.length ? String(Math.max(...daemons)) : "-",
  };
}

/** Runs the demo. */
export async function runDemo(options: DemoOptions): Promise<void> {
  const encoder = new TextEncoder();
  const tty = Deno.stdout.isTerminal();
  const out = (text: string) => Deno.stdout.writeSync(encoder.encode(text));
  const slots = resolvePoolMaxUnavailable(options.maxUnavailable, options.nodes);
  out(`Starting a control plane, a registry, the controller and ${options.nodes} nodes…\n`);
  const t0 = Date.now();
  const stack = await startStack({
    limits: { [POOL_NAME]: { maxUnavailable: slots } },
    onFleetEvent: tty ? undefined : (e) => {
      if (e.type.startsWith("reboot")) out(`  ${e.node}: ${e.type}${e.soft ? " (soft)" : ""}\n`);
    },
  });
  let failed = true;
  try {
    out(
      `  control plane up in ${(stack.cp.startupMs / 1000).toFixed(1)}s; logs in ${stack.logDir}\n`,
    );
    await Promise.all(
      Array.from({ length: options.nodes }, (_, i) =>
        stack.fleet.addNode(`worker-${i + 1}`, {
          image: `${stack.images.repository}:stable`,
          labels: { [WORKER_LABEL]: "" },
          softRebootCapable: options.softReboot,
        })),
    );
    if (options.channel) {
      await stack.registry.tagExisting("bootc/os", "v1", CHANNEL.v1);
      await stack.registry.tagExisting("bootc/os", "v2", CHANNEL.outside);
    }
    await stack.createPool(POOL_NAME, {
      nodeSelector: { matchLabels: { [WORKER_LABEL]: "" } },
      image: options.channel
        ? { channel: { repository: stack.images.repository, constraint: CHANNEL.constraint } }
        : { ref: `${stack.images.repository}:stable` },
      rollout: {
        maxUnavailable: options.maxUnavailable,
        ...(options.badImage
          ? {
            onFailure: "RollbackPool",
            canary: { nodes: 1, soakSeconds: 5 },
            health: { timeoutSeconds: 60 },
            rebootTimeoutSeconds: 60,
          }
          : {}),
      } as BootcNodePool["spec"]["rollout"],
      disruption: { rebootPolicy: options.softReboot ? "AllowSoftReboot" : "RebootOnly" },
    });
    out(
      options.channel
        ? `Pool ${POOL_NAME} created on channel ${CHANNEL.constraint} of ${stack.images.repository}` +
          ` (${CHANNEL.v1} is v1, which the nodes run; ${CHANNEL.outside} is outside the range);` +
          " waiting to converge…\n"
        : `Pool ${POOL_NAME} created on ${stack.images.repository}:stable (v1); waiting to ` +
          "converge…\n",
    );
    await waitFor(async () => {
      const snap = await snapshot(stack);
      return converged(snap, stack.images.v1.digest, options.nodes) ? snap : undefined;
    }, { timeoutMs: 120_000, message: "pool did not converge on v1" });
    out(
      `Converged on ${options.channel ? `${CHANNEL.v1} (v1)` : "v1"} after ${
        ((Date.now() - t0) / 1000).toFixed(1)
      }s.\n\n`,
    );

    const writesBefore = await stack.apiWrites();
    const nodeWritesBefore = stack.fleet.nodeWrites;
    const rebootsBefore = stack.fleet.rebootCount;
    if (!options.channel) {
      out(
        `Moving tag :stable to v2 (${
          short(stack.images.v2.digest)
        }), maxUnavailable ${options.maxUnavailable}…\n`,
      );
    }
    if (options.channel) {
      out(
        `Publishing v2 as ${CHANNEL.v2} (inside ${CHANNEL.constraint}; the next channel ` +
          "check picks it)…\n",
      );
      await stack.registry.tagExisting("bootc/os", "v2", CHANNEL.v2);
    } else {
      await stack.registry.tagExisting("bootc/os", "v2", "stable");
    }
    const started = Date.now();
    /**
     * Redraws the table in place until `done` holds; without a terminal, prints the
     * progress line when it changes and the channel line when that changes.
     */
    const follow = async (
      since: number,
      done: (snap: Snapshot) => boolean,
      names: ImageNames,
    ) => {
      const screen = new LiveScreen(out);
      const printed = new Map<string, string>();
      const once = (key: string, line: string | undefined, compare = line) => {
        if (line === undefined || printed.get(key) === compare) return;
        out(line + "\n");
        printed.set(key, compare ?? "");
      };
      for (;;) {
        const snap = await snapshot(stack);
        const lines = renderTable(snap, names, {
          pool: POOL_NAME,
          elapsedSeconds: (Date.now() - since) / 1000,
        });
        if (tty) {
          screen.draw(lines);
        } else {
          once("channel", channelLine(snap.pool));
          once("progress", lines.at(-1)!, lines.at(-1)!.replace(/^\[[^\]]*\] /, ""));
        }
        if (done(snap)) return;
        if (Date.now() - since > 600_000) throw new Error("rollout did not finish in 10 minutes");
        if (stack.tracker.violations.length) {
          throw new Error(`invariant violated: ${stack.tracker.violations.join("; ")}`);
        }
        await new Promise((r) => setTimeout(r, tty ? 250 : 500));
      }
    };
    await follow(
      started,
      (snap) => converged(snap, stack.images.v2.digest, options.nodes),
      imageNames(stack, options),
    );
    const duration = (Date.now() - started) / 1000;
    const writesAfter = await stack.apiWrites();
    // The supervisor's readiness flips of rebooting machines are node writes too, but not ours.
    const harnessNodeWrites = stack.fleet.nodeWrites - nodeWritesBefore;
    writesAfter.byResource.nodes = (writesAfter.byResource.nodes ?? 0) - harnessNodeWrites;
    const writes = writesAfter.total - harnessNodeWrites - writesBefore.total;
    const final = await snapshot(stack);
    const problems = [
      ...stack.tracker.violations,
      ...stack.tracker.checkFinal(final.nodes, final.bootcNodes),
    ];
    const median = (values: number[]) =>
      values.length ? [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] : undefined;
    const handoff = median(stack.tracker.handoffDelays());
    const cycles = stack.tracker.intervals.filter((i) => i.end !== undefined && i.start >= started)
      .map((i) => i.end! - i.start);
    const cycle = median(cycles) ?? 0;
    const staging = (firstSlotAt(stack, started) ?? started) - started;
    const ideal = Math.ceil(options.nodes / slots) * cycle + staging;
    const rss = peakRss(stack);
    out(
      `\nRollout to ${options.channel ? `${CHANNEL.v2} (v2)` : "v2"} finished in ${
        duration.toFixed(1)
      }s.\n`,
    );
    out(`  reboots:                     ${stack.fleet.rebootCount - rebootsBefore}\n`);
    out(`  most nodes unavailable:      ${stack.tracker.maxDisrupted} (maxUnavailable ${slots})\n`);
    out(
      `  ideal:                       ${
        (ideal / 1000).toFixed(1)
      }s = ceil(${options.nodes}/${slots})` +
        ` × ${(cycle / 1000).toFixed(1)}s per-node cycle (median) + ${
          (staging / 1000).toFixed(1)
        }s until the first slot\n`,
    );
    out(`  slot freed → next cordon:    median ${handoff ?? "-"} ms\n`);
    out(
      `  peak RSS:                    controller ${rss.controller} MiB, daemon ${rss.daemon} MiB (max)\n`,
    );
    // By resource, events apart: the target is ≤ 12 writes per node without them.
    out(
      `  API writes:                  ${writes} in all; ${
        formatBreakdown(writeBreakdown(writesBefore, writesAfter), options.nodes)
      }\n`,
    );
    out(`  invariants:                  ${problems.length ? problems.join("; ") : "all held"}\n`);
    if (problems.length) throw new Error("invariants violated");
    if (options.channel) {
      const ch = (await snapshot(stack)).pool?.status?.channel;
      out(
        `  channel:                     ${ch?.repository} ${CHANNEL.constraint}: running ` +
          `${ch?.currentVersion}, ` +
          `newest ${ch?.newestVersion}; next check ${ch?.nextCheckTime}` +
          (ch?.message ? ` (${ch.message})` : "") + "\n",
      );
    }
    if (options.badImage) await badImageAct(stack, options, out, follow);
    if (options.keep) {
      out(`\nLeft running. Explore with:\n  export KUBECONFIG=${stack.cp.kubeconfigPath}\n`);
      out(`  ${stack.cp.binDir}/kubectl get bootcnodepools,bootcnodes -o wide\n`);
      // The kubectl plugin sits in dist/ (ensureBuild's output); a launcher build runs it with $DENO.
      const dist = new URL("../../dist", import.meta.url).pathname;
      out(`  export PATH=${dist}:${stack.cp.binDir}:$PATH DENO=${Deno.execPath()}\n`);
      out(`  kubectl bootc status --watch   # then: kubectl bootc why NODE\nCtrl-C stops it.\n`);
      await new Promise<void>((resolve) => Deno.addSignalListener("SIGINT", () => resolve()));
    }
    failed = false;
  } finally {
    out("Tearing down…\n");
    await stack.stop({ keepLogs: options.keep || failed });
    if (failed) out(`Logs kept in ${stack.logDir}\n`);
  }
}

/** The `--bad-image` act: a bad image under :stable, caught by the canary, rolled back. */
async function badImageAct(
  stack: Stack,
  options: DemoOptions,
  out: (text: string) => void,
  follow: (
    since: number,
    done: (snap: Snapshot) => boolean,
    names: ImageNames,
  ) => Promise<void>,
): Promise<void> {
  const pushed = await stack.registry.pushImage({
    repository: "bootc/os",
    tag: "v3-bad",
    version: "3.0-bad",
    labels: { "dev.bootc.sim.bad-boot": "unit-fails:app.service" },
  });
  const names = imageNames(stack, options, pushed.digest);
  out(
    `\n${options.channel ? `Publishing ${CHANNEL.bad}` : "Moving tag :stable to v3"} (${
      short(pushed.digest)
    }), an image whose app.service fails on ` +
      `boot. The canary (1 node) goes first; onFailure: RollbackPool…\n`,
  );
  const rebootsBefore = stack.fleet.rebootCount;
  // A channel pool sees it as version 1.0.2; a tag pool as the new :stable.
  await stack.registry.tagExisting(
    "bootc/os",
    "v3-bad",
    options.channel ? CHANNEL.bad : "stable",
  );
  const started = Date.now();
  await follow(
    started,
    (snap) =>
      snap.pool?.status?.rollbackHold !== undefined &&
      settledOn(snap, stack.images.v2.digest, options.nodes),
    names,
  );
  const pool = (await snapshot(stack)).pool;
  const degraded = findCondition(pool?.status?.conditions, "Degraded");
  out(
    `\nCaught and rolled back in ${((Date.now() - started) / 1000).toFixed(1)}s: ` +
      `${stack.fleet.rebootCount - rebootsBefore} reboots (the canary into v3 and back).\n`,
  );
  out(`  pool Degraded/${degraded?.reason}: ${degraded?.message}\n`);
  out(
    `  failed digests (never chosen again automatically): ${
      (pool?.status?.failedDigests ?? []).map(short).join(", ")
    }\n`,
  );
  out("  history:\n");
  for (const r of pool?.status?.history ?? []) {
    out(
      `    ${String(r.revision).padEnd(3)} ${r.outcome.padEnd(11)} ${
        imageName(names, r.digest).padEnd(5)
      } ${r.startedAt} → ${r.endedAt ?? "…"}${r.message ? `  ${r.message.slice(0, 90)}` : ""}\n`,
    );
  }
  const problems = stack.tracker.violations;
  out(`  invariants:                  ${problems.length ? problems.join("; ") : "all held"}\n`);
  if (problems.length) throw new Error("invariants violated");
  const hint = clearRolledBackHint({
    pool: POOL_NAME,
    channel: options.channel,
    failed: imageName(names, pushed.digest),
  });
  out(`\n${hint.join("\n")}\n`);
}

if (import.meta.main) {
  try {
    await runDemo(parseOptions(Deno.args));
  } catch (error) {
    console.error(`demo failed: ${error instanceof Error ? error.message : error}`);
    Deno.exit(1);
  }
}
