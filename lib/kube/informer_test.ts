import assert from "node:assert/strict";
import { FakeClock } from "../clock.ts";
import { KubeClient } from "./client.ts";
import { Informer } from "./informer.ts";
import { Resources } from "./resources.ts";
import { labelIndex, OWNER_UID_INDEX, ownerUidIndex } from "./store.ts";
import {
  fakeTransport,
  jsonResponse,
  type RecordedRequest,
  statusResponse,
  streamResponse,
  watchLine,
} from "./testing.ts";
import type { KubeObject, ResourceClient } from "./types.ts";

const obj = (name: string, rv: string, labels?: Record<string, string>): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "ns", resourceVersion: rv, uid: `uid-${name}`, labels },
});

/** Polls (real time) until `cond` holds. */
async function until(cond: () => boolean, what: string, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

type Stream = ReturnType<typeof streamResponse>;

/** A fake API: list answers from `lists` (in order, last one repeats), watches get fresh streams. */
function fakeApi(lists: KubeObject[][], listRvs: string[]) {
  const watches: { req: RecordedRequest; stream: Stream }[] = [];
  const failNextWatches: Response[] = [];
  let listCalls = 0;
  const transport = fakeTransport((req) => {
    if (req.query?.watch) {
      const failure = failNextWatches.shift();
      if (failure) {
        watches.push({ req, stream: streamResponse() });
        return failure;
      }
      const stream = streamResponse();
      req.signal?.addEventListener(
        "abort",
        () => stream.fail(new DOMException("aborted", "AbortError")),
      );
      watches.push({ req, stream });
      return stream.response;
    }
    const i = Math.min(listCalls++, lists.length - 1);
    return jsonResponse({ metadata: { resourceVersion: listRvs[i] }, items: lists[i] });
  });
  return {
    transport,
    watches,
    failNextWatches,
    get listCalls() {
      return listCalls;
    },
  };
}

function recorder(inf: Informer<KubeObject>) {
  const log: string[] = [];
  const md = (o: KubeObject) => `${o.metadata?.name}@${o.metadata?.resourceVersion}`;
  inf.onAdd((o) => log.push(`add ${md(o)}`));
  inf.onUpdate((o, n) => log.push(`update ${md(o)}->${md(n)}`));
  inf.onDelete((o) => log.push(`delete ${md(o)}`));
  return log;
}

Deno.test("informer lists, syncs, applies watch events and resumes from a bookmark", async () => {
  const api = fakeApi([[obj("a", "1", { pool: "p1" }), obj("b", "2")]], ["10"]);
  const client = new KubeClient({ transport: api.transport });
  const inf = new Informer({
    resource: client.resource<KubeObject>(Resources.pods, "ns"),
    labelSelector: "app=x",
    clock: new FakeClock(),
    indexers: { pool: labelIndex("pool"), [OWNER_UID_INDEX]: ownerUidIndex },
  });
  const log = recorder(inf);
  const ac = new AbortController();
  assert.equal(inf.hasSynced(), false);
  const running = inf.start(ac.signal);
  await inf.waitForSync(ac.signal);
  assert.equal(inf.hasSynced(), true);
  assert.deepEqual(log, ["add a@1", "add b@2"]);
  assert.deepEqual(inf.store.byIndex("pool", "p1").map((o) => o.metadata?.name), ["a"]);

  await until(() => api.watches.length === 1, "first watch");
  const w1 = api.watches[0];
  assert.equal(w1.req.query?.resourceVersion, "10");
  assert.equal(w1.req.query?.allowWatchBookmarks, true);
  assert.equal(w1.req.query?.labelSelector, "app=x");
  w1.stream.send(watchLine("MODIFIED", obj("a", "11", { pool: "p2" })));
  w1.stream.send(watchLine("ADDED", obj("c", "12")));
  w1.stream.send(watchLine("DELETED", obj("b", "13")));
  w1.stream.send(watchLine("BOOKMARK", { kind: "Pod", metadata: { resourceVersion: "20" } }));
  w1.stream.end();
  await until(() => api.watches.length === 2, "second watch");
  assert.equal(api.watches[1].req.query?.resourceVersion, "20");
  assert.deepEqual(log.slice(2), ["update a@1->a@11", "add c@12", "delete b@2"]);
  assert.deepEqual(inf.store.keys().sort(), ["ns/a", "ns/c"]);
  assert.deepEqual(inf.store.byIndex("pool", "p1"), []);
  assert.equal(inf.store.byIndex("pool", "p2")[0].metadata?.name, "a");
  assert.equal(api.listCalls, 1);
  ac.abort();
  await running;
});

Deno.test("informer relists on 410 and synthesizes deletes and updates", async () => {
  const api = fakeApi(
    [
      [obj("a", "1"), obj("b", "1"), obj("c", "1")],
      [obj("a", "1"), obj("b", "5"), obj("d", "5")],
    ],
    ["3", "30"],
  );
  const client = new KubeClient({ transport: api.transport });
  const inf = new Informer({
    resource: client.resource<KubeObject>(Resources.pods, "ns"),
    clock: new FakeClock(),
  });
  const log = recorder(inf);
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  await until(() => api.watches.length === 1, "first watch");
  api.watches[0].stream.send(
    watchLine("ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old" }),
  );
  await until(() => api.watches.length === 2, "watch after relist");
  assert.equal(api.listCalls, 2);
  assert.equal(api.watches[1].req.query?.resourceVersion, "30");
  assert.deepEqual(log.slice(3), ["delete c@1", "update b@1->b@5", "add d@5"]);
  assert.deepEqual(inf.store.keys().sort(), ["ns/a", "ns/b", "ns/d"]);
  ac.abort();
  await running;
});

