// deno-lint-ignore-file no-control-regex
import assert from "node:assert/strict";
import { type NodeRow, nodeRow, renderTree } from "./node_tree.ts";
import { classifyMember } from "./progress.ts";
import { createStyle, stripAnsi, visibleLength } from "./style.ts";
import { bootcNode, cond, NEW, node, pool } from "./testing.ts";
import type { BootcNode, NodeLike } from "./model.ts";

/** The row of `bn` in `p` as `status` builds it (the one classification, the published queue). */
function row(bn: BootcNode, n: NodeLike | undefined, p = pool({ queue: ["q"] })): NodeRow {
  const name = bn.metadata?.name ?? "";
  return nodeRow({
    bn,
    cls: classifyMember(bn, n, p),
    queued: p.status?.queue?.find((e) => e.node === name),
    paused: p.spec?.rollout?.paused ?? false,
  });
}

Deno.test("rows render the classification: icon, state, version, slot or queue place, wait", () => {
  const unhealthy = bootcNode("failed", {
    booted: NEW,
    bootedVersion: "2.0",
    state: "Booted",
    conditions: [cond(
      "Verified",
      "False",
      "CheckFailed",
      "node failed failed health checks: " +
        "HostHealthy (the system is degraded: failed units: bad.service)",
    )],
    failedChecks: ["HostHealthy"],
  });
  unhealthy.status!.hostHealth = {
    state: "Unhealthy",
    checkedAt: "2026-03-01T10:00:00Z",
    failedUnits: ["bad.service"],
  };
  const cases: [string, NodeRow, Partial<NodeRow>][] = [
    [
      "updated",
      row(
        bootcNode("up", { booted: NEW, bootedVersion: "2.0", idle: ["True", "Idle"] }),
        node("up"),
      ),
      { icon: "updated", state: "Updated", version: "2.0", place: "", waits: "" },
    ],
    [
      "draining in its slot",
      row(bootcNode("d", { idle: ["False", "Staged"], staged: NEW }), node("d", { slot: 10 })),
      { icon: "moving", state: "Draining", version: "aaaaaaaaaaaa", place: "slot" },
    ],
    [
      "queued for a slot behind the budget: its turn comes",
      row(
        bootcNode("q", { bootedVersion: "1.0", idle: ["False", "Staged"], staged: NEW }),
        node("q"),
      ),
      { icon: "moving", state: "Staged", place: "#1", waits: "a reboot slot (BudgetExhausted)" },
    ],
    [
      "queued while the pool is paused: held",
      row(
        bootcNode("q", { idle: ["False", "Staged"], staged: NEW }),
        node("q"),
        pool({ queue: ["q"], waitingFor: "Paused", paused: true }),
      ),
      { icon: "held", state: "Staged", place: "#1", waits: "a reboot slot (Paused)" },
    ],
    [
      "failed its host check: the unit is named",
      row(unhealthy, node("failed", { slot: 300, drained: 280 })),
      { icon: "failed", state: "Failed", place: "slot", waits: "failed HostHealthy: bad.service" },
    ],
    [
      "stalled: the classification's message",
      row(
        bootcNode("s", { conditions: [cond("Stalled", "True", "StagingTimeout", "30m")] }),
        node("s"),
      ),
      { icon: "failed", state: "Stalled" },
    ],
  ];
  for (const [name, got, want] of cases) {
    for (const [k, v] of Object.entries(want)) {
      assert.equal(got[k as keyof NodeRow], v, `${name}: ${k}`);
    }
  }
  assert.match(cases[5][1].waits, /^stalled \(StagingTimeout\): 30m; waiting for /);
});

Deno.test("the tree: aligned columns, branches, coloured icons, cut at the end of each line", () => {
  const rows: NodeRow[] = [
    { name: "n1", icon: "updated", state: "Updated", version: "2.0", place: "", waits: "" },
    {
      name: "node-22",
      icon: "moving",
      state: "Draining",
      version: "1.0",
      place: "slot",
      waits: "its pods to be evicted",
    },
    { name: "n3", icon: "held", state: "Staged", version: "1.0", place: "#1", waits: "a slot" },
    { name: "n4", icon: "failed", state: "Failed", version: "2.0", place: "slot", waits: "x" },
  ];
  const plain = createStyle(false);
  assert.deepEqual(renderTree(rows, plain, Infinity), [
    "  ├─ ✔ n1       Updated   2.0",
    "  ├─ ◌ node-22  Draining  1.0  slot  its pods to be evicted",
    "  ├─ ॥ n3       Staged    1.0  #1    a slot",
    "  └─ ✖ n4       Failed    2.0  slot  x",
  ]);
  const colored = renderTree(rows, createStyle(true), 40);
  assert.deepEqual(colored.map(stripAnsi), [
    "  ├─ ✔ n1       Updated   2.0",
    "  ├─ ◌ node-22  Draining  1.0  slot  it…",
    "  ├─ ॥ n3       Staged    1.0  #1    a …",
    "  └─ ✖ n4       Failed    2.0  slot  x",
  ]);
  for (const line of colored) assert.ok(visibleLength(line) <= 40, line);
  assert.match(colored[0], /\x1b\[32m✔\x1b\[39m n1 +\x1b\[32mUpdated\x1b\[39m/);
  assert.match(colored[1], /\x1b\[33m◌\x1b\[39m/);
  assert.match(colored[2], /\x1b\[2m॥\x1b\[22m/);
  assert.match(colored[3], /\x1b\[31m✖\x1b\[39m n4 +\x1b\[31mFailed\x1b\[39m/);
  // No slot or queue place anywhere: no empty column.
  assert.deepEqual(renderTree([{ ...rows[0] }, { ...rows[3], place: "" }], plain, Infinity), [
    "  ├─ ✔ n1  Updated  2.0",
    "  └─ ✖ n4  Failed   2.0  x",
  ]);
});
