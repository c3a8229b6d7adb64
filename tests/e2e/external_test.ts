/**
 * End-to-end external orchestrator mode (issue 26 part 4) on the real control
 * plane, with the real controller and daemons: a pool with `rollout.strategy:
 * External` gets a new image; the test plays the orchestrator from outside
 * (`kubectl drain`, `bootc upgrade --from-downloaded --apply` on the simulated
 * host, `kubectl uncordon`) and checks that the operator staged and reported
 * (counts, BootcNode status, the pool's wait named) and stayed out of the way
 * throughout: no slot record, no cordon change, no `Booted`, no daemon apply
 * (the tracker judges every apply: only the two the test announced are the
 * orchestrator's), no Stalled or Degraded even while a node is held NotReady
 * past `progressTimeoutSeconds`. Then the strategy goes back to RollingUpdate
 * and the operator rolls the last node itself, which the orchestrator had left
 * cordoned: it stays cordoned (the was-cordoned rule), with every invariant.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  isDisrupted,
} from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { ProblemWatch } from "../harness/problem_watch.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  idleReason,
  nodesByName,
  patchPoolSpec,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";
import { slotHolders } from "./slots.ts";

const POOL = "ext";
/** Short, so that a staged node wrongly watched by the liveness rule stalls within the test. */
const PROGRESS_TIMEOUT_SECONDS = 15;

/**
 * Watches the pool's nodes while the orchestrator owns them: the operator must
 * never write its disruption record, change a cordon, ask for `Booted`, or
 * report a node Stalled or Degraded. `cordon` is what the orchestrator allows
 * (both values while its own cordon or uncordon is under way).
 */
class OutOfTheWay {
  readonly cordon = new Map<string, Set<boolean>>();
  #watch: ProblemWatch;

  constructor(private stack: Stack, private nodes: string[]) {
    for (const n of nodes) this.cordon.set(n, new Set([false]));
    this.#watch = new ProblemWatch({ check: (note) => this.#check(note) });
  }

  start(): void {
    this.#watch.start();
  }

  stop(): Promise<string[]> {
    return this.#watch.stop();
  }

  async #check(note: (problem: string) => void): Promise<void> {
    const [nodes, bns, pool] = await Promise.all([
      nodesByName(this.stack),
      poolNodes(this.stack, POOL),
      getPool(this.stack, POOL),
    ]);
    for (const name of this.nodes) {
      const node = nodes.get(name);
      if (!node) continue;
      if (isDisrupted(node)) {
        note(
          `${name} carries the operator's disruption record: ` +
            JSON.stringify(node.metadata?.annotations),
        );
      }
      const cordoned = node.spec?.unschedulable === true;
      if (!this.cordon.get(name)!.has(cordoned)) {
        note(`${name} unschedulable=${cordoned}, which the orchestrator did not set`);
      }
    }
    for (const bn of bns) {
      const name = bn.metadata.name;
      if (bn.spec.desiredImageState === "Booted") note(`${name} was asked for Booted`);
      for (const type of ["Stalled", "Degraded"]) {
        const c = findCondition(bn.status?.conditions, type);
        if (c?.status === "True") note(`${name} ${type}=True/${c.reason}: ${c.message}`);
      }
    }
    const degraded = findCondition(pool.status?.conditions, "Degraded");
    if (degraded?.status === "True") {
      note(`pool Degraded=True/${degraded.reason}: ${degraded.message}`);
    }
  }
}

/** The orchestrator's hands: cordon and drain, apply on the host, uncordon. */
class Orchestrator {
  constructor(private stack: Stack, private watch: OutOfTheWay) {}

  async kubectl(args: string[]): Promise<void> {
    const res = await this.stack.cp.kubectl(args);
    assert.equal(res.code, 0, `kubectl ${args.join(" ")}: ${res.stderr}`);
  }

  /** Cordons (and, with `drain`, evicts every pod: `kubectl drain`). */
  async cordon(node: string, drain: boolean): Promise<void> {
    const allowed = this.watch.cordon.get(node)!;
    allowed.add(true);
    await this.kubectl(
      drain
        ? [
          "drain",
          node,
          "--force",
          "--ignore-daemonsets",
          "--delete-emptydir-data",
          "--timeout=120s",
        ]
        : ["cordon", node],
    );
    allowed.delete(false);
  }