Deno.test("informer reconnects after errors with exponential backoff and never gives up", async () => {
  const api = fakeApi([[obj("a", "1")]], ["10"]);
  const clock = new FakeClock();
  const client = new KubeClient({ transport: api.transport });
  const inf = new Informer({
    resource: client.resource<KubeObject>(Resources.pods, "ns"),
    clock,
    random: () => 0.5,
    backoff: { initialMs: 1000, maxMs: 4000, factor: 2, jitter: 0.5 },
  });
  const log = recorder(inf);
  // Five failing watch requests in a row (500, 403, 500, ...): delays 1250, 2500, 5000, 5000, 5000.
  for (let i = 0; i < 5; i++) {
    api.failNextWatches.push(
      statusResponse(i % 2 ? 403 : 500, i % 2 ? "Forbidden" : "InternalError"),
    );
  }
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  const delays = [1250, 2500, 5000, 5000, 5000];
  for (let i = 0; i < delays.length; i++) {
    await until(() => api.watches.length === i + 1, `watch ${i + 1}`);
    clock.advance(delays[i] - 1);
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(api.watches.length, i + 1, `no retry before the ${delays[i]} ms backoff`);
    clock.advance(1);
  }
  await until(() => api.watches.length === 6, "watch after failures");
  const w = api.watches[5];
  assert.equal(w.req.query?.resourceVersion, "10", "resumes, no relist");
  assert.equal(api.listCalls, 1);
  // The stream breaks after one event: reconnect from that event's resourceVersion, backoff reset.
  w.stream.send(watchLine("MODIFIED", obj("a", "11")));
  await until(() => log.length === 2, "modified event");
  w.stream.fail(new TypeError("connection reset"));
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(api.watches.length, 6);
  clock.advance(1250);
  await until(() => api.watches.length === 7, "watch after stream error");
  assert.equal(api.watches[6].req.query?.resourceVersion, "11");
  assert.equal(api.listCalls, 1);
  ac.abort();
  await running;
});

