/**
 * End-to-end approval gate (issue 26 part 3) with the real controller, daemons
 * and the real `kubectl bootc` plugin; one stack, one 2-node pool per scenario:
 *
 * - `mode: Annotation`: the nodes stage, the pool says AwaitingApproval naming
 *   what to set, and nothing is cordoned, drained or rebooted, nor reported
 *   Stalled, past `progressTimeoutSeconds` (waiting for a person is no stall);
 *   a garbled annotation is named in the message and an event; `kubectl bootc
 *   approve --revision` with another revision is refused; `approve` completes
 *   the rollout.
 * - `mode: Webhook` refusing (4xx): ApprovalRefused with the refuser's message
 *   and a Warning event; nothing reboots and the webhook is not asked again,
 *   not even by a restarted controller; a person's `approve` overrules it.
 * - `mode: Webhook` failing (5xx) then approving: the wait names the failed
 *   attempt; the retry approves and the rollout completes.
 * - `mode: Webhook` down (every attempt fails): past `progressTimeoutSeconds`
 *   the pool is Degraded (ApprovalWebhookFailing) naming the endpoint, the error
 *   and how to approve by hand, with a Warning event; a restarted controller
 *   keeps it without a flap (the streak is in the status); a person approves.
 * - `scope: Node`: each node is asked for by name, once; a refused node never
 *   takes a slot while the approved one is updated.
 *
 * A watcher checks throughout each wait that no node of the pool is cordoned,
 * holds a slot record, is asked to boot, reboots or is Stalled.
 */
import assert from "node:assert/strict";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import { type BootcNodePool, findCondition, isDisrupted } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { ensureBuild } from "../../tools/build.ts";
import { type ReceivedCall, startHookReceiver } from "../harness/hook_receiver.ts";
import { ProblemWatch } from "../harness/problem_watch.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  idleReason,
  nodesByName,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";

/** Short: a staged node wrongly watched by the liveness rule would stall within the test. */
const PROGRESS_TIMEOUT_SECONDS = 10;
const LONG_MS = 240_000;
const decoder = new TextDecoder();

/** Watches a waiting pool: nothing of it may be cordoned, drained, rebooted or Stalled. */
function nothingMoves(stack: Stack, pool: string, v1: string): ProblemWatch {
  return new ProblemWatch({
    check: async (note) => {
      const [nodes, bns] = await Promise.all([nodesByName(stack), poolNodes(stack, pool)]);
      for (const bn of bns) {
        const name = bn.metadata.name ?? "";
        const node = nodes.get(name);
        if (node && isDisrupted(node)) note(`${name} carries the disruption record`);
        if (node?.spec?.unschedulable) note(`${name} was cordoned`);
        if (bn.spec.desiredImageState === "Booted") note(`${name} was asked for Booted`);
        const booted = bn.status?.booted?.imageDigest;
        if (booted && booted !== v1) note(`${name} rebooted into ${booted}`);
        const stalled = findCondition(bn.status?.conditions, "Stalled");
        if (stalled?.status === "True") note(`${name} Stalled: ${stalled.message}`);
      }
    },
  }).start();
}

/** The pool's events with `reason`, by message. */
async function poolEvents(stack: Stack, pool: string, reason: string): Promise<CoreEvent[]> {
  const list = await stack.cp.client.resource<CoreEvent>(Resources.events, "default").list({
    fieldSelector: `involvedObject.name=${pool},reason=${reason}`,
  });
  return list.items;
}

/** The pool's UpToDate condition. */
function upToDate(p: BootcNodePool) {
  return findCondition(p.status?.conditions, "UpToDate");
}

/** Waits until the pool's UpToDate reason is `reason` and its message matches `message`. */
async function waitWait(
  stack: Stack,
  pool: string,
  reason: string,
  message: RegExp,
): Promise<BootcNodePool> {
  return await waitPool(
    stack,
    pool,
    async () => {
      const p = await getPool(stack, pool);
      const c = upToDate(p);
      return c?.reason === reason && message.test(c.message) && p.status?.state === reason
        ? p
        : undefined;
    },
    `pool ${pool} did not wait on ${reason} (${message})`,
    LONG_MS,
  );
}

/** Waits until every node of the pool staged the target (they stage while waiting). */
async function waitStaged(stack: Stack, pool: string): Promise<void> {
  await waitNodes(
    stack,
    pool,
    (bns) => bns.length === 2 && bns.every((bn) => idleReason(bn) === "Staged"),
    `the nodes of ${pool} did not stage while waiting for approval`,
    LONG_MS,
  );
}

