import assert from "node:assert/strict";
import type {
  BootcDisruptionBudget,
  BootcDisruptionBudgetStatus,
  BootcNode,
  BootcNodePool,
} from "../../lib/api/mod.ts";
import { FakeClock } from "../../lib/clock.ts";
import type { Informer, KubeClient, KubeObject } from "../../lib/kube/mod.ts";
import type { UnrecordedDisruption } from "../gates/mod.ts";
import { BudgetStatusSync } from "./budget_status_sync.ts";
import type { Node } from "./object_views.ts";

/** An informer over a fixed list that never fires. */
function staticInformer<T extends KubeObject>(items: T[]): Informer<T> {
  const none = () => {};
  return {
    store: { list: () => items },
    onAdd: none,
    onUpdate: none,
    onDelete: none,
  } as unknown as Informer<T>;
}

/** A budget allowing one node down. */
function oneDown(): BootcDisruptionBudget {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcDisruptionBudget",
    metadata: { name: "one-down", generation: 1, resourceVersion: "1" },
    spec: { maxUnavailable: 1 },
  };
}

/** A client whose status writes land on `budget` (as the cache would show) and are recorded. */
function recordingClient(budget: BootcDisruptionBudget) {
  const written: BootcDisruptionBudgetStatus[] = [];
  let rv = 100;
  const client = {
    resource: () => ({
      patch: (_name: string, body: { status: BootcDisruptionBudgetStatus }) => {
        written.push(body.status);
        budget.status = body.status;
        budget.metadata.resourceVersion = String(++rv);
        return Promise.resolve({ metadata: { resourceVersion: String(rv) } });
      },
    }),
  } as unknown as KubeClient;
  return { client, written };
}

const flush = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 0));
};

Deno.test("BudgetStatusSync passes again when a node counted off its record stops counting by itself", async () => {
  const clock = new FakeClock("2026-01-01T00:00:00Z");
  const until = new Date("2026-01-01T00:01:00Z");
  const budget = oneDown();
  const { client, written } = recordingClient(budget);
  // "gone" (its Node deleted while rebooting) counts until its pool's reboot timeout, which
  // nothing the pool writes marks.
  const unrecorded = (): UnrecordedDisruption[] =>
    clock.now() < until ? [{ node: "gone", until }] : [];
  const sync = new BudgetStatusSync({
    client,
    budgets: staticInformer([budget]),
    nodes: staticInformer<Node>([]),
    unrecordedDisruptions: unrecorded,
    clock,
  });
  const ac = new AbortController();
  const running = sync.run(ac.signal);
  try {
    await flush();
    clock.advance(250);
    await flush();
    assert.deepEqual(written.map((s) => s.disrupted), [["gone"]]);
    clock.advance(59_750); // 00:01:00: "gone" stops counting; no event says so
    await flush();
    clock.advance(1_000);
    await flush();
    assert.deepEqual(written.map((s) => s.disrupted), [["gone"], []]);
  } finally {
    ac.abort();
    await running;
  }
});

/** An informer over a list whose add/update/delete handlers a test fires by hand. */
function firingInformer<T extends KubeObject>(items: T[]) {
  const handlers = {
    add: [] as ((o: T) => void)[],
    update: [] as ((old: T, o: T) => void)[],
    delete: [] as ((o: T) => void)[],
  };
  const informer = {
    store: { list: () => items },
    onAdd: (h: (o: T) => void) => handlers.add.push(h),
    onUpdate: (h: (old: T, o: T) => void) => handlers.update.push(h),
    onDelete: (h: (o: T) => void) => handlers.delete.push(h),
  } as unknown as Informer<T>;
  return { informer, handlers };
}

Deno.test("BudgetStatusSync passes again when a pool is added, deleted or respecified", async () => {
  const clock = new FakeClock("2026-01-01T00:00:00Z");
  const budget = oneDown();
  const { client, written } = recordingClient(budget);
  const pool = (generation: number): BootcNodePool => ({
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    metadata: { name: "ext", generation },
    spec: { nodeSelector: {}, image: { ref: "q/os:1" } } as unknown as BootcNodePool["spec"],
  });
  // An External pool's orchestrator has "n1" down: it counts while the pool exists.
  const pools: BootcNodePool[] = [];
  const { informer, handlers } = firingInformer(pools);
  const sync = new BudgetStatusSync({
    client,
    budgets: staticInformer([budget]),
    nodes: staticInformer<Node>([]),
    externalDisruptions: () => new Set(pools.length > 0 ? ["n1"] : []),
    pools: informer,
    clock,
  });
  const ac = new AbortController();
  const running = sync.run(ac.signal);
  const settle = async () => {
    await flush();
    clock.advance(1_000);
    await flush();
  };
  try {
    await settle();
    const disrupted = () => written.map((s) => s.disrupted);
    assert.deepEqual(disrupted(), [[]]);
    pools.push(pool(1));
    handlers.add.forEach((h) => h(pools[0]));
    await settle();
    assert.deepEqual(disrupted(), [[], ["n1"]], "an added pool counts at once");
    pools.pop();
    handlers.delete.forEach((h) => h(pool(1)));
    await settle();
    assert.deepEqual(disrupted(), [[], ["n1"], []], "a deleted pool stops counting");
    // A new spec (generation) passes again; a status-only update does not.
    const passes = written.length;
    handlers.update.forEach((h) => h(pool(1), pool(1)));
    await settle();
    assert.equal(written.length, passes);
    pools.push(pool(2));
    handlers.update.forEach((h) => h(pool(1), pool(2)));
    await settle();
    assert.equal(written.length, passes + 1);
    assert.deepEqual(disrupted().at(-1), ["n1"]);
  } finally {
    ac.abort();
    await running;
  }
});

Deno.test("BudgetStatusSync passes again when a BootcNode changes pools", async () => {
  const clock = new FakeClock("2026-01-01T00:00:00Z");
  const budget = oneDown();
  const { client, written } = recordingClient(budget);
  const orphan = {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNode",
    metadata: { name: "n1", resourceVersion: "5" },
    spec: { desiredImage: "q/os:1", desiredImageState: "Staged", rebootPolicy: "RebootOnly" },
  } as BootcNode;
  const adopted: BootcNode = {
    ...orphan,
    metadata: {
      ...orphan.metadata,
      resourceVersion: "6",
      ownerReferences: [{
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNodePool",
        name: "ext",
        uid: "u",
        controller: true,
      }],
    },
  };
  // An External pool's cordoned member counts: n1 once the pool "ext" owns it.
  const items: BootcNode[] = [orphan];
  const { informer, handlers } = firingInformer(items);
  const sync = new BudgetStatusSync({
    client,
    budgets: staticInformer([budget]),
    nodes: staticInformer<Node>([]),
    externalDisruptions: () =>
      new Set(items.filter((b) => b.metadata.ownerReferences?.length).map((b) => b.metadata.name!)),
    bootcNodes: informer,
    clock,
  });
  const ac = new AbortController();
  const running = sync.run(ac.signal);
  try {
    await flush();
    clock.advance(1_000);
    await flush();
    assert.deepEqual(written.map((s) => s.disrupted), [[]]);
    items[0] = adopted;
    handlers.update.forEach((h) => h(orphan, adopted));
    await flush();
    clock.advance(1_000);
    await flush();
    assert.deepEqual(written.map((s) => s.disrupted), [[], ["n1"]], "adopted: it counts at once");
  } finally {
    ac.abort();
    await running;
  }
});