Deno.test("a watch that closes immediately without events backs off instead of spinning", async () => {
  const api = fakeApi([[]], ["1"]);
  const clock = new FakeClock();
  const inf = new Informer({
    resource: new KubeClient({ transport: api.transport }).resource<KubeObject>(Resources.pods),
    clock,
    random: () => 0,
    backoff: { initialMs: 100, maxMs: 100 },
  });
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  await until(() => api.watches.length === 1, "watch");
  api.watches[0].stream.end();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(api.watches.length, 1);
  clock.advance(100);
  await until(() => api.watches.length === 2, "second watch");
  ac.abort();
  await running;
});

Deno.test("waitForSync rejects when its signal aborts first; start twice throws", async () => {
  const inf = new Informer({
    resource: new KubeClient({ transport: fakeTransport(() => statusResponse(500, "x")) })
      .resource<KubeObject>(Resources.nodes),
    clock: new FakeClock(),
  });
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  assert.throws(() => inf.start(ac.signal), /already started/);
  const waiting = inf.waitForSync(AbortSignal.abort(new Error("gave up")));
  await assert.rejects(waiting, /gave up/);
  ac.abort();
  await running;
  assert.equal(inf.hasSynced(), false);
});

Deno.test("informer transform trims objects before they are stored or handed out", async () => {
  const api = fakeApi([[obj("a", "1", { keep: "yes" })]], ["10"]);
  const client = new KubeClient({ transport: api.transport });
  const inf = new Informer({
    resource: client.resource<KubeObject>(Resources.pods, "ns"),
    clock: new FakeClock(),
    transform: (o) => ({
      metadata: { name: o.metadata?.name, namespace: "ns", labels: o.metadata?.labels },
    }),
  });
  const seen: KubeObject[] = [];
  inf.onAdd((o) => seen.push(o));
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  await inf.waitForSync(ac.signal);
  await until(() => api.watches.length === 1, "watch");
  api.watches[0].stream.send(watchLine("ADDED", obj("b", "11")));
  await until(() => seen.length === 2, "watch event");
  for (const o of [...seen, ...inf.store.list()]) {
    assert.equal(o.apiVersion, undefined, "untrimmed object escaped the transform");
    assert.equal(o.metadata?.resourceVersion, undefined);
  }
  assert.deepEqual(inf.store.get("ns/a")?.metadata?.labels, { keep: "yes" });
  ac.abort();
  await running;
});

Deno.test("informer lists page by page, trimming each page before fetching the next", async () => {
  const pages = [
    { items: [obj("a", "1"), obj("b", "2")], continue: "t1" },
    { items: [obj("c", "3")], continue: "t2" },
    { items: [obj("d", "4")] },
  ];
  const requests: RecordedRequest[] = [];
  let trimmed = 0;
  const transport = fakeTransport((req) => {
    requests.push(req);
    if (req.query?.watch) {
      const stream = streamResponse();
      req.signal?.addEventListener(
        "abort",
        () => stream.fail(new DOMException("aborted", "AbortError")),
      );
      return stream.response;
    }
    const i = req.query?.continue === undefined ? 0 : Number(String(req.query.continue)[1]);
    // Every earlier page was trimmed before this one was asked for.
    const before = pages.slice(0, i).reduce((n, p) => n + p.items.length, 0);
    assert.equal(trimmed, before);
    const p = pages[i];
    return jsonResponse({
      metadata: { resourceVersion: "40", ...(p.continue ? { continue: p.continue } : {}) },
      items: p.items,
    });
  });
  const inf = new Informer({
    resource: new KubeClient({ transport }).resource<KubeObject>(Resources.pods, "ns"),
    clock: new FakeClock(),
    pageSize: 2,
    transform: (o) => {
      trimmed++;
      return { metadata: { ...o.metadata, uid: undefined } };
    },
  });
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  await inf.waitForSync(ac.signal);
  assert.deepEqual(inf.store.keys().sort(), ["ns/a", "ns/b", "ns/c", "ns/d"]);
  assert.equal(inf.resourceVersion, "40");
  const lists = requests.filter((r) => !r.query?.watch);
  assert.deepEqual(lists.map((r) => [r.query?.limit, r.query?.continue]), [
    [2, undefined],
    [2, "t1"],
    [2, "t2"],
  ]);
  assert.ok(inf.store.list().every((o) => o.metadata?.uid === undefined));
  await until(() => requests.some((r) => r.query?.watch), "watch");
  ac.abort();
  await running;
});

