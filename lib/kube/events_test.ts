import assert from "node:assert/strict";
import { FakeClock } from "../clock.ts";
import { createLogger } from "../log.ts";
import { KubeClient } from "./client.ts";
import { type CoreEvent, EventRecorder } from "./events.ts";
import { fakeTransport, jsonResponse, statusResponse } from "./testing.ts";

const bootcNode = {
  apiVersion: "node.bootc.dev/v1alpha1",
  kind: "BootcNode",
  metadata: { name: "n1", uid: "u1", resourceVersion: "7" },
};

function eventsApi() {
  const events = new Map<string, CoreEvent>();
  const state = { fail: false };
  const transport = fakeTransport((req) => {
    if (state.fail) return statusResponse(500, "InternalError");
    const m = req.path.match(/^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/(.+))?$/);
    if (!m) return statusResponse(404, "NotFound");
    const [, ns, name] = m;
    if (req.method === "POST") {
      const ev = req.json as CoreEvent;
      events.set(`${ns}/${ev.metadata!.name}`, ev);
      return jsonResponse(ev, 201);
    }
    if (req.method === "PATCH") {
      const ev = events.get(`${ns}/${name}`);
      if (!ev) return statusResponse(404, "NotFound");
      Object.assign(ev, req.json);
      return jsonResponse(ev);
    }
    return statusResponse(405, "MethodNotAllowed");
  });
  return { events, state, transport, client: new KubeClient({ transport }) };
}

Deno.test("records an Event for a cluster-scoped object in the default namespace", async () => {
  const api = eventsApi();
  const clock = new FakeClock("2026-03-01T10:00:00.250Z");
  const rec = new EventRecorder({
    client: api.client,
    component: "bootc-controller",
    clock,
    host: "ctl-0",
  });
  await rec.record(bootcNode, "Normal", "Staging", "pulling quay.io/x:1");
  assert.equal(api.events.size, 1);
  const [key, ev] = [...api.events][0];
  assert.match(key, /^default\/n1\./);
  assert.deepEqual(ev.involvedObject, {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNode",
    name: "n1",
    uid: "u1",
    resourceVersion: "7",
  });
  assert.equal(ev.type, "Normal");
  assert.equal(ev.reason, "Staging");
  assert.equal(ev.count, 1);
  assert.equal(ev.firstTimestamp, "2026-03-01T10:00:00Z");
  assert.deepEqual(ev.source, { component: "bootc-controller", host: "ctl-0" });
});

Deno.test("repeats are aggregated by PATCHing count and lastTimestamp", async () => {
  const api = eventsApi();
  const clock = new FakeClock();
  const rec = new EventRecorder({ client: api.client, component: "c", clock });
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "apps", uid: "pu" },
  };
  // Concurrent repeats must not race into several creates.
  await Promise.all([
    rec.record(pod, "Warning", "EvictionBlocked", "pdb x blocks"),
    rec.record(pod, "Warning", "EvictionBlocked", "pdb x blocks"),
  ]);
  clock.advance(60_000);
  await rec.record(pod, "Warning", "EvictionBlocked", "pdb x blocks");
  await rec.record(pod, "Warning", "EvictionBlocked", "pdb y blocks"); // different message: new Event
  assert.equal(api.events.size, 2);
  const evs = [...api.events.values()];
  const x = evs.find((e) => e.message === "pdb x blocks")!;
  assert.equal(x.count, 3);
  assert.equal(x.lastTimestamp, "2026-01-01T00:01:00Z");
  assert.equal(x.metadata?.namespace, "apps");
  assert.deepEqual(
    api.transport.requests.map((r) => r.method),
    ["POST", "PATCH", "PATCH", "POST"],
  );
  assert.equal(api.transport.requests[1].headers?.["Content-Type"], "application/merge-patch+json");
});

Deno.test("an expired aggregated Event is recreated", async () => {
  const api = eventsApi();
  const rec = new EventRecorder({ client: api.client, component: "c", clock: new FakeClock() });
  await rec.record(bootcNode, "Normal", "R", "m");
  api.events.clear(); // TTL removed it
  await rec.record(bootcNode, "Normal", "R", "m");
  assert.equal(api.events.size, 1);
  assert.equal([...api.events.values()][0].count, 1);
});

Deno.test("recording never throws; failures are logged", async () => {
  const api = eventsApi();
  const lines: string[] = [];
  const rec = new EventRecorder({
    client: api.client,
    component: "c",
    logger: createLogger({ write: (l) => lines.push(l), level: "debug" }),
  });
  api.state.fail = true;
  await rec.record(bootcNode, "Warning", "Failed", "boom");
  assert.equal(lines.length, 1);
  const line = JSON.parse(lines[0]);
  assert.equal(line.msg, "recording event failed");
  assert.equal(line.reason, "Failed");
  // After recovery the event is created (the failure was not cached as success).
  api.state.fail = false;
  await rec.record(bootcNode, "Warning", "Failed", "boom");
  assert.equal(api.events.size, 1);
});

