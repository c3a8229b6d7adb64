/**
 * End-to-end health-gated rollouts (issue 14) with the real controller, the real
 * daemons and simulated hosts that boot bad images in each of the four ways the
 * simulator knows (a unit fails; the kubelet never gets Ready; the host falls
 * back by itself; the host crash-loops and then falls back):
 *
 * 1. A 6-node pool with a canary and `onFailure: RollbackPool`: a bad image is
 *    caught on the canary, the canary is rolled back, no other node reboots into
 *    it, the pool ends on its previous image with the failure in its history, and
 *    the second and third bad images open the circuit breaker.
 * 2. Every policy against every kind of bad image, on 2-node pools side by side.
 * 3. Boot assessment: an image whose boot never reaches boot-complete.target fails
 *    the canary of a pool that requires the assessment, which rolls back, and passes
 *    a pool that does not read it.
 * 4. Halt threshold: with every slot node's drain stuck on a VolumeAttachment,
 *    `maxUnhealthy` 1 and 50% halt where 3 does not.
 * 5. A halted pool deleted under `deletionPolicy: RollForward` cannot finish: its
 *    nodes are handed back where they stand, and the pool goes.
 */
import assert from "node:assert/strict";
import {
  ANNOTATION_FAILED_IMAGE,
  ANNOTATION_RESET_CIRCUIT,
  type BootcNodePool,
  findCondition,
  holdsRebootSlot,
  isDisrupted,
} from "../../lib/api/mod.ts";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import { isNotFound, Resources } from "../../lib/kube/mod.ts";
import { BAD_BOOT_LABEL, DEFAULT_BOOT_CHECK_UNIT } from "../bootc_sim/bad_boot.ts";
import { SSHD_UNIT } from "../bootc_sim/systemctl.ts";
import type { VolumeAttachmentLike } from "../../controller/model/drain.ts";
import { startStack } from "../harness/stack.ts";
import { slotHolders } from "./slots.ts";
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

/** Seconds a node may take to come back Ready on the target (and to pass its checks). */
const TIMEOUT_S = 45;
const LONG_MS = 240_000;

