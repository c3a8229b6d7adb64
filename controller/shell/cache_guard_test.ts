import assert from "node:assert/strict";
import type { KubeObject } from "../../lib/kube/mod.ts";
import { silentLogger } from "../../lib/log.ts";
import {
  CacheGuard,
  cacheWaitEvent,
  stillUnseen,
  writeVisible,
  type Written,
  writtenObject,
} from "./cache_guard.ts";

const obj = (uid: string, resourceVersion: string, terminating = false): KubeObject => ({
  metadata: {
    name: "n1",
    uid,
    resourceVersion,
    ...(terminating ? { deletionTimestamp: "2026-11-25T00:00:00Z" } : {}),
  },
});

const patched: Written = { store: "bootcNodes", name: "n1", uid: "u1", resourceVersion: "120" };
const deleted: Written = { store: "bootcNodes", name: "n1", uid: "u1", deleted: true };

const cases: { name: string; w: Written; cached: KubeObject | undefined; visible: boolean }[] = [
  { name: "patch: cache behind", w: patched, cached: obj("u1", "119"), visible: false },
  { name: "patch: cache at the write", w: patched, cached: obj("u1", "120"), visible: true },
  { name: "patch: someone wrote after us", w: patched, cached: obj("u1", "125"), visible: true },
  { name: "patch: object not cached yet", w: patched, cached: undefined, visible: false },
  {
    name: "patch: an older object of that name is still cached",
    w: patched,
    cached: obj("u0", "100"),
    visible: false,
  },
  {
    name: "patch: the object was replaced after the write",
    w: patched,
    cached: obj("u2", "130"),
    visible: true,
  },
  { name: "delete: still cached", w: deleted, cached: obj("u1", "100"), visible: false },
  { name: "delete: gone", w: deleted, cached: undefined, visible: true },
  { name: "delete: terminating", w: deleted, cached: obj("u1", "101", true), visible: true },
  {
    // Pool b deleted n1's BootcNode, pool a created one of the same name: the delete shows.
    name: "delete: another object holds the name",
    w: deleted,
    cached: obj("u2", "130"),
    visible: true,
  },
  {
    name: "delete without a uid: only gone or terminating shows it",
    w: { ...deleted, uid: undefined },
    cached: obj("u2", "130"),
    visible: false,
  },
  {
    name: "write without a resourceVersion: any cached object",
    w: { store: "nodes", name: "n1" },
    cached: obj("u1", "1"),
    visible: true,
  },
];

for (const c of cases) {
  Deno.test(`writeVisible: ${c.name}`, () => {
    assert.equal(writeVisible(c.w, c.cached), c.visible);
  });
}

Deno.test("writtenObject records the identity the API returned", () => {
  assert.deepEqual(writtenObject("nodes", "n1", obj("u7", "42")), {
    store: "nodes",
    name: "n1",
    uid: "u7",
    resourceVersion: "42",
  });
});

Deno.test("stillUnseen: planning waits for earlier writes the cache does not show yet", () => {
  const rv = (resourceVersion: string) => ({ metadata: { name: "n", resourceVersion } });
  const grant: Written = { store: "nodes", name: "n1", resourceVersion: "120" };
  const gone: Written = { store: "bootcNodes", name: "n2", deleted: true };
  const created: Written = { store: "bootcNodes", name: "n3", resourceVersion: "130" };
  const cache = new Map<string, KubeObject>([
    ["nodes/n1", rv("119")],
    ["bootcNodes/n2", rv("100")],
  ]);
  const cached = (w: Written) => cache.get(`${w.store}/${w.name}`);
  // The grant is behind, the deletion not yet seen; the created object is not cached at all.
  assert.deepEqual(stillUnseen([grant, gone, created], cached), [grant, gone]);
  cache.set("nodes/n1", rv("125")); // someone wrote after us: ours is in it
  cache.delete("bootcNodes/n2");
  assert.deepEqual(stillUnseen([grant, gone], cached), []);
  // A missing Node (deleted since) is not waited for.
  assert.deepEqual(stillUnseen([{ ...grant, name: "gone" }], cached), []);
});

