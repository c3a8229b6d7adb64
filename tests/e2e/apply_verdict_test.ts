/**
 * The invariant checker's apply judgement end to end (issue 12): every
 * `bootc … --apply` is judged on the facts of the moment it was invoked, so the
 * controller changing them right afterwards is no violation, while an apply
 * nothing authorized still is one.
 */
import assert from "node:assert/strict";
import { type BootcNode } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { startBootc } from "../bootc_sim/testing.ts";
import { startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
} from "./scenario.ts";

Deno.test("apply verdicts: judged at invocation, not when the machine goes down", async (t) => {
  const stack = await startStack({ limits: { gate: { maxUnavailable: 1 } } });
  try {
    const { v1, v2, repository } = stack.images;
    const nodes = await addNodes(stack, "gate", 2, { image: `${repository}@${v1.digest}` });
    await stack.createPool(
      "gate",
      poolSpec("gate", `${repository}@${v1.digest}`, { maxUnavailable: 1 }),
    );
    await waitConverged(stack, "gate", v1.digest, 2);

    await step(t, "a new target landing right after an apply is no violation", async () => {
      const v3 = await stack.registry.pushImage({
        repository: "bootc/os",
        tag: "v3",
        version: "3.0",
      });
      const bootcNodes = stack.cp.client.resource<BootcNode>(Resources.bootcNodes);
      let raced: { node: string; id: string } | undefined;
      // The first apply is held at the gate until the controller has reset its node for a
      // newer target: exactly the order of events of the flake in issue 12, made certain.
      stack.fleet.beforeJudge = async (node, invocation) => {
        if (raced) return;
        raced = { node, id: invocation.id };
        await patchPoolSpec(stack, "gate", { image: { ref: `${repository}@${v3.digest}` } });
        await waitFor(async () => {
          const bn = await bootcNodes.get(node);
          return bn.spec.desiredImage.endsWith(v3.digest) && bn.spec.desiredImageState === "Staged";
        }, { timeoutMs: 60_000, message: `the controller resets ${node} for v3` });
      };
      try {
        await patchPoolSpec(stack, "gate", { image: { ref: `${repository}@${v2.digest}` } });
        await waitConverged(stack, "gate", v3.digest, 2, 180_000);
      } finally {
        stack.fleet.beforeJudge = undefined;
      }
      assert.ok(raced, "an apply was held");
      const judged = stack.tracker.applies.find((a) => a.id === raced!.id);
      assert.ok(judged, "the held apply was judged");
      // Read at the gate, the node no longer authorized a reboot; the watch history shows
      // it did when the daemon invoked bootc.
      assert.equal(judged.basis, "history", judged.verdict.message);
      assert.equal(judged.verdict.allowed, true, judged.verdict.message);
      // Every node applied. The raced node's held apply boots whatever is staged when it
      // gets the sysroot lock: v2 (then it applies again, for v3) or, when the daemon's
      // download of v3 took the lock while the apply waited at the gate, v3 itself.
      const appliedNodes = new Set(stack.tracker.applies.map((a) => a.node));
      assert.deepEqual([...appliedNodes].sort(), [...nodes].sort());
      // How long an unheld apply waits at the gate (invocation to verdict): its reboot is
      // delayed by as much.
      const delays = stack.tracker.applies.filter((a) => a.id !== raced!.id)
        .map((a) => a.judgedAt - a.invokedAt).sort((a, b) => a - b);
      console.log(
        `apply gate: ${delays.length} unheld applies judged ${
          delays.map((d) => `${Math.round(d)}ms`).join(", ")
        } after invocation`,
      );
      await assertInvariants(stack, nodes);
    });

    await step(t, "an apply nothing authorized is a violation", async () => {
      // A host in no pool: no BootcNode, no slot, no drain. A rogue `bootc --apply` on it.
      const rogue = "rogue-1";
      await stack.fleet.addNode(rogue, {
        image: `${repository}@${v1.digest}`,
        labels: { pool: "none" },
        pods: 0,
      });
      const host = stack.fleet.nodes.get(rogue)!.host;
      try {
        const apply = startBootc(host, ["rollback", "--apply"]);
        const judged = await waitFor(
          () => Promise.resolve(stack.tracker.applies.find((a) => a.node === rogue)),
          { timeoutMs: 60_000, message: "the rogue apply is judged" },
        );
        assert.equal(judged.verdict.allowed, false);
        assert.equal(judged.verdict.reason, "NotOwned");
        assert.equal(judged.basis, "none");
        const i = stack.tracker.violations.findIndex((v) =>
          v.startsWith(`${rogue} invoked bootc rollback --apply without authorization (NotOwned`)
        );
        assert.ok(i >= 0, stack.tracker.violations.join("\n"));
        // The verdict released it; there is nothing to roll back to, so bootc fails.
        const done = await apply.done;
        assert.equal(done.code, 1, done.stderr);
        assert.match(done.stderr, /No rollback available/);
        // The violation was the point of this step; the scenario's other checks still apply.
        stack.tracker.violations.splice(i, 1);
      } finally {
        await stack.fleet.removeNode(rogue);
      }
      await assertInvariants(stack, nodes);
    });
  } finally {
    await stopStack(stack);
  }
});