/** Rejects if `p` has not settled within `ms` (so a hang fails the test instead of stalling it). */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish in ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A resource whose list and watch never answer and ignore their signal. */
function deafResource(listAnswers: boolean) {
  const calls = { list: 0, watch: 0 };
  const never = new Promise<never>(() => {});
  const resource = {
    list: () => {
      calls.list++;
      return listAnswers
        ? Promise.resolve({ metadata: { resourceVersion: "5" }, items: [obj("a", "5")] })
        : never;
    },
    watch: async function* () {
      calls.watch++;
      yield await never;
    },
  } as unknown as ResourceClient<KubeObject>;
  return { resource, calls };
}

Deno.test("stopping is bounded when the watch ignores its signal", async () => {
  const { resource, calls } = deafResource(true);
  const inf = new Informer({ resource, clock: new FakeClock() });
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  await inf.waitForSync();
  await until(() => calls.watch === 1, "watch");
  ac.abort();
  await within(running, 1000, "informer stop");
  assert.equal(inf.store.list().length, 1);
});

Deno.test("stopping is bounded when the list ignores its signal", async () => {
  const { resource, calls } = deafResource(false);
  const inf = new Informer({ resource, clock: new FakeClock() });
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  await until(() => calls.list === 1, "list");
  ac.abort();
  await within(running, 1000, "informer stop");
  assert.equal(inf.hasSynced(), false);
});

Deno.test("a watch whose response body ignores the abort still ends when aborted", async () => {
  // The body is never failed nor ended, and its source never finishes cancelling: only
  // cancelling the reader (which ends a pending read at once) ends the watch.
  let body!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled = false;
  const transport = fakeTransport(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        start: (c) => void (body = c),
        cancel() {
          cancelled = true;
          return new Promise<void>(() => {});
        },
      }),
    )
  );
  const client = new KubeClient({ transport });
  const ac = new AbortController();
  const seen: string[] = [];
  const watching = (async () => {
    const watch = client.resource<KubeObject>(Resources.pods).watch({ signal: ac.signal });
    for await (const ev of watch) seen.push(ev.type);
  })();
  await until(() => body !== undefined, "request");
  body.enqueue(new TextEncoder().encode(watchLine("ADDED", obj("a", "1"))));
  await until(() => seen.length === 1, "first event");
  ac.abort();
  await within(watching, 1000, "watch after abort");
  assert.deepEqual(seen, ["ADDED"]);
  await until(() => cancelled, "body cancelled");
});

Deno.test("resync ends a watch that stopped delivering and lists afresh", async () => {
  // The second list holds what the silent watch never delivered.
  const api = fakeApi([[obj("a", "1")], [obj("a", "7")]], ["10", "20"]);
  const client = new KubeClient({ transport: api.transport });
  const inf = new Informer({
    resource: client.resource<KubeObject>(Resources.pods, "ns"),
    clock: new FakeClock(),
  });
  const log = recorder(inf);
  const ac = new AbortController();
  const running = inf.start(ac.signal);
  await inf.waitForSync(ac.signal);
  await until(() => api.watches.length === 1, "first watch");
  inf.resync();
  await until(() => api.watches.length === 2, "a watch after the fresh list");
  assert.equal(api.listCalls, 2);
  assert.equal(api.watches[1].req.query?.resourceVersion, "20");
  assert.deepEqual(log, ["add a@1", "update a@1->a@7"]);
  assert.equal(api.watches[0].req.signal?.aborted, true, "the silent watch was ended");
  ac.abort();
  await running;
});
