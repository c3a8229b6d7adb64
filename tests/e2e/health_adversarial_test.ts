/**
 * Adversarial end-to-end checks of health-gated rollouts (issue 14) and
 * auto-update channels (issue 15) on the real control plane: a user (or a
 * broken tool) edits the operator's records mid-flight, the controller dies at
 * awkward moments, a daemon goes silent, a channel's registry hangs. Each step
 * runs on pools of its own and checks what must hold whatever happens: a bad
 * image reaches no more nodes than the canary / maxUnavailable allow before the
 * failure is acted on, the pool ends on a good image (or says clearly why it is
 * halted), nothing stays cordoned or half-done, and no invariant of the
 * disruption model is broken.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import {
  ANNOTATION_FAILED_IMAGE,
  ANNOTATION_RESET_CIRCUIT,
  type BootcNode,
  type BootcNodePool,
  findCondition,
  holdsRebootSlot,
  isDisrupted,
} from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { BAD_BOOT_LABEL } from "../bootc_sim/bad_boot.ts";
import { startHangingRegistry } from "../harness/hanging_registry.ts";
import { startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  describePool,
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

/** Seconds a node may take to come back Ready on the target (and to pass its checks). */
const TIMEOUT_S = 45;
/**
 * Reboot and health bounds of steps that expect no timeout at all: wide, so a very busy machine
 * (parallel test files) does not turn a slow boot into a real health failure.
 */
const NO_TIMEOUT_EXPECTED_S = 180;
const LONG_MS = 240_000;
/** How long "nothing more happens" is watched after an attack (a bounded negative check). */
const QUIET_MS = 20_000;

const POOLS = ["h-fake", "kill-a", "kill-b", "pause", "nr-silent", "reset"];

