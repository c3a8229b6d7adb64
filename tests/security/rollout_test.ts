/**
 * The least-privilege install is enough to do the job: after the CRDs, RBAC and admission
 * policy are installed, a rollout driven by the real controller (its own service-account
 * token) and the real daemons (node-bound tokens) completes, and no component was refused
 * anything on the way (a missing verb would show as 403 in a log or as missing events even
 * when the rollout itself recovers).
 */
import assert from "node:assert/strict";
import { Resources } from "../../lib/kube/mod.ts";
import { startStack } from "../harness/stack.ts";
import { addNodes, assertInvariants, poolSpec, waitConverged } from "../e2e/scenario.ts";

type CoreEvent = {
  metadata?: { name?: string };
  reason?: string;
  source?: { component?: string };
  reportingComponent?: string;
};

/** Log lines that show an authorization or admission refusal. */
const REFUSAL = /\b403\b|forbidden|ValidatingAdmissionPolicy/i;

Deno.test("a rollout completes with the operator's own least-privilege credentials", async () => {
  const stack = await startStack({ leastPrivilege: true, limits: { sec: { maxUnavailable: 1 } } });
  let ok = false;
  try {
    const { v1, v2, repository } = stack.images;
    const nodes = await addNodes(stack, "sec", 2, { image: `${repository}@${v1.digest}` });
    await stack.createPool("sec", poolSpec("sec", `${repository}:v1`, { maxUnavailable: 1 }));
    await waitConverged(stack, "sec", v1.digest, 2);

    const rebootsBefore = stack.fleet.rebootCount;
    await stack.cp.client.resource(Resources.bootcNodePools).patch(
      "sec",
      { spec: { image: { ref: `${repository}:v2` } } },
      { type: "merge" },
    );
    const pool = await waitConverged(stack, "sec", v2.digest, 2);
    assert.equal(pool.status?.deployedDigest, v2.digest);
    assert.equal(stack.fleet.rebootCount - rebootsBefore, 2, "each node rebooted once into v2");
    await assertInvariants(stack, nodes);

    // Events need core events create/patch: the controller recorded some (events about
    // cluster-scoped objects live in "default", so look everywhere).
    const events = await stack.cp.client.resource<CoreEvent>(Resources.events).list();
    const mine = events.items.filter((e) =>
      (e.reportingComponent || e.source?.component) === "bootc-operator-controller"
    );
    assert.ok(mine.length > 0, "no events recorded by bootc-operator-controller");

    // Nothing was refused along the way.
    const refusals: string[] = [];
    for await (const entry of Deno.readDir(stack.logDir)) {
      if (!entry.isFile || !/^(controller|daemon)-.*\.log$/.test(entry.name)) continue;
      const text = await Deno.readTextFile(`${stack.logDir}/${entry.name}`);
      for (const line of text.split("\n")) {
        if (REFUSAL.test(line)) refusals.push(`${entry.name}: ${line.slice(0, 300)}`);
      }
    }
    assert.deepEqual(refusals, [], refusals.join("\n"));
    ok = true;
  } finally {
    await stack.stop({ keepLogs: !ok });
    if (!ok) console.error(`logs kept in ${stack.logDir}`);
  }
});
