/**
 * Shared steps of the end-to-end scenarios: fleets on a stack, pool edits,
 * convergence waits and the invariant verdict.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  holdsRebootSlot,
  isDisrupted,
  LABEL_POOL,
} from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import type { Stack } from "../harness/stack.ts";
import { waitFor, type WaitForOptions } from "../harness/wait.ts";
import { ensureBuild } from "../../tools/build.ts";

/** Adds `count` nodes named `<prefix>-<i>` labelled `pool=<prefix>`, booted into `image`. */
export async function addNodes(
  stack: Stack,
  prefix: string,
  count: number,
  options: { image?: string; softRebootCapable?: boolean; unschedulable?: string[] } = {},
): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i + 1}`);
  await Promise.all(names.map((name) =>
    stack.fleet.addNode(name, {
      image: options.image ?? `${stack.images.repository}@${stack.images.v1.digest}`,
      labels: { pool: prefix },
      softRebootCapable: options.softRebootCapable,
      unschedulable: options.unschedulable?.includes(name),
    })
  ));
  return names;
}

/** Reads a pool. */
export function getPool(stack: Stack, name: string): Promise<BootcNodePool> {
  return stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools).get(name);
}

/** Merge-patches a pool's spec. */
export async function patchPoolSpec(
  stack: Stack,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools).patch(name, { spec }, {
    type: "merge",
  });
}

/** The BootcNodes of a pool. */
export async function poolNodes(stack: Stack, pool: string): Promise<BootcNode[]> {
  const list = await stack.cp.client.resource<BootcNode>(Resources.bootcNodes).list({
    labelSelector: `${LABEL_POOL}=${pool}`,
  });
  return list.items;
}

/** Every Node by name (the operator's disruption record lives on the Node). */
export async function nodesByName(stack: Stack): Promise<Map<string, INode>> {
  const list = await stack.cp.client.resource<INode>(Resources.nodes).list();
  return new Map(list.items.map((n) => [n.metadata?.name ?? "", n]));
}

/** Short text of the pool and its nodes, for failure messages. */
export async function describePool(stack: Stack, pool: string): Promise<string> {
  const p = await getPool(stack, pool).catch(() => undefined);
  const nodes = await poolNodes(stack, pool).catch(() => []);
  const nodeObjects = await nodesByName(stack).catch(() => new Map<string, INode>());
  const conditions = (p?.status?.conditions ?? []).map((c) =>
    `${c.type}=${c.status}/${c.reason}: ${c.message}`
  ).join("; ");
  const rows = await Promise.all(nodes.map(async (bn) => {
    const idle = findCondition(bn.status?.conditions, "Idle");
    const deg = findCondition(bn.status?.conditions, "Degraded");
    return `${bn.metadata.name}: booted=${bn.status?.booted?.imageDigest?.slice(7, 19)} ` +
      `desired=${bn.spec.desiredImage.split("@")[1]?.slice(7, 19)} ${bn.spec.desiredImageState} ` +
      `idle=${idle?.reason} degraded=${deg?.status}${
        deg?.status === "True" ? `(${deg.message})` : ""
      }` +
      `${holdsRebootSlot(nodeObjects.get(bn.metadata.name ?? "") ?? {}) ? " [slot]" : ""}` +
      await machineState(stack, bn.metadata.name ?? "");
  }));
  return `pool ${pool}: target=${p?.status?.targetDigest?.slice(7, 19)} ${conditions}\n  ` +
    rows.join("\n  ") + `\n  fleet errors: ${stack.fleet.errors.join("; ") || "none"}`;
}

/** What the simulated machine is doing, so a node stuck in a report says whether it rebooted. */
async function machineState(stack: Stack, name: string): Promise<string> {
  const member = stack.fleet.nodes.get(name);
  if (!member) return " machine=none";
  const requested = await member.host.rebootRequested().catch(() => undefined);
  const applies = await member.host.pendingApplies().then((a) => a.length, () => undefined);
  const log = await Deno.readTextFile(`${stack.logDir}/daemon-${name}.log`).catch(() => "");
  const lastLines = log.trimEnd().split("\n").slice(-DAEMON_LOG_LINES)
    .map((line) => `\n      ${line.slice(0, 240)}`).join("");
  return ` machine=${member.rebooting ? "down" : "up"} daemon=${
    member.daemon?.running === true ? "running" : "stopped"
  } reboots=${member.reboots} rebootRequested=${requested} pendingApplies=${applies}${lastLines}`;
}

/** Last lines of each daemon's log in a failure message. */
const DAEMON_LOG_LINES = 4;

/**
 * Waits until the pool targets `digest`, every one of its `count` nodes boots
 * it, UpToDate is True (or, for a pool its failure record holds on a good image,
 * False naming the hold: RolledBack, CircuitOpen, ImageFailedBefore, with every
 * node updated), and no Node of it carries any of the disruption record.
 */
export async function waitConverged(
  stack: Stack,
  pool: string,
  digest: string,
  count: number,
  timeoutMs = 120_000,
): Promise<BootcNodePool> {
  // Each node that reaches the digest restarts the clock: under load a rollout may be slow,
  // and only one that stands still for `timeoutMs` (or runs past three times it) fails.
  let best = -1;
  let movedAt = performance.now();
  return await waitPool(
    stack,
    pool,
    async () => {
      const p = await getPool(stack, pool);
      const nodes = await poolNodes(stack, pool);
      const onDigest = nodes.filter((bn) => bn.status?.booted?.imageDigest === digest).length;
      if (onDigest > best) [best, movedAt] = [onDigest, performance.now()];
      const nodeObjects = await nodesByName(stack);
      const upToDate = findCondition(p.status?.conditions, "UpToDate");
      const settled = upToDate?.status === "True" ||
        (HELD_BY_RECORD.includes(upToDate?.reason ?? "") && p.status?.updatedCount === count);
      const ok = p.status?.targetDigest === digest && settled &&
        nodes.length === count &&
        nodes.every((bn) =>
          bn.status?.booted?.imageDigest === digest &&
          !isDisrupted(nodeObjects.get(bn.metadata.name ?? "") ?? {})
        );
      return ok ? p : undefined;
    },
    `pool ${pool} did not converge on ${digest.slice(7, 19)}`,
    timeoutMs,
    { progressAt: () => movedAt, maxMs: 3 * timeoutMs },
  );
}

/** UpToDate reasons of a pool its failure record holds on a good image (the spec means another). */
const HELD_BY_RECORD = ["RolledBack", "CircuitOpen", "ImageFailedBefore"];

/** {@linkcode waitFor} whose failure message ends with the pool's state. */
export async function waitPool<T>(
  stack: Stack,
  pool: string,
  probe: () => Promise<T | undefined | false>,
  message: string,
  timeoutMs = 60_000,
  progress: Pick<WaitForOptions, "progressAt" | "maxMs"> = {},
): Promise<T> {
  try {
    return await waitFor(probe, { timeoutMs, message, intervalMs: 200, ...progress });
  } catch (error) {
    const detail = await describePool(stack, pool);
    throw new Error(`${error instanceof Error ? error.message : error}\n${detail}`, {
      cause: error,
    });
  }
}

/** Asserts no invariant was violated and the end state is clean for `nodes`. */
export async function assertInvariants(stack: Stack, nodes: string[]): Promise<void> {
  const nodeList = await stack.cp.client.resource<INode>(Resources.nodes).list();
  const bootcNodes = await stack.cp.client.resource<BootcNode>(Resources.bootcNodes).list();
  const mine = new Set(nodes);
  const problems = [
    ...stack.tracker.violations,
    ...stack.tracker.checkFinal(
      nodeList.items.filter((n) => mine.has(n.metadata?.name ?? "")),
      bootcNodes.items.filter((bn) => mine.has(bn.metadata.name ?? "")),
    ),
  ];
  assert.deepEqual(problems, [], problems.join("\n"));
  assert.deepEqual(stack.fleet.errors, []);
}

/** Pool spec for nodes labelled `pool=<name>`. */
export function poolSpec(
  name: string,
  ref: string,
  rollout: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Partial<BootcNodePool["spec"]> & { image: { ref: string } } {
  return {
    nodeSelector: { matchLabels: { pool: name } },
    image: { ref },
    rollout: rollout as BootcNodePool["spec"]["rollout"],
    ...extra,
  };
}

/** Waits until `predicate` holds for the pool's BootcNodes. */
export async function waitNodes(
  stack: Stack,
  pool: string,
  predicate: (nodes: BootcNode[]) => boolean,
  message: string,
  timeoutMs = 60_000,
): Promise<BootcNode[]> {
  return await waitPool(
    stack,
    pool,
    async () => {
      const nodes = await poolNodes(stack, pool);
      return predicate(nodes) ? nodes : undefined;
    },
    message,
    timeoutMs,
  );
}

/** True when the BootcNode's Idle condition has `reason`. */
export function idleReason(bn: BootcNode): string | undefined {
  return findCondition(bn.status?.conditions, "Idle")?.reason;
}

let stepFailed = false;

/** Runs a test step and remembers whether it failed (a failed step does not throw). */
export async function step(
  t: Deno.TestContext,
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
): Promise<boolean> {
  const ok = await t.step(name, fn);
  if (!ok) stepFailed = true;
  return ok;
}

/** Stops the stack, keeping (and naming) its logs when any step failed. */
export async function stopStack(stack: Stack): Promise<void> {
  if (stepFailed) console.error(`a step failed: stack logs kept in ${stack.logDir}`);
  await stack.stop({ keepLogs: stepFailed });
}

/**
 * Runs the built `kubectl bootc` against the stack, without colour; asserts that it
 * exited with one of `codes` and returns what it printed.
 */
export async function kubectlBootc(
  stack: Stack,
  args: string[],
  codes: readonly number[] = [0],
): Promise<string> {
  const [command, ...prefix] = (await ensureBuild()).plugin;
  const out = await new Deno.Command(command, {
    args: [...prefix, "--kubeconfig", stack.cp.kubeconfigPath, "--no-color", ...args],
    env: { DENO: Deno.execPath(), NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  const stdout = decoder.decode(out.stdout);
  assert.ok(
    codes.includes(out.code),
    `kubectl bootc ${args.join(" ")}: exit ${out.code}\n${stdout}${decoder.decode(out.stderr)}`,
  );
  return stdout;
}
