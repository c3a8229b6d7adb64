import assert from "node:assert/strict";
import { KubeClient, PATCH_CONTENT_TYPES } from "./client.ts";
import {
  ConflictError,
  GoneError,
  isNotFound,
  KubeError,
  NotFoundError,
  TooManyRequestsError,
} from "./errors.ts";
import { Resources } from "./resources.ts";
import {
  fakeTransport,
  jsonResponse,
  statusResponse,
  streamResponse,
  watchLine,
} from "./testing.ts";
import type { KubeObject, WatchEvent } from "./types.ts";

const pod = (name: string, rv = "1"): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "ns", resourceVersion: rv },
});

Deno.test("get builds core, group and cluster-scoped paths", async () => {
  const t = fakeTransport((req) => jsonResponse({ metadata: { name: req.path } }));
  const c = new KubeClient({ transport: t });
  await c.resource(Resources.pods, "ns").get("p1");
  await c.resource(Resources.leases, "kube-system").get("l");
  await c.resource(Resources.nodes).get("n1");
  await c.resource(Resources.bootcNodePools).get("pool");
  assert.deepEqual(t.requests.map((r) => `${r.method} ${r.path}`), [
    "GET /api/v1/namespaces/ns/pods/p1",
    "GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l",
    "GET /api/v1/nodes/n1",
    "GET /apis/node.bootc.dev/v1alpha1/bootcnodepools/pool",
  ]);
  await assert.rejects(() => c.resource(Resources.pods).get("p"), /namespace is required/);
});

Deno.test("list follows continue tokens and passes selectors", async () => {
  const t = fakeTransport((req) => {
    const cont = req.query?.continue;
    if (!cont) {
      return jsonResponse({
        metadata: { resourceVersion: "10", continue: "c1" },
        items: [pod("a")],
      });
    }
    if (cont === "c1") {
      return jsonResponse({
        metadata: { resourceVersion: "10", continue: "c2" },
        items: [pod("b")],
      });
    }
    return jsonResponse({ metadata: { resourceVersion: "10" }, items: [pod("c")] });
  });
  const c = new KubeClient({ transport: t });
  const list = await c.resource(Resources.pods).list({
    labelSelector: "app=x",
    fieldSelector: "spec.nodeName=n1",
    limit: 1,
  });
  assert.deepEqual(list.items.map((p) => p.metadata?.name), ["a", "b", "c"]);
  assert.equal(list.metadata.resourceVersion, "10");
  assert.equal(list.metadata.continue, undefined);
  assert.equal(t.requests.length, 3);
  assert.equal(t.requests[0].path, "/api/v1/pods");
  for (const r of t.requests) {
    assert.equal(r.query?.labelSelector, "app=x");
    assert.equal(r.query?.fieldSelector, "spec.nodeName=n1");
    assert.equal(r.query?.limit, 1);
  }
  assert.deepEqual(t.requests.map((r) => r.query?.continue), [undefined, "c1", "c2"]);

  const single = await c.resource(Resources.pods).list({ limit: 1, singlePage: true });
  assert.equal(single.items.length, 1);
  assert.equal(single.metadata.continue, "c1");
  assert.equal(t.requests.length, 4);
});

Deno.test("patch sends the content type of each flavour", async () => {
  const t = fakeTransport((req) => jsonResponse({ metadata: { name: "p" }, echo: req.json }));
  const pods = new KubeClient({ transport: t }).resource(Resources.pods, "ns");
  await pods.patch("p", { metadata: { labels: { a: "b" } } }, { type: "merge" });
  await pods.patch("p", [{ op: "add", path: "/metadata/labels/a", value: "b" }], { type: "json" });
  await pods.patch("p", { spec: {} }, { type: "strategic", subresource: "status" });
  await pods.patch("p", { metadata: { name: "p" } }, {
    type: "apply",
    fieldManager: "me",
    force: true,
  });
  assert.deepEqual(
    t.requests.map((r) => r.headers?.["Content-Type"]),
    [
      "application/merge-patch+json",
      "application/json-patch+json",
      "application/strategic-merge-patch+json",
      "application/apply-patch+yaml",
    ],
  );
  assert.equal(PATCH_CONTENT_TYPES.apply, "application/apply-patch+yaml");
  assert.equal(t.requests[2].path, "/api/v1/namespaces/ns/pods/p/status");
  assert.equal(t.requests[3].query?.fieldManager, "me");
  assert.equal(t.requests[3].query?.force, true);
  assert.equal(t.requests[0].query?.force, undefined);
  // Apply bodies get type metadata filled in.
  assert.deepEqual(t.requests[3].json, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } });
  await assert.rejects(() => pods.patch("p", {}, { type: "apply" }), /fieldManager/);
  await assert.rejects(() => pods.patch("p", {}, { type: "json" }), /array/);
  assert.equal(t.requests.length, 4);
});