  async uncordon(node: string): Promise<void> {
    const allowed = this.watch.cordon.get(node)!;
    allowed.add(false);
    await this.kubectl(["uncordon", node]);
    allowed.delete(true);
  }

  /**
   * Runs `bootc upgrade --from-downloaded --apply` on the host (what the operator
   * staged), announced to the tracker as the orchestrator's; the machine reboots.
   */
  apply(node: string): Deno.ChildProcess {
    const host = this.stack.fleet.nodes.get(node)!.host;
    this.stack.tracker.expectExternalApply(node);
    const [program, ...args] = host.command();
    return new Deno.Command(program, {
      args: [...args, "upgrade", "--from-downloaded", "--apply"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  }
}

/**
 * Waits for the orchestrator's bootc process to end: the machine going down kills
 * it (it holds the sysroot lock until then, as bootc does); never left behind.
 */
async function reaped(child: Deno.ChildProcess): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), 30_000));
  const outcome = await Promise.race([child.status, late]);
  clearTimeout(timer);
  if (outcome === "late") {
    child.kill("SIGKILL");
    await child.status;
    assert.fail("the orchestrator's bootc apply outlived the reboot");
  }
}

/** The pool's UpToDate condition once `match` holds for it. */
async function upToDate(
  stack: Stack,
  match: (c: { status: string; reason: string; message: string }) => boolean,
  message: string,
): Promise<BootcNodePool> {
  return await waitPool(stack, POOL, async () => {
    const p = await getPool(stack, POOL);
    const c = findCondition(p.status?.conditions, "UpToDate");
    return c && match(c) ? p : undefined;
  }, message);
}

async function bootcNode(stack: Stack, name: string): Promise<BootcNode> {
  return await stack.cp.client.resource<BootcNode>(Resources.bootcNodes).get(name);
}

async function nodeReady(stack: Stack, name: string): Promise<boolean> {
  const node = await stack.cp.client.resource<INode>(Resources.nodes).get(name);
  return node.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
}

