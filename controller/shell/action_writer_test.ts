import assert from "node:assert/strict";
import { FakeClock } from "../../lib/clock.ts";
import { KubeClient } from "../../lib/kube/mod.ts";
import { fakeTransport, jsonResponse, statusResponse } from "../../lib/kube/testing.ts";
import { silentLogger } from "../../lib/log.ts";
import { ActionWriter, type FailedEviction, StalePlanError } from "./action_writer.ts";
import type { Written } from "./cache_guard.ts";
import type { Action } from "../planner/plan.ts";
import { bootcNode, pool } from "../testing/fixtures.ts";

/** A writer over a fake API answering with `answer`, recording counts and requeues. */
function world(answer: (method: string, path: string) => Response) {
  const transport = fakeTransport((req) => answer(req.method, req.path));
  const counts: string[] = [];
  const requeues: [string, number][] = [];
  const writer = new ActionWriter({
    client: new KubeClient({ transport }),
    clock: new FakeClock(),
    count: (kind) => counts.push(kind),
    requeue: (p, ms) => requeues.push([p, ms]),
  });
  const written: Written[] = [];
  const apply = (action: Action) => writer.apply(pool(), action, written, silentLogger);
  return { transport, counts, requeues, written, apply };
}

const object = (uid: string, resourceVersion: string) => ({
  metadata: { name: "n1", uid, resourceVersion },
});

Deno.test("ActionWriter: writes are recorded by the identity the API returned", async () => {
  const w = world(() => jsonResponse(object("u2", "41")));
  await w.apply({ kind: "createBootcNode", node: "n1", object: bootcNode("n1") });
  await w.apply({ kind: "patchNode", node: "n1", patch: {}, why: "assign slot", intent: "grant" });
  await w.apply({ kind: "deleteBootcNode", node: "n1", uid: "u1" });
  assert.deepEqual(w.written, [
    { store: "bootcNodes", name: "n1", uid: "u2", resourceVersion: "41" },
    { store: "nodes", name: "n1", uid: "u2", resourceVersion: "41" },
    // The delete names the object deleted, so a new one of that name does not hide it.
    { store: "bootcNodes", name: "n1", uid: "u1", deleted: true },
  ]);
  assert.deepEqual(w.counts, ["createBootcNode", "patchNode", "deleteBootcNode"]);
  const del = w.transport.requests.at(-1)!;
  assert.equal(del.method, "DELETE");
  assert.deepEqual((del.json as { preconditions?: unknown }).preconditions, { uid: "u1" });
});

Deno.test("ActionWriter: already there, already gone and lost races are no errors", async () => {
  const w = world((method) =>
    method === "POST"
      ? statusResponse(409, "AlreadyExists")
      : method === "DELETE"
      ? statusResponse(404, "NotFound")
      : statusResponse(409, "Conflict")
  );
  await w.apply({ kind: "createBootcNode", node: "n1", object: bootcNode("n1") });
  await w.apply({ kind: "deleteBootcNode", node: "n1", uid: "u1" });
  await w.apply({ kind: "patchBootcNodeStatus", node: "n1", patch: {}, why: "stalled" });
  assert.deepEqual(w.counts, []);
  // The gone object is still waited for (the cache must drop it); the lost race is retried.
  assert.deepEqual(w.written, [{ store: "bootcNodes", name: "n1", uid: "u1", deleted: true }]);
  assert.deepEqual(w.requeues, [["workers", 1_000]]);
  // A conflict on a spec patch is an error: the reconcile fails and is retried.
  await assert.rejects(
    w.apply({ kind: "patchBootcNode", node: "n1", patch: {}, why: "sync" }),
  );
});

Deno.test("ActionWriter: the finalizer patch is conditional on the pool as planned", async () => {
  const w = world(() =>
    jsonResponse({ metadata: { name: "workers", uid: "p", resourceVersion: "9" } })
  );
  const p = pool();
  p.metadata.resourceVersion = "8";
  const written: Written[] = [];
  const writer = new ActionWriter({
    client: new KubeClient({ transport: w.transport }),
    clock: new FakeClock(),
    count: () => {},
    requeue: () => {},
  });
  await writer.apply(p, { kind: "removeFinalizer" }, written, silentLogger);
  const body = w.transport.requests[0].json as { metadata: Record<string, unknown> };
  assert.deepEqual(body.metadata, { finalizers: [], resourceVersion: "8" });
  assert.deepEqual(written, [{ store: "pools", name: "workers", uid: "p", resourceVersion: "9" }]);
});

