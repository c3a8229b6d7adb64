import assert from "node:assert/strict";
import { FakeClock } from "../clock.ts";
import { KubeClient } from "./client.ts";
import { LeaderElector, type Lease, microTime } from "./leader.ts";
import { fakeTransport, jsonResponse, statusResponse } from "./testing.ts";

const tick = (ms = 3) => new Promise((r) => setTimeout(r, ms));

/** An in-memory Lease endpoint with resourceVersion compare-and-swap. */
function leaseApi() {
  const state = {
    lease: undefined as Lease | undefined,
    rv: 0,
    down: false,
    writes: [] as string[],
    /** The next update is committed but its response is lost. */
    loseNextResponse: false,
  };
  const transport = fakeTransport((req) => {
    if (state.down) return statusResponse(503, "ServiceUnavailable");
    const path = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";
    if (req.method === "GET") {
      return state.lease ? jsonResponse(state.lease) : statusResponse(404, "NotFound");
    }
    const body = req.json as Lease;
    if (req.method === "POST" && req.path === path) {
      if (state.lease) return statusResponse(409, "AlreadyExists");
      state.lease = {
        ...body,
        metadata: { ...body.metadata, resourceVersion: String(++state.rv) },
      };
      state.writes.push(`create ${body.spec?.holderIdentity}`);
      return jsonResponse(state.lease, 201);
    }
    if (req.method === "PUT" && req.path === `${path}/lock`) {
      if (body.metadata?.resourceVersion !== state.lease?.metadata?.resourceVersion) {
        return statusResponse(409, "Conflict", "the object has been modified");
      }
      state.lease = {
        ...body,
        metadata: { ...body.metadata, resourceVersion: String(++state.rv) },
      };
      state.writes.push(`update ${body.spec?.holderIdentity ?? "<none>"}`);
      if (state.loseNextResponse) {
        state.loseNextResponse = false;
        throw new TypeError("connection reset");
      }
      return jsonResponse(state.lease);
    }
    return statusResponse(400, "BadRequest");
  });
  return { state, client: new KubeClient({ transport }) };
}

function elector(client: KubeClient, identity: string, clock: FakeClock) {
  return new LeaderElector({
    client,
    namespace: "ns",
    name: "lock",
    identity,
    leaseDurationSeconds: 15,
    renewDeadlineSeconds: 10,
    retryPeriodSeconds: 2,
    clock,
  });
}

/** Advances the fake clock in small steps, letting promises run in between. */
async function advance(clock: FakeClock, ms: number, step = 500) {
  for (let t = 0; t < ms; t += step) {
    clock.advance(Math.min(step, ms - t));
    await tick();
  }
}

Deno.test("microTime has microsecond precision", () => {
  assert.equal(microTime(new Date("2026-01-01T00:00:00.123Z")), "2026-01-01T00:00:00.123000Z");
});

Deno.test("creates the lease, renews it, and releases it on stop", async () => {
  const { state, client } = leaseApi();
  const clock = new FakeClock();
  const a = elector(client, "a", clock);
  const ac = new AbortController();
  let leaderSignal: AbortSignal | undefined;
  let stopped = 0;
  const running = a.run({
    onStartedLeading: (s) => {
      leaderSignal = s;
    },
    onStoppedLeading: () => stopped++,
  }, ac.signal);
  await tick();
  assert.equal(a.isLeader(), true);
  assert.equal(state.lease?.spec?.holderIdentity, "a");
  assert.equal(state.lease?.spec?.leaseTransitions, 0);
  const firstRenew = state.lease?.spec?.renewTime;
  await advance(clock, 2000);
  assert.notEqual(state.lease?.spec?.renewTime, firstRenew, "renewed after a retry period");
  ac.abort();
  await running;
  assert.equal(leaderSignal?.aborted, true);
  assert.equal(stopped, 1);
  assert.equal(a.isLeader(), false);
  assert.equal(state.lease?.spec?.holderIdentity, null, "released");
  assert.deepEqual(state.writes, ["create a", "update a", "update <none>"]);
});

