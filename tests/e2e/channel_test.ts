/**
 * End-to-end auto-update channel (issue 15) with the real controller, daemons
 * and registry: the repository holds 1.0.0, v1.0.1, 1.1.0, 2.0.0 and latest; a
 * pool on `~1.0` moves to 1.0.1; a bad 1.0.2 pushed later is caught, rolled back
 * and never retried; a second bad version opens the circuit (maxRollbacks 2), a
 * good 1.0.4 then waits with "available, circuit open" until a user resets it.
 */
import assert from "node:assert/strict";
import { ANNOTATION_RESET_CIRCUIT, type BootcNodePool, findCondition } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { BAD_BOOT_LABEL } from "../bootc_sim/bad_boot.ts";
import { startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

const LONG_MS = 240_000;

Deno.test("channel: follow ~1.0, skip a failed version for good, stop when the circuit opens", async (t) => {
  const stack = await startStack({ limits: { chan: { maxUnavailable: 1 } } });
  const push = async (tag: string, bad?: string) => {
    const pushed = await stack.registry.pushImage({
      repository: "bootc/chan",
      tag,
      version: tag,
      labels: bad ? { [BAD_BOOT_LABEL]: bad } : {},
    });
    return pushed.digest;
  };
  const repository = `${stack.registry.host}/bootc/chan`;
  try {
    const digests: Record<string, string> = {};
    for (const tag of ["1.0.0", "v1.0.1", "1.1.0", "2.0.0"]) digests[tag] = await push(tag);
    await stack.registry.tagExisting("bootc/chan", "2.0.0", "latest");
    const nodes = await addNodes(stack, "chan", 3, { image: `${repository}@${digests["1.0.0"]}` });
    const reboots = () => nodes.reduce((n, name) => n + stack.fleet.nodes.get(name)!.reboots, 0);

    await step(
      t,
      "a pool on ~1.0 moves to 1.0.1 (v prefix, other majors and latest ignored)",
      async () => {
        await stack.createPool(
          "chan",
          {
            ...poolSpec("chan", "", {
              maxUnavailable: 1,
              onFailure: "RollbackPool",
              maxRollbacks: 2,
              // The bad versions fail fast (a failed unit, a fallback): no timeout is expected,
              // so the bounds are wide for a machine running test files in parallel.
              rebootTimeoutSeconds: 180,
              health: { timeoutSeconds: 180 },
            }),
            image: {
              channel: { repository, constraint: "~1.0" },
            } as BootcNodePool["spec"]["image"],
          } as Parameters<typeof stack.createPool>[1],
        );
        await waitConverged(stack, "chan", digests["v1.0.1"], 3, LONG_MS);
        const p = await getPool(stack, "chan");
        assert.equal(p.status?.channel?.currentVersion, "1.0.1");
        assert.equal(p.status?.channel?.currentTag, "v1.0.1");
        assert.equal(p.status?.channel?.newestVersion, "1.0.1");
        assert.match(p.status?.channel?.message ?? "", /2\.0\.0 outside ~1\.0/);
        assert.ok(p.status?.channel?.nextCheckTime, "the next check time is shown");
      },
    );

    await step(t, "a bad 1.0.2 is caught, rolled back to 1.0.1 and never retried", async () => {
      const bad = await push("1.0.2", "unit-fails");
      await waitPool(
        stack,
        "chan",
        async () => {
          const p = await getPool(stack, "chan");
          return p.status?.channel?.failedVersions?.includes("1.0.2") && p;
        },
        "1.0.2 is recorded as failed",
        LONG_MS,
      );
      await waitConverged(stack, "chan", digests["v1.0.1"], 3, LONG_MS);
      const p = await getPool(stack, "chan");
      assert.equal(p.status?.channel?.currentVersion, "1.0.1");
      assert.equal(p.status?.consecutiveFailures, 1);
      assert.ok(p.status?.failedDigests?.includes(bad));
      assert.equal(p.status?.history?.find((r) => r.digest === bad)?.outcome, "RolledBack");
      // Several more checks pass: 1.0.2 is never chosen again, nothing reboots.
      const before = reboots();
      const checked = p.status?.channel?.lastCheckTime ?? "";
      await waitPool(stack, "chan", async () => {
        const now = await getPool(stack, "chan");
        return (now.status?.channel?.lastCheckTime ?? "") > checked || undefined;
      }, "the channel is checked again");
      await new Promise((r) => setTimeout(r, 6_000));
      const after = await getPool(stack, "chan");
      assert.equal(after.status?.channel?.currentVersion, "1.0.1");
      assert.match(after.status?.channel?.message ?? "", /1\.0\.2 failed its health checks before/);
      assert.equal(reboots(), before, "no node rebooted for a retry");
      const bns = await poolNodes(stack, "chan");
      assert.ok(bns.every((bn) => !bn.spec.desiredImage.endsWith(bad)), "nobody is sent to 1.0.2");
    });

    await step(t, "a second bad version opens the circuit; 1.0.4 waits until a reset", async () => {
      await push("1.0.3", "falls-back");
      await waitPool(
        stack,
        "chan",
        async () => {
          const p = await getPool(stack, "chan");
          return findCondition(p.status?.conditions, "CircuitOpen")?.status === "True" && p;
        },
        "the circuit opens after the second failed version",
        LONG_MS,
      );
      await waitConverged(stack, "chan", digests["v1.0.1"], 3, LONG_MS);
      const good = await push("1.0.4");
      const held = await waitPool(
        stack,
        "chan",
        async () => {
          const p = await getPool(stack, "chan");
          return /1\.0\.4 available, circuit open/.test(p.status?.channel?.message ?? "") && p;
        },
        "1.0.4 is reported available but not taken",
        LONG_MS,
      );
      assert.equal(held.status?.channel?.newestVersion, "1.0.4");
      assert.equal(held.status?.targetDigest, digests["v1.0.1"]);
      await waitFor(async () => {
        const events = await stack.cp.client.resource<
          { metadata?: { name?: string }; reason?: string; message?: string }
        >(Resources.events).list();
        return events.items.some((e) =>
          e.reason === "UpdateAvailable" && /1\.0\.4 .*circuit is open/.test(e.message ?? "")
        ) || undefined;
      }, { timeoutMs: 30_000, message: "an UpdateAvailable event names 1.0.4" });
      // A user resets the breaker: 1.0.4 rolls out.
      await stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools).patch("chan", {
        metadata: { annotations: { [ANNOTATION_RESET_CIRCUIT]: "1" } },
      }, { type: "merge" });
      await waitConverged(stack, "chan", good, 3, LONG_MS);
      const p = await getPool(stack, "chan");
      assert.equal(p.status?.channel?.currentVersion, "1.0.4");
      assert.equal(findCondition(p.status?.conditions, "CircuitOpen")?.status, "False");
      await assertInvariants(stack, nodes);
    });
  } finally {
    await stopStack(stack);
  }
});
