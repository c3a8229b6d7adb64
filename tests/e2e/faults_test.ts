/**
 * End-to-end fault scenarios: the controller SIGKILLed in each phase of a node's
 * update, a daemon killed mid-stage, the API server restarted and etcd compacted
 * mid-rollout, and an unexpected reboot of a staged node. Every rollout must
 * still converge with the invariants intact: nothing left cordoned, no slot
 * leaked, never more than maxUnavailable nodes disrupted.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import { ANNOTATION_DRAINED_AT, ANNOTATION_IN_REBOOT_SLOT } from "../../lib/api/mod.ts";
import { STAGING_REPORT_DELAY_MS } from "../../daemon/decide.ts";
import { waitFor } from "../harness/wait.ts";
import { waitSlots } from "./slots.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { type Stack, startStack } from "../harness/stack.ts";
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
  waitPool,
} from "./scenario.ts";

/** A policy refusing the controller's Node writes that drop `node`'s slot record. */
function denyReleasePolicy(node: string): string {
  return `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deny-release}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["UPDATE"]
        resources: ["nodes"]
  matchConditions:
    - name: controller
      expression: "request.userInfo.username.endsWith(':bootc-operator-controller')"
  validations:
    - expression: >-
        !(object.metadata.name == '${node}' && has(oldObject.metadata.annotations) &&
          '${ANNOTATION_IN_REBOOT_SLOT}' in oldObject.metadata.annotations &&
          (!has(object.metadata.annotations) ||
           !('${ANNOTATION_IN_REBOOT_SLOT}' in object.metadata.annotations)))
      message: the test denies the release
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-release}
spec:
  policyName: deny-release
  validationActions: [Deny]
`;
}

/** A policy refusing every eviction the controller asks for. */
const DENY_EVICTIONS = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deny-evictions}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods/eviction"]
  matchConditions:
    - name: controller
      expression: "request.userInfo.username.endsWith(':bootc-operator-controller')"
  validations:
    - expression: "false"
      message: the test denies evictions
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-evictions}
spec:
  policyName: deny-evictions
  validationActions: [Deny]