Deno.test("a second candidate takes over only after the lease expires", async () => {
  const { state, client } = leaseApi();
  const clock = new FakeClock();
  const a = elector(client, "a", clock);
  const b = elector(client, "b", clock);
  const acA = new AbortController();
  const acB = new AbortController();
  const events: string[] = [];
  const runA = a.run({
    onStartedLeading: () => void events.push("a started"),
    onStoppedLeading: () => void events.push("a stopped"),
  }, acA.signal);
  await tick();
  assert.equal(a.isLeader(), true);
  const runB = b.run({
    onStartedLeading: () => void events.push("b started"),
    onStoppedLeading: () => void events.push("b stopped"),
  }, acB.signal);
  await advance(clock, 20_000);
  assert.equal(b.isLeader(), false, "a keeps renewing, b waits");

  // a's API access breaks (partition): it steps down after renewDeadline; b takes over after expiry.
  const original = state.lease;
  state.down = true;
  await advance(clock, 10_500);
  assert.equal(a.isLeader(), false, "a stepped down after the renew deadline");
  assert.deepEqual(events, ["a started", "a stopped"]);
  await runA;
  state.down = false;
  assert.equal(state.lease, original, "a could not release while partitioned");
  // a last renewed at T = 20 s. b measures expiry from when it first saw that renewal (at T at
  // the earliest, at the end of the partition at the latest) plus 15 s, polling every <= 2.4 s.
  // Now is 30.5 s.
  await advance(clock, 4000);
  assert.equal(b.isLeader(), false, "not before the lease can have expired (35 s)");
  await advance(clock, 16_500); // 51 s > 30.5 + 15 + 2 * 2.4
  assert.equal(b.isLeader(), true);
  assert.equal(state.lease?.spec?.holderIdentity, "b");
  assert.equal(state.lease?.spec?.leaseTransitions, 1);
  assert.deepEqual(events, ["a started", "a stopped", "b started"]);
  acB.abort();
  await runB;
  acA.abort();
});

Deno.test("a released lease is taken at once; a stale write loses on conflict", async () => {
  const { state, client } = leaseApi();
  const clock = new FakeClock();
  const a = elector(client, "a", clock);
  const acA = new AbortController();
  const runA = a.run({ onStartedLeading: () => {}, onStoppedLeading: () => {} }, acA.signal);
  await tick();
  acA.abort();
  await runA;
  const b = elector(client, "b", clock);
  assert.equal(await b.tryAcquireOrRenew(), true, "holder cleared: no need to wait");
  assert.equal(state.lease?.spec?.holderIdentity, "b");

  // c read the lease, then b renewed: c's update carries a stale resourceVersion.
  const c = elector(client, "c", clock);
  const held = structuredClone(state.lease!);
  held.spec!.holderIdentity = "";
  state.lease = { ...held, metadata: { ...held.metadata, resourceVersion: String(++state.rv) } };
  const realGet = client.transport.request.bind(client.transport);
  let raced = false;
  client.transport.request = async (req) => {
    const res = await realGet(req);
    if (req.method === "GET" && !raced) {
      raced = true;
      await b.tryAcquireOrRenew(); // b writes between c's read and c's write
    }
    return res;
  };
  assert.equal(await c.tryAcquireOrRenew(), false);
  assert.equal(state.lease?.spec?.holderIdentity, "b");
});

Deno.test("leader work that fails makes the elector step down and release", async () => {
  const { state, client } = leaseApi();
  const clock = new FakeClock();
  const a = elector(client, "a", clock);
  let stopped = false;
  await a.run({
    onStartedLeading: () => Promise.reject(new Error("controller crashed")),
    onStoppedLeading: () => (stopped = true),
  }, new AbortController().signal);
  assert.equal(stopped, true);
  assert.equal(state.lease?.spec?.holderIdentity, null);
});

Deno.test("release re-reads the lease when a renewal was committed but its response lost", async () => {
  const { state, client } = leaseApi();
  const clock = new FakeClock();
  const a = elector(client, "a", clock);
  const ac = new AbortController();
  const running = a.run({ onStartedLeading: () => {}, onStoppedLeading: () => {} }, ac.signal);
  await tick();
  assert.equal(a.isLeader(), true);
  state.loseNextResponse = true;
  await advance(clock, 2000); // the renewal is committed, the elector never sees the new resourceVersion
  assert.equal(state.loseNextResponse, false);
  assert.equal(a.isLeader(), true, "one failed renewal is within the renew deadline");
  ac.abort();
  await running;
  assert.equal(
    state.lease?.spec?.holderIdentity,
    null,
    "released despite the stale resourceVersion",
  );
});

Deno.test("a leader frozen past its renew deadline stops holding the lease before it learns so", async () => {
  const { client } = leaseApi();
  const clock = new FakeClock();
  const a = elector(client, "a", clock);
  const ac = new AbortController();
  const running = a.run({ onStartedLeading: () => {}, onStoppedLeading: () => {} }, ac.signal);
  await tick();
  assert.equal(a.holdsLease(), true);
  await advance(clock, 9_000);
  assert.equal(a.holdsLease(), true, "renewed every retry period");
  // The process is frozen for 11 s: on waking, its in-flight work may run before the renew loop.
  clock.advance(11_000);
  assert.equal(a.isLeader(), true, "the renew loop has not run yet");
  assert.equal(a.holdsLease(), false, "but no leader-only write may go out any more");
  // Another candidate could take the lease 15 s after it saw the last renew; a learns first.
  await advance(clock, 1_000);
  ac.abort();
  await running;
  assert.equal(a.holdsLease(), false);
});