Deno.test("similar events beyond maxSimilar are combined into one Event (client-go's aggregator)", async () => {
  const api = eventsApi();
  const clock = new FakeClock();
  const rec = new EventRecorder({ client: api.client, component: "c", clock, maxSimilar: 3 });
  const pool = {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    metadata: { name: "workers", uid: "pu" },
  };
  for (let i = 1; i <= 6; i++) {
    await rec.record(pool, "Normal", "NodeAdded", `node n${i} joined the pool`);
  }
  // Another reason on the same object is not similar.
  await rec.record(pool, "Normal", "TargetChanged", "rolling out x");
  // A message seen before the limit still aggregates into its own Event.
  await rec.record(pool, "Normal", "NodeAdded", "node n2 joined the pool");
  const evs = [...api.events.values()];
  assert.deepEqual(
    evs.map((e) => [e.reason, e.message, e.count]),
    [
      ["NodeAdded", "node n1 joined the pool", 1],
      ["NodeAdded", "node n2 joined the pool", 2],
      ["NodeAdded", "node n3 joined the pool", 1],
      ["NodeAdded", "(combined from similar events): node n6 joined the pool", 3],
      ["TargetChanged", "rolling out x", 1],
    ],
  );
  assert.deepEqual(
    api.transport.requests.map((r) => r.method),
    ["POST", "POST", "POST", "POST", "PATCH", "PATCH", "POST", "PATCH"],
  );
  // After the window, distinct messages get their own Events again.
  clock.advance(10 * 60_000 + 1);
  await rec.record(pool, "Normal", "NodeAdded", "node n7 joined the pool");
  assert.equal([...api.events.values()].at(-1)!.message, "node n7 joined the pool");
});

Deno.test("with minPatchIntervalMs, repeats in between are counted and patched together", async () => {
  const api = eventsApi();
  const clock = new FakeClock("2026-03-01T10:00:00Z");
  const rec = new EventRecorder({
    client: api.client,
    component: "c",
    clock,
    minPatchIntervalMs: 10_000,
  });
  await rec.record(bootcNode, "Warning", "EvictionBlocked", "pdb x blocks");
  for (let i = 0; i < 5; i++) {
    clock.advance(1_000);
    await rec.record(bootcNode, "Warning", "EvictionBlocked", "pdb x blocks");
  }
  // Only the create so far; the repeats wait for the interval.
  assert.deepEqual(api.transport.requests.map((r) => r.method), ["POST"]);
  clock.advance(5_000);
  // The timer's patch runs on its own: wait for it (a condition, not a duration).
  for (let i = 0; i < 1000 && api.transport.requests.length < 2; i++) {
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.deepEqual(api.transport.requests.map((r) => r.method), ["POST", "PATCH"]);
  const ev = [...api.events.values()][0];
  assert.equal(ev.count, 6);
  assert.equal(ev.lastTimestamp, "2026-03-01T10:00:05Z");
  // A repeat after the interval is patched at once; flush() writes what is left.
  clock.advance(10_000);
  await rec.record(bootcNode, "Warning", "EvictionBlocked", "pdb x blocks");
  assert.equal(ev.count, 7);
  clock.advance(1_000);
  await rec.record(bootcNode, "Warning", "EvictionBlocked", "pdb x blocks");
  assert.equal(ev.count, 7);
  await rec.flush();
  assert.equal(ev.count, 8);
  assert.equal(api.transport.requests.length, 4);
  await rec.flush(); // nothing left: no request
  assert.equal(api.transport.requests.length, 4);
});

Deno.test("an aggregated Event reads as kubectl shows it: `(x3 over 2m)`", async () => {
  const api = eventsApi();
  const clock = new FakeClock("2026-03-01T10:00:00Z");
  const rec = new EventRecorder({ client: api.client, component: "c", clock });
  const node = { apiVersion: "v1", kind: "Node", metadata: { name: "w1", uid: "nu" } };
  for (let i = 0; i < 3; i++) {
    await rec.record(node, "Warning", "DrainBlocked", "pdb x blocks pod a");
    clock.advance(60_000);
  }
  assert.equal(api.events.size, 1);
  const ev = [...api.events.values()][0] as CoreEvent & { eventTime?: unknown; series?: unknown };
  // core/v1 aggregation: kubectl uses count, firstTimestamp and lastTimestamp when there is
  // no series (describe: "(x<count> over <lastTimestamp - firstTimestamp>)").
  assert.equal(ev.series, undefined);
  assert.equal(ev.eventTime, undefined);
  const overMinutes = (Date.parse(ev.lastTimestamp) - Date.parse(ev.firstTimestamp)) / 60_000;
  assert.equal(`(x${ev.count} over ${overMinutes}m)`, "(x3 over 2m)");
  assert.equal(ev.firstTimestamp, "2026-03-01T10:00:00Z");
});
