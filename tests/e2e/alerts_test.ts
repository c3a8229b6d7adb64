/**
 * The alert precondition against a real Prometheus evaluating a real alert rule on a metric the
 * test serves: while the alert fires no new reboot slot is granted and the pool names the alert;
 * once it resolves the rollout finishes. With Prometheus stopped, `onUnreachable: Hold` grants
 * nothing and says so, and `Proceed` rolls out and says the check is off.
 */
import assert from "node:assert/strict";
import { type BootcNodePool, findCondition } from "../../lib/api/mod.ts";
import { startPrometheus } from "../harness/prometheus.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

const RULES = `groups:
  - name: storage
    rules:
      - alert: StorageDegraded
        expr: test_storage_unhealthy > 0
        labels:
          severity: critical
`;

/** How long a held pool is watched for a grant it must not make. */
const HOLD_MS = 8_000;

function upToDate(p: BootcNodePool) {
  return findCondition(p.status?.conditions, "UpToDate");
}

/**
 * With the pool's budget at 0 (no grant can race the controller's first answer), waits until
 * UpToDate says `reason`; then lifts the budget and asserts that no slot is granted for
 * {@linkcode HOLD_MS} while the gate alone holds the pool.
 */
async function assertHeld(stack: Stack, reason: string, message: RegExp): Promise<void> {
  const held = await waitPool(stack, "al", async () => {
    const p = await getPool(stack, "al");
    return upToDate(p)?.reason === reason && p.status?.queue?.length === 3 ? p : undefined;
  }, `every node queued, the pool holding with ${reason}`);
  assert.match(upToDate(held)?.message ?? "", message);
  assert.ok(held.status?.queue?.every((q) => q.waitingFor === reason), "queued for it");
  const since = Date.now();
  await patchPoolSpec(stack, "al", { rollout: { budgets: null } });
  await new Promise((r) => setTimeout(r, HOLD_MS));
  const late = stack.tracker.intervals.filter((i) => i.start > since).map((i) => i.node);
  assert.deepEqual(late, [], `no slot granted while the pool says ${reason}`);
  assert.equal(upToDate(await getPool(stack, "al"))?.reason, reason);
}

/** No reboot slot at all until {@linkcode assertHeld} lifts it. */
const NO_SLOTS = { budgets: [{ maxUnavailable: 0 }] };

Deno.test("alerts: a firing alert holds reboots; Prometheus down holds or proceeds", async (t) => {
  let unhealthy = 0;
  const metrics = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () =>
      new Response(`# TYPE test_storage_unhealthy gauge\ntest_storage_unhealthy ${unhealthy}\n`),
  );
  const prom = await startPrometheus({ rules: RULES, targets: [`127.0.0.1:${metrics.addr.port}`] });
  let promStopped = false;
  const stack = await startStack({ limits: { al: { maxUnavailable: 1 } } });
  const { v1, v2, repository } = stack.images;
  const firing = async () => {
    const r = await fetch(`${prom.url}/api/v1/query?query=ALERTS{alertstate="firing"}`);
    return ((await r.json()).data?.result ?? []).length > 0;
  };
  try {
    const nodes = await addNodes(stack, "al", 3);
    await stack.createPool(
      "al",
      poolSpec("al", `${repository}@${v1.digest}`, {
        maxUnavailable: 1,
        preconditions: {
          alerts: { url: prom.url, alertname: "Storage.*", matchLabels: { severity: "critical" } },
        },
      }),
    );
    await waitConverged(stack, "al", v1.digest, 3);

    await step(t, "a firing alert holds new slots, named; resolved, the rollout ends", async () => {
      unhealthy = 1;
      await waitFor(firing, { timeoutMs: 30_000, message: "StorageDegraded firing" });
      await patchPoolSpec(stack, "al", {
        image: { ref: `${repository}@${v2.digest}` },
        rollout: NO_SLOTS,
      });
      await assertHeld(stack, "AlertsFiring", /alerts fire .*StorageDegraded/);
      unhealthy = 0;
      await waitConverged(stack, "al", v2.digest, 3, 120_000);
    });

    await step(
      t,
      "Prometheus down: Hold grants nothing, Proceed rolls out, each said",
      async () => {
        await prom.stop();
        promStopped = true;
        await patchPoolSpec(stack, "al", {
          image: { ref: `${repository}@${v1.digest}` },
          rollout: NO_SLOTS,
        });
        await assertHeld(stack, "AlertsUnknown", /cannot be asked.*onUnreachable: Hold/);
        await patchPoolSpec(stack, "al", {
          rollout: { preconditions: { alerts: { onUnreachable: "Proceed" } } },
        });
        const said = await waitPool(stack, "al", async () => {
          const c = upToDate(await getPool(stack, "al"));
          return c?.reason === "AlertsUnchecked" ? c : undefined;
        }, "the pool says the alert check is off");
        assert.match(said.message ?? "", /go on unchecked \(onUnreachable: Proceed\)/);
        await waitConverged(stack, "al", v1.digest, 3, 120_000);
        await assertInvariants(stack, nodes);
      },
    );
  } finally {
    await stopStack(stack);
    if (!promStopped) await prom.stop();
    await metrics.shutdown();
  }
});