Deno.test("create/update/updateStatus use POST/PUT with type metadata and namespace from object", async () => {
  const t = fakeTransport((req) => jsonResponse(req.json));
  const c = new KubeClient({ transport: t });
  const nodes = c.resource(Resources.bootcNodes);
  const created = await nodes.create({ metadata: { name: "n1" } }, {
    fieldManager: "fm",
    dryRun: true,
  });
  assert.equal(created.apiVersion, "node.bootc.dev/v1alpha1");
  assert.equal(created.kind, "BootcNode");
  await nodes.update({ metadata: { name: "n1", resourceVersion: "5" } });
  await nodes.updateStatus({ metadata: { name: "n1", resourceVersion: "6" } });
  await c.resource(Resources.pods).create(pod("x"));
  assert.deepEqual(t.requests.map((r) => `${r.method} ${r.path}`), [
    "POST /apis/node.bootc.dev/v1alpha1/bootcnodes",
    "PUT /apis/node.bootc.dev/v1alpha1/bootcnodes/n1",
    "PUT /apis/node.bootc.dev/v1alpha1/bootcnodes/n1/status",
    "POST /api/v1/namespaces/ns/pods",
  ]);
  assert.equal(t.requests[0].query?.dryRun, "All");
  assert.equal(t.requests[0].query?.fieldManager, "fm");
});

Deno.test("a stale update surfaces ConflictError", async () => {
  const t = fakeTransport(() => statusResponse(409, "Conflict", "the object has been modified"));
  const c = new KubeClient({ transport: t });
  await assert.rejects(
    () => c.resource(Resources.nodes).update({ metadata: { name: "n", resourceVersion: "1" } }),
    ConflictError,
  );
});

Deno.test("delete sends DeleteOptions and surfaces 404 as NotFoundError", async () => {
  const t = fakeTransport((req) =>
    req.path.endsWith("/gone")
      ? statusResponse(404, "NotFound")
      : jsonResponse({ kind: "Status", status: "Success" })
  );
  const pods = new KubeClient({ transport: t }).resource(Resources.pods, "ns");
  await pods.delete("p", {
    propagationPolicy: "Foreground",
    preconditions: { uid: "u1", resourceVersion: "3" },
    gracePeriodSeconds: 0,
  });
  assert.equal(t.requests[0].method, "DELETE");
  assert.deepEqual(t.requests[0].json, {
    apiVersion: "v1",
    kind: "DeleteOptions",
    propagationPolicy: "Foreground",
    preconditions: { uid: "u1", resourceVersion: "3" },
    gracePeriodSeconds: 0,
  });
  const err = await pods.delete("gone").catch((e) => e);
  assert.ok(err instanceof NotFoundError);
  assert.ok(isNotFound(err));
});

Deno.test("evict posts a policy/v1 Eviction; 429 becomes TooManyRequestsError", async () => {
  let refuse = false;
  const t = fakeTransport(() =>
    refuse
      ? statusResponse(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
        {
          causes: [{
            reason: "DisruptionBudget",
            message: "The disruption budget pdb needs 1 healthy pods",
          }],
        },
      )
      : jsonResponse({ kind: "Status", status: "Success", code: 201 }, 201)
  );
  const c = new KubeClient({ transport: t });
  await c.evict("ns", "p1", { gracePeriodSeconds: 5, dryRun: true });
  assert.equal(t.requests[0].method, "POST");
  assert.equal(t.requests[0].path, "/api/v1/namespaces/ns/pods/p1/eviction");
  assert.deepEqual(t.requests[0].json, {
    apiVersion: "policy/v1",
    kind: "Eviction",
    metadata: { name: "p1", namespace: "ns" },
    deleteOptions: { gracePeriodSeconds: 5, dryRun: ["All"] },
  });
  refuse = true;
  const e = await c.evict("ns", "p1").catch((e) => e);
  assert.ok(e instanceof TooManyRequestsError);
  assert.equal(e.causes[0].reason, "DisruptionBudget");
});

