import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import type { ISecret } from "kubernetes-models/v1/Secret";
import type { BootcNode, BootcNodePool } from "../../lib/api/mod.ts";
import {
  bootcNodeEventPools,
  nodeChangeMatters,
  nodeEventPools,
  poolChangeMatters,
  poolEventPools,
  poolsForNode,
  secretEventPools,
  type WatchCache,
  type WatchEvent,
} from "./watch_mapping.ts";

const NS = "bootc-operator";
const IMAGE = "r/os@sha256:" + "a".repeat(64);

function pool(
  name: string,
  o: {
    labels?: Record<string, string>;
    secret?: { name: string; namespace: string };
    generation?: number;
    deleting?: boolean;
    finalizers?: string[];
    slotsInUse?: number;
  } = {},
): BootcNodePool {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    metadata: {
      name,
      generation: o.generation ?? 1,
      ...(o.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
      ...(o.finalizers ? { finalizers: o.finalizers } : {}),
    },
    spec: {
      nodeSelector: { matchLabels: o.labels ?? { pool: name } },
      image: { ref: "r/os:stable" },
      ...(o.secret ? { pullSecretRef: o.secret } : {}),
    },
    ...(o.slotsInUse !== undefined ? { status: { slotsInUse: o.slotsInUse } } : {}),
  } as BootcNodePool;
}

function node(
  name: string,
  o: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    unschedulable?: boolean;
    ready?: string;
    heartbeat?: string;
  } = {},
): INode {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: o.labels ?? {}, annotations: o.annotations ?? {} },
    spec: { unschedulable: o.unschedulable ?? false },
    status: {
      conditions: [{
        type: "Ready",
        status: o.ready ?? "True",
        lastHeartbeatTime: o.heartbeat ?? "2026-01-01T00:00:00Z",
      }],
    },
  } as INode;
}

function bootcNode(
  name: string,
  o: { owner?: string; label?: string; idle?: string } = {},
): BootcNode {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNode",
    metadata: {
      name,
      labels: o.label ? { "bootc.dev/pool": o.label } : {},
      ownerReferences: o.owner
        ? [{
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcNodePool",
          name: o.owner,
          uid: `uid-${o.owner}`,
          controller: true,
        }]
        : [],
    },
    spec: { desiredImage: IMAGE, desiredImageState: "Staged", rebootPolicy: "RebootOnly" },
    ...(o.idle
      ? {
        status: {
          conditions: [{
            type: "Idle",
            status: "False",
            reason: o.idle,
            message: "",
            lastTransitionTime: "2026-01-01T00:00:00Z",
          }],
        },
      }
      : {}),
  } as BootcNode;
}

function secret(name: string, namespace = NS, data = "e30="): ISecret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace },
    type: "kubernetes.io/dockerconfigjson",
    data: { ".dockerconfigjson": data },
  } as ISecret;
}

function cacheOf(o: {
  pools?: BootcNodePool[];
  bootcNodes?: BootcNode[];
  nodes?: INode[];
}): WatchCache {
  const pools = o.pools ?? [];
  const bns = new Map((o.bootcNodes ?? []).map((b) => [b.metadata.name ?? "", b]));
  const nodes = new Map((o.nodes ?? []).map((n) => [n.metadata?.name ?? "", n]));
  return {
    pools: () => pools,
    bootcNode: (name) => bns.get(name),
    node: (name) => nodes.get(name),
  };
}

// Pools a (pool=a, pull secret "creds"), b (pool=b) and w (role=worker, overlapping).
const POOLS = [
  pool("a", { secret: { name: "creds", namespace: NS } }),
  pool("b"),
  pool("w", { labels: { role: "worker" } }),
];

const SLOT = {
  "bootc.dev/in-reboot-slot": "2026-01-01T00:00:00Z",
  "bootc.dev/reboot-slot-pool": "b",
  "bootc.dev/was-cordoned": "false",
};
const DRAINED = {
  ...SLOT,
  "bootc.dev/drained-at": "2026-01-01T00:00:01Z",
  "bootc.dev/drained-for": IMAGE,
};

/** `annotations` without `key`. */
function without(annotations: Record<string, string>, key: string): Record<string, string> {
  const { [key]: _, ...rest } = annotations;
  return rest;
}