Deno.test("health: bad images are caught, rolled back per policy, and open the circuit", async (t) => {
  const stack = await startStack({
    limits: Object.fromEntries(
      ([
        ["fleet", 2],
        ["boot-req", 1],
        ["boot-ign", 1],
        ["abandon", 1],
        ...HALT_CASES.map((c) => [c.name, c.maxUnavailable] as const),
        ...matrixPools().map((p) => [p.name, 1] as const),
      ] as [string, number][]).map(([n, maxUnavailable]) => [n, { maxUnavailable }]),
    ),
  });
  const { v2, repository } = stack.images;
  const good = `${repository}@${v2.digest}`;
  const bad = async (tag: string, mode: string) => {
    const pushed = await stack.registry.pushImage({
      repository: "bootc/os",
      tag,
      version: `bad-${tag}`,
      labels: { [BAD_BOOT_LABEL]: mode },
    });
    return { digest: pushed.digest, image: `${repository}@${pushed.digest}` };
  };
  const reboots = () => new Map([...stack.fleet.nodes].map(([n, m]) => [n, m.reboots]));
  try {
    await step(
      t,
      "6 nodes, canary + RollbackPool: three bad images, the circuit opens",
      async () => {
        const nodes = await addNodes(stack, "fleet", 6);
        await stack.createPool("fleet", {
          ...poolSpec("fleet", good, {
            maxUnavailable: 2,
            onFailure: "RollbackPool",
            canary: { nodes: 1, soakSeconds: 5 },
            rebootTimeoutSeconds: TIMEOUT_S,
            health: { timeoutSeconds: TIMEOUT_S },
          }),
        });
        // A good rollout first: the canary goes alone, soaks, then the rest follows.
        let sawSoak = false;
        await waitPool(
          stack,
          "fleet",
          async () => {
            const p = await getPool(stack, "fleet");
            if (p.status?.canary?.phase === "Soaking") sawSoak = true;
            return p.status?.canary?.phase === "Passed" || undefined;
          },
          "the canary passes",
          LONG_MS,
        );
        assert.ok(sawSoak, "the pool reported the canary's soak");
        await waitConverged(stack, "fleet", v2.digest, 6, LONG_MS);
        const first = (await getPool(stack, "fleet")).status?.history?.at(-1);
        assert.equal(first?.outcome, "Succeeded");

        const badImages = [
          await bad("bad-unit", "unit-fails"),
          await bad("bad-fallback", "falls-back"),
          await bad("bad-loop", "reboot-loop:2"),
        ];
        for (const [i, b] of badImages.entries()) {
          const before = reboots();
          await patchPoolSpec(stack, "fleet", { image: { ref: b.image } });
          const p = await waitPool(
            stack,
            "fleet",
            async () => {
              const p = await getPool(stack, "fleet");
              return p.status?.consecutiveFailures === i + 1 &&
                p.status.rollbackHold?.failedImage === b.image && p;
            },
            `bad image ${i + 1} is caught and rolled back`,
            LONG_MS,
          );
          assert.ok(p.status?.failedDigests?.includes(b.digest));
          await waitConverged(stack, "fleet", v2.digest, 6, LONG_MS);
          // Only the canary rebooted (into the bad image, and back): nobody else.
          const after = reboots();
          const rebooted = nodes.filter((n) => (after.get(n) ?? 0) > (before.get(n) ?? 0));
          assert.equal(rebooted.length, 1, `only the canary rebooted, not ${rebooted.join(", ")}`);
          const done = await getPool(stack, "fleet");
          const failedRevision = done.status?.history?.find((r) => r.digest === b.digest);
          assert.equal(failedRevision?.outcome, "RolledBack");
          assert.equal(done.status?.history?.at(-1)?.digest, v2.digest);
          assert.equal(done.status?.history?.at(-1)?.outcome, "Succeeded");
          // The user's spec is not rewritten: it still names the bad image.
          assert.equal(done.spec.image.ref, b.image);
          const circuit = findCondition(done.status?.conditions, "CircuitOpen");
          assert.equal(circuit?.status ?? "False", i === 2 ? "True" : "False");
        }
        const events = await stack.cp.client.resource<
          { metadata?: { name?: string }; reason?: string }
        >(Resources.events).list();
        assert.ok(events.items.some((e) => e.reason === "CircuitOpen"), "a CircuitOpen event");
        // A user resets the breaker.
        await stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools).patch("fleet", {
          metadata: { annotations: { [ANNOTATION_RESET_CIRCUIT]: "1" } },
        }, { type: "merge" });
        await waitPool(stack, "fleet", async () => {
          const p = await getPool(stack, "fleet");
          return findCondition(p.status?.conditions, "CircuitOpen")?.status === "False";
        }, "the circuit closes after the reset");
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "every policy against every kind of bad image", async () => {
      const badByMode = new Map<string, { digest: string; image: string }>();
      for (const mode of ["unit-fails", "falls-back", "never-ready", "reboot-loop:2"]) {
        badByMode.set(mode, await bad(`m-${mode.replace(/[^a-z]/g, "")}`, mode));
      }
      const pools = matrixPools();
      const all: string[] = [];
      // Booted into the good image: the pool converges at once, and its history has it.
      await Promise.all(pools.map(async (p) => {
        all.push(...await addNodes(stack, p.name, 2, { image: good }));
        await stack.createPool(p.name, {
          ...poolSpec(p.name, good, {
            maxUnavailable: 1,
            onFailure: p.policy,
            rebootTimeoutSeconds: TIMEOUT_S,
            health: { timeoutSeconds: TIMEOUT_S },
          }),
        });
      }));
      await Promise.all(pools.map((p) => waitConverged(stack, p.name, v2.digest, 2, LONG_MS)));
      const before = reboots();
      await Promise.all(
        pools.map((p) =>
          patchPoolSpec(stack, p.name, { image: { ref: badByMode.get(p.mode)!.image } })
        ),
      );
      await Promise.all(pools.map(async (p) => {
        const b = badByMode.get(p.mode)!;
        const names = [`${p.name}-1`, `${p.name}-2`];
        if (p.policy === "RollbackPool") {
          await waitPool(
            stack,
            p.name,
            async () => {
              const pool = await getPool(stack, p.name);
              return pool.status?.rollbackHold?.failedImage === b.image || undefined;
            },
            `${p.name}: the pool rolls back`,
            LONG_MS,
          );
          await waitConverged(stack, p.name, v2.digest, 2, LONG_MS);
        } else {
          // The failed node is reported; with RollbackNode it is back on the good image.
          const failed = await waitPool(
            stack,
            p.name,
            async () => {
              const pool = await getPool(stack, p.name);
              const degraded = findCondition(pool.status?.conditions, "Degraded");
              if (degraded?.reason !== "HealthCheckFailed") return undefined;
              const bns = await poolNodes(stack, p.name);
              const nodeObjects = await nodesByName(stack);
              const bn = bns.find((x) =>
                p.policy === "RollbackNode"
                  ? x.metadata.annotations?.[ANNOTATION_FAILED_IMAGE] === b.image &&
                    x.status?.booted?.imageDigest === v2.digest &&
                    !isDisrupted(nodeObjects.get(x.metadata.name ?? "") ?? {})
                  : findCondition(x.status?.conditions, "Verified")?.status === "False" &&
                    holdsRebootSlot(nodeObjects.get(x.metadata.name ?? "") ?? {})
              );
              return bn?.metadata.name;
            },
            `${p.name}: a failed node is reported (${p.policy})`,
            LONG_MS,
          );
          assert.ok(names.includes(failed));
          // The user moves the pool back to the good image; everything converges.
          await patchPoolSpec(stack, p.name, { image: { ref: good } });
          await waitConverged(stack, p.name, v2.digest, 2, LONG_MS);
        }
        const history = (await getPool(stack, p.name)).status?.history ?? [];
        const outcome = history.find((r) => r.digest === b.digest)?.outcome;
        assert.equal(
          outcome,
          p.policy === "RollbackPool" ? "RolledBack" : "Failed",
          `${p.name}: history ${JSON.stringify(history)}`,
        );
        // The second node never rebooted: one bad boot per pool at most.
        const after = reboots();
        const rebooted = names.filter((n) => (after.get(n) ?? 0) > (before.get(n) ?? 0));
        assert.equal(rebooted.length, 1, `${p.name}: rebooted ${rebooted.join(", ")}`);
      }));
      await assertInvariants(stack, all);
    });

    await step(
      t,
      "boot assessment: a boot that never completes fails the canary and rolls back",
      async () => {
        const incomplete = await bad("boot-incomplete", "boot-incomplete");
        const all: string[] = [];
        await Promise.all(["boot-req", "boot-ign"].map(async (name) => {
          all.push(...await addNodes(stack, name, 2, { image: good }));
          await stack.createPool(name, {
            ...poolSpec(name, good, {
              maxUnavailable: 1,
              ...(name === "boot-req"
                ? { onFailure: "RollbackPool", canary: { nodes: 1, soakSeconds: 5 } }
                : { onFailure: "Halt" }),
              rebootTimeoutSeconds: TIMEOUT_S,
              // Listed units replace is-system-running: the failed boot check goes unseen
              // unless the boot assessment is required.
              health: {
                timeoutSeconds: TIMEOUT_S,
                units: [SSHD_UNIT],
                ...(name === "boot-req" ? { bootAssessment: "Require" } : {}),
              },
            }),
          });
        }));
        await Promise.all(
          ["boot-req", "boot-ign"].map((n) => waitConverged(stack, n, v2.digest, 2, LONG_MS)),
        );
        const before = reboots();
        await Promise.all(
          ["boot-req", "boot-ign"].map((n) =>
            patchPoolSpec(stack, n, { image: { ref: incomplete.image } })
          ),
        );
        // Without the assessment the host looks healthy: the pool converges on the image.
        // Meanwhile boot-req's canary reports its incomplete boot until it is rolled back.
        const [, failed] = await Promise.all([
          waitConverged(stack, "boot-ign", incomplete.digest, 2, LONG_MS),
          waitPool(
            stack,
            "boot-req",
            async () => {
              const bns = await poolNodes(stack, "boot-req");
              return bns.find((x) =>
                findCondition(x.status?.conditions, "HostHealthy")?.status === "False" &&
                x.status?.verification?.failedChecks?.includes("BootAssessment")
              );
            },
            "boot-req: the boot assessment fails the canary",
            LONG_MS,
          ),
        ]);
        const healthy = findCondition(failed.status?.conditions, "HostHealthy");
        assert.equal(healthy?.reason, "BootIncomplete");
        assert.ok(healthy?.message?.includes(DEFAULT_BOOT_CHECK_UNIT), healthy?.message);
        // RollbackPool: the canary goes back to the good image, and the other node never moved.
        await waitPool(
          stack,
          "boot-req",
          async () =>
            (await getPool(stack, "boot-req")).status?.rollbackHold?.failedImage ===
              incomplete.image || undefined,
          "boot-req: the pool rolls back",
          LONG_MS,
        );
        await waitConverged(stack, "boot-req", v2.digest, 2, LONG_MS);
        assert.ok(
          (await getPool(stack, "boot-req")).status?.failedDigests?.includes(incomplete.digest),
        );
        const after = reboots();
        const rebooted = ["boot-req-1", "boot-req-2"].filter((n) =>
          (after.get(n) ?? 0) > (before.get(n) ?? 0)
        );
        assert.deepEqual(rebooted, [failed.metadata.name]);
        await assertInvariants(stack, all);
      },
    );

    await step(t, "halt threshold at 1, 3 and 50% (stuck drains)", async () => {
      // Each node's drain waits on a VolumeAttachment that never detaches: past the drain
      // timeout every slot node is unhealthy, and only the threshold says whether it halts.
      const attachments = stack.cp.client.resource<VolumeAttachmentLike>(
        Resources.volumeattachments,
      );
      const all: string[] = [];
      await Promise.all(HALT_CASES.map(async (c) => {
        const names = await addNodes(stack, c.name, c.nodes);
        all.push(...names);
        for (const n of names) {
          await attachments.create({
            apiVersion: "storage.k8s.io/v1",
            kind: "VolumeAttachment",
            metadata: { name: `csi-${n}` },
            spec: {
              attacher: "fake.csi.bootc.test",
              nodeName: n,
              source: { persistentVolumeName: `pv-${n}` },
            },
          });
        }
        await stack.createPool(
          c.name,
          poolSpec(c.name, `${repository}@${stack.images.v1.digest}`, {
            maxUnavailable: c.maxUnavailable,
            maxUnhealthy: c.maxUnhealthy,
            drainTimeoutSeconds: 10,
            drain: { waitForVolumeDetach: true },
          }),
        );
        await waitConverged(stack, c.name, stack.images.v1.digest, c.nodes, LONG_MS);
        await patchPoolSpec(stack, c.name, { image: { ref: good } });
        const pool = await waitPool(
          stack,
          c.name,
          async () => {
            const p = await getPool(stack, c.name);
            const degraded = findCondition(p.status?.conditions, "Degraded");
            if (degraded?.status !== "True") return undefined;
            return (!c.halts || p.status?.state === "Halted") && p;
          },
          `${c.name}: its drains time out${c.halts ? " and the rollout halts" : ""}`,
          LONG_MS,
        );
        assert.equal(pool.status?.slots?.maxUnhealthy, c.resolved, c.name);
        // Both slots were granted together: past both timeouts, the state still holds.
        await new Promise((r) => setTimeout(r, 5_000));
        const later = await getPool(stack, c.name);
        assert.equal(
          later.status?.state === "Halted",
          c.halts,
          `${c.name}: ${later.status?.state}`,
        );
        assert.equal((await slotHolders(stack, c.name)).length, c.maxUnavailable, c.name);
        for (const n of names) await attachments.delete(`csi-${n}`);
        await waitConverged(stack, c.name, v2.digest, c.nodes, LONG_MS);
      }));
      await assertInvariants(stack, all);
    });

    await step(t, "a halted pool deleted under RollForward hands its nodes back", async () => {
      const failing = await bad("halt-unit", "unit-fails");
      const name = "abandon";
      const nodes = await addNodes(stack, name, 2, { image: good });
      await stack.createPool(
        name,
        poolSpec(name, good, {
          maxUnavailable: 1,
          onFailure: "Halt",
          rebootTimeoutSeconds: TIMEOUT_S,
          health: { timeoutSeconds: TIMEOUT_S },
        }, { deletionPolicy: { mode: "RollForward" } }),
      );
      await waitConverged(stack, name, v2.digest, 2, LONG_MS);
      await patchPoolSpec(stack, name, { image: { ref: failing.image } });
      await waitPool(
        stack,
        name,
        async () => (await getPool(stack, name)).status?.state === "Halted" || undefined,
        `${name}: the rollout halts on the failed node`,
        LONG_MS,
      );
      // The rollout forward cannot go on: the nodes go back as they stand, and the pool goes.
      const pools = stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
      await pools.delete(name);
      await waitPool(
        stack,
        name,
        () => pools.get(name).then(() => undefined, (e) => isNotFound(e) || Promise.reject(e)),
        `${name}: the halted pool hands its nodes back and goes`,
        LONG_MS,
      );
      const events = await stack.cp.client.resource<CoreEvent>(Resources.events, "default").list({
        fieldSelector: `involvedObject.name=${name},reason=DeletionFinishAbandoned`,
      });
      assert.ok(events.items.length > 0, "a DeletionFinishAbandoned event");
      const booted = await Promise.all(nodes.map(async (n) => {
        const { state } = await stack.fleet.nodes.get(n)!.host.readState();
        return state.booted?.image?.imageDigest;
      }));
      assert.deepEqual(booted.toSorted(), [failing.digest, v2.digest].toSorted());
      await assertInvariants(stack, nodes);
    });
  } finally {
    await stopStack(stack);
  }
});

