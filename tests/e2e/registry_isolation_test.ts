/**
 * A registry that accepts connections and never answers must delay only the
 * pools whose tags live there. Two pools (as many as the controller has
 * workers) point at such a registry while an unrelated digest-pinned pool rolls
 * out: that rollout must take about as long as without them, and the hanging
 * pools must say which registry failed, while the rollout one of them had in
 * flight finishes on its last target.
 *
 * Before tag resolution moved out of the reconcile loop, each reconcile of a
 * hanging pool held a worker for the registry client's 30 s timeout, so two such
 * pools starved every other pool for minutes.
 */
import assert from "node:assert/strict";
import { findCondition, isDisrupted } from "../../lib/api/mod.ts";
import { startHangingRegistry } from "../harness/hanging_registry.ts";
import { startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  nodesByName,
  patchPoolSpec,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

Deno.test("registry isolation: a hanging registry delays only the pools that use it", async (t) => {
  const hanging = startHangingRegistry();
  const stack = await startStack({
    limits: { a: { maxUnavailable: 1 }, b: { maxUnavailable: 1 }, c: { maxUnavailable: 1 } },
    controllerArgs: ["--insecure-registry", hanging.host],
  }).catch(async (e) => {
    await hanging.stop();
    throw e;
  });
  try {
    const { v1, v2, repository } = stack.images;
    const bNodes = await addNodes(stack, "b", 3);
    const aNodes = await addNodes(stack, "a", 2);
    const cNodes = await addNodes(stack, "c", 1);
    await stack.createPool("b", poolSpec("b", `${repository}@${v1.digest}`));
    await waitConverged(stack, "b", v1.digest, 3);

    let baselineS = 0;
    await step(t, "baseline: the digest-pinned pool rolls out alone", async () => {
      const started = Date.now();
      await patchPoolSpec(stack, "b", { image: { ref: `${repository}@${v2.digest}` } });
      await waitConverged(stack, "b", v2.digest, 3);
      baselineS = (Date.now() - started) / 1000;
    });

    await step(t, "with two pools on a hanging registry, it takes about as long", async () => {
      // Pool a starts a rollout from the working registry, then its tag moves to the
      // hanging one; pool c starts there. Together they outnumber the controller's workers.
      await stack.createPool("a", poolSpec("a", `${repository}:v2`));
      await waitPool(stack, "a", async () => {
        const p = await getPool(stack, "a");
        return p.status?.targetDigest === v2.digest;
      }, "pool a should target v2 from the working registry");
      const hangingRef = `${hanging.host}/bootc/os:v2`;
      await patchPoolSpec(stack, "a", { image: { ref: hangingRef } });
      await stack.createPool("c", poolSpec("c", hangingRef));
      await waitFor(() => hanging.accepted > 0, {
        timeoutMs: 30_000,
        message: "the controller should be talking to the hanging registry",
      });

      // Generous for a loaded CI machine, yet far below the minutes that workers held for
      // 30 s at a time by the hanging pools would cost.
      const boundS = Math.max(2 * baselineS + 20, 45);
      const started = Date.now();
      await patchPoolSpec(stack, "b", { image: { ref: `${repository}@${v1.digest}` } });
      await waitConverged(stack, "b", v1.digest, 3, boundS * 1000);
      const seconds = (Date.now() - started) / 1000;
      console.log(
        `pool b rollout: ${baselineS.toFixed(1)} s alone, ${seconds.toFixed(1)} s ` +
          `with pools a and c on a hanging registry`,
      );
      assert.ok(seconds <= boundS, `${seconds} s > ${boundS} s`);
    });

    await step(t, "the hanging pools name the registry; a's rollout finishes", async () => {
      for (const name of ["a", "c"]) {
        const pool = await waitPool(
          stack,
          name,
          async () => {
            const p = await getPool(stack, name);
            const degraded = findCondition(p.status?.conditions, "Degraded");
            return degraded?.status === "True" && degraded.reason === "ImageResolutionFailed" && p;
          },
          `pool ${name} should report the failed resolution`,
          90_000,
        );
        const message = findCondition(pool.status?.conditions, "Degraded")!.message;
        assert.ok(message.includes(`registry ${hanging.host}`), message);
        assert.match(message, /answer/, message);
      }
      // Pool a keeps its last target: the rollout it had started reaches every node, each
      // released (booting v2 comes before the checks and the release: not done yet).
      await waitPool(
        stack,
        "a",
        async () => {
          const bns = await poolNodes(stack, "a");
          const nodes = await nodesByName(stack);
          return bns.length === 2 &&
            bns.every((bn) =>
              bn.status?.booted?.imageDigest === v2.digest &&
              !isDisrupted(nodes.get(bn.metadata.name ?? "") ?? {})
            );
        },
        "pool a's nodes should finish on the last resolved target",
        120_000,
      );
      assert.equal((await getPool(stack, "a")).status?.targetDigest, v2.digest);
      // Pool c never had a target: its node is left alone.
      assert.deepEqual(await poolNodes(stack, "c"), []);
      await assertInvariants(stack, [...bNodes, ...aNodes, ...cNodes]);
    });
  } catch (error) {
    console.error(`stack logs kept in ${stack.logDir}`);
    await stack.stop({ keepLogs: true });
    await hanging.stop();
    throw error;
  }
  await stopStack(stack);
  await hanging.stop();
});