/** A guard over a map cache, with time moved by hand: each look at the caches costs 10 ms. */
function guardWorld(options: { resync?: () => void } = {}) {
  const cache = new Map<string, KubeObject>();
  let now = 0;
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (msg: string) => void warnings.push(msg) };
  const guard = new CacheGuard({
    resync: options.resync,
    cached: (w) => cache.get(`${w.store}/${w.name}`),
    now: () => now,
    sleep: () => {
      now += 10;
      return Promise.resolve();
    },
  });
  return {
    cache,
    guard,
    warnings,
    log,
    now: () => now,
    advance: (ms: number) => (now += ms),
  };
}

Deno.test("CacheGuard: a node moved between pools holds no planning back", async () => {
  const w = guardWorld();
  // Pool b deleted n1's BootcNode (uid u1); before the guard looks, pool a created its own.
  w.cache.set("bootcNodes/n1", obj("u2", "130"));
  await w.guard.settle([deleted], w.log);
  assert.deepEqual(w.warnings, []);
  assert.equal(w.guard.behind(w.log), false);
});

Deno.test("CacheGuard: writes still unseen hold planning back until shown, then not", async () => {
  const w = guardWorld();
  w.cache.set("bootcNodes/n1", obj("u1", "100"));
  await w.guard.settle([deleted], w.log); // the delete event never comes within 10 s
  assert.deepEqual(w.warnings, [
    "caches did not catch up with our writes; planning waits for them",
  ]);
  assert.equal(w.guard.behind(w.log), true);
  w.cache.set("bootcNodes/n1", obj("u2", "130")); // ... until the name is someone else's
  assert.equal(w.guard.behind(w.log), false);
});

Deno.test("CacheGuard: unseen writes are given up on after maxUnseenMs, with a warning", async () => {
  const w = guardWorld();
  w.cache.set("nodes/n1", obj("u1", "100"));
  const grant: Written = { store: "nodes", name: "n1", uid: "u1", resourceVersion: "120" };
  await w.guard.settle([grant], w.log);
  w.advance(59_000);
  assert.equal(w.guard.behind(w.log), true);
  w.advance(1_000);
  assert.equal(w.guard.behind(w.log), false);
  assert.equal(w.warnings.at(-1), "planning although the caches still miss earlier writes");
  assert.equal(w.guard.behind(w.log), false);
});

Deno.test("CacheGuard: settle returns as soon as the caches show the writes", async () => {
  const w = guardWorld();
  w.cache.set("nodes/n1", obj("u1", "100"));
  const grant: Written = { store: "nodes", name: "n1", uid: "u1", resourceVersion: "120" };
  const settled = w.guard.settle([grant], w.log);
  w.cache.set("nodes/n1", obj("u1", "120"));
  await settled;
  assert.deepEqual(w.warnings, []);
  assert.equal(w.guard.behind(w.log), false);
});

Deno.test("CacheGuard: writes unseen for maxUnseenMs first make the caches list afresh", async () => {
  // A Node watch that stopped delivering hides a slot grant: planning now could grant one
  // more. A fresh list shows the grant; only if even that does not, it is given up on.
  let resyncs = 0;
  const w = guardWorld({ resync: () => void resyncs++ });
  w.cache.set("nodes/n1", obj("u1", "100"));
  const grant: Written = { store: "nodes", name: "n1", uid: "u1", resourceVersion: "120" };
  await w.guard.settle([grant], w.log);
  w.advance(60_000);
  assert.equal(w.guard.behind(w.log), true);
  assert.equal(resyncs, 1);
  assert.equal(w.warnings.at(-1), "the caches still miss earlier writes; listing afresh");
  w.advance(59_000);
  assert.equal(w.guard.behind(w.log), true);
  assert.equal(resyncs, 1);
  w.cache.set("nodes/n1", obj("u1", "120")); // the fresh list shows it
  assert.equal(w.guard.behind(w.log), false);
});

