/**
 * End-to-end rollout scenarios: the real controller and daemons (built
 * executables, least-privilege credentials) on a real control plane, real
 * registry and simulated bootc hosts, each checked by the invariant tracker.
 */
import assert from "node:assert/strict";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import type { INode } from "kubernetes-models/v1/Node";
import { type BootcNode, findCondition } from "../../lib/api/mod.ts";
import { waitSlots } from "./slots.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  idleReason,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
} from "./scenario.ts";

Deno.test("rollouts: full, rollback, pause/resume, rollover, soft reboot", async (t) => {
  const stack = await startStack({
    limits: { main: { maxUnavailable: 2 }, soft: { maxUnavailable: 1 } },
  });
  try {
    const { v1, v2, repository } = stack.images;
    const nodes = await addNodes(stack, "main", 5, {
      image: `${repository}:stable`,
      unschedulable: ["main-5"],
    });
    await stack.createPool("main", poolSpec("main", `${repository}:stable`, { maxUnavailable: 2 }));
    await waitConverged(stack, "main", v1.digest, 5);

    await step(t, "full rollout: moving the tag updates every node, 2 at a time", async () => {
      const writesBefore = await stack.apiWrites();
      const nodeWritesBefore = stack.fleet.nodeWrites;
      const rebootsBefore = stack.fleet.rebootCount;
      const started = Date.now();
      await stack.registry.tagExisting("bootc/os", "v2", "stable");
      const pool = await waitConverged(stack, "main", v2.digest, 5);
      const seconds = (Date.now() - started) / 1000;
      assert.equal(stack.fleet.rebootCount - rebootsBefore, 5);
      assert.equal(pool.status?.deployedDigest, v2.digest);
      assert.equal(pool.status?.updateAvailable, false);
      assert.equal(findCondition(pool.status?.conditions, "UpToDate")?.reason, "AllUpdated");
      await assertInvariants(stack, nodes);
      assert.ok(stack.tracker.maxDisrupted <= 2);
      // The controller's verdict rode in each release and the daemon recorded it.
      await waitFor(async () => {
        const bns = await stack.cp.client.resource<BootcNode>(Resources.bootcNodes).list();
        return nodes.every((name) => {
          const c = bns.items.find((b) => b.metadata.name === name)?.status?.conditions;
          const verified = findCondition(c, "Verified");
          return verified?.status === "True" && verified.reason === "ChecksPassed" &&
            verified.message.includes(v2.digest.slice(0, 19)) &&
            findCondition(c, "Updated")?.status === "True";
        });
      }, { timeoutMs: 30_000, message: "Verified and Updated recorded on every BootcNode" });
      const writes = await stack.apiWrites();
      const harnessWrites = stack.fleet.nodeWrites - nodeWritesBefore;
      const perNode = (writes.total - harnessWrites - writesBefore.total) / 5;
      // Per node: ~4 daemon status writes, ~4 BootcNode patches, cordon, uncordon, one
      // eviction, events, and a share of the pool's status writes. A regression that
      // writes on every reconcile or heartbeat would blow well past this.
      assert.ok(perNode < 40, `${perNode} API writes per node`);
      // Every transition left an event users can see with `kubectl get events`.
      const events = await stack.cp.client.resource<CoreEvent>(Resources.events, "default").list();
      const reasons = new Set(
        events.items.filter((e) =>
          e.involvedObject?.name === "main" || nodes.includes(e.involvedObject?.name ?? "")
        ).map((e) => e.reason),
      );
      for (
        const reason of [
          "TargetChanged",
          "SlotAssigned",
          "DrainCompleted",
          "NodeUpdated",
          "RolloutComplete",
        ]
      ) assert.ok(reasons.has(reason), `no ${reason} event; saw ${[...reasons].join(", ")}`);
      // At most 4 Normal events per node for its update (granted, drained, rebooted,
      // verified): conditions carry the phases in between.
      for (const name of nodes) {
        const normal = events.items.filter((e) =>
          e.involvedObject?.name === name && e.type === "Normal" &&
          e.source?.component?.startsWith("bootc-operator")
        );
        const n = normal.reduce((sum, e) => sum + (e.count ?? 1), 0);
        assert.ok(n <= 4, `${name}: ${n} events: ${normal.map((e) => e.reason).join(", ")}`);
      }
      // The Node tells its story: the annotations for people, and its disruption (the
      // controller's and the daemon's reboot) in events whose object is the Node.
      const nodeObjects = await stack.cp.client.resource<INode>(Resources.nodes).list();
      for (const name of nodes) {
        const node = nodeObjects.items.find((n) => n.metadata?.name === name);
        const a = node?.metadata?.annotations ?? {};
        assert.equal(a["bootc.dev/state"], "Updated", name);
        assert.equal(a["bootc.dev/current-version"], "2.0", name);
        assert.equal(a["bootc.dev/current-image"], a["bootc.dev/desired-image"], name);
        assert.ok(a["bootc.dev/current-image"]?.endsWith(v2.digest.slice(0, 19)), name);
        const own = events.items.filter((e) =>
          e.involvedObject?.kind === "Node" && e.involvedObject.name === name
        );
        for (const reason of ["SlotAssigned", "DrainCompleted", "Rebooting", "NodeUpdated"]) {
          assert.ok(
            own.some((e) => e.reason === reason && e.involvedObject.uid === node?.metadata?.uid),
            `${name}: no ${reason} event on the Node; saw ${own.map((e) => e.reason).join(", ")}`,
          );
        }
      }
      console.log(
        `full rollout of 5 nodes (maxUnavailable 2): ${seconds.toFixed(1)}s, ` +
          `${
            perNode.toFixed(1)
          } API writes per node, most disrupted at once ${stack.tracker.maxDisrupted}`,
      );
    });

    await step(t, "rollback: pinning the previous digest rolls every node back", async () => {
      await patchPoolSpec(stack, "main", { image: { ref: `${repository}@${v1.digest}` } });
      await waitConverged(stack, "main", v1.digest, 5);
      await assertInvariants(stack, nodes);
    });

    await step(t, "pause stops new slots while staging goes on; resume finishes", async () => {
      await patchPoolSpec(stack, "main", {
        image: { ref: `${repository}@${v2.digest}` },
        rollout: { paused: true },
      });
      await waitNodes(
        stack,
        "main",
        (bns) => bns.length === 5 && bns.every((bn) => idleReason(bn) === "Staged"),
        "every node should stage v2 while paused",
      );
      const rebootsPaused = stack.fleet.rebootCount;
      await new Promise((r) => setTimeout(r, 3000));
      assert.equal(stack.fleet.rebootCount, rebootsPaused, "no reboot while paused");
      const paused = await getPool(stack, "main");
      assert.equal(findCondition(paused.status?.conditions, "UpToDate")?.reason, "Paused");
      assert.equal(paused.status?.slotsInUse ?? 0, 0);
      await patchPoolSpec(stack, "main", { rollout: { paused: false } });
      await waitConverged(stack, "main", v2.digest, 5);
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "rollover: the tag moves again mid-rollout and every node ends on v3",
      async () => {
        const v3 = await stack.registry.pushImage({
          repository: "bootc/os",
          tag: "v3",
          version: "3.0",
        });
        await stack.registry.tagExisting("bootc/os", "v1", "stable");
        await patchPoolSpec(stack, "main", {
          image: { ref: `${repository}:stable` },
          rollout: { maxUnavailable: 1 },
        });
        stack.tracker.setLimit("main", { maxUnavailable: 1 });
        // Wait until the rollout to v1 has rebooted at least one node, then move the tag.
        await waitNodes(
          stack,
          "main",
          (bns) => bns.some((bn) => bn.status?.booted?.imageDigest === v1.digest),
          "one node should reach v1 before the tag moves",
        );
        await stack.registry.tagExisting("bootc/os", "v3", "stable");
        await waitConverged(stack, "main", v3.digest, 5, 180_000);
        await assertInvariants(stack, nodes);
      },
    );

    await step(
      t,
      "two replicas: the leader is SIGKILLed mid-rollout, the standby finishes",
      async () => {
        const standby = await stack.startStandbyController();
        const metricsUrl = `http://127.0.0.1:${standby.metricsPort}`;
        // The standby syncs its caches and reports ready while the leader holds the Lease.
        await waitFor(async () => {
          const res = await fetch(`${metricsUrl}/readyz`).catch(() => undefined);
          await res?.body?.cancel();
          return res?.ok;
        }, { timeoutMs: 30_000, message: "standby controller ready" });
        await patchPoolSpec(stack, "main", { image: { ref: `${repository}@${v2.digest}` } });
        await waitSlots(stack, "main", (h) => h.length > 0, "a node in a slot");
        await stack.killController();
        // Lease expiry (15 s) + takeover, then the rest of the rollout.
        await waitConverged(stack, "main", v2.digest, 5, 180_000);
        await assertInvariants(stack, nodes);
        const res = await fetch(`${metricsUrl}/metrics`);
        const metrics = await res.text();
        assert.match(metrics, /bootc_pool_nodes\{[^}]*pool="main"[^}]*\} 5/);
        assert.match(metrics, /bootc_pool_slots_in_use\{pool="main"\} 0/);
        // The rollout gauges the new leader reads from the pool's status: the target's
        // short form, the finished rollout and the usual duration from status.history.
        const short = v2.digest.slice("sha256:".length, "sha256:".length + 12);
        const rollout = [
          new RegExp(
            `^bootc_pool_target_info\\{pool="main",target="[^"]*",version="[^"]*",` +
              `digest="${short}"\\} 1$`,
            "m",
          ),
          /^bootc_pool_rollout_start_timestamp_seconds\{pool="main"\} \d+(\.\d+)?$/m,
          /^bootc_pool_rollout_end_timestamp_seconds\{pool="main",outcome="Succeeded"\} \d/m,
          /^bootc_pool_rollout_expected_duration_seconds\{pool="main"\} \d/m,
          /^bootc_pool_paused\{pool="main"\} 0$/m,
          /^bootc_pool_circuit_open\{pool="main"\} 0$/m,
          new RegExp(
            `^bootc_pool_booted_nodes\\{pool="main",version="[^"]*",digest="${short}"\\} 5$`,
            "m",
          ),
        ];
        let text = "";
        try {
          await waitFor(async () => {
            text = await (await fetch(`${metricsUrl}/metrics`)).text();
            return rollout.every((r) => r.test(text)) ? true : undefined;
          }, { timeoutMs: 15_000, message: "the rollout gauges" });
        } catch (e) {
          const missing = rollout.filter((r) => !r.test(text));
          throw new Error(`${(e as Error).message}: missing ${missing.join(", ")}\n${text}`);
        }
      },
    );

    await step(t, "soft reboots are used when the pool allows them", async () => {
      const softNodes = await addNodes(stack, "soft", 2, { softRebootCapable: true });
      const events: boolean[] = [];
      await stack.createPool(
        "soft",
        poolSpec("soft", `${repository}@${v1.digest}`, {}, {
          disruption: { rebootPolicy: "AllowSoftReboot" },
        }),
      );
      await waitConverged(stack, "soft", v1.digest, 2);
      const bootIds = await Promise.all(
        softNodes.map((n) => stack.fleet.nodes.get(n)!.host.bootId()),
      );
      await patchPoolSpec(stack, "soft", { image: { ref: `${repository}@${v2.digest}` } });
      await waitConverged(stack, "soft", v2.digest, 2);
      for (const [i, n] of softNodes.entries()) {
        // A soft reboot keeps the boot ID (bootc-host.md).
        events.push((await stack.fleet.nodes.get(n)!.host.bootId()) === bootIds[i]);
      }
      assert.deepEqual(events, [true, true], "both nodes soft-rebooted");
      await assertInvariants(stack, softNodes);
    });

    await step(t, "a user's cordon survives every rollout", async () => {
      const node = await stack.cp.client.resource<INode>(Resources.nodes).get("main-5");
      assert.equal(node.spec?.unschedulable, true);
    });
  } catch (error) {
    console.error(`stack logs kept in ${stack.logDir}`);
    await stack.stop({ keepLogs: true });
    throw error;
  }
  await stopStack(stack);
});
