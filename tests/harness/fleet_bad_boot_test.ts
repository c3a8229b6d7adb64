/**
 * The fleet supervisor on a real control plane with hosts that boot bad images
 * (`tests/bootc_sim/bad_boot.ts`): the Node's readiness and the daemon's life
 * through a fall-back, a crash loop and a never-ready boot, and the invariant
 * tracker judging `bootc rollback --apply` by the same rule as any apply. The
 * "daemon" is a stand-in process (the supervisor only starts and kills it); the
 * test invokes bootc itself, as a daemon would, after writing the facts that
 * authorize it (or not).
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  API_VERSION,
  type BootcNode,
  type BootcNodePool,
  LABEL_MANAGED,
  POOL,
} from "../../lib/api/mod.ts";
import { Informer, isNotFound, Resources } from "../../lib/kube/mod.ts";
import { badImageLabels, DEFAULT_BAD_UNIT } from "../bootc_sim/bad_boot.ts";
import { runBootc, startBootc } from "../bootc_sim/testing.ts";
import { startControlPlane } from "./control_plane.ts";
import { Fleet, type FleetEvent, type FleetNode } from "./fleet.ts";
import { InvariantTracker, watchInvariants } from "./invariants.ts";
import { startRegistry } from "./registry.ts";
import { waitFor } from "./wait.ts";

const CRDS = new URL("../../crds/", import.meta.url).pathname;
const POOL_NAME = "p";
const long = (message: string) => ({ timeoutMs: 120_000, intervalMs: 100, message });

function readyOf(node: INode): string | undefined {
  return node.status?.conditions?.find((c) => c.type === "Ready")?.status;
}

Deno.test("fleet: bad images boot as a machine would; rollback --apply is judged like any apply", async (t) => {
  const cp = await startControlPlane({ quiet: true });
  const reg = await startRegistry();
  const logDir = await Deno.makeTempDir({ prefix: "fleet-bad-boot-" });
  const ac = new AbortController();
  const tracker = new InvariantTracker({ limits: {} });
  const watch = watchInvariants(cp.client, tracker);
  const events: FleetEvent[] = [];
  /** Whether the node's daemon was running at each `boot-crashed` event. */
  const daemonAtCrash: boolean[] = [];
  const fleet = new Fleet({
    controlPlane: cp,
    // A stand-in daemon: the supervisor starts it, kills it at reboots and restarts it.
    daemonCommand: ["bash", "-c", "exec sleep 3600", "fake-daemon"],
    logDir,
    tracker,
    rebootDelayMs: 200,
    onEvent: (e) => {
      events.push(e);
      if (e.type === "boot-crashed") {
        daemonAtCrash.push(fleet.nodes.get(e.node)?.daemon?.running === true);
      }
    },
  });
  // Every Ready status of every Node, in the order the watch delivered them.
  const readiness = new Map<string, string[]>();
  const nodeInformer = new Informer<INode>({
    resource: cp.client.resource<INode>(Resources.nodes),
  });
  const seeReady = (n: INode) => {
    const name = n.metadata?.name ?? "";
    const seen = readiness.get(name) ?? [];
    const status = readyOf(n) ?? "Unknown";
    if (seen.at(-1) !== status) seen.push(status);
    readiness.set(name, seen);
  };
  nodeInformer.onAdd(seeReady);
  nodeInformer.onUpdate((_, n) => seeReady(n));
  const informing = nodeInformer.start(ac.signal);
  try {
    for await (const entry of Deno.readDir(CRDS)) await cp.applyYaml(`${CRDS}${entry.name}`);
    await watch.synced;
    await nodeInformer.waitForSync(ac.signal);

    const ref = async (tag: string, labels?: Record<string, string>) => {
      const pushed = await reg.pushImage({ repository: "os", tag, version: tag, labels });
      return { ref: `${reg.host}/os@${pushed.digest}`, digest: pushed.digest };
    };
    const good = await ref("v1");
    const fallsBack = await ref("falls-back", badImageLabels("falls-back"));
    const loop = await ref("loop", badImageLabels("reboot-loop:2"));
    const neverReady = await ref("never-ready", badImageLabels("never-ready"));
    const unitFails = await ref("unit-fails", badImageLabels("unit-fails"));

    const pool = await cp.client.resource<BootcNodePool>(Resources.bootcNodePools).create({
      apiVersion: API_VERSION,
      kind: POOL.kind,
      metadata: { name: POOL_NAME },
      spec: { nodeSelector: {}, image: { ref: good.ref } },
    } as unknown as BootcNodePool);
    const nodes = cp.client.resource<INode>(Resources.nodes);
    const bootcNodes = cp.client.resource<BootcNode>(Resources.bootcNodes);

    /**
     * Writes what the operator writes before an apply: the BootcNode (owned by the pool) asks
     * for `desired` Booted; the Node is cordoned, holds the slot and is drained for `drainedFor`.
     */
    const authorize = async (node: string, desired: string, drainedFor = desired) => {
      const spec = { desiredImage: desired, desiredImageState: "Booted" as const };
      try {
        const bn = await bootcNodes.get(node);
        await bootcNodes.update({ ...bn, spec: { ...bn.spec, ...spec } });
      } catch (e) {
        if (!isNotFound(e)) throw e;
        await bootcNodes.create({
          apiVersion: API_VERSION,
          kind: "BootcNode",
          metadata: {
            name: node,
            ownerReferences: [{
              apiVersion: API_VERSION,
              kind: POOL.kind,
              name: POOL_NAME,
              uid: pool.metadata!.uid!,
              controller: true,
            }],
          },
          spec,
        } as unknown as BootcNode);
      }
      const now = new Date().toISOString();
      await nodes.patch(node, {
        metadata: {
          annotations: {
            [ANNOTATION_IN_REBOOT_SLOT]: now,
            [ANNOTATION_SLOT_POOL]: POOL_NAME,
            [ANNOTATION_WAS_CORDONED]: "false",
            [ANNOTATION_DRAINED_AT]: now,
            [ANNOTATION_DRAINED_FOR]: drainedFor,
          },
        },
        spec: { unschedulable: true },
      }, { type: "merge" });
    };
    /** Releases the node as the operator would after the reboot. */
    const release = async (node: string) => {
      await nodes.patch(node, {
        metadata: {
          annotations: {
            [ANNOTATION_IN_REBOOT_SLOT]: null,
            [ANNOTATION_SLOT_POOL]: null,
            [ANNOTATION_WAS_CORDONED]: null,
            [ANNOTATION_DRAINED_AT]: null,
            [ANNOTATION_DRAINED_FOR]: null,
          },
        },
        spec: { unschedulable: null },
      }, { type: "merge" });
    };
    const daemonUp = (m: FleetNode) =>
      waitFor(() => m.daemon?.running === true, long(`${m.name}'s daemon running`));
    const nodeReady = (name: string, want: "True" | "False") =>
      waitFor(
        async () => readyOf(await nodes.get(name)) === want,
        long(`${name} Ready=${want}`),
      );
    /** Runs `bootc <args>` the way the daemon does and waits for the reboot cycle to finish. */
    const applyAndWait = async (m: FleetNode, args: string[]) => {
      const reboots = m.reboots;
      const bootc = startBootc(m.host, args);
      try {
        await waitFor(() => m.reboots > reboots, long(`${m.name} rebooted for ${args.join(" ")}`));
      } finally {
        await bootc.kill();
      }
    };
    const digests = async (m: FleetNode) => {
      const s = await m.host.readState();
      return {
        staged: s.state.staged?.image?.imageDigest ?? null,
        booted: s.state.booted?.image?.imageDigest ?? null,
        rollback: s.state.rollback?.image?.imageDigest ?? null,
      };
    };
    const add = (name: string, managed = true) =>
      fleet.addNode(name, {
        image: good.ref,
        labels: managed ? { [LABEL_MANAGED]: "" } : {},
        pods: 0,
      });
    const [nFall, nLoop, nNever, nUnit] = await Promise.all([
      add("n-fall"),
      add("n-loop"),
      add("n-never"),
      // Not managed yet: no daemon, so nothing of the operator's ever authorized anything here.
      add("n-unit", false),
    ]);
    fleet.start();
    await Promise.all([nFall, nLoop, nNever].map(daemonUp));

    await t.step(
      "falls-back: back on the previous deployment, Ready, daemon restarted",
      async () => {
        await authorize(nFall.name, fallsBack.ref);
        await applyAndWait(nFall, ["switch", "--apply", fallsBack.ref]);
        assert.equal(nFall.fallBacks, 1);
        assert.equal(nFall.bootLoops, 0);
        assert.equal(nFall.lastBoot?.outcome, "fell-back");
        assert.deepEqual(await digests(nFall), {
          staged: null,
          booted: good.digest,
          rollback: fallsBack.digest,
        });
        const fell = events.find((e) => e.type === "fell-back" && e.node === nFall.name);
        assert.deepEqual(
          [fell?.image, fell?.booted, fell?.badBoot, fell?.crashes],
          [fallsBack.digest, good.digest, "falls-back", 1],
        );
        await nodeReady(nFall.name, "True");
        assert.equal(nFall.kubeletReady, true);
        await daemonUp(nFall);
        assert.equal(nFall.daemonStarts, 2);
        await release(nFall.name);
      },
    );

    await t.step(
      "reboot-loop:2: NotReady without a daemon through two crashes, then back",
      async () => {
        await authorize(nLoop.name, loop.ref);
        const before = readiness.get(nLoop.name)!.length;
        await applyAndWait(nLoop, ["switch", "--apply", loop.ref]);
        const crashes = events.filter((e) => e.type === "boot-crashed" && e.node === nLoop.name);
        assert.deepEqual(crashes.map((e) => [e.crashes, e.image, e.badBoot]), [
          [1, loop.digest, "reboot-loop:2"],
          [2, loop.digest, "reboot-loop:2"],
        ]);
        assert.deepEqual(daemonAtCrash, [false, false]);
        assert.equal(nLoop.bootLoops, 2);
        assert.equal(nLoop.fallBacks, 1);
        assert.equal(nLoop.reboots, 1, "the loop and the fall-back are one reboot cycle");
        assert.deepEqual(await digests(nLoop), {
          staged: null,
          booted: good.digest,
          rollback: loop.digest,
        });
        await nodeReady(nLoop.name, "True");
        // Ready went False once at the reboot and came back only after the fall-back (as the
        // watch delivered it, which may trail the GET above).
        await waitFor(
          () => readiness.get(nLoop.name)!.length > before + 1,
          long("the watch delivers the Node's return to Ready"),
        );
        assert.deepEqual(readiness.get(nLoop.name)!.slice(before - 1), ["True", "False", "True"]);
        // The machine's own boots are not reboots for the tracker: one, for the judged apply.
        assert.equal(tracker.reboots.filter((r) => r.node === nLoop.name).length, 1);
        await release(nLoop.name);
      },
    );

    await t.step(
      "never-ready: the daemon runs, the Node stays NotReady until rollback --apply",
      async () => {
        await authorize(nNever.name, neverReady.ref);
        await applyAndWait(nNever, ["switch", "--apply", neverReady.ref]);
        assert.equal(nNever.kubeletReady, false);
        assert.ok(events.some((e) => e.type === "boot-not-ready" && e.node === nNever.name));
        await daemonUp(nNever);
        assert.equal(readyOf(await nodes.get(nNever.name)), "False");
        assert.equal((await digests(nNever)).booted, neverReady.digest);

        // The controller rolls the node back: desiredImage = the rollback deployment's image.
        await authorize(nNever.name, good.ref);
        await applyAndWait(nNever, ["rollback", "--apply"]);
        const judged = tracker.applies.filter((a) => a.node === nNever.name).at(-1);
        assert.deepEqual(judged?.command, ["rollback", "--apply"]);
        assert.equal(judged?.verdict.allowed, true, judged?.verdict.message);
        assert.deepEqual(await digests(nNever), {
          staged: null,
          booted: good.digest,
          rollback: neverReady.digest,
        });
        await nodeReady(nNever.name, "True");
        assert.equal(nNever.kubeletReady, true);
        await release(nNever.name);
      },
    );

    await t.step(
      "unit-fails: Ready and degraded; an unauthorized rollback --apply is a violation",
      async () => {
        // Staged by hand and booted by a power cut: not an apply, so nothing to judge.
        const staged = await runBootc(nUnit.host, ["switch", unitFails.ref]);
        assert.equal(staged.code, 0, staged.stderr);
        await fleet.unexpectedReboot(nUnit.name);
        assert.deepEqual(await digests(nUnit), {
          staged: null,
          booted: unitFails.digest,
          rollback: good.digest,
        });
        assert.equal(nUnit.lastBoot?.failedUnit, DEFAULT_BAD_UNIT);
        await nodeReady(nUnit.name, "True");
        assert.equal(tracker.reboots.filter((r) => r.node === nUnit.name).length, 0);
        const running = await runBootc(nUnit.host, ["systemctl", "is-system-running"]);
        assert.deepEqual([running.stdout, running.code], ["degraded\n", 1]);
        const unit = await runBootc(nUnit.host, ["systemctl", "is-active", DEFAULT_BAD_UNIT]);
        assert.deepEqual([unit.stdout, unit.code], ["failed\n", 3]);
        assert.deepEqual(tracker.violations, [], "every apply so far was authorized");

        await nodes.patch(nUnit.name, { metadata: { labels: { [LABEL_MANAGED]: "" } } }, {
          type: "merge",
        });
        await daemonUp(nUnit);
        // The drain on record is for the bad image, not for the rollback target.
        await authorize(nUnit.name, good.ref, unitFails.ref);
        await applyAndWait(nUnit, ["rollback", "--apply", "--soft-reboot=auto"]);
        const judged = tracker.applies.filter((a) => a.node === nUnit.name).at(-1);
        assert.deepEqual(judged?.command, ["rollback", "--apply", "--soft-reboot=auto"]);
        assert.equal(judged?.verdict.allowed, false);
        assert.equal(judged?.verdict.reason, "AwaitingDrain");
        assert.equal(tracker.violations.length, 1);
        assert.match(
          tracker.violations[0],
          /n-unit invoked bootc rollback --apply --soft-reboot=auto without authorization \(AwaitingDrain/,
        );
        // The host rebooted regardless (the verdict is the checker's record), and is healthy.
        assert.equal((await digests(nUnit)).booted, good.digest);
        const after = await runBootc(nUnit.host, ["systemctl", "is-system-running"]);
        assert.deepEqual([after.stdout, after.code], ["running\n", 0]);
        await release(nUnit.name);
      },
    );
    assert.deepEqual(fleet.errors, []);
  } finally {
    await fleet.stop();
    ac.abort();
    await informing.catch(() => {});
    await watch.stop();
    await Promise.allSettled([cp.stop(), reg.stop()]);
    await Deno.remove(logDir, { recursive: true }).catch(() => {});
  }
});
