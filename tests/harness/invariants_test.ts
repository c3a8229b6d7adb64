import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import type { BootcNode } from "../../lib/api/mod.ts";
import { type ApplyObservation, InvariantTracker } from "./invariants.ts";

const IMAGE = "r/os@sha256:" + "a".repeat(64);
const NEXT = "r/os@sha256:" + "b".repeat(64);

interface NodeOptions {
  unschedulable?: boolean;
  /** Holds a slot of this pool. */
  slot?: string;
  wasCordoned?: string;
  /** Drained for this image. */
  drainedFor?: string;
  rv?: number;
  annotations?: Record<string, string>;
}

function node(name: string, o: NodeOptions = {}): INode {
  const annotations: Record<string, string> = { ...o.annotations };
  if (o.slot) {
    annotations["bootc.dev/in-reboot-slot"] = "2026-01-01T00:00:00Z";
    annotations["bootc.dev/reboot-slot-pool"] = o.slot;
  }
  if (o.wasCordoned !== undefined) annotations["bootc.dev/was-cordoned"] = o.wasCordoned;
  if (o.drainedFor) {
    annotations["bootc.dev/drained-at"] = "2026-01-01T00:00:01Z";
    annotations["bootc.dev/drained-for"] = o.drainedFor;
  }
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations,
      ...(o.rv !== undefined ? { resourceVersion: String(o.rv) } : {}),
    },
    spec: { unschedulable: o.unschedulable ?? false },
  };
}

/** A Node in a slot of `pool`, cordoned by us and drained for `image`. */
const drained = (name: string, o: { pool?: string; image?: string; rv?: number } = {}) =>
  node(name, {
    unschedulable: true,
    slot: o.pool ?? "workers",
    wasCordoned: "false",
    drainedFor: o.image ?? IMAGE,
    rv: o.rv,
  });

interface BootcNodeOptions {
  booted?: boolean;
  image?: string;
  owned?: boolean;
  rebooting?: boolean;
  pool?: string;
  rv?: number;
  mirror?: string;
}