Deno.test("watch parses split lines, yields bookmarks, stops at stream end", async () => {
  const s = streamResponse();
  const t = fakeTransport(() => s.response);
  const pods = new KubeClient({ transport: t }).resource(Resources.pods, "ns");
  const events: WatchEvent<KubeObject>[] = [];
  const done = (async () => {
    for await (const ev of pods.watch({ resourceVersion: "5", labelSelector: "a=b" })) {
      events.push(ev);
    }
  })();
  const added = watchLine("ADDED", pod("a", "6"));
  s.send(added.slice(0, 10));
  s.send(added.slice(10) + watchLine("MODIFIED", pod("a", "7")).slice(0, 3));
  s.send(watchLine("MODIFIED", pod("a", "7")).slice(3));
  s.send(watchLine("BOOKMARK", { kind: "Pod", metadata: { resourceVersion: "9" } }));
  s.send(watchLine("DELETED", pod("a", "10")));
  s.end();
  await done;
  assert.deepEqual(events.map((e) => `${e.type}@${e.object.metadata?.resourceVersion}`), [
    "ADDED@6",
    "MODIFIED@7",
    "BOOKMARK@9",
    "DELETED@10",
  ]);
  const q = t.requests[0].query!;
  assert.equal(q.watch, true);
  assert.equal(q.allowWatchBookmarks, true);
  assert.equal(q.resourceVersion, "5");
  assert.equal(q.labelSelector, "a=b");
});

Deno.test("watch ERROR 410 throws GoneError; other ERROR throws KubeError", async () => {
  for (
    const [code, reason, cls] of [[410, "Expired", GoneError], [
      500,
      "InternalError",
      KubeError,
    ]] as const
  ) {
    const s = streamResponse();
    const t = fakeTransport(() => s.response);
    const pods = new KubeClient({ transport: t }).resource(Resources.pods, "ns");
    s.send(watchLine("ADDED", pod("a")));
    s.send(watchLine("ERROR", { kind: "Status", apiVersion: "v1", code, reason, message: "boom" }));
    const seen: string[] = [];
    const err = await (async () => {
      for await (const ev of pods.watch()) seen.push(ev.type);
    })().catch((e) => e);
    assert.equal(err.constructor, cls);
    assert.equal(err.status, code);
    assert.deepEqual(seen, ["ADDED"]);
  }
});

Deno.test("watch ends quietly when its signal aborts, and a consumer break cancels the stream", async () => {
  const s = streamResponse();
  const ac = new AbortController();
  const t = fakeTransport((req) => {
    req.signal?.addEventListener("abort", () => s.fail(new DOMException("aborted", "AbortError")));
    return s.response;
  });
  const pods = new KubeClient({ transport: t }).resource(Resources.pods, "ns");
  const seen: string[] = [];
  const done = (async () => {
    for await (const ev of pods.watch({ signal: ac.signal })) {
      seen.push(ev.type);
      ac.abort();
    }
  })();
  s.send(watchLine("ADDED", pod("a")));
  await done;
  assert.deepEqual(seen, ["ADDED"]);

  const s2 = streamResponse();
  const t2 = fakeTransport(() => s2.response);
  s2.send(watchLine("ADDED", pod("a")) + watchLine("ADDED", pod("b")));
  for await (const _ of new KubeClient({ transport: t2 }).resource(Resources.pods).watch()) break;
  // The body was cancelled: further sends are dropped and nothing is left open.
  assert.equal(s2.response.bodyUsed, true);
});

Deno.test("a failed watch request throws the parsed error", async () => {
  const t = fakeTransport(() => statusResponse(403, "Forbidden"));
  const pods = new KubeClient({ transport: t }).resource(Resources.pods);
  await assert.rejects(async () => {
    for await (const _ of pods.watch()) { /* none */ }
  }, (e: unknown) => e instanceof KubeError && e.status === 403);
});

Deno.test("createTokenRequest posts a TokenRequest with a bound object", async () => {
  const t = fakeTransport(() =>
    jsonResponse({ status: { token: "tok", expirationTimestamp: "2026-01-01T01:00:00Z" } }, 201)
  );
  const c = new KubeClient({ transport: t });
  const out = await c.createTokenRequest("bootc", "daemon", {
    audiences: ["https://kubernetes.default.svc"],
    expirationSeconds: 3600,
    boundObjectRef: { kind: "Node", name: "n1", uid: "u" },
  });
  assert.equal(out.token, "tok");
  assert.equal(t.requests[0].path, "/api/v1/namespaces/bootc/serviceaccounts/daemon/token");
  assert.deepEqual((t.requests[0].json as { spec: unknown }).spec, {
    audiences: ["https://kubernetes.default.svc"],
    expirationSeconds: 3600,
    boundObjectRef: { apiVersion: "v1", kind: "Node", name: "n1", uid: "u" },
  });
  c.close();
  assert.equal(t.closed, true);
});