Deno.test("CacheGuard: writes unseen even after the fresh list are given up on", async () => {
  let resyncs = 0;
  const w = guardWorld({ resync: () => void resyncs++ });
  w.cache.set("nodes/n1", obj("u1", "100"));
  const grant: Written = { store: "nodes", name: "n1", uid: "u1", resourceVersion: "120" };
  await w.guard.settle([grant], w.log);
  w.advance(60_000);
  assert.equal(w.guard.behind(w.log), true);
  w.advance(60_000);
  assert.equal(w.guard.behind(w.log), false);
  assert.equal(resyncs, 1);
  assert.equal(w.warnings.at(-1), "planning although the caches still miss earlier writes");
});

Deno.test("CacheGuard.waiting says what planning waits for and until when", async () => {
  const w = guardWorld({ resync: () => {} });
  assert.equal(w.guard.waiting(), undefined);
  w.cache.set("nodes/n1", obj("u1", "100"));
  const grant: Written = { store: "nodes", name: "n1", uid: "u1", resourceVersion: "120" };
  await w.guard.settle([grant], w.log);
  const t0 = w.now();
  assert.equal(w.guard.behind(w.log), true);
  // A relist at 60 s, given up at 120 s at the latest.
  assert.deepEqual(w.guard.waiting(), {
    since: t0,
    endsBy: t0 + 120_000,
    relisted: false,
    pending: ["nodes/n1"],
  });
  w.advance(60_000);
  assert.equal(w.guard.behind(w.log), true);
  assert.deepEqual(w.guard.waiting(), {
    since: t0 + 60_000,
    endsBy: t0 + 120_000,
    relisted: true,
    pending: ["nodes/n1"],
  });
  w.cache.set("nodes/n1", obj("u1", "120"));
  assert.equal(w.guard.behind(w.log), false);
  assert.equal(w.guard.waiting(), undefined);
});

Deno.test("CacheGuard.waiting: the wait ends by the last write's own give-up time", async () => {
  const w = guardWorld({ resync: () => {} });
  w.cache.set("nodes/a", obj("u1", "100"));
  w.cache.set("nodes/b", obj("u2", "100"));
  const write = (name: string): Written => ({
    store: "nodes",
    name,
    uid: "u",
    resourceVersion: "120",
  });
  await w.guard.settle([write("a")], w.log);
  const tA = w.now();
  w.advance(15_000);
  await w.guard.settle([write("b")], w.log);
  const tB = w.now();
  assert.equal(w.guard.behind(w.log), true);
  assert.equal(w.guard.waiting()?.since, tA);
  assert.equal(w.guard.waiting()?.endsBy, tB + 120_000);
  assert.equal(w.guard.waiting()?.relisted, false);
  w.advance(tA + 60_000 - w.now()); // a's stretch is over: a fresh list is asked for
  assert.equal(w.guard.behind(w.log), true);
  assert.equal(w.guard.waiting()?.relisted, true);
  assert.equal(w.guard.waiting()?.endsBy, tB + 120_000);
});

Deno.test("cacheWaitEvent: what planning waits for, and by when it resumes", () => {
  const wait = { since: 0, endsBy: 120_000, relisted: false, pending: ["nodes/a", "bootcNodes/a"] };
  const e = cacheWaitEvent("workers", wait);
  assert.equal(e.type, "Warning");
  assert.equal(e.reason, "CachesBehind");
  assert.match(
    e.message,
    /do not show its earlier writes yet .*\(nodes\/a, bootcNodes\/a\); it resumes by 1970-01-01T00:02:00.000Z at the latest/,
  );
  const relisted = cacheWaitEvent("workers", { ...wait, since: 60_000, relisted: true });
  assert.match(relisted.message, /still miss its earlier writes; it is listing them afresh/);
  assert.notEqual(relisted.onceKey, e.onceKey);
  const many = cacheWaitEvent("workers", {
    ...wait,
    pending: Array.from({ length: 8 }, (_, i) => `nodes/n${i}`),
  });
  assert.match(many.message, /nodes\/n4 and 3 more\)/);
});
