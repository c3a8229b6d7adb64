/**
 * End-to-end rollout policy (issue 13) with the real controller and daemons:
 * a maintenance window in a real time zone (the controller's clock starts just
 * before the window through its test-only --test-start-time), a cluster-wide
 * BootcDisruptionBudget shared by two pools, and ordering between pools.
 */
import assert from "node:assert/strict";
import { type BootcDisruptionBudget, findCondition } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import type { DisruptionInterval } from "../harness/invariants.ts";
import { startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  idleReason,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";
import { slotHolders } from "./slots.ts";

/** Saturday 2026-11-28 21:59:00 in Berlin (CET, UTC+1): one minute before the window. */
const CONTROLLER_START = "2026-11-28T20:59:00Z";

/** The most intervals of `nodes` open at once. */
function maxOverlap(intervals: readonly DisruptionInterval[], nodes: Set<string>): number {
  const edges: [number, number][] = [];
  for (const i of intervals) {
    if (!nodes.has(i.node)) continue;
    edges.push([i.start, 1], [i.end ?? Number.MAX_SAFE_INTEGER, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, d] of edges) {
    open += d;
    most = Math.max(most, open);
  }
  return most;
}

Deno.test("policy: a maintenance window, a cluster budget across pools, pool ordering", async (t) => {
  const stack = await startStack({
    controllerArgs: ["--test-start-time", CONTROLLER_START],
    limits: {
      win: { maxUnavailable: 2 },
      east: { maxUnavailable: 3 },
      west: { maxUnavailable: 3 },
      infra: { maxUnavailable: 1 },
      app: { maxUnavailable: 1 },
    },
  });
  const { v2, repository } = stack.images;
  const ref2 = `${repository}@${v2.digest}`;
  try {
    await step(t, "no reboot before the Saturday-night window opens in Berlin", async () => {
      const nodes = await addNodes(stack, "win", 2);
      await stack.createPool("win", {
        ...poolSpec("win", ref2, { maxUnavailable: 2 }),
        timeZone: "Europe/Berlin",
        maintenance: { windows: [{ schedule: "0 22 * * 6", duration: "6h" }] },
      });
      // Staging goes on outside the window; reboots wait for it.
      await waitNodes(
        stack,
        "win",
        (bns) => bns.length === 2 && bns.every((bn) => idleReason(bn) === "Staged"),
        "both staged before the window",
      );
      const waiting = await waitPool(stack, "win", async () => {
        const p = await getPool(stack, "win");
        const up = findCondition(p.status?.conditions, "UpToDate");
        return up?.reason === "OutsideMaintenanceWindow" ? up : undefined;
      }, "the pool says it waits for the window");
      assert.match(waiting.message, /Sat 2026-11-28 22:00 CET \(Europe\/Berlin\)/);
      // What a user sees while it waits (printed for docs/policy.md).
      const get = await stack.cp.kubectl(["get", "bnp", "win"]);
      const wide = await stack.cp.kubectl(["get", "bnp", "win", "-o", "wide"]);
      console.log(
        `$ kubectl get bnp win\n${get.stdout}$ kubectl get bnp win -o wide\n${wide.stdout}`,
      );
      assert.match(get.stdout, /win\s.*OutsideMaintenanceWindow/);
      assert.match(wide.stdout, /next window opens|22:00 CET/);
      assert.deepEqual(await slotHolders(stack, "win"), [], "no slot outside the window");
      assert.equal(stack.tracker.reboots.filter((r) => nodes.includes(r.node)).length, 0);
      // The controller's clock reaches 22:00 a minute after it started.
      await waitConverged(stack, "win", v2.digest, 2, 180_000);
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "two pools share a cluster budget of 1: one node at a time across both",
      async () => {
        const east = await addNodes(stack, "east", 3);
        const west = await addNodes(stack, "west", 3);
        await stack.cp.client.resource<BootcDisruptionBudget>(Resources.bootcDisruptionBudgets)
          .create({
            apiVersion: "node.bootc.dev/v1alpha1",
            kind: "BootcDisruptionBudget",
            metadata: { name: "shared" },
            spec: {
              nodeSelector: {
                matchExpressions: [{ key: "pool", operator: "In", values: ["east", "west"] }],
              },
              maxUnavailable: 1,
            },
          });
        await stack.createPool("east", poolSpec("east", ref2, { maxUnavailable: 3 }));
        await stack.createPool("west", poolSpec("west", ref2, { maxUnavailable: 3 }));
        let sawBudgetWait = false;
        const watch = (async () => {
          for (let i = 0; i < 600 && !sawBudgetWait; i++) {
            for (const name of ["east", "west"]) {
              const p = await getPool(stack, name).catch(() => undefined);
              const up = findCondition(p?.status?.conditions, "UpToDate");
              if (/BootcDisruptionBudget shared|budget shared/i.test(up?.message ?? "")) {
                sawBudgetWait = true;
              }
            }
            await new Promise((r) => setTimeout(r, 200));
          }
        })();
        await waitConverged(stack, "east", v2.digest, 3, 240_000);
        await waitConverged(stack, "west", v2.digest, 3, 240_000);
        await watch;
        const all = new Set([...east, ...west]);
        assert.equal(maxOverlap(stack.tracker.intervals, all), 1, "never two disrupted at once");
        assert.ok(sawBudgetWait, "a pool said the cluster budget holds it back");
        await assertInvariants(stack, [...east, ...west]);
      },
    );

    await step(t, "a pool ordered after another starts reboots only once it finished", async () => {
      const infra = await addNodes(stack, "infra", 2);
      const app = await addNodes(stack, "app", 2);
      await stack.createPool(
        "app",
        {
          ...poolSpec("app", ref2),
          rollout: { maxUnavailable: 1, after: ["infra"] },
        } as Parameters<typeof stack.createPool>[1],
      );
      await stack.createPool("infra", poolSpec("infra", ref2));
      await waitConverged(stack, "app", v2.digest, 2, 240_000);
      await waitConverged(stack, "infra", v2.digest, 2, 60_000);
      const of = (names: string[]) => stack.tracker.intervals.filter((i) => names.includes(i.node));
      const infraDone = Math.max(...of(infra).map((i) => i.end ?? Infinity));
      const appStart = Math.min(...of(app).map((i) => i.start));
      assert.ok(appStart >= infraDone, "app's first disruption after infra's last");
      await assertInvariants(stack, [...infra, ...app]);
    });
  } finally {
    await stopStack(stack);
  }
});