Deno.test("nodeChangeMatters: labels, Ready, cordon and every annotation of the record", () => {
  const base = { labels: { pool: "a" }, annotations: { ...DRAINED, note: "x" } };
  const cases: [string, INode, boolean][] = [
    ["nothing changed", node("n", base), false],
    ["a heartbeat", node("n", { ...base, heartbeat: "2026-01-01T00:01:00Z" }), false],
    [
      "an unrelated annotation",
      node("n", { ...base, annotations: { ...DRAINED, note: "y" } }),
      false,
    ],
    ["a label added", node("n", { ...base, labels: { pool: "a", role: "worker" } }), true],
    ["a label changed", node("n", { ...base, labels: { pool: "b" } }), true],
    ["Ready turned False", node("n", { ...base, ready: "False" }), true],
    ["cordoned", node("n", { ...base, unschedulable: true }), true],
    ...[
      "bootc.dev/in-reboot-slot",
      "bootc.dev/reboot-slot-pool",
      "bootc.dev/was-cordoned",
      "bootc.dev/drained-at",
      "bootc.dev/drained-for",
    ].flatMap((key): [string, INode, boolean][] => [
      [
        `${key} deleted by hand`,
        node("n", { ...base, annotations: { ...without(DRAINED, key), note: "x" } }),
        true,
      ],
      [
        `${key} edited`,
        node("n", { ...base, annotations: { ...DRAINED, [key]: "edited", note: "x" } }),
        true,
      ],
    ]),
  ];
  for (const [name, after, want] of cases) {
    assert.equal(nodeChangeMatters(node("n", base), after), want, name);
  }
  // And a record appearing on a bare node.
  assert.equal(nodeChangeMatters(node("n"), node("n", { annotations: SLOT })), true);
  // The same labels serialised in another order are the same labels.
  assert.equal(
    nodeChangeMatters(
      node("n", { labels: { pool: "a", role: "worker" } }),
      node("n", { labels: { role: "worker", pool: "a" } }),
    ),
    false,
  );
});

Deno.test("poolChangeMatters: spec (generation) and lifecycle, not status", () => {
  const before = pool("a", { generation: 3, finalizers: ["f"] });
  const cases: [string, BootcNodePool, boolean][] = [
    ["status only", pool("a", { generation: 3, finalizers: ["f"], slotsInUse: 2 }), false],
    ["spec changed", pool("a", { generation: 4, finalizers: ["f"] }), true],
    ["deletion started", pool("a", { generation: 3, finalizers: ["f"], deleting: true }), true],
    ["finalizer removed", pool("a", { generation: 3, finalizers: [] }), true],
  ];
  const reset = pool("a", { generation: 3, finalizers: ["f"] });
  reset.metadata.annotations = { "bootc.dev/reset-circuit-breaker": "1" };
  cases.push(["circuit breaker reset (an annotation)", reset, true]);
  const retry = pool("a", { generation: 3, finalizers: ["f"] });
  retry.metadata.annotations = { "bootc.dev/retry-revision": "2" };
  cases.push(["a failed revision retried (an annotation)", retry, true]);
  const other = pool("a", { generation: 3, finalizers: ["f"] });
  other.metadata.annotations = { "example.com/note": "x" };
  cases.push(["another annotation", other, false]);
  for (const [name, after, want] of cases) {
    assert.equal(poolChangeMatters(before, after), want, name);
  }
});

Deno.test("poolsForNode: selector matches, the record's pool and the BootcNode's owner", () => {
  const cache = cacheOf({ pools: POOLS, bootcNodes: [bootcNode("owned", { owner: "b" })] });
  const cases: [string, Parameters<typeof poolsForNode>[1], string[]][] = [
    ["no labels, nothing", { name: "x" }, []],
    ["one selector", { name: "x", labels: { pool: "a" } }, ["a"]],
    ["two selectors (a conflict)", { name: "x", labels: { pool: "a", role: "worker" } }, [
      "a",
      "w",
    ]],
    ["the owner of its BootcNode", { name: "owned", labels: { pool: "a" } }, ["a", "b"]],
    [
      "the pool its record names, even one not cached",
      { name: "x", annotations: { "bootc.dev/reboot-slot-pool": "gone" } },
      ["gone"],
    ],
  ];
  for (const [name, keys, want] of cases) {
    assert.deepEqual(poolsForNode(cache, keys), want, name);
  }
});