Deno.test("approval gate: annotation, webhook refusal, retries, per-node scope", async (t) => {
  const pools = ["ap-ann", "ap-ref", "ap-retry", "ap-down", "ap-node"];
  const [executables, stack] = await Promise.all([
    ensureBuild(),
    startStack({ limits: Object.fromEntries(pools.map((p) => [p, { maxUnavailable: 1 }])) }),
  ]);
  const receiver = startHookReceiver({
    // An ask is the same call again when it is for the same pool, revision and node.
    attemptKey: (c) => {
      const b = c.json as { pool?: string; revision?: number; node?: string } | undefined;
      return `${b?.pool}/${b?.revision}/${b?.node ?? ""}`;
    },
  });
  const { v1, v2, repository } = stack.images;
  const target = `${repository}@${v2.digest}`;
  const pluginPath = executables.plugin.at(-1)!;
  const kubectlBootc = async (args: string[]) => {
    const out = await new Deno.Command("kubectl", {
      args: ["bootc", ...args, "--kubeconfig", stack.cp.kubeconfigPath],
      env: {
        PATH: `${pluginPath.slice(0, pluginPath.lastIndexOf("/"))}:${stack.cp.binDir}:${
          Deno.env.get("PATH")
        }`,
        DENO: Deno.execPath(),
        HOME: Deno.env.get("HOME") ?? "/tmp",
        NO_COLOR: "1",
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
  };
  const calls = (pool: string) =>
    receiver.received((c) => (c.json as { pool?: string } | undefined)?.pool === pool);
  const rollout = (approval: Record<string, unknown>) => ({
    maxUnavailable: 1,
    progressTimeoutSeconds: PROGRESS_TIMEOUT_SECONDS,
    approval,
  });
  const webhook = (path: string) => ({ url: `${receiver.url}${path}`, timeoutSeconds: 5 });
  receiver.setResponder((call: ReceivedCall) => {
    const b = call.json as { pool?: string; node?: string };
    if (call.path === "/refuse") {
      return { status: 403, body: { message: "CHG-1234 rejected: change freeze" } };
    }
    if (call.path === "/flaky") {
      // The approval comes late, so the test sees it arrive before anything may move.
      return call.attempt <= 2
        ? { status: 503, body: "maintenance" }
        : { status: 200, delayMs: 2_000 };
    }
    if (call.path === "/per-node") {
      return b.node === "ap-node-2"
        ? { status: 409, body: { message: `${b.node} hosts the primary database` } }
        : { status: 200, body: { message: "ok" } };
    }
    return { status: 500 };
  });

  try {
    await step(t, "Annotation: stages, waits named, nothing moves, approve completes", async () => {
      const nodes = await addNodes(stack, "ap-ann", 2);
      await stack.createPool(
        "ap-ann",
        poolSpec("ap-ann", target, rollout({ mode: "Annotation" })),
      );
      const watch = nothingMoves(stack, "ap-ann", v1.digest);
      await waitStaged(stack, "ap-ann");
      const waiting = await waitWait(
        stack,
        "ap-ann",
        "AwaitingApproval",
        /revision 1: set bootc\.dev\/approve-revision=1 \(kubectl bootc approve ap-ann\)/,
      );
      assert.deepEqual(waiting.status?.approval, { revision: 1, image: target });
      // A garbled value is said, in the message and in a Warning event.
      const pools = stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
      await pools.patch("ap-ann", {
        metadata: { annotations: { "bootc.dev/approve-revision": "one" } },
      }, { type: "merge" });
      await waitWait(stack, "ap-ann", "AwaitingApproval", /"one" is not a revision number/);
      await waitPool(stack, "ap-ann", async () => {
        const e = await poolEvents(stack, "ap-ann", "ApprovalAnnotationIgnored");
        return e.some((x) => x.type === "Warning" && /"one"/.test(x.message ?? ""));
      }, "no ApprovalAnnotationIgnored Warning event");
      // Waiting for a person is no stall: well past progressTimeoutSeconds, nothing moved.
      await new Promise((r) => setTimeout(r, (PROGRESS_TIMEOUT_SECONDS + 5) * 1000));
      assert.deepEqual(await watch.stop(), []);
      assert.equal((await getPool(stack, "ap-ann")).status?.state, "AwaitingApproval");

      const stale = await kubectlBootc(["approve", "ap-ann", "--revision", "2"]);
      assert.equal(stale.code, 1, stale.stdout);
      assert.match(
        stale.stderr,
        /cannot approve revision 2: pool ap-ann's current revision is 1 .*--revision 1/,
      );
      const ok = await kubectlBootc(["approve", "ap-ann"]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /pool ap-ann: revision 1 \(.*\) approved/);
      const done = await waitConverged(stack, "ap-ann", v2.digest, 2, LONG_MS);
      assert.equal(done.status?.approval?.verdict, "Approved");
      await assertInvariants(stack, nodes);
    });

    await step(t, "Webhook refusing: ApprovalRefused shown, nothing reboots", async () => {
      const nodes = await addNodes(stack, "ap-ref", 2);
      await stack.createPool(
        "ap-ref",
        poolSpec("ap-ref", target, rollout({ mode: "Webhook", webhook: webhook("/refuse") })),
      );
      const watch = nothingMoves(stack, "ap-ref", v1.digest);
      await waitWait(
        stack,
        "ap-ref",
        "ApprovalRefused",
        new RegExp(
          `revision 1 refused by ${receiver.url}/refuse: CHG-1234 rejected: change freeze`,
        ),
      );
      await waitPool(stack, "ap-ref", async () => {
        const e = await poolEvents(stack, "ap-ref", "ApprovalRefused");
        return e.some((x) => x.type === "Warning" && /CHG-1234/.test(x.message ?? ""));
      }, "no ApprovalRefused Warning event");
      await waitStaged(stack, "ap-ref");
      assert.equal((await getPool(stack, "ap-ref")).status?.approval?.verdict, "Refused");
      assert.deepEqual(await watch.stop(), []);
      // Asked once: a refusal is recorded, never asked again, also by a restarted controller.
      assert.equal(calls("ap-ref").length, 1);
      await stack.killController();
      await stack.startController();
      // Only the new controller can record this value (written after the old one died).
      await stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools).patch("ap-ref", {
        metadata: { annotations: { "bootc.dev/approve-revision": "x" } },
      }, { type: "merge" });
      await waitPool(
        stack,
        "ap-ref",
        async () => (await getPool(stack, "ap-ref")).status?.approval?.annotation === "x",
        "the restarted controller did not plan ap-ref",
        LONG_MS,
      );
      assert.equal((await getPool(stack, "ap-ref")).status?.state, "ApprovalRefused");
      assert.equal(calls("ap-ref").length, 1);
      // A person overrules the refusal.
      const ok = await kubectlBootc(["approve", "ap-ref", "--revision", "1"]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /overrules the webhook's refusal \(CHG-1234/);
      await waitConverged(stack, "ap-ref", v2.digest, 2, LONG_MS);
      assert.equal(calls("ap-ref").length, 1);
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "Webhook failing then approving: the wait names the attempt; completes",
      async () => {
        const nodes = await addNodes(stack, "ap-retry", 2);
        await stack.createPool(
          "ap-retry",
          poolSpec("ap-retry", target, rollout({ mode: "Webhook", webhook: webhook("/flaky") })),
        );
        const watch = nothingMoves(stack, "ap-retry", v1.digest);
        await waitWait(
          stack,
          "ap-retry",
          "AwaitingApproval",
          new RegExp(
            `revision 1: webhook ${receiver.url}/flaky pending: attempt [12] failed: HTTP 503: maintenance`,
          ),
        );
        // Until the third attempt (answered 2 s after it arrives) approves, nothing moves.
        await receiver.waitFor((c) => c.path === "/flaky", {
          until: (cs) => cs.length >= 3,
          timeoutMs: LONG_MS,
        });
        assert.deepEqual(await watch.stop(), []);
        const p = await waitConverged(stack, "ap-retry", v2.digest, 2, LONG_MS);
        assert.equal(p.status?.approval?.verdict, "Approved");
        assert.equal(calls("ap-retry").length, 3);
        await assertInvariants(stack, nodes);
      },
    );

    await step(
      t,
      "Webhook down: Degraded past progressTimeoutSeconds, named; a person approves",
      async () => {
        const nodes = await addNodes(stack, "ap-down", 2);
        await stack.createPool(
          "ap-down",
          poolSpec("ap-down", target, rollout({ mode: "Webhook", webhook: webhook("/down") })),
        );
        const watch = nothingMoves(stack, "ap-down", v1.digest);
        // Every attempt fails (HTTP 500): past the pool's 10 s bound the wait is a problem.
        await waitPool(
          stack,
          "ap-down",
          async () => {
            const d = findCondition(
              (await getPool(stack, "ap-down")).status?.conditions,
              "Degraded",
            );
            return d?.status === "True" && d.reason === "ApprovalWebhookFailing" &&
              d.message.includes(`approval webhook ${receiver.url}/down has failed since`) &&
              /HTTP 500.*set bootc\.dev\/approve-revision=1/.test(d.message);
          },
          "no Degraded ApprovalWebhookFailing naming the endpoint",
          LONG_MS,
        );
        assert.equal((await getPool(stack, "ap-down")).status?.state, "ApprovalWebhookFailing");
        await waitPool(stack, "ap-down", async () => {
          const e = await poolEvents(stack, "ap-down", "ApprovalWebhookFailing");
          return e.some((x) => x.type === "Warning");
        }, "no ApprovalWebhookFailing Warning event");
        // A restarted controller knows the streak from the status: the condition never flaps.
        const steady = new ProblemWatch({
          check: async (note) => {
            const d = findCondition(
              (await getPool(stack, "ap-down")).status?.conditions,
              "Degraded",
            );
            if (d?.reason !== "ApprovalWebhookFailing") note(`Degraded=${d?.status}/${d?.reason}`);
          },
        }).start();
        await stack.killController();
        await stack.startController();
        const asked = receiver.received((c) => c.path === "/down").length;
        // The new leader asks again (its poller starts afresh) and still reports the failure.
        await receiver.waitFor((c) => c.path === "/down", {
          until: (cs) => cs.length > asked,
          timeoutMs: LONG_MS,
        });
        assert.deepEqual(await steady.stop(), []);
        assert.deepEqual(await watch.stop(), []);
        const ok = await kubectlBootc(["approve", "ap-down", "--revision", "1"]);
        assert.equal(ok.code, 0, ok.stderr);
        const p = await waitConverged(stack, "ap-down", v2.digest, 2, LONG_MS);
        assert.notEqual(findCondition(p.status?.conditions, "Degraded")?.status, "True");
        await assertInvariants(stack, nodes);
      },
    );

    await step(
      t,
      "scope Node: each node asked once; the refused one never gets a slot",
      async () => {
        const nodes = await addNodes(stack, "ap-node", 2);
        await stack.createPool(
          "ap-node",
          poolSpec(
            "ap-node",
            target,
            rollout({ mode: "Webhook", scope: "Node", webhook: webhook("/per-node") }),
          ),
        );
        const watch = nothingMoves(stack, "ap-node", v1.digest);
        await waitWait(
          stack,
          "ap-node",
          "ApprovalRefused",
          /refused ap-node-2 \(ap-node-2 hosts the primary database\)/,
        );
        await waitNodes(
          stack,
          "ap-node",
          (bns) =>
            bns.some((bn) =>
              bn.metadata.name === "ap-node-1" && bn.status?.booted?.imageDigest === v2.digest
            ),
          "ap-node-1 (approved) was not updated",
          LONG_MS,
        );
        const p = await getPool(stack, "ap-node");
        assert.deepEqual(
          p.status?.approval?.nodes?.map((n) => [n.node, n.verdict]).sort(),
          [["ap-node-1", "Approved"], ["ap-node-2", "Refused"]],
        );
        const asked = calls("ap-node").map((c) => {
          const b = c.json as { node?: string; scope?: string; revision?: number };
          return `${b.scope}/${b.revision}/${b.node}`;
        }).sort();
        assert.deepEqual(asked, ["Node/1/ap-node-1", "Node/1/ap-node-2"]);
        // ap-node-2 (still on v1) is left alone: watched over a few reconciles.
        await new Promise((r) => setTimeout(r, 5_000));
        const problems = (await watch.stop()).filter((x) => x.startsWith("ap-node-2"));
        assert.deepEqual(problems, []);
        const ok = await kubectlBootc(["approve", "ap-node"]);
        assert.equal(ok.code, 0, ok.stderr);
        await waitConverged(stack, "ap-node", v2.digest, 2, LONG_MS);
        assert.equal(calls("ap-node").length, 2);
        await assertInvariants(stack, nodes);
      },
    );
  } finally {
    await receiver.close();
    await stopStack(stack);
  }
});