Deno.test("ActionWriter: evictions carry the grace period; forced deletions the uid and grace", async () => {
  const w = world((method, path) =>
    method === "DELETE" && path.endsWith("/gone")
      ? statusResponse(404, "NotFound")
      : jsonResponse({})
  );
  await w.apply({
    kind: "evict",
    node: "n1",
    pods: [{ namespace: "a", name: "web", gracePeriodSeconds: 7 }, { namespace: "a", name: "db" }],
  });
  const [web, db] = w.transport.requests;
  assert.equal(web.path, "/api/v1/namespaces/a/pods/web/eviction");
  assert.deepEqual((web.json as { deleteOptions: unknown }).deleteOptions, {
    gracePeriodSeconds: 7,
  });
  assert.deepEqual((db.json as { deleteOptions: unknown }).deleteOptions, {});
  const refused = await w.apply({
    kind: "deletePods",
    node: "n1",
    pods: [
      { namespace: "a", name: "web", uid: "u1", gracePeriodSeconds: 5 },
      { namespace: "a", name: "gone" },
    ],
  });
  assert.equal(refused, 0);
  const del = w.transport.requests[2];
  assert.equal(`${del.method} ${del.path}`, "DELETE /api/v1/namespaces/a/pods/web");
  assert.deepEqual(del.json, {
    apiVersion: "v1",
    kind: "DeleteOptions",
    preconditions: { uid: "u1" },
    gracePeriodSeconds: 5,
  });
  assert.deepEqual(w.counts, ["evict", "evict", "deletePod", "deletePod"]);
});

Deno.test("ActionWriter: a forced deletion the API refuses is counted, so the drain backs off", async () => {
  const w = world((method, path) =>
    method === "DELETE" && path.endsWith("/denied")
      ? statusResponse(403, "Forbidden")
      : jsonResponse({})
  );
  const failed = await w.apply({
    kind: "deletePods",
    node: "n1",
    pods: [{ namespace: "a", name: "denied", uid: "u1" }, { namespace: "a", name: "web" }],
  });
  assert.equal(failed, 1, "one refused deletion, never thrown");
  assert.deepEqual(w.counts, ["deletePod", "deletePod"]);
});

Deno.test("ActionWriter: once the fence closes (lease no longer held) nothing more is written", async () => {
  const transport = fakeTransport(() => jsonResponse(object("u1", "5")));
  let leading = true;
  let evictions = 0;
  const writer = new ActionWriter({
    client: new KubeClient({ transport }),
    clock: new FakeClock(),
    count: (kind) => {
      if (kind !== "evict") return;
      // The replica is frozen after its first eviction and wakes past its lease.
      if (++evictions === 1) leading = false;
    },
    requeue: () => {},
    fence: () => {
      if (!leading) throw new Error("not leading");
    },
  });
  const written: Written[] = [];
  const apply = (action: Action) => writer.apply(pool(), action, written, silentLogger);
  await apply({ kind: "patchNode", node: "n1", patch: {}, why: "assign slot", intent: "grant" });
  assert.equal(transport.requests.length, 1);
  const refused = await apply({
    kind: "evict",
    node: "n1",
    pods: [{ namespace: "a", name: "web" }, { namespace: "a", name: "db" }],
  });
  assert.equal(transport.requests.length, 2, "the second eviction did not go out");
  assert.equal(refused, 0);
  await assert.rejects(
    apply({ kind: "patchNode", node: "n2", patch: {}, why: "assign slot", intent: "grant" }),
    /not leading/,
  );
  await assert.rejects(
    apply({ kind: "deletePods", node: "n1", pods: [{ namespace: "a", name: "db", uid: "u" }] }),
    /not leading/,
  );
  assert.equal(transport.requests.length, 2);
});