Deno.test("health adversarial: records edited, controller killed, daemons silenced", async (t) => {
  const stack = await startStack({
    limits: Object.fromEntries(
      [...POOLS, "ch-hang", "ch-switch"].map((n) => [n, { maxUnavailable: 1 }]),
    ),
  });
  const hanging = startHangingRegistry();
  const { v2, repository } = stack.images;
  const good = `${repository}@${v2.digest}`;
  const pools = stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  const bootcNodes = stack.cp.client.resource<BootcNode>(Resources.bootcNodes);
  const bad = async (tag: string, mode: string) => {
    const pushed = await stack.registry.pushImage({
      repository: "bootc/os",
      tag,
      version: `bad-${tag}`,
      labels: { [BAD_BOOT_LABEL]: mode },
    });
    return { digest: pushed.digest, image: `${repository}@${pushed.digest}` };
  };
  const reboots = (names: string[]) =>
    new Map(names.map((n) => [n, stack.fleet.nodes.get(n)!.reboots]));
  const rebootedSince = (before: Map<string, number>) =>
    [...before].filter(([n, r]) => stack.fleet.nodes.get(n)!.reboots > r).map(([n]) => n);
  /** Watches for QUIET_MS that none of `before`'s nodes reboots again. */
  const assertNoReboot = async (pool: string, before: Map<string, number>, what: string) => {
    const end = Date.now() + QUIET_MS;
    while (Date.now() < end) {
      const again = rebootedSince(before);
      if (again.length > 0) {
        assert.fail(
          `${what}: ${again.join(", ")} rebooted again\n${await describePool(stack, pool)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  /** A pool of `count` nodes booted into the good image, converged on it. */
  const goodPool = async (name: string, count: number, rollout: Record<string, unknown>) => {
    const nodes = await addNodes(stack, name, count, { image: good });
    await stack.createPool(name, {
      ...poolSpec(name, good, {
        maxUnavailable: 1,
        rebootTimeoutSeconds: TIMEOUT_S,
        health: { timeoutSeconds: TIMEOUT_S },
        ...rollout,
      }),
    });
    const p = await waitConverged(stack, name, v2.digest, count, LONG_MS);
    assert.equal(p.status?.history?.at(-1)?.outcome, "Succeeded");
    return nodes;
  };
  const bnOf = async (name: string) => await bootcNodes.get(name);
  const nodeOf = async (name: string) => (await nodesByName(stack)).get(name) ?? {} as INode;
  const degraded = (p: BootcNodePool) => findCondition(p.status?.conditions, "Degraded");
  const eventsFor = async (name: string) =>
    (await stack.cp.client.resource<
      {
        metadata?: { name?: string };
        involvedObject?: { name?: string };
        reason?: string;
        message?: string;
      }
    >(Resources.events).list()).items.filter((e) => e.involvedObject?.name === name);

  try {
    await step(
      t,
      "Halt: Verified=True written by hand on a failing node is corrected",
      async () => {
        const nodes = await goodPool("h-fake", 2, { onFailure: "Halt", minReadySeconds: 5 });
        const b = await bad("h-fake", "unit-fails");
        await patchPoolSpec(stack, "h-fake", { image: { ref: b.image } });
        const failing = await waitPool(
          stack,
          "h-fake",
          async () => {
            const bns = await poolNodes(stack, "h-fake");
            return bns.find((x) =>
              findCondition(x.status?.conditions, "Verified")?.status === "False" &&
              x.status?.booted?.imageDigest === b.digest
            );
          },
          "a node fails its checks",
          LONG_MS,
        );
        const name = failing.metadata.name ?? "";
        const before = reboots(nodes);
        // The attack: someone marks it verified (status.verification still names the image,
        // as the controller wrote it), then again while the first write is being undone.
        const conditions = (failing.status?.conditions ?? []).filter((c) => c.type !== "Verified");
        await bootcNodes.patch(name, {
          status: {
            conditions: [...conditions, {
              type: "Verified",
              status: "True",
              reason: "ChecksPassed",
              message: `verified ${b.image}: by hand`,
              lastTransitionTime: "2020-01-01T00:00:00Z",
            }],
          },
        }, { type: "merge", subresource: "status" });
        await waitPool(
          stack,
          "h-fake",
          async () => {
            const bn = await bnOf(name);
            return findCondition(bn.status?.conditions, "Verified")?.status === "False" ||
              undefined;
          },
          "the controller writes Verified=False again",
          LONG_MS,
        );
        assert.ok(holdsRebootSlot(await nodeOf(name)), "the failed node keeps its slot");
        await assertNoReboot("h-fake", before, "after a fake Verified=True");
        const p = await getPool(stack, "h-fake");
        assert.equal(degraded(p)?.reason, "HealthCheckFailed");
        assert.equal(p.status?.history?.at(-1)?.outcome, "Failed");
        await patchPoolSpec(stack, "h-fake", { image: { ref: good } });
        await waitConverged(stack, "h-fake", v2.digest, 2, LONG_MS);
        await assertInvariants(stack, nodes);
      },
    );

    await step(
      t,
      "the controller dies as the canary boots the bad image and comes back after it failed",
      async () => {
        const nodes = await goodPool("kill-a", 3, {
          onFailure: "RollbackPool",
          canary: { nodes: 1, soakSeconds: 2 },
        });
        const b = await bad("kill-a", "unit-fails");
        let killedFor: string | undefined;
        stack.fleet.beforeJudge = async (node, invocation) => {
          if (!node.startsWith("kill-a-") || killedFor || invocation.command.includes("rollback")) {
            return;
          }
          killedFor = node;
          await stack.killController();
        };
        try {
          const before = reboots(nodes);
          await patchPoolSpec(stack, "kill-a", { image: { ref: b.image } });
          // The canary reboots into the bad image with no controller running, and reports.
          const canary = await waitPool(
            stack,
            "kill-a",
            async () => {
              if (!killedFor) return undefined;
              const bn = await bnOf(killedFor);
              return bn.status?.booted?.imageDigest === b.digest &&
                bn.status.hostHealth?.bootedDigest === b.digest &&
                bn.status.hostHealth.state === "Unhealthy" && killedFor;
            },
            "the canary runs the bad image and reports it unhealthy",
            LONG_MS,
          );
          stack.fleet.beforeJudge = undefined;
          await stack.startController();
          await waitPool(
            stack,
            "kill-a",
            async () => {
              const p = await getPool(stack, "kill-a");
              return p.status?.rollbackHold?.failedImage === b.image || undefined;
            },
            "the restarted controller rolls the pool back",
            LONG_MS,
          );
          const p = await waitConverged(stack, "kill-a", v2.digest, 3, LONG_MS);
          assert.deepEqual(rebootedSince(before), [canary], "only the canary rebooted");
          assert.equal(p.status?.consecutiveFailures, 1);
          assert.equal(
            p.status?.history?.find((r) => r.digest === b.digest)?.outcome,
            "RolledBack",
          );
          assert.ok(p.status?.failedDigests?.includes(b.digest));
        } finally {
          stack.fleet.beforeJudge = undefined;
          if (!stack.controller?.running) await stack.startController();
        }
        await assertInvariants(stack, nodes);
      },
    );

    await step(
      t,
      "the controller dies as the canary's rollback is applied; the failure counts once",
      async () => {
        const nodes = await goodPool("kill-b", 3, {
          onFailure: "RollbackPool",
          canary: { nodes: 1, soakSeconds: 2 },
        });
        const b = await bad("kill-b", "falls-back");
        const b2 = await bad("kill-b2", "unit-fails");
        let killedFor: string | undefined;
        stack.fleet.beforeJudge = async (node, invocation) => {
          if (
            !node.startsWith("kill-b-") || killedFor || !invocation.command.includes("rollback")
          ) {
            return;
          }
          killedFor = node;
          await stack.killController();
        };
        try {
          // A host that falls back needs no rollback apply; a unit failure does.
          const before = reboots(nodes);
          await patchPoolSpec(stack, "kill-b", { image: { ref: b.image } });
          await waitPool(
            stack,
            "kill-b",
            async () => {
              const p = await getPool(stack, "kill-b");
              return p.status?.rollbackHold?.failedImage === b.image || undefined;
            },
            "the first bad image is rolled back",
            LONG_MS,
          );
          await waitConverged(stack, "kill-b", v2.digest, 3, LONG_MS);
          assert.equal(rebootedSince(before).length, 1);
          const before2 = reboots(nodes);
          await patchPoolSpec(stack, "kill-b", { image: { ref: b2.image } });
          const canary = await waitPool(
            stack,
            "kill-b",
            async () => {
              if (!killedFor) return undefined;
              const bn = await bnOf(killedFor);
              return bn.status?.booted?.imageDigest === v2.digest && killedFor;
            },
            "the canary rolls back while the controller is down",
            LONG_MS,
          );
          stack.fleet.beforeJudge = undefined;
          await stack.startController();
          const p = await waitConverged(stack, "kill-b", v2.digest, 3, LONG_MS);
          assert.deepEqual(rebootedSince(before2), [canary], "only the canary rebooted");
          assert.equal(p.status?.consecutiveFailures, 2, JSON.stringify(p.status?.history));
          assert.equal(
            p.status?.history?.find((r) => r.digest === b2.digest)?.outcome,
            "RolledBack",
          );
          assert.equal(
            findCondition(p.status?.conditions, "CircuitOpen")?.status ?? "False",
            "False",
          );
        } finally {
          stack.fleet.beforeJudge = undefined;
          if (!stack.controller?.running) await stack.startController();
        }
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "a canary that fails while the pool is paused is still rolled back", async () => {
      const nodes = await goodPool("pause", 3, {
        onFailure: "RollbackPool",
        canary: { nodes: 1, soakSeconds: 2 },
      });
      const b = await bad("pause", "unit-fails");
      const before = reboots(nodes);
      await patchPoolSpec(stack, "pause", { image: { ref: b.image } });
      await waitPool(
        stack,
        "pause",
        async () => {
          const objs = await nodesByName(stack);
          return nodes.some((n) => holdsRebootSlot(objs.get(n) ?? {})) || undefined;
        },
        "the canary takes its slot",
        LONG_MS,
      );
      await patchPoolSpec(stack, "pause", { rollout: { paused: true } });
      await waitPool(
        stack,
        "pause",
        async () => {
          const p = await getPool(stack, "pause");
          return p.status?.rollbackHold?.failedImage === b.image || undefined;
        },
        "the paused pool rolls its canary back",
        LONG_MS,
      );
      const p = await waitConverged(stack, "pause", v2.digest, 3, LONG_MS);
      assert.equal(p.spec.rollout?.paused, true);
      assert.equal(rebootedSince(before).length, 1, "only the canary rebooted");
      await patchPoolSpec(stack, "pause", { rollout: { paused: false } });
      await assertNoReboot("pause", reboots(nodes), "after the unpause");
      await waitConverged(stack, "pause", v2.digest, 3, LONG_MS);
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "RollbackNode on a never-Ready node whose daemon is silenced: held, then finished",
      async () => {
        const nodes = await goodPool("nr-silent", 2, {
          onFailure: "RollbackNode",
          rebootTimeoutSeconds: 20,
          health: { timeoutSeconds: 20 },
        });
        const b = await bad("nr-silent", "never-ready");
        const before = reboots(nodes);
        // The daemon is kept from starting again once its apply is judged: the reboot ends
        // it, and the machine stays silent on the never-Ready image, so no report of that
        // boot (or rollback after it) can race the test.
        let chosen: string | undefined;
        stack.fleet.beforeJudge = (node, invocation) => {
          if (
            node.startsWith("nr-silent-") && !chosen && !invocation.command.includes("rollback")
          ) {
            chosen = node;
            stack.fleet.nodes.get(node)!.daemonAllowed = false;
          }
          return Promise.resolve();
        };
        await patchPoolSpec(stack, "nr-silent", { image: { ref: b.image } });
        const victim = await waitPool(
          stack,
          "nr-silent",
          async () => {
            const host = chosen ? stack.fleet.nodes.get(chosen)?.host : undefined;
            const booted = host ? (await host.readState()).state.booted : undefined;
            return booted?.image?.imageDigest === b.digest ? chosen : undefined;
          },
          "a machine boots the never-Ready image",
          LONG_MS,
        ).finally(() => stack.fleet.beforeJudge = undefined);
        try {
          // The reboot timeout fails it; the rollback is decided, but nobody can apply it.
          await waitPool(
            stack,
            "nr-silent",
            async () => {
              const bn = await bnOf(victim);
              return bn.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] === b.image &&
                  bn.spec.desiredImage === good || undefined;
            },
            "the silent node is marked failed and sent back",
            LONG_MS,
          );
          assert.ok(holdsRebootSlot(await nodeOf(victim)), "it keeps its slot meanwhile");
          assert.ok(
            (await eventsFor(victim)).some((e) => e.reason === "RollingBack"),
            "a RollingBack event names the node",
          );
          const p = await getPool(stack, "nr-silent");
          assert.equal(degraded(p)?.status, "True");
          assert.match(degraded(p)?.message ?? "", new RegExp(victim));
        } finally {
          stack.fleet.allowDaemon(victim);
        }
        await waitPool(
          stack,
          "nr-silent",
          async () => {
            const bn = await bnOf(victim);
            return bn.status?.booted?.imageDigest === v2.digest &&
                !isDisrupted(await nodeOf(victim)) ||
              undefined;
          },
          "the node is back on the good image and released",
          LONG_MS,
        );
        assert.deepEqual(rebootedSince(before), [victim], "the other node never rebooted");
        const p = await getPool(stack, "nr-silent");
        assert.equal(degraded(p)?.reason, "HealthCheckFailed");
        await patchPoolSpec(stack, "nr-silent", { image: { ref: good } });
        await waitConverged(stack, "nr-silent", v2.digest, 2, LONG_MS);
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "a circuit reset set while the bad image is in flight", async () => {
      const nodes = await goodPool("reset", 2, { onFailure: "RollbackPool", maxRollbacks: 1 });
      const b = await bad("reset", "unit-fails");
      const before = reboots(nodes);
      await patchPoolSpec(stack, "reset", { image: { ref: b.image } });
      await waitPool(
        stack,
        "reset",
        async () => {
          const objs = await nodesByName(stack);
          return nodes.some((n) => holdsRebootSlot(objs.get(n) ?? {})) || undefined;
        },
        "a node takes a slot for the bad image",
        LONG_MS,
      );
      await pools.patch("reset", {
        metadata: { annotations: { [ANNOTATION_RESET_CIRCUIT]: "mid-flight" } },
      }, { type: "merge" });
      await waitPool(
        stack,
        "reset",
        async () => {
          const p = await getPool(stack, "reset");
          return p.status?.rollbackHold?.failedImage === b.image || undefined;
        },
        "the failure is still acted on",
        LONG_MS,
      );
      let p = await waitConverged(stack, "reset", v2.digest, 2, LONG_MS);
      assert.equal(rebootedSince(before).length, 1);
      // Which the controller saw first, the reset or the failure, depends on the machine's
      // load; either way the count and the circuit agree (maxRollbacks 1).
      const counted = p.status?.consecutiveFailures ?? 0;
      assert.ok(counted <= 1, `consecutiveFailures ${counted}`);
      assert.equal(
        findCondition(p.status?.conditions, "CircuitOpen")?.status === "True",
        counted === 1,
      );
      await pools.patch("reset", {
        metadata: { annotations: { [ANNOTATION_RESET_CIRCUIT]: "after" } },
      }, { type: "merge" });
      p = await waitPool(stack, "reset", async () => {
        const p = await getPool(stack, "reset");
        return findCondition(p.status?.conditions, "CircuitOpen")?.status === "False" && p;
      }, "the circuit closes");
      // The hold still keeps the pool off the bad image after the reset.
      assert.equal(p.status?.targetDigest, v2.digest);
      await assertNoReboot("reset", reboots(nodes), "after the reset");
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "a channel whose registry hangs: said so, nothing moves, the pool recovers",
      async () => {
        const nodes = await goodPool("ch-hang", 2, {});
        const before = reboots(nodes);
        await patchPoolSpec(stack, "ch-hang", {
          image: {
            ref: null,
            channel: { repository: `${hanging.host}/bootc/os`, constraint: "~1.0" },
          },
        });
        const p = await waitPool(
          stack,
          "ch-hang",
          async () => {
            const p = await getPool(stack, "ch-hang");
            return /listing the tags .* failed/.test(p.status?.channel?.message ?? "") && p;
          },
          "the channel says its listing failed",
          LONG_MS,
        );
        assert.match(
          p.status?.channel?.message ?? "",
          new RegExp(hanging.host.replace(/\./g, "\\.")),
        );
        assert.equal(p.status?.targetDigest, v2.digest, "the pool stays on its image");
        const objs = await nodesByName(stack);
        assert.ok(nodes.every((n) => !isDisrupted(objs.get(n) ?? {})), "nothing is cordoned");
        assert.deepEqual(rebootedSince(before), []);
        // Back to a fixed ref: the controller was never wedged.
        const b = await stack.registry.pushImage({
          repository: "bootc/os",
          tag: "hang-next",
          version: "3.0",
        });
        await patchPoolSpec(stack, "ch-hang", {
          image: { channel: null, ref: `${repository}@${b.digest}` },
        });
        await waitConverged(stack, "ch-hang", b.digest, 2, LONG_MS);
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "a channel pool switched to a fixed ref mid-rollout and back", async () => {
      const push = async (tag: string) =>
        (await stack.registry.pushImage({ repository: "bootc/sw", tag, version: tag })).digest;
      const d100 = await push("1.0.0");
      const d101 = await push("1.0.1");
      const swRepo = `${stack.registry.host}/bootc/sw`;
      const nodes = await addNodes(stack, "ch-switch", 3, { image: `${swRepo}@${d100}` });
      await stack.createPool(
        "ch-switch",
        {
          ...poolSpec("ch-switch", "", {
            maxUnavailable: 1,
            onFailure: "RollbackPool",
            rebootTimeoutSeconds: NO_TIMEOUT_EXPECTED_S,
            health: { timeoutSeconds: NO_TIMEOUT_EXPECTED_S },
          }),
          image: {
            channel: { repository: swRepo, constraint: "~1.0" },
          } as BootcNodePool["spec"]["image"],
        } as Parameters<typeof stack.createPool>[1],
      );
      await waitPool(
        stack,
        "ch-switch",
        async () => {
          const objs = await nodesByName(stack);
          return nodes.some((n) => holdsRebootSlot(objs.get(n) ?? {})) || undefined;
        },
        "the channel's 1.0.1 rollout takes a slot",
        LONG_MS,
      );
      await patchPoolSpec(stack, "ch-switch", {
        image: { channel: null, ref: `${swRepo}@${d100}` },
      });
      await waitConverged(stack, "ch-switch", d100, 3, LONG_MS);
      await patchPoolSpec(stack, "ch-switch", {
        image: { ref: null, channel: { repository: swRepo, constraint: "~1.0" } },
      });
      const p = await waitConverged(stack, "ch-switch", d101, 3, LONG_MS);
      assert.equal(p.status?.channel?.currentVersion, "1.0.1");
      assert.equal(degraded(p)?.status ?? "False", "False");
      await assertInvariants(stack, nodes);
    });
  } finally {
    stack.fleet.beforeJudge = undefined;
    await hanging.stop();
    await stopStack(stack);
  }
});