function bootcNode(name: string, o: BootcNodeOptions = {}): BootcNode {
  const pool = o.pool ?? "workers";
  return {
    metadata: {
      name,
      labels: { "bootc.dev/pool": pool },
      annotations: o.mirror !== undefined ? { "bootc.dev/was-cordoned": o.mirror } : {},
      ownerReferences: o.owned === false ? [] : [{
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNodePool",
        name: pool,
        uid: "u",
        controller: true,
      }],
      ...(o.rv !== undefined ? { resourceVersion: String(o.rv) } : {}),
    },
    spec: {
      desiredImage: o.image ?? IMAGE,
      desiredImageState: o.booted ? "Booted" : "Staged",
      rebootPolicy: "RebootOnly",
    },
    status: {
      conditions: [{
        type: "Idle",
        status: o.rebooting ? "False" : "True",
        reason: o.rebooting ? "Rebooting" : "Idle",
        message: "",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  };
}

function apply(
  name: string,
  read: ApplyObservation["read"],
  o: { invokedAt?: number; pods?: string[]; id?: string } = {},
): ApplyObservation {
  return {
    node: name,
    id: o.id ?? `inv-${name}`,
    command: ["switch", "--from-downloaded", "--apply"],
    invokedAt: o.invokedAt ?? 0,
    read,
    evictablePods: o.pods ?? [],
  };
}

Deno.test("budget: nodes carrying the disruption record count toward their slot's pool", () => {
  let t = 0;
  const tracker = new InvariantTracker({
    limits: { workers: { maxUnavailable: 1 }, other: { maxUnavailable: 1 } },
    now: () => t,
  });
  tracker.observeBootcNode(bootcNode("a"));
  tracker.observeBootcNode(bootcNode("b"));
  tracker.observeBootcNode(bootcNode("c", { pool: "other" }));
  tracker.observeNode(node("a", { unschedulable: true, slot: "workers", wasCordoned: "false" }));
  tracker.observeNode(node("c", { unschedulable: true, slot: "other", wasCordoned: "false" }));
  assert.deepEqual(tracker.violations, [], "one per pool is within budget");
  t = 10;
  // A drained-at left without a slot is still part of the record: the node is disrupted.
  tracker.observeNode(node("b", { drainedFor: IMAGE }));
  assert.equal(tracker.violations.length, 1);
  assert.match(tracker.violations[0], /pool workers: 2 nodes disrupted at once \(a, b\)/);
  assert.equal(tracker.maxDisrupted, 2);
});

Deno.test("budget: a node cordoned without a record does not count; a rebooting one does", () => {
  const tracker = new InvariantTracker({ limits: { workers: { maxUnavailable: 1 } } });
  tracker.observeBootcNode(bootcNode("a"));
  tracker.observeBootcNode(bootcNode("b"));
  tracker.observeBootcNode(bootcNode("c"));
  tracker.observeNode(node("a", { unschedulable: true })); // cordoned by someone else
  tracker.observeNode(node("b", { unschedulable: true, slot: "workers", wasCordoned: "false" }));
  assert.deepEqual(tracker.violations, []);
  tracker.observeBootcNode(bootcNode("c", { rebooting: true }));
  assert.match(tracker.violations[0], /2 nodes disrupted at once \(b, c\)/);
  tracker.observeBootcNode(bootcNode("c"));
  tracker.setMachineDown("c", true);
  assert.match(tracker.violations[1], /2 nodes disrupted at once \(b, c\)/);
  tracker.setMachineDown("c", false);
  tracker.observeNode(node("b", { unschedulable: false }));
  assert.equal(tracker.violations.length, 2);
});

Deno.test("prior cordon: was-cordoned must record the state the node had", () => {
  const tracker = new InvariantTracker({ limits: {}, preCordoned: ["p"] });
  tracker.observeNode(node("a"));
  tracker.observeNode(node("a", { unschedulable: true, slot: "workers", wasCordoned: "false" }));
  tracker.observeNode(node("b"));
  tracker.observeNode(node("b", { unschedulable: true, slot: "workers", wasCordoned: "true" }));
  tracker.observeNode(node("p", { unschedulable: true }));
  tracker.observeNode(node("p", { unschedulable: true, slot: "workers", wasCordoned: "true" }));
  tracker.observeNode(node("q", { unschedulable: true }));
  tracker.observeNode(node("q", { unschedulable: true, slot: "workers", wasCordoned: "false" }));
  tracker.observeNode(node("r", { unschedulable: true }));
  tracker.markPreCordoned("r");
  tracker.observeNode(node("r", { unschedulable: true, slot: "workers", wasCordoned: "false" }));
  assert.deepEqual(tracker.violations, [
    "b: bootc.dev/was-cordoned=true recorded on a node that was schedulable",
    // q: cordoned by us before (a record being restored): not judged.
    "r: bootc.dev/was-cordoned=false recorded on a node the user had cordoned",
  ]);
});

Deno.test("checkFinal: cordons, records on Nodes and mirrors on BootcNodes left behind", () => {
  const tracker = new InvariantTracker({ limits: {}, preCordoned: ["c"] });
  assert.deepEqual(
    tracker.checkFinal(
      [
        node("c", { unschedulable: false }),
        node("a", { unschedulable: true }),
        node("d", { annotations: { "bootc.dev/drained-for": IMAGE } }),
        node("ok"),
        node("c2", { unschedulable: false }),
      ],
      [bootcNode("e", { mirror: "false" }), bootcNode("ok")],
    ),
    [
      "c was cordoned before the rollout but is schedulable now",
      "a is left cordoned",
      "d still carries the disruption record (bootc.dev/drained-for)",
      "e: the BootcNode still mirrors a prior cordon state (bootc.dev/was-cordoned=false)",
    ],
  );
  assert.deepEqual(tracker.checkFinal([node("c", { unschedulable: true })], []), []);
});

Deno.test("apply: judged with rebootAuthorization on the state read at invocation", async (t) => {
  const cases: {
    name: string;
    node?: INode;
    bn?: BootcNode;
    pods?: string[];
    violation?: RegExp;
    reason: string;
  }[] = [
    {
      name: "slot, cordon and a drain for the desired image",
      node: drained("n"),
      bn: bootcNode("n", { booted: true }),
      reason: "SlotAndDrain",
    },
    {
      name: "Staged",
      node: drained("n"),
      bn: bootcNode("n"),
      reason: "NotRequested",
      violation:
        /n invoked bootc switch --from-downloaded --apply without authorization \(NotRequested/,
    },
    {
      name: "no slot",
      node: node("n", { unschedulable: true }),
      bn: bootcNode("n", { booted: true }),
      reason: "NoRebootSlot",
      violation: /without authorization \(NoRebootSlot/,
    },
    {
      name: "drained for another image",
      node: drained("n", { image: NEXT }),
      bn: bootcNode("n", { booted: true }),
      reason: "AwaitingDrain",
      violation: /AwaitingDrain: the Node's finished drain was for .*bbbb/,
    },
    {
      name: "not cordoned",
      node: node("n", { slot: "workers", wasCordoned: "false", drainedFor: IMAGE }),
      bn: bootcNode("n", { booted: true }),
      reason: "AwaitingDrain",
      violation: /not cordoned/,
    },
    {
      name: "not owned",
      node: drained("n"),
      bn: bootcNode("n", { booted: true, owned: false }),
      reason: "NotOwned",
      violation: /NotOwned/,
    },
    {
      name: "no BootcNode",
      node: drained("n"),
      reason: "NotOwned",
      violation: /NotOwned/,
    },
    {
      name: "pods left",
      node: drained("n"),
      bn: bootcNode("n", { booted: true }),
      pods: ["default/app"],
      reason: "PodsLeft",
      violation: /n invoked bootc .* with pods still on it: default\/app/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const tracker = new InvariantTracker({ limits: {} });
      const verdict = tracker.observeApply(
        apply("n", { node: c.node, bootcNode: c.bn }, { pods: c.pods }),
      );
      assert.equal(verdict.reason, c.reason);
      assert.equal(verdict.allowed, c.violation === undefined);
      if (c.violation) {
        assert.equal(tracker.violations.length, 1, tracker.violations.join("\n"));
        assert.match(tracker.violations[0], c.violation);
      } else {
        assert.deepEqual(tracker.violations, []);
      }
      assert.equal(tracker.applies.length, 1);
    });
  }
});

Deno.test("apply: the controller resetting the node right after the invocation is no violation", () => {
  // The flake of issue 12: the daemon applied while Booted and drained; the tag moved and the
  // controller withdrew the drain and reset the node to Staged before the harness read the API.
  let t = 1_000;
  const tracker = new InvariantTracker({ limits: {}, now: () => t });
  tracker.observeNode(node("n", { rv: 10 }));
  tracker.observeBootcNode(bootcNode("n", { rv: 11 }));
  tracker.observeNode(drained("n", { rv: 12 }));
  tracker.observeBootcNode(bootcNode("n", { booted: true, rv: 13 }));
  const invokedAt = 2_000;
  t = 2_050;
  // The reset: the drain withdrawn (slot kept), then the new image, Staged.
  const undrained = node("n", {
    unschedulable: true,
    slot: "workers",
    wasCordoned: "false",
    rv: 14,
  });
  const reset = bootcNode("n", { image: NEXT, rv: 15 });
  tracker.observeNode(undrained);
  tracker.observeBootcNode(reset);
  const verdict = tracker.observeApply(
    apply("n", { node: undrained, bootcNode: reset }, { invokedAt }),
  );
  assert.deepEqual(tracker.violations, []);
  assert.equal(verdict.allowed, true);
  assert.match(verdict.message, /authorized just before the invocation .*resourceVersion 13/);
  assert.equal(tracker.applies[0].basis, "history");
  assert.equal(tracker.applies[0].judgedAt - tracker.applies[0].invokedAt, 50);
});

Deno.test("apply: joint states follow resourceVersion order, not the watches' arrival order", () => {
  let t = 1_000;
  const tracker = new InvariantTracker({ limits: {}, now: () => t });
  tracker.observeNode(drained("n", { rv: 12 }));
  // The BootcNode watch lags: the Node's withdrawal (rv 14) arrives before Booted (rv 13).
  t = 1_900;
  const undrained = node("n", {
    unschedulable: true,
    slot: "workers",
    wasCordoned: "false",
    rv: 14,
  });
  tracker.observeNode(undrained);
  tracker.observeBootcNode(bootcNode("n", { booted: true, rv: 13 }));
  const reset = bootcNode("n", { image: NEXT, rv: 15 });
  tracker.observeBootcNode(reset);
  // In arrival order the tracker never saw Booted together with the drain; in commit order
  // (rv 12 + rv 13) it was authorized.
  const verdict = tracker.observeApply(
    apply("n", { node: undrained, bootcNode: reset }, { invokedAt: 1_950 }),
  );
  assert.equal(verdict.allowed, true, verdict.message);
  assert.deepEqual(tracker.violations, []);
});

Deno.test("apply: authorization that ended before the window, or never held, is a violation", async (t) => {
  await t.step("ended long before the invocation", () => {
    let now = 0;
    const tracker = new InvariantTracker({ limits: {}, now: () => now, applyWindowMs: 5_000 });
    tracker.observeNode(drained("n", { rv: 12 }));
    tracker.observeBootcNode(bootcNode("n", { booted: true, rv: 13 }));
    now = 10_000;
    const reset = bootcNode("n", { image: NEXT, rv: 14 });
    tracker.observeBootcNode(reset);
    now = 60_000;
    const verdict = tracker.observeApply(
      apply("n", { node: drained("n", { rv: 12 }), bootcNode: reset }, { invokedAt: 60_000 }),
    );
    assert.equal(verdict.allowed, false);
    assert.match(tracker.violations[0], /without authorization \(NotRequested/);
  });
  await t.step("never held (Booted but never drained)", () => {
    let now = 0;
    const tracker = new InvariantTracker({ limits: {}, now: () => now });
    const inSlot = node("n", { unschedulable: true, slot: "workers", wasCordoned: "false", rv: 2 });
    tracker.observeNode(inSlot);
    tracker.observeBootcNode(bootcNode("n", { booted: true, rv: 3 }));
    now = 100;
    const verdict = tracker.observeApply(
      apply("n", { node: inSlot, bootcNode: bootcNode("n", { booted: true, rv: 3 }) }, {
        invokedAt: 100,
      }),
    );
    assert.equal(verdict.reason, "AwaitingDrain");
    assert.equal(tracker.violations.length, 1);
  });
  await t.step("authorized only after the read: no evidence for the invocation", () => {
    let now = 0;
    const tracker = new InvariantTracker({ limits: {}, now: () => now });
    const inSlot = node("n", { unschedulable: true, slot: "workers", wasCordoned: "false", rv: 2 });
    const staged = bootcNode("n", { rv: 3 });
    tracker.observeNode(inSlot);
    tracker.observeBootcNode(staged);
    now = 100;
    // The daemon applied early; the controller drained and approved later (rv 4, 5).
    tracker.observeNode(drained("n", { rv: 4 }));
    tracker.observeBootcNode(bootcNode("n", { booted: true, rv: 5 }));
    const verdict = tracker.observeApply(
      apply("n", { node: inSlot, bootcNode: staged }, { invokedAt: 90 }),
    );
    assert.equal(verdict.allowed, false);
    assert.match(tracker.violations[0], /NotRequested/);
  });
});

Deno.test("caughtUp: true once the watch delivered the versions the fleet read", () => {
  const tracker = new InvariantTracker({ limits: {} });
  const read = { node: drained("n", { rv: 20 }), bootcNode: bootcNode("n", { rv: 21 }) };
  assert.equal(tracker.caughtUp({ node: "n", read }), false);
  tracker.observeNode(drained("n", { rv: 20 }));
  assert.equal(tracker.caughtUp({ node: "n", read }), false);
  tracker.observeBootcNode(bootcNode("n", { rv: 22 }));
  assert.equal(tracker.caughtUp({ node: "n", read }), true);
  assert.equal(
    tracker.caughtUp({ node: "m", read: {} }),
    true,
    "nothing read: nothing to wait for",
  );
  assert.equal(InvariantTracker.authorizedByRead({ read }), false);
  assert.equal(
    InvariantTracker.authorizedByRead({
      read: { node: drained("n"), bootcNode: bootcNode("n", { booted: true }) },
    }),
    true,
  );
});

Deno.test("a reboot must come from a judged apply", () => {
  const tracker = new InvariantTracker({ limits: {} });
  tracker.observeApply(
    apply("n", { node: drained("n"), bootcNode: bootcNode("n", { booted: true }) }, { id: "i1" }),
  );
  tracker.observeReboot("n", { invocation: "i1", command: ["bootc", "switch"] });
  assert.deepEqual(tracker.violations, []);
  tracker.observeReboot("n", { invocation: "i2", command: ["bootc", "upgrade", "--apply"] });
  tracker.observeReboot("n", { invocation: null });
  assert.deepEqual(tracker.violations, [
    "n rebooted for bootc upgrade --apply whose apply was never judged (invocation i2)",
    "n rebooted for a reboot request whose apply was never judged (invocation unknown)",
  ]);
  assert.equal(tracker.reboots.length, 3);
});

Deno.test("handoff delay is measured from a slot freed to the next node disrupted", () => {
  let t = 0;
  const tracker = new InvariantTracker({
    limits: { workers: { maxUnavailable: 1 } },
    now: () => t,
  });
  tracker.observeNode(node("a", { unschedulable: true, slot: "workers", wasCordoned: "false" }));
  t = 100;
  tracker.observeNode(node("a"));
  t = 130;
  tracker.observeNode(node("b", { unschedulable: true, slot: "workers", wasCordoned: "false" }));
  assert.deepEqual(tracker.handoffDelays(), [30]);
  assert.deepEqual(tracker.violations, []);
});

Deno.test("apply: an external orchestrator's apply, announced, is allowed once; others are judged", () => {
  const tracker = new InvariantTracker({ limits: {} });
  const read = { node: node("n", { unschedulable: true }), bootcNode: bootcNode("n") };
  tracker.expectExternalApply("n");
  const first = tracker.observeApply(apply("n", read, { id: "i1" }));
  assert.equal(first.allowed, true);
  assert.equal(first.reason, "ExternalOrchestrator");
  assert.equal(tracker.applies[0].basis, "external");
  // The same facts again, not announced: the daemon applying on its own is a violation.
  const second = tracker.observeApply(apply("n", read, { id: "i2" }));
  assert.equal(second.allowed, false);
  assert.equal(tracker.violations.length, 1);
  assert.match(tracker.violations[0], /^n invoked bootc .* without authorization/);
  // The orchestrator must have drained the node too.
  tracker.expectExternalApply("n");
  tracker.observeApply(apply("n", read, { id: "i3", pods: ["default/app"] }));
  assert.match(tracker.violations[1], /with pods still on it: default\/app/);
  tracker.observeReboot("n", { invocation: "i1" });
  assert.equal(tracker.violations.length, 2, "a reboot for the announced apply was judged");
});