Deno.test("nodeEventPools: which pools a Node add, update or delete wakes", () => {
  const cache = cacheOf({
    pools: POOLS,
    bootcNodes: [bootcNode("n1", { owner: "a" }), bootcNode("n2", { owner: "b" })],
  });
  const cases: [string, WatchEvent<INode>, string[]][] = [
    ["add: its selector's pool", { type: "add", object: node("n9", { labels: { pool: "a" } }) }, [
      "a",
    ]],
    [
      "add: every pool that selects it",
      { type: "add", object: node("n9", { labels: { pool: "a", role: "worker" } }) },
      ["a", "w"],
    ],
    ["add: the owner of its BootcNode though no selector matches", {
      type: "add",
      object: node("n2"),
    }, ["b"]],
    ["add: no pool", { type: "add", object: node("n9", { labels: { other: "x" } }) }, []],
    [
      "update: a heartbeat wakes nobody",
      {
        type: "update",
        old: node("n1", { labels: { pool: "a" } }),
        object: node("n1", { labels: { pool: "a" }, heartbeat: "2026-01-01T00:05:00Z" }),
      },
      [],
    ],
    [
      "update: relabelled a → b wakes both (a must let it go)",
      {
        type: "update",
        old: node("n1", { labels: { pool: "a" } }),
        object: node("n1", { labels: { pool: "b" } }),
      },
      ["a", "b"],
    ],
    [
      "update: Ready flipped",
      {
        type: "update",
        old: node("n1", { labels: { pool: "a" } }),
        object: node("n1", { labels: { pool: "a" }, ready: "False" }),
      },
      ["a"],
    ],
    [
      "update: cordoned by hand",
      {
        type: "update",
        old: node("n1", { labels: { pool: "a" } }),
        object: node("n1", { labels: { pool: "a" }, unschedulable: true }),
      },
      ["a"],
    ],
    [
      "update: the slot annotations deleted by hand wake the pool they named",
      {
        type: "update",
        old: node("n1", { labels: { pool: "a" }, annotations: DRAINED, unschedulable: true }),
        object: node("n1", {
          labels: { pool: "a" },
          annotations: without(
            without(DRAINED, "bootc.dev/in-reboot-slot"),
            "bootc.dev/reboot-slot-pool",
          ),
          unschedulable: true,
        }),
      },
      ["a", "b"],
    ],
    [
      "update: drained-at deleted by hand",
      {
        type: "update",
        old: node("n9", { labels: { role: "worker" }, annotations: DRAINED }),
        object: node("n9", {
          labels: { role: "worker" },
          annotations: without(DRAINED, "bootc.dev/drained-at"),
        }),
      },
      ["b", "w"],
    ],
    [
      "update: was-cordoned edited by hand",
      {
        type: "update",
        old: node("n9", { annotations: SLOT }),
        object: node("n9", { annotations: { ...SLOT, "bootc.dev/was-cordoned": "true" } }),
      },
      ["b"],
    ],
    [
      "update: drained-for changed on a node whose labels match nothing",
      {
        type: "update",
        old: node("n9", { annotations: DRAINED }),
        object: node("n9", { annotations: { ...DRAINED, "bootc.dev/drained-for": "other" } }),
      },
      ["b"],
    ],
    [
      "delete: matching pools, the record's pool and the BootcNode's owner",
      {
        type: "delete",
        object: node("n1", { labels: { role: "worker" }, annotations: SLOT }),
      },
      ["a", "b", "w"],
    ],
  ];
  for (const [name, event, want] of cases) {
    assert.deepEqual(nodeEventPools(cache, event), want, name);
  }
});

/** `bn` with the state annotations `kubectl get bootcnodes` shows, and a new resourceVersion. */
function withDisplay(bn: BootcNode): BootcNode {
  return {
    ...bn,
    metadata: {
      ...bn.metadata,
      resourceVersion: "42",
      annotations: {
        "bootc.dev/state": "Staging",
        "bootc.dev/state-since": "2026-01-01T00:00:00Z",
      },
    },
  };
}