`;

/** A policy in force: the API server loads it before `patch` starts the rollout it refuses. */
async function underPolicy(stack: Stack, yaml: string, image: string): Promise<void> {
  await dropPolicies(stack);
  await stack.cp.applyYaml(yaml);
  await new Promise((r) => setTimeout(r, 2_000));
  await patchPoolSpec(stack, "faults", { image: { ref: image } });
}

/** The faults pool's Degraded condition once it says WritesFailing for `cause`, and the pool. */
async function waitWritesFailing(stack: Stack, cause: RegExp) {
  return await waitPool(
    stack,
    "faults",
    async () => {
      const pool = await getPool(stack, "faults");
      const degraded = pool.status?.conditions?.find((c) => c.type === "Degraded");
      return degraded?.reason === "WritesFailing" && cause.test(degraded.message ?? "")
        ? { pool, degraded }
        : undefined;
    },
    "the pool Degraded with WritesFailing",
    120_000,
  );
}

/**
 * Removes every policy these steps apply, if any is left: a step that failed before lifting its
 * policy must not fail the steps after it as well.
 */
async function dropPolicies(stack: Stack): Promise<void> {
  const deleted = await stack.cp.kubectl([
    "delete",
    "--ignore-not-found",
    "validatingadmissionpolicybinding,validatingadmissionpolicy",
    "deny-release",
    "deny-evictions",
  ]);
  assert.equal(deleted.code, 0, deleted.stderr);
}

/** Lifts policy `name`; the rollout to `digest` then finishes and WritesFailing is gone. */
async function liftPolicy(stack: Stack, name: string, digest: string, nodes: string[]) {
  const deleted = await stack.cp.kubectl([
    "delete",
    "validatingadmissionpolicybinding,validatingadmissionpolicy",
    name,
  ]);
  assert.equal(deleted.code, 0, deleted.stderr);
  await waitRecovered(stack, digest, nodes);
}

/** Once allowed again, the rollout to `digest` finishes and WritesFailing is gone. */
async function waitRecovered(stack: Stack, digest: string, nodes: string[]) {
  // Tried again within a minute (the backoff's cap), then the rollout goes on.
  await waitConverged(stack, "faults", digest, 4, 180_000);
  const after = await getPool(stack, "faults");
  assert.notEqual(
    after.status?.conditions?.find((c) => c.type === "Degraded")?.reason,
    "WritesFailing",
    "the first plan whose writes succeed drops it",
  );
  await assertInvariants(stack, nodes);
}

/** Events with `reason` about `name` (a pool, a Node or a BootcNode), stored in "default". */
async function eventsAbout(stack: Stack, name: string, reason: string): Promise<CoreEvent[]> {
  const list = await stack.cp.client.resource<CoreEvent>(Resources.events, "default").list({
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return list.items;
}

async function restartControllerAfterKill(stack: Stack, phase: string): Promise<void> {
  await stack.killController();
  console.log(`controller SIGKILLed while ${phase}`);
  await new Promise((r) => setTimeout(r, 500));
  await stack.startController();
}

Deno.test("faults: controller killed in every phase, daemon killed, API server restart, etcd compaction, unexpected reboot", async (t) => {
  const stack = await startStack({
    limits: { faults: { maxUnavailable: 1 } },
    rebootDelayMs: 2000,
  });
  const { v1, v2, repository } = stack.images;
  try {
    // Images no host has had yet: going back to the previous image is a `bootc rollback`
    // (nothing to stage), so the steps about staging need new ones.
    const v3 = await stack.registry.pushImage({
      repository: "bootc/os",
      tag: "v3",
      version: "3.0",
    });
    const v4 = await stack.registry.pushImage({
      repository: "bootc/os",
      tag: "v4",
      version: "4.0",
    });
    const nodes = await addNodes(stack, "faults", 4);
    // Slow pods make every drain take a few seconds, so the draining phase can be hit.
    for (const name of nodes) {
      await stack.cp.createPod("default", `slow-${name}`, {
        nodeName: name,
        labels: { app: "slow" },
        terminationGracePeriodSeconds: 4,
      });
    }
    await stack.createPool(
      "faults",
      poolSpec("faults", `${repository}@${v1.digest}`, { minReadySeconds: 3 }),
    );
    await waitConverged(stack, "faults", v1.digest, 4);

    await step(
      t,
      "controller SIGKILLed while staging, draining, rebooting and uncordoning",
      async () => {
        // Pulls slow enough to be reported as Staging (a quick one says Staged at once).
        for (const name of nodes) {
          await stack.fleet.nodes.get(name)!.host.setPullDelayMs(STAGING_REPORT_DELAY_MS + 4000);
        }
        await patchPoolSpec(stack, "faults", { image: { ref: `${repository}@${v2.digest}` } });
        await waitNodes(
          stack,
          "faults",
          (bns) => bns.some((bn) => idleReason(bn) === "Staging"),
          "staging",
        );
        await restartControllerAfterKill(stack, "staging");

        await waitSlots(
          stack,
          "faults",
          (holders) => holders.some((h) => !(ANNOTATION_DRAINED_AT in h.annotations)),
          "a node draining",
        );
        await restartControllerAfterKill(stack, "draining");

        await waitNodes(
          stack,
          "faults",
          (bns) => bns.some((bn) => idleReason(bn) === "Rebooting"),
          "rebooting",
        );
        await restartControllerAfterKill(stack, "rebooting");

        await waitSlots(
          stack,
          "faults",
          (holders) => holders.some((h) => h.bn.status?.booted?.imageDigest === v2.digest),
          "a node back on the target, waiting to be uncordoned",
        );
        await restartControllerAfterKill(stack, "uncordoning");

        await waitConverged(stack, "faults", v2.digest, 4, 180_000);
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "a daemon SIGKILLed mid-stage restages and the rollout finishes", async () => {
      await stack.fleet.nodes.get("faults-2")!.host.setPullDelayMs(STAGING_REPORT_DELAY_MS + 4000);
      await patchPoolSpec(stack, "faults", { image: { ref: `${repository}@${v3.digest}` } });
      await waitNodes(
        stack,
        "faults",
        (bns) => idleReason(bns.find((bn) => bn.metadata.name === "faults-2")!) === "Staging",
        "faults-2 staging",
      );
      const starts = stack.fleet.nodes.get("faults-2")!.daemonStarts;
      await stack.fleet.killDaemon("faults-2");
      await waitConverged(stack, "faults", v3.digest, 4, 180_000);
      assert.ok(stack.fleet.nodes.get("faults-2")!.daemonStarts > starts, "daemon restarted");
      await assertInvariants(stack, nodes);
      for (const name of nodes) await stack.fleet.nodes.get(name)!.host.setPullDelayMs(0);
    });

    await step(t, "the API server restarted mid-rollout", async () => {
      await patchPoolSpec(stack, "faults", { image: { ref: `${repository}@${v2.digest}` } });
      await waitSlots(stack, "faults", (h) => h.length > 0, "a node in a slot");
      await stack.cp.restartApiServer();
      await waitConverged(stack, "faults", v2.digest, 4, 180_000);
      await assertInvariants(stack, nodes);
    });

    await step(t, "etcd compacted mid-rollout", async () => {
      await patchPoolSpec(stack, "faults", { image: { ref: `${repository}@${v1.digest}` } });
      await waitSlots(stack, "faults", (h) => h.length > 0, "a node in a slot");
      const revision = await stack.cp.compactEtcd();
      assert.ok(revision > 0);
      // Watches resumed from a compacted revision must relist (410 Gone).
      await stack.cp.restartApiServer();
      await waitConverged(stack, "faults", v1.digest, 4, 180_000);
      await assertInvariants(stack, nodes);
    });

    await step(
      t,
      "an unexpected reboot of a staged node does not apply the locked stage",
      async () => {
        await patchPoolSpec(stack, "faults", {
          image: { ref: `${repository}@${v4.digest}` },
          rollout: { paused: true },
        });
        await waitNodes(
          stack,
          "faults",
          (bns) =>
            bns.every((bn) => idleReason(bn) === "Staged" && bn.status?.staged?.downloadOnly),
          "every node staged (locked)",
        );
        await stack.fleet.unexpectedReboot("faults-3");
        const state = await stack.fleet.nodes.get("faults-3")!.host.readState();
        assert.equal(
          state.state.booted?.image?.imageDigest,
          v1.digest,
          "the locked stage was discarded",
        );
        // The daemon comes back, sees nothing staged and stages (locked) again.
        const host = stack.fleet.nodes.get("faults-3")!.host;
        await waitPool(stack, "faults", async () => {
          const s = (await host.readState()).state;
          return s.staged?.image?.imageDigest === v4.digest && s.staged.downloadOnly &&
            s.booted?.image?.imageDigest === v1.digest;
        }, "faults-3 should restage v4, locked, after the unexpected reboot");
        await waitNodes(
          stack,
          "faults",
          (bns) => idleReason(bns.find((b) => b.metadata.name === "faults-3")!) === "Staged",
          "faults-3 reports Staged again",
        );
        const node = await stack.cp.client.resource<INode>(Resources.nodes).get("faults-3");
        assert.notEqual(node.spec?.unschedulable, true);
        await patchPoolSpec(stack, "faults", { rollout: { paused: false } });
        await waitConverged(stack, "faults", v4.digest, 4, 180_000);
        await assertInvariants(stack, nodes);
      },
    );

    await step(
      t,
      "a release the API refuses keeps the slot, says WritesFailed, and finishes once allowed",
      async () => {
        const v5 = await stack.registry.pushImage({
          repository: "bootc/os",
          tag: "v5",
          version: "5.0",
        });
        // Writes failing this long make the pool Degraded (the default is 10 minutes).
        await patchPoolSpec(stack, "faults", { rollout: { progressTimeoutSeconds: 10 } });
        // The controller may not drop faults-2's slot record (its release) while this stands.
        await underPolicy(stack, denyReleasePolicy("faults-2"), `${repository}@${v5.digest}`);
        const refused = await waitFor(async () => {
          const events = await eventsAbout(stack, "faults", "WritesFailed");
          // By its content: a read refused meanwhile (the API server's authorizer relisting
          // after the restarts above) is a WritesFailed naming faults-2 too.
          return events.find((e) =>
            e.message?.includes("faults-2") && e.message.includes("denies the release")
          );
        }, { timeoutMs: 120_000, message: "a WritesFailed event naming faults-2's release" });
        assert.match(refused.message ?? "", /denies the release/);
        // What did not happen is not told: no NodeUpdated for faults-2 on v5 while refused.
        const updated = await eventsAbout(stack, "faults-2", "NodeUpdated");
        assert.ok(!updated.some((e) => e.message?.includes(v5.digest.slice(7, 19))));
        const node = await stack.cp.client.resource<INode>(Resources.nodes).get("faults-2");
        assert.equal(node.spec?.unschedulable, true, "faults-2 keeps its slot and cordon");
        // Refused past the pool's progress timeout: its status says so, naming node and error.
        const failing = await waitWritesFailing(stack, /denies the release/);
        assert.equal(failing.degraded.status, "True");
        assert.equal(failing.pool.status?.state, "WritesFailing");
        assert.match(failing.degraded.message ?? "", /faults-2.*denies the release/);
        await liftPolicy(stack, "deny-release", v5.digest, nodes);
      },
    );

    await step(
      t,
      "evictions the API refuses: WritesFailed, then WritesFailing; the drain finishes once allowed",
      async () => {
        const v6 = await stack.registry.pushImage({
          repository: "bootc/os",
          tag: "v6",
          version: "6.0",
        });
        const rebootsBefore = new Map(nodes.map((n) => [n, stack.fleet.nodes.get(n)!.reboots]));
        // Earlier drains evicted every pod: one to evict on each node.
        for (const n of nodes) {
          await stack.cp.createPod("default", `evict-me-${n}`, {
            nodeName: n,
            labels: { app: "evict-me" },
            waitRunning: false,
          });
        }
        await underPolicy(stack, DENY_EVICTIONS, `${repository}@${v6.digest}`);
        const refused = await waitFor(async () => {
          const events = await eventsAbout(stack, "faults", "WritesFailed");
          return events.find((e) => e.message?.includes("the test denies evictions"));
        }, { timeoutMs: 120_000, message: "a WritesFailed event naming the refused eviction" });
        assert.match(refused.message ?? "", /nodes left as they were: faults-\d/);
        await waitWritesFailing(stack, /the test denies evictions/);
        // The drain waits: its pod is still there and the node has not rebooted.
        assert.deepEqual(stack.tracker.violations, []);
        const held = refused.message!.match(/faults-\d/)![0];
        const pod = await stack.cp.client.resource<{ metadata: { name?: string } }>(
          Resources.pods,
          "default",
        ).get(`evict-me-${held}`);
        assert.equal(pod.metadata.name, `evict-me-${held}`);
        assert.equal(stack.fleet.nodes.get(held)!.reboots, rebootsBefore.get(held));
        await liftPolicy(stack, "deny-evictions", v6.digest, nodes);
      },
    );

    await step(
      t,
      "pods the controller may not list: no node disrupted, WritesFailed, then WritesFailing; the rollout finishes once allowed",
      async () => {
        const v7 = await stack.registry.pushImage({
          repository: "bootc/os",
          tag: "v7",
          version: "7.0",
        });
        await dropPolicies(stack);
        const rebootsBefore = new Map(nodes.map((n) => [n, stack.fleet.nodes.get(n)!.reboots]));
        const got = await stack.cp.kubectl([
          "get",
          "clusterrole",
          "bootc-operator-controller",
          "-o",
          "json",
        ]);
        assert.equal(got.code, 0, got.stderr);
        const role = JSON.parse(got.stdout);
        delete role.metadata.resourceVersion;
        const allowed = JSON.stringify(role);
        for (const rule of role.rules as { resources?: string[]; verbs: string[] }[]) {
          if (rule.resources?.includes("pods")) rule.verbs = rule.verbs.filter((v) => v !== "list");
        }
        const applyRole = async (json: string) => {
          const applied = await stack.cp.kubectl(["apply", "-f", "-"], { stdin: json });
          assert.equal(applied.code, 0, applied.stderr);
        };
        await applyRole(JSON.stringify(role));
        try {
          await new Promise((r) => setTimeout(r, 2_000));
          await patchPoolSpec(stack, "faults", { image: { ref: `${repository}@${v7.digest}` } });
          const refused = await waitFor(async () => {
            const events = await eventsAbout(stack, "faults", "WritesFailed");
            return events.find((e) => e.message?.includes("listing the pods of node"));
          }, { timeoutMs: 120_000, message: "a WritesFailed event naming the failed pod list" });
          // Worded as the read it is, with its real retry (the drain poll), nodes waiting.
          assert.match(
            refused.message ?? "",
            /^a read this pool's plan needs failed, asked again within \d+ s \(nodes waiting, their pods unknown: faults-\d/,
          );
          assert.match(refused.message ?? "", /forbidden/);
          await waitWritesFailing(stack, /listing the pods of node faults-\d failed/);
          // Its pods unknown, no node is granted a slot, drained or rebooted on a guess.
          assert.deepEqual(stack.tracker.violations, []);
          for (const n of nodes) {
            assert.equal(stack.fleet.nodes.get(n)!.reboots, rebootsBefore.get(n), n);
            const node = await stack.cp.client.resource<INode>(Resources.nodes).get(n);
            assert.equal(node.metadata?.annotations?.["bootc.dev/in-reboot-slot"], undefined, n);
          }
        } finally {
          await applyRole(allowed);
        }
        await waitRecovered(stack, v7.digest, nodes);
      },
    );
  } catch (error) {
    console.error(`stack logs kept in ${stack.logDir}`);
    await stack.stop({ keepLogs: true });
    throw error;
  }
  await stopStack(stack);
});