/** A grant planned on an uncordoned Node at resourceVersion 7. */
const grant: Action = {
  kind: "patchNode",
  node: "n1",
  patch: {
    metadata: { annotations: { "bootc.dev/was-cordoned": "false" } },
    spec: { unschedulable: true },
  },
  why: "assign slot",
  intent: "grant",
  cordonSeen: { unschedulable: false, resourceVersion: "7" },
};

/** A fake API whose Node is at `versions[0]`, then the next on each conflict; `cordoned` as given. */
function nodeWorld(options: { cordoned: boolean; conflicts: number }) {
  let conflicts = options.conflicts;
  return world((method) => {
    if (method === "GET") {
      return jsonResponse({
        metadata: { name: "n1", uid: "u1", resourceVersion: "9" },
        spec: options.cordoned ? { unschedulable: true } : {},
      });
    }
    if (conflicts-- > 0) return statusResponse(409, "Conflict");
    return jsonResponse(object("u1", "10"));
  });
}

const sentVersions = (w: ReturnType<typeof world>) =>
  w.transport.requests.filter((r) => r.method === "PATCH").map((r) =>
    (r.json as { metadata: { resourceVersion?: string } }).metadata.resourceVersion
  );

Deno.test("ActionWriter: a grant is conditional on the resourceVersion its plan read", async () => {
  const w = nodeWorld({ cordoned: false, conflicts: 0 });
  await w.apply(grant);
  assert.deepEqual(sentVersions(w), ["7"]);
  assert.deepEqual(w.counts, ["patchNode"]);
});

Deno.test("ActionWriter: a grant whose Node changed but kept its cordon is resent at the fresh version", async () => {
  const w = nodeWorld({ cordoned: false, conflicts: 1 });
  await w.apply(grant);
  assert.deepEqual(sentVersions(w), ["7", "9"]);
  assert.deepEqual(w.written, [{ store: "nodes", name: "n1", uid: "u1", resourceVersion: "10" }]);
});

Deno.test("ActionWriter: a grant whose Node was cordoned after the plan read it is not written", async () => {
  // Written anyway, it would record "was-cordoned: false" and the release would remove the
  // user's cordon.
  const w = nodeWorld({ cordoned: true, conflicts: 1 });
  const error = await w.apply(grant).then(() => undefined, (e) => e);
  assert.ok(error instanceof StalePlanError, String(error));
  assert.equal(error.node, "n1");
  assert.match(error.message, /cordoned after the plan read it/);
  assert.deepEqual(sentVersions(w), ["7"]);
  assert.deepEqual(w.counts, []);
  assert.deepEqual(w.written, []);
});

Deno.test("ActionWriter: conflicts that keep coming end in the conflict after three attempts", async () => {
  const w = nodeWorld({ cordoned: false, conflicts: 5 });
  await assert.rejects(w.apply(grant), (e: Error) => e.name === "ConflictError");
  assert.deepEqual(sentVersions(w), ["7", "9", "9"]);
});

Deno.test("ActionWriter: an eviction refused by a budget waits; one forbidden is told to the shell, not thrown", async () => {
  const w = world((_method, path) =>
    path.includes("/pods/pdb/")
      ? statusResponse(429, "TooManyRequests")
      : path.includes("/pods/web/")
      ? statusResponse(403, "Forbidden")
      : jsonResponse({})
  );
  const failed: FailedEviction[] = [];
  const pods = [
    { namespace: "a", name: "pdb" },
    { namespace: "a", name: "web" },
    { namespace: "a", name: "db" },
  ];
  const writer = new ActionWriter({
    client: new KubeClient({ transport: w.transport }),
    clock: new FakeClock(),
    count: () => {},
    requeue: () => {},
  });
  const refused = await writer.apply(
    pool(),
    { kind: "evict", node: "n1", pods },
    [],
    silentLogger,
    failed,
  );
  assert.equal(refused, 1, "a refusal by a budget is the drain's wait");
  assert.equal(w.transport.requests.length, 3, "every pod had its try");
  assert.deepEqual(failed.map((f) => [f.node, (f.error as { status?: number }).status]), [[
    "n1",
    403,
  ]]);
});