/**
 * Pools whose every slot node is stuck in its drain: the threshold alone decides whether they
 * halt. 50% of 4 nodes is 2; the default, 2, would not halt the first.
 */
const HALT_CASES = [
  { name: "thr-1", nodes: 2, maxUnavailable: 1, maxUnhealthy: 1, resolved: 1, halts: true },
  { name: "thr-3", nodes: 3, maxUnavailable: 2, maxUnhealthy: 3, resolved: 3, halts: false },
  { name: "thr-50", nodes: 4, maxUnavailable: 2, maxUnhealthy: "50%", resolved: 2, halts: true },
] as const;

/** The 2-node pools of the policy matrix. */
function matrixPools(): { name: string; policy: string; mode: string }[] {
  const out: { name: string; policy: string; mode: string }[] = [];
  const modes: [string, string][] = [
    ["unit", "unit-fails"],
    ["back", "falls-back"],
    ["never", "never-ready"],
    ["loop", "reboot-loop:2"],
  ];
  for (const [policy, short] of [["Halt", "h"], ["RollbackNode", "n"]] as const) {
    for (const [m, mode] of modes) out.push({ name: `${short}-${m}`, policy, mode });
  }
  // RollbackPool meets the other modes in the first step.
  out.push({ name: "p-never", policy: "RollbackPool", mode: "never-ready" });
  return out;
}