Deno.test("external orchestrator: the operator stages and reports, stays out of the way, takes back over", async (t) => {
  const stack = await startStack({ limits: { [POOL]: { maxUnavailable: 1 } } });
  const { v2, repository } = stack.images;
  const ref2 = `${repository}@${v2.digest}`;
  const nodes = await addNodes(stack, POOL, 3);
  const [first, second, third] = nodes;
  const watch = new OutOfTheWay(stack, nodes);
  const orchestrator = new Orchestrator(stack, watch);
  try {
    const staged = await step(
      t,
      "External: every node staged, none cordoned, the wait named",
      async () => {
        watch.start();
        await stack.createPool(
          POOL,
          poolSpec(POOL, ref2, {
            maxUnavailable: 1,
            strategy: "External",
            progressTimeoutSeconds: PROGRESS_TIMEOUT_SECONDS,
          }),
        );
        await waitNodes(
          stack,
          POOL,
          (bns) =>
            bns.length === 3 &&
            bns.every((bn) =>
              idleReason(bn) === "Staged" && bn.status?.staged?.imageDigest === v2.digest &&
              findCondition(bn.status?.conditions, "ImageStaged")?.status === "True"
            ),
          "all three staged v2",
          120_000,
        );
        const p = await upToDate(
          stack,
          (c) =>
            c.reason === "ExternalOrchestrator" &&
            /3 staged, waiting for the external orchestrator to reboot them/.test(c.message),
          "the pool names the wait on the orchestrator",
        );
        assert.equal(p.status?.state, "ExternalOrchestrator");
        assert.equal(p.status?.updatedCount ?? 0, 0);
        assert.deepEqual(p.status?.queue?.map((q) => q.waitingFor), [
          "ExternalOrchestrator",
          "ExternalOrchestrator",
          "ExternalOrchestrator",
        ]);
        assert.deepEqual(await slotHolders(stack, POOL), []);
      },
    );

    const played = staged &&
      await step(t, "the orchestrator updates two nodes; the operator reports", async () => {
        // First node: drain, apply, back, uncordon.
        await orchestrator.cordon(first, true);
        const apply1 = orchestrator.apply(first);
        await waitFor(async () => {
          const bn = await bootcNode(stack, first);
          return bn.status?.booted?.imageDigest === v2.digest && idleReason(bn) === "Idle" &&
            await nodeReady(stack, first);
        }, { timeoutMs: 120_000, message: `${first} back on v2`, intervalMs: 200 });
        await reaped(apply1);
        const bn1 = await bootcNode(stack, first);
        const rebooted = findCondition(bn1.status?.conditions, "Rebooted");
        assert.equal(`${rebooted?.status}/${rebooted?.reason}`, "True/RebootedExternally");
        assert.equal(findCondition(bn1.status?.conditions, "Degraded")?.status, "False");
        assert.equal(bn1.spec.desiredImageState, "Staged");
        await orchestrator.uncordon(first);
        // Both in one status: the first node may still be verifying when the other two are
        // reported staged.
        const one = await upToDate(
          stack,
          (c) =>
            /1\/3 updated/.test(c.message) &&
            /2 staged, waiting for the external orchestrator to reboot them/.test(c.message),
          "one updated, two staged",
        );
        assert.equal(one.status?.updatedCount, 1);

        // Second node: held down (NotReady, no daemon) past progressTimeoutSeconds: a wait on the
        // orchestrator, never a stall (the watch fails on any Stalled or Degraded).
        await orchestrator.cordon(second, true);
        const member = stack.fleet.nodes.get(second)!;
        member.holdDown = true;
        const apply2 = orchestrator.apply(second);
        await waitFor(async () => !(await nodeReady(stack, second)), {
          timeoutMs: 60_000,
          message: `${second} going down`,
          intervalMs: 100,
        });
        const downSince = Date.now();
        // A wait with a purpose: the liveness rule's bound and a margin must pass while down.
        await waitFor(
          () => Promise.resolve(Date.now() - downSince > (PROGRESS_TIMEOUT_SECONDS + 10) * 1000),
          { timeoutMs: 60_000, message: "time passing", intervalMs: 500 },
        );
        member.holdDown = false;
        await waitFor(async () => {
          const bn = await bootcNode(stack, second);
          return bn.status?.booted?.imageDigest === v2.digest && idleReason(bn) === "Idle" &&
            await nodeReady(stack, second);
        }, { timeoutMs: 120_000, message: `${second} back on v2`, intervalMs: 200 });
        await reaped(apply2);
        await orchestrator.uncordon(second);

        // The third: the orchestrator cordons it and leaves it so.
        stack.tracker.markPreCordoned(third);
        await orchestrator.cordon(third, false);
        const p = await upToDate(
          stack,
          (c) =>
            c.reason === "ExternalOrchestrator" &&
            /2\/3 updated/.test(c.message) &&
            /1 staged, waiting for the external orchestrator to reboot it\b/.test(c.message),
          "two updated, one staged",
        );
        assert.equal(p.status?.updatedCount, 2);
        // The third has waited staged far longer than progressTimeoutSeconds by now.
        const bn3 = await bootcNode(stack, third);
        const stagedAt = Date.parse(
          findCondition(bn3.status?.conditions, "Idle")?.lastTransitionTime ?? "",
        );
        assert.ok(Date.now() - stagedAt > PROGRESS_TIMEOUT_SECONDS * 1000, "staged long enough");
        assert.deepEqual(await watch.stop(), [], "the operator stayed out of the way");
        const applies = stack.tracker.applies.filter((a) => nodes.includes(a.node));
        assert.deepEqual(applies.map((a) => `${a.node}:${a.basis}`), [
          `${first}:external`,
          `${second}:external`,
        ]);
        assert.deepEqual(stack.tracker.violations, []);
      });

    if (played) {
      await step(t, "back to RollingUpdate: the operator rolls the last node itself", async () => {
        await patchPoolSpec(stack, POOL, { rollout: { strategy: "RollingUpdate" } });
        await waitConverged(stack, POOL, v2.digest, 3, 180_000);
        const all = await nodesByName(stack);
        assert.equal(all.get(third)?.spec?.unschedulable, true, "left cordoned as found");
        assert.equal(all.get(first)?.spec?.unschedulable ?? false, false);
        const mine = stack.tracker.applies.filter((a) => a.node === third);
        assert.equal(mine.length, 1);
        assert.notEqual(mine[0].basis, "external");
        assert.equal(mine[0].verdict.allowed, true);
        const p = await getPool(stack, POOL);
        assert.equal(p.status?.updatedCount, 3);
        assert.equal(findCondition(p.status?.conditions, "UpToDate")?.status, "True");
        await assertInvariants(stack, nodes);
      });
    }
  } finally {
    await watch.stop();
    await stopStack(stack);
  }
});
