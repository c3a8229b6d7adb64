import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import type { BootcNode } from "../../lib/api/mod.ts";
import { InvariantTracker } from "./invariants.ts";

const node = (name: string, unschedulable = false): INode => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name },
  spec: { unschedulable },
});

function bootcNode(
  name: string,
  options: { slot?: boolean; rebooting?: boolean; drained?: boolean; booted?: boolean } = {},
): BootcNode {
  const annotations: Record<string, string> = {};
  if (options.slot) annotations["bootc.dev/in-reboot-slot"] = "2026-01-01T00:00:00Z";
  if (options.drained) annotations["bootc.dev/drained-at"] = "2026-01-01T00:00:01Z";
  return {
    metadata: { name, labels: { "bootc.dev/pool": "workers" }, annotations },
    spec: {
      desiredImage: "r/os@sha256:" + "a".repeat(64),
      desiredImageState: options.booted ? "Booted" : "Staged",
      rebootPolicy: "RebootOnly",
    },
    status: {
      conditions: [{
        type: "Idle",
        status: options.rebooting ? "False" : "True",
        reason: options.rebooting ? "Rebooting" : "Idle",
        message: "",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  };
}

Deno.test("tracker flags more disrupted nodes than maxUnavailable", () => {
  let t = 0;
  const tracker = new InvariantTracker({
    limits: { workers: { maxUnavailable: 1 } },
    now: () => t,
  });
  tracker.observeBootcNode(bootcNode("a"));
  tracker.observeBootcNode(bootcNode("b"));
  tracker.observeBootcNode(bootcNode("a", { slot: true }));
  tracker.observeNode(node("a", true));
  assert.deepEqual(tracker.violations, []);
  t = 10;
  tracker.observeNode(node("b", true));
  assert.equal(tracker.violations.length, 1);
  assert.match(tracker.violations[0], /2 nodes disrupted at once \(a, b\)/);
  assert.equal(tracker.maxDisrupted, 2);
});

Deno.test("tracker ignores nodes the user cordoned and checks they stay cordoned", () => {
  const tracker = new InvariantTracker({
    limits: { workers: { maxUnavailable: 1 } },
    preCordoned: ["c"],
  });
  tracker.observeBootcNode(bootcNode("c"));
  tracker.observeNode(node("c", true));
  tracker.observeBootcNode(bootcNode("a", { slot: true }));
  assert.deepEqual(tracker.violations, []);
  assert.deepEqual(tracker.checkFinal([node("c", false), node("a", true)], []), [
    "c was cordoned before the rollout but is schedulable now",
    "a is left cordoned",
  ]);
});

Deno.test("a reboot needs a finished drain and an empty node", () => {
  const tracker = new InvariantTracker({ limits: { workers: { maxUnavailable: 2 } } });
  tracker.observeBootcNode(bootcNode("a", { slot: true }));
  tracker.observeReboot("a", []);
  assert.match(tracker.violations[0], /a rebooted without a finished drain/);
  tracker.observeBootcNode(bootcNode("b", { slot: true, drained: true, booted: true }));
  tracker.observeReboot("b", ["default/app"]);
  assert.match(tracker.violations[1], /b rebooted with pods still on it: default\/app/);
  assert.equal(tracker.violations.length, 2);
});

Deno.test("handoff delay is measured from a slot freed to the next node disrupted", () => {
  let t = 0;
  const tracker = new InvariantTracker({
    limits: { workers: { maxUnavailable: 1 } },
    now: () => t,
  });
  tracker.observeBootcNode(bootcNode("a", { slot: true }));
  t = 100;
  tracker.observeBootcNode(bootcNode("a"));
  t = 130;
  tracker.observeBootcNode(bootcNode("b", { slot: true }));
  assert.deepEqual(tracker.handoffDelays(), [30]);
});

Deno.test("the reboot check trusts an authoritative read over a lagging view", () => {
  const tracker = new InvariantTracker({ limits: { workers: { maxUnavailable: 1 } } });
  // The informer has not yet delivered the drain (e.g. it is backing off after an API restart).
  tracker.observeBootcNode(bootcNode("a", { slot: true }));
  tracker.observeReboot("a", [], bootcNode("a", { slot: true, drained: true, booted: true }));
  assert.deepEqual(tracker.violations, []);
  // And a fresh read that shows no drain is still a violation.
  tracker.observeReboot("a", [], bootcNode("a", { slot: true }));
  assert.match(tracker.violations[0], /a rebooted without a finished drain/);
});