Deno.test("bootcNodeEventPools: which pools a BootcNode add, update or delete wakes", () => {
  const cache = cacheOf({
    pools: POOLS,
    nodes: [
      node("n1", { labels: { pool: "a" } }),
      node("n3", { labels: { pool: "b", role: "worker" } }),
      node("n4", { labels: { pool: "a" }, annotations: SLOT }),
    ],
  });
  const cases: [string, WatchEvent<BootcNode>, string[]][] = [
    ["add: its owner", { type: "add", object: bootcNode("n1", { owner: "a", label: "a" }) }, [
      "a",
    ]],
    [
      "add: unowned, the pools that select its Node (a contest may start)",
      { type: "add", object: bootcNode("n3") },
      ["b", "w"],
    ],
    [
      "update: status only wakes its owner",
      {
        type: "update",
        old: bootcNode("n1", { owner: "a", label: "a" }),
        object: bootcNode("n1", { owner: "a", label: "a", idle: "Staging" }),
      },
      ["a"],
    ],
    [
      "update: only the controller's display annotations (kubectl get columns): nothing",
      {
        type: "update",
        old: bootcNode("n1", { owner: "a", label: "a" }),
        object: withDisplay(bootcNode("n1", { owner: "a", label: "a" })),
      },
      [],
    ],
    [
      "update: display annotations and the status: its owner",
      {
        type: "update",
        old: bootcNode("n1", { owner: "a", label: "a" }),
        object: withDisplay(bootcNode("n1", { owner: "a", label: "a", idle: "Staging" })),
      },
      ["a"],
    ],
    [
      "update: changed hands a → b wakes both",
      {
        type: "update",
        old: bootcNode("n1", { owner: "a", label: "a" }),
        object: bootcNode("n1", { owner: "b", label: "b" }),
      },
      ["a", "b"],
    ],
    [
      "update: a pool label edited by hand wakes the pool it names",
      {
        type: "update",
        old: bootcNode("n1", { owner: "a", label: "a" }),
        object: bootcNode("n1", { owner: "a", label: "x" }),
      },
      ["a", "x"],
    ],
    [
      "delete: its owner and every pool matching its Node",
      { type: "delete", object: bootcNode("n3", { owner: "b", label: "b" }) },
      ["b", "w"],
    ],
    [
      "delete: the pool its Node's record names, too",
      { type: "delete", object: bootcNode("n4", { owner: "a", label: "a" }) },
      ["a", "b"],
    ],
    [
      "delete: the Node is gone too: its owner",
      { type: "delete", object: bootcNode("gone", { owner: "w", label: "w" }) },
      ["w"],
    ],
  ];
  for (const [name, event, want] of cases) {
    assert.deepEqual(bootcNodeEventPools(cache, event), want, name);
  }
});

Deno.test("poolEventPools: add, delete and selector changes wake every pool", () => {
  const withC = cacheOf({ pools: [...POOLS, pool("c")] });
  const withoutB = cacheOf({ pools: POOLS.filter((p) => p.metadata.name !== "b") });
  const cases: [string, WatchCache, WatchEvent<BootcNodePool>, string[]][] = [
    ["add", withC, { type: "add", object: pool("c") }, ["a", "b", "c", "w"]],
    ["add, before the cache has it", cacheOf({ pools: POOLS }), {
      type: "add",
      object: pool("c"),
    }, ["a", "b", "c", "w"]],
    ["delete: the others, and its own key (nodes still carrying its record)", withoutB, {
      type: "delete",
      object: pool("b"),
    }, ["a", "b", "w"]],
    ["update: selector changed", withC, {
      type: "update",
      old: pool("c"),
      object: pool("c", { labels: { pool: "c2" }, generation: 2 }),
    }, ["a", "b", "c", "w"]],
    ["update: spec changed", withC, {
      type: "update",
      old: pool("c"),
      object: pool("c", { generation: 2 }),
    }, ["c"]],
    ["update: deletion started", withC, {
      type: "update",
      old: pool("c", { finalizers: ["f"] }),
      object: pool("c", { finalizers: ["f"], deleting: true }),
    }, ["c"]],
    ["update: our own status write", withC, {
      type: "update",
      old: pool("c"),
      object: pool("c", { slotsInUse: 1 }),
    }, []],
  ];
  for (const [name, cache, event, want] of cases) {
    assert.deepEqual(poolEventPools(cache, event), want, name);
  }
});

Deno.test("secretEventPools: the pools whose pullSecretRef names the Secret", () => {
  const cache = cacheOf({
    pools: [...POOLS, pool("d", { secret: { name: "creds", namespace: NS } })],
  });
  const cases: [string, WatchEvent<ISecret>, string[]][] = [
    ["add", { type: "add", object: secret("creds") }, ["a", "d"]],
    ["update (rotated)", {
      type: "update",
      old: secret("creds"),
      object: secret("creds", NS, "e30K"),
    }, ["a", "d"]],
    ["delete", { type: "delete", object: secret("creds") }, ["a", "d"]],
    ["another name", { type: "add", object: secret("other") }, []],
    ["the same name in another namespace", { type: "add", object: secret("creds", "default") }, []],
  ];
  for (const [name, event, want] of cases) {
    assert.deepEqual(secretEventPools(cache, event), want, name);
  }
});
